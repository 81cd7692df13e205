/**
 * `edgeadm upgrade plan` end to end through the CLI, on three netns+sshd
 * test hosts with no route out, for each SIMULATED distribution
 * (test/support/sim-k3s and sim-kubeadm: stand-ins, not k3s or Kubernetes)
 * shipped in real install packages built for different versions: a cluster
 * of one control plane and two nodes at v1.31 is set up with init and join,
 * then planned against packages for the next minor (accepted: control plane
 * first, then the nodes), two minors up and one minor down (refused with
 * E_UPGRADE_SKEW and the rule), its own version ("already at"), and the
 * other distribution's package. No plan changes anything on any host.
 *
 * The same suite runs for both distributions. For kubeadm it ends by
 * setting edgeadm's refusal against the simulated kubeadm's own
 * `upgrade apply` (written from kubeadm's policy.go) and by running a real
 * `kubeadm upgrade apply` of the simulation to see the versions move.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UpgradePlanResult } from '../../../src/cluster/upgrade/plan.js';
import { KubeClient } from '../../../src/kube/client.js';
import { kubeCredentialsOf } from '../../../src/kube/kubeconfig.js';
import type { BuiltPackage } from '../../../src/packages/build.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import type { CliResult } from '../../support/cli.js';
import { clusterCli, json, listing, printedJoinArgs, sshArgs } from '../../support/cluster-cli.js';
import { buildSimK3sPackage } from '../../support/sim-k3s/fixture.js';
import { buildSimKubeadmPackage } from '../../support/sim-kubeadm/fixture.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';
import { printedBy } from '../../support/run-output.js';

/** A CLI run may start several simulated services and wait for them on 2 busy cores. */
const CLI_TIMEOUT_MS = 240_000;
const TEST_TIMEOUT_MS = 600_000;
/** How long a Node may take to report Ready after its agent started (heartbeats are 10 s apart). */
const NODE_WAIT_MS = 60_000;

interface Flavour {
  distribution: 'k3s' | 'kubeadm';
  /** The version as the distribution writes it. */
  version(minor: number, patch: number): string;
  build(dir: string, version: string): Promise<BuiltPackage>;
  /** The other distribution's package. */
  buildOther(dir: string): Promise<BuiltPackage>;
}

const FLAVOURS: Flavour[] = [
  {
    distribution: 'k3s',
    version: (minor, patch) => `v1.${minor}.${patch}+k3s1`,
    build: (dir, version) => buildSimK3sPackage(dir, { kubernetesVersion: version }),
    buildOther: (dir) => buildSimKubeadmPackage(dir),
  },
  {
    distribution: 'kubeadm',
    version: (minor, patch) => `v1.${minor}.${patch}`,
    build: (dir, version) => buildSimKubeadmPackage(dir, { kubernetesVersion: version }),
    buildOther: (dir) => buildSimK3sPackage(dir),
  },
];

function errorOf(run: CliResult): { code: string; message: string; details?: { plan?: UpgradePlanResult } } {
  return (
    JSON.parse(run.stdout) as { error: { code: string; message: string; details?: { plan?: UpgradePlanResult } } }
  ).error;
}

