/**
 * edgeadm's skew policy set against the simulated kubeadm's
 * (test/support/sim-kubeadm/upgrade.ts, written from kubeadm's policy.go
 * independently of edgeadm): on a single control plane upgraded with a
 * kubeadm of the target's own version, the two agree on the control-plane
 * rules. Where they differ on purpose, the test says so: kubeadm allows a
 * one-minor downgrade (edgeadm restores a backup instead), and kubeadm
 * holds kubelets to one minor behind the target (skippable with --force)
 * where the Kubernetes policy, which edgeadm follows, allows three.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseKubeVersion } from '../../../../src/cluster/upgrade/kube-version.js';
import { checkUpgrade } from '../../../../src/cluster/upgrade/skew.js';
import { parseVersion, versionPolicyErrors } from '../../../support/sim-kubeadm/upgrade.js';

const versionArb = (minMinor: number, maxMinor: number) =>
  fc
    .record({ minor: fc.integer({ min: minMinor, max: maxMinor }), patch: fc.integer({ min: 0, max: 5 }) })
    .map(({ minor, patch }) => `v1.${minor}.${patch}`);

describe('edgeadm and (simulated) kubeadm on a control plane upgrade', () => {
  it('agree on every target from one minor below to three above, except the one-minor downgrade kubeadm allows', () => {
    fc.assert(
      fc.property(
        versionArb(26, 32),
        fc.integer({ min: -1, max: 3 }),
        fc.integer({ min: 0, max: 5 }),
        (cluster, up, patch) => {
          const current = parseKubeVersion(cluster, 'cluster');
          const target = `v1.${current.minor + up}.${patch}`;
          const edgeadm = checkUpgrade(
            { controlPlanes: [{ name: 'cp', apiServer: current, kubelet: current }], nodes: [] },
            parseKubeVersion(target, 'target'),
          );
          const kubeadm = versionPolicyErrors(
            { cluster: parseVersion(cluster), kubeadm: parseVersion(target), kubelets: new Map([[cluster, ['cp']]]) },
            parseVersion(target),
          );
          const isOneMinorDown = up === -1;
          if (isOneMinorDown) {
            expect(kubeadm.mandatory).toEqual([]);
            expect(edgeadm.violations.map((v) => v.rule)).toEqual(['no-minor-downgrade']);
            return;
          }
          expect(edgeadm.isAllowed).toBe(kubeadm.mandatory.length === 0);
          if (!edgeadm.isAllowed) {
            expect(edgeadm.violations.map((v) => v.rule)).toEqual(['control-plane-one-minor-at-a-time']);
            expect(kubeadm.mandatory.join('\n')).toContain('kubeadm can upgrade only 1 minor version at a time');
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('differ on purpose on old kubelets: kubeadm asks for --force at two minors behind, the policy allows three', () => {
    const cluster = 'v1.31.2';
    const target = 'v1.32.0';
    const kubelet = 'v1.29.8';
    const edgeadm = checkUpgrade(
      {
        controlPlanes: [
          { name: 'cp', apiServer: parseKubeVersion(cluster, 'cp'), kubelet: parseKubeVersion(cluster, 'cp') },
        ],
        nodes: [{ name: 'n1', kubelet: parseKubeVersion(kubelet, 'n1') }],
      },
      parseKubeVersion(target, 'target'),
    );
    expect(edgeadm.isAllowed).toBe(true);
    const kubeadm = versionPolicyErrors(
      {
        cluster: parseVersion(cluster),
        kubeadm: parseVersion(target),
        kubelets: new Map([
          [cluster, ['cp']],
          [kubelet, ['n1']],
        ]),
      },
      parseVersion(target),
    );
    expect(kubeadm.mandatory).toEqual([]);
    expect(kubeadm.skippable.join('\n')).toContain('There are kubelets in this cluster that are too old');
  });
});
