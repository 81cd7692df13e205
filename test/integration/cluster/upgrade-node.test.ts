/**
 * `edgeadm upgrade node` end to end through the CLI on netns+sshd test
 * hosts with no route out, once per distribution with its SIMULATION
 * (test/support/sim-k3s: not k3s; test/support/sim-kubeadm: not kubeadm)
 * and the SIMULATED API server's eviction subresource (not kube-apiserver):
 * a control plane and two nodes, one of them an edge node with the real
 * edge-proxy, go from one minor version to the next.
 *
 * - The control plane goes first with `upgrade apply` (k3s: the server
 *   binary; kubeadm: `kubeadm upgrade apply`), then the nodes.
 * - A package whose node agent does not start is rolled back: the old
 *   binaries (and kubeadm's kubelet configuration) back, Ready at the old
 *   version, uncordoned (E_UPGRADE_ROLLED_BACK).
 * - A node package newer than the API server is refused (E_UPGRADE_SKEW).
 * - A PodDisruptionBudget that refuses stops the drain (E_DRAIN_DISRUPTION_BUDGET),
 *   the node stays cordoned at its old version; `--force` completes it.
 * - The edge node gets the new edgeadm, keeps its edge-proxy cache, and a
 *   re-run finds it done. Every Node then reports the new version.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UpgradeNodeResult } from '../../../src/cluster/upgrade/node.js';
import { NODE_TUNNEL_AGENT_UNIT_NAME } from '../../../src/cluster/node-tunnel-units.js';
import { DIRECT_SERVICE_DIR } from '../../../src/hosts/service-manager.js';
import { KubeClient } from '../../../src/kube/client.js';
import { kubeCredentialsOf } from '../../../src/kube/kubeconfig.js';
import type { BuiltPackage } from '../../../src/packages/build.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import type { CliResult } from '../../support/cli.js';
import { clusterCli, json, printedJoinArgs, sshArgs } from '../../support/cluster-cli.js';
import { DISTRIBUTIONS, type TestDistribution } from '../../support/distributions.js';
import { buildSimK3sPackage } from '../../support/sim-k3s/fixture.js';
import { buildSimKubeadmPackage } from '../../support/sim-kubeadm/fixture.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';
import { printedBy } from '../../support/run-output.js';

const NODE_WAIT_MS = 90_000;
/** The edge-proxy's cache directory on an edge node. */
const CACHE_DIR = '/var/lib/edgeadm/edge-proxy';

const VERSIONS = {
  k3s: { old: 'v1.31.4+k3s1', next: 'v1.32.1+k3s1', skip: 'v1.33.0+k3s1' },
  kubeadm: { old: 'v1.31.4', next: 'v1.32.1', skip: 'v1.33.0' },
} as const;

function errorOf(run: CliResult): { code: string; message: string } {
  return (JSON.parse(run.stdout) as { error: { code: string; message: string } }).error;
}

