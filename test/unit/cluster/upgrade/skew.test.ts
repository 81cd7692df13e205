import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  compareKubeVersions,
  minorsAhead,
  parseKubeVersion,
  tryParseKubeVersion,
  type KubeVersion,
} from '../../../../src/cluster/upgrade/kube-version.js';
import {
  applyStep,
  checkUpgrade,
  skewViolations,
  type ClusterVersions,
  type SkewRule,
} from '../../../../src/cluster/upgrade/skew.js';

const v = (text: string): KubeVersion => parseKubeVersion(text, 'test');

function cluster(
  controlPlanes: Array<[string, string, string?]>,
  nodes: Array<[string, string]> = [],
): ClusterVersions {
  return {
    controlPlanes: controlPlanes.map(([name, apiServer, kubelet]) => ({
      name,
      apiServer: v(apiServer),
      kubelet: v(kubelet ?? apiServer),
    })),
    nodes: nodes.map(([name, kubelet]) => ({ name, kubelet: v(kubelet) })),
  };
}

const rulesOf = (verdict: ReturnType<typeof checkUpgrade>): Array<[string, SkewRule]> =>
  verdict.violations.map((violation) => [violation.host, violation.rule]);

describe('Kubernetes versions', () => {
  it('orders k3s releases of one Kubernetes patch, pre-releases before their release, and ignores other build tags', () => {
    expect(compareKubeVersions(v('v1.32.1+k3s1'), v('v1.32.1+k3s2'))).toBeLessThan(0);
    expect(compareKubeVersions(v('v1.32.1+k3s2'), v('v1.32.2+k3s1'))).toBeLessThan(0);
    expect(compareKubeVersions(v('v1.33.0-rc.1'), v('v1.33.0'))).toBeLessThan(0);
    expect(compareKubeVersions(v('v1.33.0-rc.2'), v('v1.33.0-rc.10'))).toBeLessThan(0);
    expect(compareKubeVersions(v('v1.30.4+sim'), v('v1.30.4'))).toBe(0);
    expect(minorsAhead(v('v1.32.0'), v('v1.30.9'))).toBe(2);
  });

  it('refuses what is not a version, naming who reported it', () => {
    for (const text of ['', '1.30', 'v1.30.x', 'latest', 'v1.30.4 ; rm -rf /']) {
      expect(tryParseKubeVersion(text)).toBeUndefined();
    }
    expect(() => parseKubeVersion('stable', 'node n1')).toThrow(/node n1 reports "stable"/);
  });
});

