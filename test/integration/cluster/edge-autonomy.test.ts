/**
 * Autonomy duration end to end, through the CLI, on three netns+sshd test
 * hosts, once for each distribution with its SIMULATION
 * (test/support/sim-k3s, test/support/sim-kubeadm: not Kubernetes), whose
 * simulated API server runs a simulated node lifecycle and taint eviction
 * (test/support/sim-apiserver/node-lifecycle.ts) with shortened periods
 * (/etc/edgeadm-sim/timing.json on each host, written here: 5 s of grace,
 * one toleration second = 20 ms, so Kubernetes' 300 s window is 6 s and
 * edgeadm's default 24 h is half an hour).
 *
 * `init --enable-edge` runs the autonomy controller; an edge node joins
 * with `--enable-edge` (default duration), a plain worker without. Cutting
 * a node off is removing its namespace's route to the control plane (an
 * `unreachable` route to the control plane's address, so the kubelet's
 * heartbeats stop as on a real uplink failure). Then:
 * - the worker's pod is evicted as Kubernetes evicts it (300 s);
 * - the edge node's pods stay past the default window — shown by a pod
 *   bound to it after the cut, which keeps Kubernetes' 300 s (the taint
 *   manager keeps what it scheduled) and is evicted first — and are Ready
 *   False in the cloud meanwhile (the endpoints policy: withdrawn from the
 *   cloud's Services, see src/edge/README.md);
 * - when the link returns nothing is recreated: same pods, same UIDs;
 * - re-joined with `--autonomy-duration 1m`, a cut longer than that
 *   evicts the edge node's pods after all.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InitResult } from '../../../src/cluster/init.js';
import type { JoinResult } from '../../../src/cluster/join.js';
import { KubeClient, type KubeObject } from '../../../src/kube/client.js';
import { kubeCredentialsOf } from '../../../src/kube/kubeconfig.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { clusterCliFor, type ClusterCli } from '../../support/cluster-cli.js';
import { DISTRIBUTIONS, type TestDistribution } from '../../support/distributions.js';
import { SIM_TIMING_FILE, type SimTiming } from '../../support/sim-apiserver/sim-timing.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';
import { printedBy } from '../../support/run-output.js';

/** The shortened periods every simulation on the hosts runs with. */
const TIMING: Required<SimTiming> = {
  heartbeatIntervalMs: 500,
  nodeMonitorPeriodMs: 250,
  nodeMonitorGracePeriodMs: 5_000,
  tolerationSecondMs: 20,
};
/** Bound on waiting for one thing the cluster does (the controller passes every 10 s; two busy cores). */
const EVENT_TIMEOUT_MS = 90_000;
const POLL_MS = 250;

interface Pod extends KubeObject {
  metadata: { name: string; uid: string; namespace?: string };
  spec: { nodeName: string; tolerations?: Array<{ key?: string; effect?: string; tolerationSeconds?: number }> };
  status?: { conditions?: Array<{ type: string; status: string }> };
}

interface Node extends KubeObject {
  metadata: { name: string; annotations?: Record<string, string> };
  spec?: { taints?: Array<{ key: string; effect: string }> };
  status?: { conditions?: Array<{ type: string; status: string }> };
}