describe.each(FLAVOURS)('edgeadm upgrade plan on a simulated $distribution cluster', (flavour) => {
  let env: TestHosts;
  let home: string;
  let adminKubeconfig: string;
  const packages = new Map<string, BuiltPackage>();
  const old = flavour.version(31, 4);
  const next = flavour.version(32, 1);
  const skip = flavour.version(33, 0);
  const down = flavour.version(30, 2);
  /** What each host's tree looked like once the cluster was up (paths, types, modes; and key file hashes). */
  const settled = new Map<string, string>();

  const edgeadm = (args: string[]): Promise<CliResult> => clusterCli(home, CLI_TIMEOUT_MS)(args);
  const controlPlane = (): TestHost => env.targets[0]!;
  const nodes = (): TestHost[] => env.targets.slice(1);
  const plan = (version: string, extra: string[] = []): Promise<CliResult> =>
    edgeadm([
      'upgrade',
      'plan',
      ...sshArgs(env, controlPlane()),
      '--install-pkg-path',
      packages.get(version)!.file,
      ...extra,
    ]);

  /**
   * The host's tree, and the SHA-256 of what edgeadm or an upgrade would
   * change: installed binaries, the install state, the distribution's
   * configuration and manifests. The simulated API server's store (its
   * objects, rewritten on every heartbeat) is left out: it is the
   * cluster's data, not the host's setup, and plan only reads it.
   */
  async function tree(host: TestHost): Promise<string> {
    const files = await env.run(
      host,
      'find /usr/local/bin /var/lib/edgeadm/state /etc/rancher /etc/kubernetes /etc/systemd/system -type f -exec sha256sum {} + 2>/dev/null | sort',
    );
    const paths = (await listing(env, host))
      .split('\n')
      // The simulations' own temporary files (written, then renamed) may be caught mid-write.
      .filter((line) => !/\.tmp-\d+ /.test(line))
      .join('\n');
    return `${paths}\n${files}`;
  }

  /** Runs a command inside a host (outside SSH), with its exit code and combined output. */
  async function execIn(host: TestHost, command: string): Promise<{ exitCode: number; output: string }> {
    const out = await env.run(host, `{ ${command} ; } 2>&1; echo "@@exit=$?"`);
    const match = /@@exit=(\d+)\s*$/.exec(out);
    return { exitCode: Number(match?.[1] ?? -1), output: out.slice(0, match?.index ?? out.length) };
  }

  async function admin(): Promise<KubeClient> {
    return new KubeClient(await kubeCredentialsOf(readFileSync(adminKubeconfig, 'utf8'), { what: 'admin' }));
  }

  beforeAll(async () => {
    ensureCliBuilt('commands/upgrade/plan.js', ['src', `test/support/sim-${flavour.distribution}`]);
    env = await startTestHosts({ count: 3 });
    home = mkdtempSync(join(env.dir, 'cli-home-'));
    adminKubeconfig = join(home, 'admin.yaml');
    const dir = mkdtempSync(join(env.dir, 'pkg-'));
    for (const version of [old, next, skip, down]) packages.set(version, await flavour.build(dir, version));
    packages.set('other', await flavour.buildOther(mkdtempSync(join(env.dir, 'pkg-other-'))));
    const init = json<{ joinCommand: string }>(
      await edgeadm([
        'init',
        ...sshArgs(env, controlPlane()),
        '--distribution',
        flavour.distribution,
        '--install-pkg-path',
        packages.get(old)!.file,
        '--kubeconfig-out',
        adminKubeconfig,
        '--json',
      ]),
    );
    for (const node of nodes()) {
      json(
        await edgeadm([
          ...printedJoinArgs(init.joinCommand),
          '--install-pkg-path',
          packages.get(old)!.file,
          '--distribution',
          flavour.distribution,
          ...sshArgs(env, node),
          '--json',
        ]),
      );
    }
    // Every Node registered and reporting its kubelet version before anything is planned.
    const client = await admin();
    const deadline = Date.now() + NODE_WAIT_MS;
    for (;;) {
      const listed = await client.list<{ status?: { nodeInfo?: { kubeletVersion?: string } } }>('/api/v1/nodes');
      if (listed.length === 3 && listed.every((node) => node.status?.nodeInfo?.kubeletVersion)) break;
      if (Date.now() > deadline) throw new Error(`the Nodes did not all report: ${JSON.stringify(listed)}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    for (const host of env.targets) settled.set(host.name, await tree(host));
  }, TEST_TIMEOUT_MS);

  afterAll(async () => {
    await env?.teardown();
  });

  it(
    'the simulated binaries report the version their package carries: every Node and the API server',
    async () => {
      const client = await admin();
      const listed = await client.list<{
        metadata: { name: string };
        status: { nodeInfo: { kubeletVersion: string } };
      }>('/api/v1/nodes');
      expect(listed.map((node) => node.status.nodeInfo.kubeletVersion)).toEqual([old, old, old]);
      expect((await client.request<{ gitVersion: string }>('GET', '/version')).gitVersion).toBe(old);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'plans one minor up: the control plane first, then the two nodes, with what apply and node would do',
    async () => {
      const result = json<UpgradePlanResult>(await plan(next, ['--json']));
      expect(result).toMatchObject({
        host: expect.stringContaining(controlPlane().address) as unknown,
        distribution: flavour.distribution,
        isHa: false,
        controlPlanes: 1,
        nodes: 2,
        edgeNodes: 0,
        apiServerVersion: old,
        target: next,
        isReadOnly: true,
      });
      expect(result.hosts.map((h) => [h.host, h.role, h.from, h.to, h.action, h.step])).toEqual([
        [controlPlane().name, 'control-plane', old, next, 'upgrade', 1],
        [nodes()[0]!.name, 'node', old, next, 'upgrade', 2],
        [nodes()[1]!.name, 'node', old, next, 'upgrade', 3],
      ]);
      const apply = result.hosts[0]!.actions.join('\n');
      expect(apply).toMatch(/^back up /);
      if (flavour.distribution === 'kubeadm') expect(apply).toContain(`kubeadm upgrade apply ${next}`);
      expect(result.hosts[1]!.actions[0]).toMatch(/^cordon, and drain/);

      const text = await plan(next);
      expect(text.exitCode, printedBy(text)).toBe(0);
      expect(text.stdout).toContain(`${flavour.distribution}, 1 control plane, 2 nodes; API server ${old}`);
      expect(text.stdout).toMatch(
        new RegExp(
          `1\\. ${controlPlane().name} +control plane +${old.replace('+', '\\+')} -> ${next.replace('+', '\\+')}`,
        ),
      );
      expect(text.stdout).toContain('Nothing was changed on any host.');
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'refuses to skip a minor on the control plane, naming the rule, with exit code 2',
    async () => {
      const run = await plan(skip, ['--json']);
      expect(run.exitCode).toBe(2);
      const error = errorOf(run);
      expect(error.code).toBe('E_UPGRADE_SKEW');
      expect(error.message).toContain('(version skew policy: control-plane-one-minor-at-a-time)');
      expect(error.message).toContain('upgrade to v1.32 first');
      expect(error.details?.plan?.hosts[0]).toMatchObject({ action: 'refused', from: old, to: skip });
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'refuses a downgrade across minors on every host',
    async () => {
      const run = await plan(down, ['--json']);
      expect(run.exitCode).toBe(2);
      const error = errorOf(run);
      expect(error.code).toBe('E_UPGRADE_SKEW');
      expect(error.details?.plan?.hosts.map((h) => h.refusals.map((r) => r.rule))).toEqual([
        ['no-minor-downgrade'],
        ['no-minor-downgrade'],
        ['no-minor-downgrade'],
      ]);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'says the cluster is already at the version of its own package, and refuses the other distribution',
    async () => {
      const same = errorOf(await plan(old, ['--json']));
      expect(same.code).toBe('E_UPGRADE_SAME_VERSION');
      expect(same.message).toContain(`already at ${old}`);
      const other = errorOf(await plan('other', ['--json']));
      expect(other.code).toBe('E_PACKAGE_DISTRIBUTION');
      expect(other.message).toMatch(
        new RegExp(
          `is for ${flavour.distribution === 'k3s' ? 'kubeadm' : 'k3s'}, but the cluster on \\S*${controlPlane().address.replaceAll('.', '\\.')}\\S* runs ${flavour.distribution}$`,
        ),
      );
      const missing = errorOf(
        await edgeadm([
          'upgrade',
          'plan',
          ...sshArgs(env, controlPlane()),
          '--install-pkg-path',
          join(env.dir, 'no-such.tar.gz'),
          '--json',
        ]),
      );
      expect(missing.code).toBe('E_PACKAGE_NOT_FOUND');
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'without a package, shows the cluster and the version of every host, and plans nothing',
    async () => {
      const result = json<UpgradePlanResult>(
        await edgeadm(['upgrade', 'plan', ...sshArgs(env, controlPlane()), '--json']),
      );
      expect(result.target).toBeUndefined();
      expect(result.hosts.map((h) => [h.role, h.from, h.step])).toEqual([
        ['control-plane', old, undefined],
        ['node', old, undefined],
        ['node', old, undefined],
      ]);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'read through a node instead of a control plane, it says so',
    async () => {
      const run = await edgeadm([
        'upgrade',
        'plan',
        ...sshArgs(env, nodes()[0]!),
        '--install-pkg-path',
        packages.get(next)!.file,
        '--json',
      ]);
      expect(errorOf(run).code).toBe('E_UPGRADE_NOT_CONTROL_PLANE');
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'no plan changed anything on any host',
    async () => {
      for (const host of env.targets) expect(await tree(host)).toBe(settled.get(host.name));
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'an install state naming a distribution edgeadm does not know is refused by name',
    async () => {
      const state = '/var/lib/edgeadm/state/install.json';
      const saved = await env.run(controlPlane(), `cat ${state}`);
      await env.run(controlPlane(), `sed -i 's/"distribution": *"[a-z0-9]*"/"distribution": "k0s"/' ${state}`);
      try {
        const error = errorOf(await plan(next, ['--json']));
        expect(error.code).toBe('E_DISTRIBUTION_UNKNOWN');
        expect(error.message).toContain('"k0s"');
      } finally {
        await env.run(controlPlane(), `echo ${Buffer.from(saved).toString('base64')} | base64 -d > ${state}`);
      }
    },
    TEST_TIMEOUT_MS,
  );

  // kubeadm's own upgrade command exists only there: registered for kubeadm alone, never reported as skipped.
  if (flavour.distribution === 'kubeadm') {
    it(
      "the simulated kubeadm's own policy refuses the skipped minor too, and its upgrade apply moves the API server to the next minor",
      async () => {
        // The packages' kubeadm, put on the host (its /tmp, where the packages were built, is its own).
        const kubeadmOf = async (version: string, host = controlPlane()): Promise<string> => {
          const script = readFileSync(
            join(dirname(packages.get(version)!.file), `sim-kubeadm-${version}-src`, 'bin', 'kubeadm'),
          );
          const path = `/opt/sim-upgrade/kubeadm-${version}`;
          await env.run(
            host,
            `mkdir -p /opt/sim-upgrade && echo ${script.toString('base64')} | base64 -d > ${path} && chmod 755 ${path}`,
          );
          return path;
        };
        const skipped = await execIn(controlPlane(), `${await kubeadmOf(skip)} upgrade apply ${skip} -y`);
        expect(skipped.exitCode).toBe(1);
        expect(skipped.output).toContain('is too high; kubeadm can upgrade only 1 minor version at a time');
        // Offline, kubeadm's preflight pull of images containerd lacks fails (the hosts have no route out)...
        const unpulled = await execIn(controlPlane(), `${await kubeadmOf(next)} upgrade apply ${next} -y`);
        expect(unpulled.exitCode).toBe(1);
        expect(unpulled.output).toContain(
          `[ERROR ImagePull]: failed to pull image registry.k8s.io/kube-apiserver:${next}`,
        );
        // ...so the new control-plane images are imported first, from the package.
        const images = readFileSync(
          join(dirname(packages.get(next)!.file), `sim-kubeadm-${next}-src`, 'images', 'sim-control-plane.tar'),
        );
        await env.run(
          controlPlane(),
          `echo ${images.toString('base64')} | base64 -d > /opt/sim-upgrade/images-${next}.tar && /usr/local/bin/ctr --address /run/containerd/containerd.sock -n k8s.io images import /opt/sim-upgrade/images-${next}.tar`,
        );
        const applied = await execIn(controlPlane(), `${await kubeadmOf(next)} upgrade apply ${next} -y`);
        expect(applied.exitCode, applied.output).toBe(0);
        expect(applied.output).toContain(`SUCCESS! Your cluster was upgraded to "${next}"`);
        const client = await admin();
        expect((await client.request<{ gitVersion: string }>('GET', '/version')).gitVersion).toBe(next);
        const backups = await env.run(controlPlane(), 'ls /etc/kubernetes/tmp');
        expect(backups).toMatch(/kubeadm-backup-manifests-/);
        // The kubelets still run the old binary: the plan now has the control plane's kubelet and the nodes to do.
        const after = json<UpgradePlanResult>(await plan(next, ['--json']));
        expect(after.hosts[0]).toMatchObject({ from: next, kubelet: old, action: 'upgrade', step: 1 });
        expect(after.apiServerVersion).toBe(next);
        expect(after.hosts[1]).toMatchObject({ from: old, action: 'upgrade', step: 2 });
        // upgrade node: on the upgraded control plane there is nothing left to do; a worker has no static Pods.
        const again = await execIn(controlPlane(), `${await kubeadmOf(next)} upgrade node`);
        expect(again.exitCode, again.output).toBe(0);
        expect(again.output).toContain('Current and new manifests of kube-apiserver are equal, skipping upgrade');
        const worker = await execIn(nodes()[0]!, `${await kubeadmOf(next, nodes()[0]!)} upgrade node`);
        expect(worker.exitCode, worker.output).toBe(0);
        expect(worker.output).toContain('[upgrade] Skipping phase. Not a control plane node.');
      },
      TEST_TIMEOUT_MS,
    );
  }
});