describe('the version skew policy', () => {
  it('upgrades one minor: control planes first, one at a time, then the nodes', () => {
    const verdict = checkUpgrade(
      cluster(
        [['cp1', 'v1.31.4+k3s1']],
        [
          ['n1', 'v1.31.4+k3s1'],
          ['n2', 'v1.31.4+k3s1'],
        ],
      ),
      v('v1.32.1+k3s1'),
    );
    expect(verdict.isAllowed).toBe(true);
    expect(verdict.steps.map((step) => `${step.role}:${step.host}`)).toEqual([
      'control-plane:cp1',
      'node:n1',
      'node:n2',
    ]);
    expect(verdict.hosts.map((host) => host.action)).toEqual(['upgrade', 'upgrade', 'upgrade']);
  });

  it('refuses a control plane skipping a minor, and says which minor comes first', () => {
    const verdict = checkUpgrade(cluster([['cp1', 'v1.30.4']], [['n1', 'v1.30.4']]), v('v1.32.0'));
    expect(verdict.isAllowed).toBe(false);
    expect(verdict.steps).toEqual([]);
    expect(rulesOf(verdict)).toEqual([['cp1', 'control-plane-one-minor-at-a-time']]);
    expect(verdict.violations[0]!.message).toMatch(/would skip 1 minor version \(upgrade to v1\.31 first\)/);
    expect(verdict.violations[0]!.message).toContain('(version skew policy: control-plane-one-minor-at-a-time)');
  });

  it('refuses a downgrade across minors on every host, but allows a patch or +k3sN downgrade within one', () => {
    const down = checkUpgrade(cluster([['cp1', 'v1.31.2']], [['n1', 'v1.31.2']]), v('v1.30.9'));
    expect(rulesOf(down)).toEqual([
      ['cp1', 'no-minor-downgrade'],
      ['n1', 'no-minor-downgrade'],
    ]);
    const patch = checkUpgrade(cluster([['cp1', 'v1.31.2+k3s2']], [['n1', 'v1.31.2+k3s2']]), v('v1.31.2+k3s1'));
    expect(patch.isAllowed).toBe(true);
    expect(patch.hosts.map((host) => host.action)).toEqual(['patch-downgrade', 'patch-downgrade']);
  });

  it('finds nothing to do when every host runs the target (k3s: the same +k3sN)', () => {
    const verdict = checkUpgrade(cluster([['cp1', 'v1.31.2+k3s1']], [['n1', 'v1.31.2+k3s1']]), v('v1.31.2+k3s1'));
    expect(verdict.isAllowed).toBe(true);
    expect(verdict.steps).toEqual([]);
    const newer = checkUpgrade(cluster([['cp1', 'v1.31.2+k3s1']]), v('v1.31.2+k3s2'));
    expect(newer.hosts[0]!.action).toBe('upgrade');
  });

  it('upgrades a control plane whose API server is done but whose kubelet is not (an interrupted kubeadm upgrade)', () => {
    const verdict = checkUpgrade(cluster([['cp1', 'v1.32.0', 'v1.31.3']]), v('v1.32.0'));
    expect(verdict.hosts[0]!.action).toBe('upgrade');
  });

  it('refuses HA API servers that are already more than one minor apart', () => {
    const verdict = checkUpgrade(
      cluster([
        ['cp1', 'v1.30.1'],
        ['cp2', 'v1.32.0'],
      ]),
      v('v1.32.0'),
    );
    expect(rulesOf(verdict)).toContainEqual(['cp1', 'ha-api-servers-one-minor-apart']);
  });

  it('refuses a node kubelet newer than an API server, and one that would fall more than three minors behind', () => {
    const tooNew = checkUpgrade(cluster([['cp1', 'v1.30.1']], [['n1', 'v1.31.0']]), v('v1.31.0'));
    expect(rulesOf(tooNew)).toContainEqual(['n1', 'kubelet-not-newer-than-api-server']);
    const tooOld = checkUpgrade(cluster([['cp1', 'v1.31.1']], [['n1', 'v1.28.5']]), v('v1.32.0'));
    expect(rulesOf(tooOld)).toEqual([['n1', 'kubelet-minor-lag']]);
    const threeBehind = checkUpgrade(cluster([['cp1', 'v1.31.1']], [['n1', 'v1.29.5']]), v('v1.32.0'));
    expect(threeBehind.isAllowed).toBe(true);
    // Before 1.25, two minors.
    const legacy = checkUpgrade(cluster([['cp1', 'v1.25.1']], [['n1', 'v1.23.0']]), v('v1.26.0'));
    expect(rulesOf(legacy)).toEqual([['n1', 'kubelet-minor-lag']]);
  });
});

/** A version `minorsBack` minors below 1.`base`, some of them k3s releases. */
const versionNear = (base: number, minorsBack: fc.Arbitrary<number>): fc.Arbitrary<KubeVersion> =>
  fc
    .record({
      back: minorsBack,
      patch: fc.integer({ min: 0, max: 4 }),
      k3s: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
    })
    .map(({ back, patch, k3s }) => v(`v1.${base - back}.${patch}${k3s === undefined ? '' : `+k3s${k3s}`}`));

/** Clusters around one minor (so that accepted and refused upgrades both come up often), now and then broken. */
const clusterArb: fc.Arbitrary<ClusterVersions> = fc.integer({ min: 22, max: 34 }).chain((base) =>
  fc.record({
    controlPlanes: fc
      .array(
        fc.record({
          apiServer: versionNear(base, fc.integer({ min: -1, max: 1 })),
          kubelet: versionNear(base, fc.integer({ min: -1, max: 2 })),
        }),
        { minLength: 1, maxLength: 3 },
      )
      .map((cps) => cps.map((cp, index) => ({ name: `cp${index}`, ...cp }))),
    nodes: fc
      .array(versionNear(base, fc.integer({ min: -1, max: 4 })), { maxLength: 4 })
      .map((kubelets) => kubelets.map((kubelet, index) => ({ name: `n${index}`, kubelet }))),
  }),
);