describe.each(DISTRIBUTIONS)('$name', (distribution: TestDistribution) => {
  const timeout = distribution.cliTimeoutMs;
  let env: TestHosts;
  let cli: ClusterCli;
  let pkg: string;
  let adminKubeconfig: string;
  let joinCommand = '';
  let client: KubeClient;
  const controlPlane = (): TestHost => env.targets[0]!;
  const edgeNode = (): TestHost => env.targets[1]!;
  const worker = (): TestHost => env.targets[2]!;

  beforeAll(async () => {
    ensureCliBuilt('commands/agent/autonomy.js', [...distribution.sources]);
    env = await startTestHosts({ count: 3 });
    const home = mkdtempSync(join(env.dir, 'cli-home-'));
    cli = clusterCliFor(env, home, distribution.cliTimeoutMs);
    pkg = (await distribution.buildPackage(mkdtempSync(join(env.dir, 'pkg-')), { withEdgeadm: true })).file;
    adminKubeconfig = join(home, 'admin.yaml');
    for (const host of env.targets) {
      await env.run(host, `mkdir -p /etc/edgeadm-sim && echo '${JSON.stringify(TIMING)}' > ${SIM_TIMING_FILE}`);
    }
  }, 180_000);

  afterAll(async () => {
    await env?.teardown();
  });

  async function waitFor<T>(what: string, check: () => Promise<T | undefined>): Promise<T> {
    const deadline = Date.now() + EVENT_TIMEOUT_MS;
    for (;;) {
      const value = await check().catch(() => undefined);
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  const podPath = (name: string): string => `/api/v1/namespaces/default/pods/${name}`;
  const getPod = (name: string): Promise<Pod | undefined> => client.get<Pod>(podPath(name));
  const getNode = async (host: TestHost): Promise<Node> => (await client.get<Node>(`/api/v1/nodes/${host.name}`))!;
  const unreachableSeconds = (pod: Pod | undefined): number | undefined =>
    pod?.spec.tolerations?.find((t) => t.key === 'node.kubernetes.io/unreachable' && t.effect === 'NoExecute')
      ?.tolerationSeconds;
  const isTaintedUnreachable = (node: Node): boolean =>
    (node.spec?.taints ?? []).some((t) => t.key === 'node.kubernetes.io/unreachable' && t.effect === 'NoExecute');
  const readyOf = (object: { status?: { conditions?: Array<{ type: string; status: string }> } } | undefined) =>
    object?.status?.conditions?.find((c) => c.type === 'Ready')?.status;

  async function createPod(name: string, host: TestHost, owner?: string): Promise<Pod> {
    return client.create<Pod>('/api/v1/namespaces/default/pods', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name,
        namespace: 'default',
        ...(owner
          ? {
              ownerReferences: [
                { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: owner, uid: `${owner}-uid`, controller: true },
              ],
            }
          : {}),
      },
      spec: {
        nodeName: host.name,
        tolerations: [{ key: 'edgeadm.io/edge', operator: 'Exists', effect: 'NoSchedule' }],
        containers: [{ name: 'main', image: 'registry.example/app:1' }],
      },
    } as unknown as Pod);
  }

  /** Cuts a node off from the control plane (or restores it): its route to the control plane's address. */
  async function setLink(host: TestHost, isUp: boolean): Promise<void> {
    await env.run(host, `ip route ${isUp ? 'del' : 'add'} unreachable ${controlPlane().address}/32`);
  }

  it(
    'init --enable-edge runs the autonomy controller on the control plane; joins record the edge node autonomy duration',
    async () => {
      const init = cli.json<InitResult>(
        await cli.edgeadm([
          'init',
          ...cli.sshArgs(controlPlane()),
          ...distribution.initFlags,
          '--install-pkg-path',
          pkg,
          '--enable-edge',
          '--kubeconfig-out',
          adminKubeconfig,
          '--json',
        ]),
      );
      expect(init.phases.find((p) => p.path === 'edge-autonomy')?.status).toBe('changed');
      expect(cli.processesIn(controlPlane()).some((p) => p.includes('agent autonomy'))).toBe(true);
      client = new KubeClient(await kubeCredentialsOf(readFileSync(adminKubeconfig, 'utf8'), { what: 'admin' }));
      const config = await client.get<KubeObject & { data: Record<string, string> }>(
        '/api/v1/namespaces/kube-system/configmaps/edgeadm-edge',
      );
      expect(config?.data.autonomyDuration).toBe('24h0m0s');

      const token = await cli.edgeadm([
        'token',
        'create',
        '--kubeconfig',
        adminKubeconfig,
        '--print-join-command',
        '--install-pkg-path',
        pkg,
      ]);
      expect(token.exitCode, printedBy(token)).toBe(0);
      joinCommand = token.stdout.trim();
      const [, , ...rest] = joinCommand.split(' ');
      const plain = rest.filter((word) => word !== '--enable-edge');
      // The edge node and the worker join at once, as an operator's fleet join does.
      const [edgeRun, plainRun] = await Promise.all([
        cli.edgeadm(['join', ...rest, '--json', ...cli.sshArgs(edgeNode())]),
        cli.edgeadm(['join', ...plain, '--json', ...cli.sshArgs(worker())]),
      ]);
      const edge = cli.json<JoinResult>(edgeRun);
      expect(edge.phases.find((p) => p.path === 'labels')?.status).toBe('changed');
      cli.json<JoinResult>(plainRun);
      expect((await getNode(edgeNode())).metadata.annotations?.['edgeadm.io/autonomy-duration']).toBe('24h0m0s');
      expect((await getNode(worker())).metadata.annotations?.['edgeadm.io/autonomy-duration']).toBeUndefined();
    },
    3 * timeout,
  );

  it(
    "an edge node cut off for longer than Kubernetes' eviction window keeps its pods, a worker's are evicted, and nothing is recreated when the link returns",
    async () => {
      const bare = await createPod('edge-bare', edgeNode());
      const owned = await createPod('edge-owned', edgeNode(), 'web-5d8f');
      await createPod('worker-web', worker());
      // The controller gives the edge node's pods a day (whichever workload made them); the worker's keep 300 s.
      for (const name of ['edge-bare', 'edge-owned']) {
        await waitFor(`${name} tolerating 24 h`, async () =>
          unreachableSeconds(await getPod(name)) === 86_400 ? true : undefined,
        );
      }
      expect(unreachableSeconds(await getPod('worker-web'))).toBe(300);

      await setLink(edgeNode(), false);
      await setLink(worker(), false);
      try {
        await waitFor('the edge node tainted unreachable', async () =>
          isTaintedUnreachable(await getNode(edgeNode())) ? true : undefined,
        );
        // A pod bound now keeps Kubernetes' 300 s: its eviction is scheduled before any controller can act.
        await createPod('edge-late', edgeNode());
        await waitFor('the worker pod evicted', async () => ((await getPod('worker-web')) ? undefined : true));
        await waitFor('the pod bound after the cut evicted', async () =>
          (await getPod('edge-late')) ? undefined : true,
        );
        // Kubernetes' window has passed for the edge node too; its pods are still there, not Ready in the cloud.
        for (const pod of [bare, owned]) {
          const now = await getPod(pod.metadata.name);
          expect(now?.metadata.uid).toBe(pod.metadata.uid);
          expect(readyOf(now)).toBe('False');
        }
        expect(readyOf(await getNode(edgeNode()))).toBe('Unknown');
      } finally {
        await setLink(edgeNode(), true);
        await setLink(worker(), true);
      }
      await waitFor('the edge node Ready and untainted again', async () => {
        const node = await getNode(edgeNode());
        return readyOf(node) === 'True' && !isTaintedUnreachable(node) ? true : undefined;
      });
      for (const pod of [bare, owned]) {
        expect((await getPod(pod.metadata.name))?.metadata.uid).toBe(pod.metadata.uid);
      }
    },
    3 * timeout,
  );

  it(
    'join --autonomy-duration 1m: a cut longer than a minute evicts the edge node pods after all',
    async () => {
      const [, , ...rest] = joinCommand.split(' ');
      const rejoin = cli.json<JoinResult>(
        await cli.edgeadm(['join', ...rest, '--autonomy-duration', '1m', '--json', ...cli.sshArgs(edgeNode())]),
      );
      expect(rejoin.phases.find((p) => p.path === 'labels')?.status).toBe('changed');
      expect((await getNode(edgeNode())).metadata.annotations?.['edgeadm.io/autonomy-duration']).toBe('1m0s');
      await waitFor('edge-bare tolerating 60 s', async () =>
        unreachableSeconds(await getPod('edge-bare')) === 60 ? true : undefined,
      );
      await setLink(edgeNode(), false);
      try {
        await waitFor('edge-bare evicted', async () => ((await getPod('edge-bare')) ? undefined : true));
        const events = await client.list<KubeObject & { reason?: string; involvedObject?: { name?: string } }>(
          '/api/v1/namespaces/default/events',
        );
        expect(events.some((e) => e.reason === 'TaintManagerEviction' && e.involvedObject?.name === 'edge-bare')).toBe(
          true,
        );
      } finally {
        await setLink(edgeNode(), true);
      }
    },
    3 * timeout,
  );

  it('refuses --autonomy-duration without --enable-edge, and a malformed one, as validation errors (exit 3)', async () => {
    const [, , ...rest] = joinCommand.split(' ');
    const plain = rest.filter((word) => word !== '--enable-edge');
    for (const [args, code] of [
      [[...plain, '--autonomy-duration', '1h'], 'E_FLAG_MISSING'],
      [[...rest, '--autonomy-duration', '-5m'], 'E_DURATION_INVALID'],
    ] as const) {
      const run = await cli.edgeadm(['join', ...args, '--json', ...cli.sshArgs(worker())]);
      expect(run.exitCode).toBe(3);
      expect((JSON.parse(run.stdout) as { error: { code: string } }).error.code).toBe(code);
    }
  });
});