describe.each(DISTRIBUTIONS)('edgeadm upgrade node ($name, simulated)', (distribution: TestDistribution) => {
  const versions = VERSIONS[distribution.name];
  const packages = new Map<string, BuiltPackage>();
  let env: TestHosts;
  let home: string;
  let adminKubeconfig: string;
  const timeout = distribution.testTimeoutMs;

  const edgeadm = (args: string[]): Promise<CliResult> => clusterCli(home, distribution.cliTimeoutMs)(args);
  const controlPlane = (): TestHost => env.targets[0]!;
  const plainNode = (): TestHost => env.targets[1]!;
  const edgeNode = (): TestHost => env.targets[2]!;
  /** The node tunnel agent's own pid on the edge node (the direct service manager's file), '' without one. */
  const tunnelAgentPid = async (): Promise<string> =>
    (
      await env.run(edgeNode(), `cat ${DIRECT_SERVICE_DIR}/${NODE_TUNNEL_AGENT_UNIT_NAME}.main.pid 2>/dev/null || true`)
    ).trim();
  /** A package of `version`; `isBroken`: its node agent (k3s agent, kubelet) exits at once. */
  const build = (version: string, isBroken = false): Promise<BuiltPackage> =>
    distribution.name === 'k3s'
      ? buildSimK3sPackage(mkdtempSync(join(env.dir, 'pkg-')), {
          kubernetesVersion: version,
          withEdgeadm: true,
          ...(isBroken ? { isAgentBroken: true, tag: 'broken' } : {}),
        })
      : buildSimKubeadmPackage(mkdtempSync(join(env.dir, 'pkg-')), {
          kubernetesVersion: version,
          withEdgeadm: true,
          ...(isBroken ? { isKubeletBroken: true } : {}),
        });
  const upgradeNode = (node: TestHost, version: string, extra: string[] = []): Promise<CliResult> =>
    edgeadm([
      'upgrade',
      'node',
      ...sshArgs(env, node),
      '--control-plane',
      `root@${controlPlane().address}`,
      '--install-pkg-path',
      packages.get(version)!.file,
      '--json',
      ...extra,
    ]);

  async function admin(): Promise<KubeClient> {
    return new KubeClient(await kubeCredentialsOf(readFileSync(adminKubeconfig, 'utf8'), { what: 'admin' }));
  }

  async function kubeletVersions(): Promise<Record<string, string>> {
    const nodes = await (
      await admin()
    ).list<{ metadata: { name: string }; status?: { nodeInfo?: { kubeletVersion?: string } } }>('/api/v1/nodes');
    return Object.fromEntries(nodes.map((n) => [n.metadata.name, n.status?.nodeInfo?.kubeletVersion ?? '']));
  }

  async function waitForVersions(expected: (name: string) => string, count: number): Promise<void> {
    const deadline = Date.now() + NODE_WAIT_MS;
    for (;;) {
      try {
        const seen = await kubeletVersions();
        if (Object.keys(seen).length === count && Object.entries(seen).every(([name, v]) => v === expected(name))) {
          return;
        }
      } catch {
        // The API server may be restarting.
      }
      if (Date.now() > deadline)
        throw new Error(`the Nodes did not reach their versions: ${JSON.stringify(await kubeletVersions())}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  const nodeName = async (host: TestHost): Promise<string> => (await env.run(host, 'hostname')).trim();

  beforeAll(async () => {
    ensureCliBuilt('commands/upgrade/node.js', [...distribution.sources, 'test/support/sim-apiserver']);
    env = await startTestHosts({ count: 3 });
    home = mkdtempSync(join(env.dir, 'cli-home-'));
    adminKubeconfig = join(home, 'admin.yaml');
    for (const version of Object.values(versions)) packages.set(version, await build(version));
    packages.set('broken', await build(versions.next, true));
    const controlPlaneVersion = versions.old;
    const init = json<{ joinCommand: string }>(
      await edgeadm([
        'init',
        ...sshArgs(env, controlPlane()),
        ...distribution.initFlags,
        '--install-pkg-path',
        packages.get(controlPlaneVersion)!.file,
        '--enable-edge',
        '--kubeconfig-out',
        adminKubeconfig,
        '--json',
      ]),
    );
    // The two nodes join at once, as an operator's fleet join does.
    const joins = await Promise.all(
      (
        [
          [plainNode(), false],
          [edgeNode(), true],
        ] as const
      ).map(([node, isEdge]) =>
        edgeadm([
          ...printedJoinArgs(init.joinCommand),
          ...distribution.initFlags,
          '--install-pkg-path',
          packages.get(versions.old)!.file,
          ...(isEdge ? ['--enable-edge'] : []),
          ...sshArgs(env, node),
          '--json',
        ]),
      ),
    );
    for (const joined of joins) json(joined);
    const cp = await nodeName(controlPlane());
    await waitForVersions((name) => (name === cp ? controlPlaneVersion : versions.old), 3);
    json(
      await edgeadm([
        'upgrade',
        'apply',
        ...sshArgs(env, controlPlane()),
        '--install-pkg-path',
        packages.get(versions.next)!.file,
        '--json',
      ]),
    );
  }, timeout);

  afterAll(async () => {
    await env?.teardown();
  });

  it(
    'a new binary whose node agent does not start is rolled back: the old binaries, Ready at the old version, uncordoned',
    async () => {
      const node = await nodeName(plainNode());
      const binaries = `sha256sum ${distribution.name === 'k3s' ? '/usr/local/bin/k3s' : '/usr/local/bin/kubeadm /usr/local/bin/kubelet /var/lib/kubelet/config.yaml'}`;
      const before = await env.run(plainNode(), binaries);
      const run = await upgradeNode(plainNode(), 'broken', ['--gate-timeout', '15s']);
      expect(run.exitCode, printedBy(run)).toBe(1);
      const error = errorOf(run);
      expect(error.code).toBe('E_UPGRADE_ROLLED_BACK');
      expect(error.message).toContain('the node-ready gate did not pass');
      expect(error.message).toContain(`${versions.old} runs again, and the Node is uncordoned`);
      expect(await env.run(plainNode(), binaries)).toBe(before);
      const versionsNow = await kubeletVersions();
      expect(versionsNow[node]).toBe(versions.old);
      const client = await admin();
      const seen = await client.get<{
        metadata: { name: string };
        spec?: { unschedulable?: boolean };
        apiVersion: string;
        kind: string;
      }>(`/api/v1/nodes/${node}`);
      expect(seen?.spec?.unschedulable).toBeUndefined();
      const state = JSON.parse(await env.run(plainNode(), 'cat /var/lib/edgeadm/upgrade/node-state.json')) as {
        step: string;
      };
      expect(state.step).toBe('rolled-back');
    },
    timeout,
  );

  it(
    'refuses a node package newer than the API server, then, with the control plane at the next minor, a budget that refuses stops the drain until --force',
    async () => {
      const node = await nodeName(plainNode());
      const skew = await upgradeNode(plainNode(), versions.skip);
      expect(skew.exitCode, printedBy(skew)).toBe(2);
      expect(errorOf(skew)).toMatchObject({
        code: 'E_UPGRADE_SKEW',
        message: expect.stringContaining('kubelet-not-newer-than-api-server'),
      });

      const client = await admin();
      const owner = [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-abc', uid: 'web-abc', controller: true }];
      await client.create('/api/v1/namespaces/default/pods', {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'web-1', labels: { app: 'web' }, ownerReferences: owner },
        spec: { nodeName: node, containers: [{ name: 'web', image: 'registry.example/web:1' }] },
      });
      await client.create('/apis/policy/v1/namespaces/default/poddisruptionbudgets', {
        apiVersion: 'policy/v1',
        kind: 'PodDisruptionBudget',
        metadata: { name: 'web' },
        spec: { minAvailable: 1, selector: { matchLabels: { app: 'web' } } },
      });
      const refused = await upgradeNode(plainNode(), versions.next, ['--drain-timeout', '1s']);
      expect(refused.exitCode, printedBy(refused)).toBe(1);
      expect(errorOf(refused)).toMatchObject({
        code: 'E_DRAIN_DISRUPTION_BUDGET',
        message: expect.stringContaining('The disruption budget web needs 1 healthy pods and has 1 currently'),
      });
      // Nothing swapped: the old kubelet runs; the Pod is still there; the node stays cordoned for the re-run.
      expect((await kubeletVersions())[node]).toBe(versions.old);
      expect(await client.get('/api/v1/namespaces/default/pods/web-1')).toBeDefined();
      const cordoned = await client.get<{
        metadata: { name: string };
        spec?: { unschedulable?: boolean };
        apiVersion: string;
        kind: string;
      }>(`/api/v1/nodes/${node}`);
      expect(cordoned?.spec?.unschedulable).toBe(true);

      const forced = json<UpgradeNodeResult>(await upgradeNode(plainNode(), versions.next, ['--force']));
      expect(forced).toMatchObject({
        outcome: 'upgraded',
        from: versions.old,
        to: versions.next,
        isEdge: false,
        resumedFrom: 'draining',
      });
      expect(await client.get('/api/v1/namespaces/default/pods/web-1')).toBeUndefined();
      const uncordoned = await client.get<{
        metadata: { name: string };
        spec?: { unschedulable?: boolean };
        apiVersion: string;
        kind: string;
      }>(`/api/v1/nodes/${node}`);
      expect(uncordoned?.spec?.unschedulable).toBeUndefined();
      expect((await kubeletVersions())[node]).toBe(versions.next);
    },
    timeout,
  );

  it(
    'upgrades the edge node with the new edgeadm and its cache kept; a re-run finds it done; every Node reports the new version',
    async () => {
      const marker = `${CACHE_DIR}/upgrade-test-marker`;
      await env.run(edgeNode(), `mkdir -p ${CACHE_DIR} && echo kept > ${marker}`);
      const cacheBefore = await env.run(edgeNode(), `cd ${CACHE_DIR} && find . -type f | sort`);
      // kubeadm edge nodes run the node tunnel agent from the edgeadm the upgrade replaces (k3s: none).
      const hasTunnelAgent = distribution.name === 'kubeadm';
      const agentBefore = await tunnelAgentPid();
      expect(agentBefore !== '').toBe(hasTunnelAgent);
      if (hasTunnelAgent) {
        // It runs steadily (RestartSec=5 would have replaced a failing one), so a new pid after the upgrade is the restart.
        await new Promise((resolve) => setTimeout(resolve, 6_000));
        expect(await tunnelAgentPid()).toBe(agentBefore);
      }
      const result = json<UpgradeNodeResult>(await upgradeNode(edgeNode(), versions.next));
      expect(result).toMatchObject({ outcome: 'upgraded', from: versions.old, to: versions.next, isEdge: true });
      expect(await env.run(edgeNode(), `cat ${marker}`)).toBe('kept\n');
      // Every file the cache had is still there (the proxy may have added entries since it restarted).
      const cacheAfter = (await env.run(edgeNode(), `cd ${CACHE_DIR} && find . -type f | sort`)).split('\n');
      for (const file of cacheBefore.split('\n')) expect(cacheAfter).toContain(file);
      // The new package's edgeadm (each test package's carries its version).
      expect(await env.run(edgeNode(), 'cat /usr/local/bin/edgeadm')).toContain(
        `shipped in the ${versions.next} test package`,
      );
      if (hasTunnelAgent) {
        // Restarted, so it runs the new edgeadm, and running.
        const agentAfter = await tunnelAgentPid();
        expect(agentAfter).not.toBe('');
        expect(agentAfter).not.toBe(agentBefore);
        expect(await env.run(edgeNode(), `kill -0 ${agentAfter} && echo running`)).toBe('running\n');
      }

      const again = json<UpgradeNodeResult>(await upgradeNode(edgeNode(), versions.next));
      expect(again.outcome).toBe('already-done');
      await waitForVersions(() => versions.next, 3);
    },
    timeout,
  );
});