/** Close to the cluster's versions, so that both verdicts come up often. */
const caseArb = clusterArb.chain((state) =>
  fc.record({
    state: fc.constant(state),
    target: fc
      .record({ delta: fc.integer({ min: -1, max: 2 }), patch: fc.integer({ min: 0, max: 4 }), isK3s: fc.boolean() })
      .map(({ delta, patch, isK3s }) => {
        const base = state.controlPlanes[0]!.apiServer;
        return v(`v1.${base.minor + delta}.${patch}${isK3s ? '+k3s1' : ''}`);
      }),
  }),
);

const isAtTarget = (version: KubeVersion, target: KubeVersion): boolean => compareKubeVersions(version, target) === 0;

describe('the version skew policy, over generated clusters', () => {
  it('an accepted upgrade never passes through a state the policy forbids, and ends with every host at the target', () => {
    fc.assert(
      fc.property(caseArb, ({ state, target }) => {
        const verdict = checkUpgrade(state, target);
        fc.pre(verdict.isAllowed);
        let now = state;
        expect(skewViolations(now)).toEqual([]);
        for (const step of verdict.steps) {
          now = applyStep(now, step);
          expect(skewViolations(now)).toEqual([]);
        }
        for (const cp of now.controlPlanes) {
          expect(isAtTarget(cp.apiServer, target) && isAtTarget(cp.kubelet, target)).toBe(true);
        }
        for (const node of now.nodes) expect(isAtTarget(node.kubelet, target)).toBe(true);
        // Control planes come first, each once.
        const roles = verdict.steps.map((step) => step.role);
        expect(roles).toEqual([...roles].sort());
        expect(new Set(verdict.steps.map((step) => step.host)).size).toBe(verdict.steps.length);
      }),
      { numRuns: 1000 },
    );
  });

  it('refuses exactly what the policy forbids: a broken state, a skipped or downgraded minor, or a forbidden state on the way', () => {
    fc.assert(
      fc.property(caseArb, ({ state, target }) => {
        const verdict = checkUpgrade(state, target);
        // An oracle written from the rules alone: walk the plain order and look at every state.
        const hostsInOrder = [
          ...state.controlPlanes.map((cp) => ({ host: cp.name, role: 'control-plane' as const })),
          ...state.nodes.map((node) => ({ host: node.name, role: 'node' as const })),
        ];
        let isForbidden =
          skewViolations(state).length > 0 ||
          state.controlPlanes.some(
            (cp) =>
              minorsAhead(target, cp.apiServer) > 1 ||
              minorsAhead(target, cp.apiServer) < 0 ||
              minorsAhead(target, cp.kubelet) < 0,
          ) ||
          state.nodes.some((node) => minorsAhead(target, node.kubelet) < 0);
        let now = state;
        for (const step of hostsInOrder) {
          now = applyStep(now, { ...step, to: target });
          if (skewViolations(now).length > 0) isForbidden = true;
        }
        // Nodes wait for every control plane: their old kubelets face the target in between.
        const allControlPlanesDone = state.controlPlanes.reduce(
          (s, cp) => applyStep(s, { host: cp.name, role: 'control-plane', to: target }),
          state,
        );
        if (skewViolations(allControlPlanesDone).length > 0) isForbidden = true;
        expect(verdict.isAllowed).toBe(!isForbidden);
        if (!verdict.isAllowed) {
          expect(verdict.steps).toEqual([]);
          expect(verdict.violations.length).toBeGreaterThan(0);
          for (const violation of verdict.violations) {
            expect(violation.message).toContain(`(version skew policy: ${violation.rule})`);
            expect(verdict.hosts.find((h) => h.host === violation.host)?.action).toBe('refused');
          }
        }
      }),
      { numRuns: 1000 },
    );
  });
});
