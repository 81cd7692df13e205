/**
 * An edge node rebooted while cut off from its control plane, end to end
 * through the CLI, on two netns+sshd test hosts, once per distribution with
 * its SIMULATION (test/support/sim-k3s: not k3s; test/support/sim-kubeadm:
 * not kubeadm, the kubelet or containerd; the edge-proxy is edgeadm's real
 * one): `init --enable-edge`, `join --enable-edge`, two pods bound to the
 * edge node, then the node's route to the control plane removed and the node
 * rebooted (test/support/reboot-host.ts: every process stopped, /run and
 * /tmp cleared, the enabled services started again).
 *
 * The simulated kubelet reads its pods as a real one does
 * (test/support/sim-kubelet-pods.ts: its Node informer, then LIST+WATCH of
 * pods with `fieldSelector=spec.nodeName=<node>`) and registers as a real
 * one does (POST the Node, and on 409 GET it), so what is asserted offline
 * is the edge-proxy answering what a kubelet asks after a reboot. Its
 * "containers" live on /run, so the pods run again only if the kubelet read
 * them again.
 *
 * k3s asks more before its kubelet runs, as real k3s does: its agent
 * retrieves its configuration and certificates from its server's supervisor
 * at every start, asks `/v1-k3s/apiservers`, opens its `/v1-k3s/connect`
 * tunnel, waits for `/readyz` beside it, and starts its kubelet only after
 * the tunnel (k3s `pkg/agent/config/config.go`, Get; `pkg/agent/tunnel/tunnel.go`,
 * Setup; the simulation's order: test/support/sim-k3s/README.md). With
 * `join --enable-edge` the agent's server is the edge-proxy, which keeps
 * those answers and, while the server is unreachable, holds the node's
 * tunnel and answers `/readyz` itself (src/edge/k3s-supervisor.ts), so the
 * k3s node comes back offline as the kubeadm node does. The agent still
 * checks its token's CA hash against `/cacerts` and the proxy's serving
 * certificate against that CA: the proxy serves with the node's own kubelet
 * serving certificate, which k3s's server CA signed for 127.0.0.1.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InitResult } from '../../../src/cluster/init.js';
import type { JoinResult } from '../../../src/cluster/join.js';
import { KubeClient } from '../../../src/kube/client.js';
import { kubeCredentialsOf } from '../../../src/kube/kubeconfig.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { clusterCliFor, type ClusterCli } from '../../support/cluster-cli.js';
import { DISTRIBUTIONS, type DistributionName, type TestDistribution } from '../../support/distributions.js';
import { rebootHost } from '../../support/reboot-host.js';
import { SIM_RUNTIME_DIR, type SimRunningPod } from '../../support/sim-kubelet-pods.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';
import { printedBy } from '../../support/run-output.js';

/** How long the node's services may take to come back and settle on 2 busy cores. */
const SETTLE_TIMEOUT_MS = 90_000;
/** How often a condition is looked at. */
const POLL_MS = 500;
/** The pods the test binds to the edge node. */
const POD_NAMES = ['shop-till', 'shop-scale'] as const;

interface Pod {
  metadata: { name: string; uid: string; creationTimestamp: string; resourceVersion: string };
  status?: {
    phase?: string;
    containerStatuses?: Array<{ name: string; state?: { running?: { startedAt?: string } } }>;
  };
}

interface NodeObject {
  status?: { conditions?: Array<{ type: string; status: string; lastHeartbeatTime?: string }> };
}

/** What each distribution's node agent does offline, and where it logs. */
interface Specifics {
  /** The log of the service whose kubelet runs the pods. */
  agentLog: string;
  /** The process of that service. */
  agentProcess: string;
  /** Whether the agent's supervisor goes through the edge-proxy too (k3s; see the module comment). */
  isSupervisorThroughProxy: boolean;
  /** The serving certificate the proxy makes itself (none: it serves with one it is given), torn by a power loss. */
  ownServingCert: string | undefined;
}

const SPECIFICS: Record<DistributionName, Specifics> = {
  k3s: {
    agentLog: '/var/lib/edgeadm/services/k3s-agent.service.log',
    agentProcess: 'sim-main.ts k3s agent',
    isSupervisorThroughProxy: true,
    // The node's k3s kubelet serving certificate (k3s's own file): the proxy makes none.
    ownServingCert: undefined,
  },
  kubeadm: {
    agentLog: '/var/lib/edgeadm/services/kubelet.service.log',
    agentProcess: 'sim-main.ts kubelet',
    isSupervisorThroughProxy: false,
    ownServingCert: '/var/lib/edgeadm/edge-proxy/pki/tls.crt',
  },
};
/** What the k3s agent's tunnel logs once its websocket to the edge-proxy is up (k3s's words). */
const TUNNEL_TO_PROXY = 'Remotedialer connected to proxy https://127.0.0.1:10261/v1-k3s/connect';

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = SETTLE_TIMEOUT_MS): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

describe.each(DISTRIBUTIONS)('$name', (distribution: TestDistribution) => {
  const specifics = SPECIFICS[distribution.name];
  const timeout = distribution.testTimeoutMs;
  let env: TestHosts;
  let cli: ClusterCli;
  let adminKubeconfig: string;
  /** The edge node's routes, as they were before the cut. */
  let routes: string[] = [];
  const podsBefore = new Map<string, Pod>();
  let runningBefore: SimRunningPod[] = [];
  let runningAfterReboot: SimRunningPod[] = [];

  const controlPlane = (): TestHost => env.targets[0]!;
  const edgeNode = (): TestHost => env.targets[1]!;

  async function admin(): Promise<KubeClient> {
    return new KubeClient(await kubeCredentialsOf(readFileSync(adminKubeconfig, 'utf8'), { what: 'admin' }));
  }

  /** The edge-proxy's metrics, read on the node (it listens on the node's loopback). */
  async function proxyMetrics(): Promise<Map<string, number>> {
    const text = await env.run(edgeNode(), 'curl -fsS --max-time 5 http://127.0.0.1:10262/metrics');
    const metrics = new Map<string, number>();
    for (const line of text.split('\n')) {
      const match = /^(\S+) (\S+)$/.exec(line);
      if (match) metrics.set(match[1]!, Number(match[2]));
    }
    return metrics;
  }

  /** The pods the simulated runtime runs on the edge node now. */
  async function runningPods(): Promise<SimRunningPod[]> {
    const text = await env.run(edgeNode(), `cat ${SIM_RUNTIME_DIR}/*.json 2>/dev/null; true`);
    return (text.match(/\{[^}]*\}/g) ?? []).map((json) => JSON.parse(json) as SimRunningPod);
  }

  async function pods(): Promise<Map<string, Pod>> {
    const client = await admin();
    const found = new Map<string, Pod>();
    for (const name of POD_NAMES) {
      const pod = await client.get(`/api/v1/namespaces/default/pods/${name}`);
      if (pod) found.set(name, pod as unknown as Pod);
    }
    return found;
  }

  beforeAll(async () => {
    ensureCliBuilt('commands/join.js', [...distribution.sources]);
    env = await startTestHosts({ count: 2 });
    const home = mkdtempSync(join(env.dir, 'cli-home-'));
    cli = clusterCliFor(env, home, distribution.cliTimeoutMs);
    const pkg = (await distribution.buildPackage(mkdtempSync(join(env.dir, 'pkg-')), { withEdgeadm: true })).file;
    adminKubeconfig = join(home, 'admin.yaml');
    cli.json<InitResult>(
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
    const printed = await cli.edgeadm([
      'token',
      'create',
      '--kubeconfig',
      adminKubeconfig,
      '--print-join-command',
      '--install-pkg-path',
      pkg,
    ]);
    expect(printed.exitCode, printedBy(printed)).toBe(0);
    const [, , ...joinWords] = printed.stdout.trim().split(' ');
    const joined = cli.json<JoinResult>(
      await cli.edgeadm(['join', ...joinWords, '--json', ...cli.sshArgs(edgeNode())]),
    );
    expect(joined.node).toEqual({ name: edgeNode().name, isReady: true });
    // A workload's pods, bound to the edge node as a controller binds them (the simulated API server runs no scheduler).
    const client = await admin();
    for (const name of POD_NAMES) {
      await client.create('/api/v1/namespaces/default/pods', {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: 'default', labels: { app: 'shop' } },
        spec: {
          nodeName: edgeNode().name,
          tolerations: [{ key: 'edgeadm.io/edge', operator: 'Exists', effect: 'NoSchedule' }],
          containers: [{ name: 'app', image: 'registry.example/shop/app:1' }],
        },
      });
    }
  }, 900_000);

  afterAll(async () => {
    await env?.teardown();
  });

  it(
    'the edge node runs the pods bound to it, read through the edge-proxy, and reports them Running',
    async () => {
      runningBefore = await until('both pods running on the edge node', async () => {
        const running = await runningPods();
        return running.length === POD_NAMES.length ? running : undefined;
      });
      for (const [name, pod] of await pods()) podsBefore.set(name, pod);
      expect(runningBefore.map((p) => p.uid).sort()).toEqual(
        [...podsBefore.values()].map((p) => p.metadata.uid).sort(),
      );
      // The cloud sees what the node's kubelet reported.
      await until('the pods reported with their containers running', async () => {
        const now = await pods();
        return [...now.values()].every((pod) => pod.status?.containerStatuses?.[0]?.state?.running?.startedAt)
          ? true
          : undefined;
      });
      if (specifics.isSupervisorThroughProxy) {
        // k3s: the agent's server is the edge-proxy; its start-up exchange, then its tunnel (through the
        // proxy to the server), and only then its kubelet (see the module comment).
        expect(await env.run(edgeNode(), 'cat /etc/rancher/k3s/config.yaml')).toContain(
          'server: https://127.0.0.1:10261',
        );
        const log = await env.run(edgeNode(), `cat ${specifics.agentLog}`);
        const tunnel = log.lastIndexOf(TUNNEL_TO_PROXY);
        expect(tunnel).toBeGreaterThan(-1);
        expect(log.indexOf('Node informer synced', tunnel)).toBeGreaterThan(tunnel);
        // The supervisor addresses the agent's load balancer keeps: the proxy's, not the server's.
        expect(log).toContain('Got apiserver addresses from supervisor: [127.0.0.1:10261]');
        // The proxy serves with the node's own k3s kubelet serving certificate (edgeadm issues none),
        // which the server CA verifies for the loopback address the agent dials.
        const agentDir = '/var/lib/rancher/k3s/agent';
        // The agent wrote a new one when it restarted through the proxy; the proxy takes it up (every 30 s).
        const fingerprint = `openssl x509 -noout -fingerprint -sha256`;
        await until('the proxy serving the kubelet serving certificate the agent wrote last', async () => {
          const presented = await env.run(
            edgeNode(),
            `openssl s_client -connect 127.0.0.1:10261 -CAfile ${agentDir}/server-ca.crt -verify_ip 127.0.0.1 -verify_return_error </dev/null 2>/dev/null | ${fingerprint}`,
          );
          const own = await env.run(edgeNode(), `${fingerprint} -in ${agentDir}/serving-kubelet.crt`);
          return /^sha256 Fingerprint=/i.test(presented.trim()) && presented.trim() === own.trim() ? true : undefined;
        });
        expect(await env.run(edgeNode(), 'ls /var/lib/edgeadm/edge-proxy')).not.toContain('pki');
      }
      const metrics = await proxyMetrics();
      expect(metrics.get('edgeadm_edge_proxy_online')).toBe(1);
      // Its Node and its pods' list (and more) are in the proxy's cache.
      expect(metrics.get('edgeadm_edge_proxy_cache_entries')).toBeGreaterThanOrEqual(2);
    },
    timeout,
  );

  it(
    specifics.isSupervisorThroughProxy
      ? 'cut off and rebooted, the k3s agent starts from the edge-proxy (its start-up answers, its tunnel held, /readyz), the node registers (409) and starts its pods from the cache, with no link'
      : 'cut off and rebooted, the node registers (409), starts its pods from the cache and runs the edge-proxy, with no link',
    async () => {
      routes = (await env.run(edgeNode(), 'ip -4 -o route show')).split('\n').filter(Boolean);
      expect(routes.length).toBeGreaterThan(0);
      await env.run(edgeNode(), 'ip -4 route flush table main');
      expect(await env.run(edgeNode(), `ip -4 route get ${controlPlane().address} 2>&1 || true`)).toContain(
        'unreachable',
      );
      // The agent's log from this boot on.
      const logOffset = Number((await env.run(edgeNode(), `wc -c < ${specifics.agentLog}`)).trim());
      const reboot = await rebootHost(env, edgeNode(), {
        whileDown: async () => {
          // A reboot leaves no container running: whatever runs after it was started again.
          expect(await runningPods()).toEqual([]);
        },
      });
      expect(reboot.started).toContain('edgeadm-edge-proxy.service');
      // Ordered as systemd orders them: the proxy before the kubelet it serves.
      const agentUnit = distribution.nodeUnit.split('/').pop()!;
      expect(reboot.started.indexOf('edgeadm-edge-proxy.service')).toBeLessThan(reboot.started.indexOf(agentUnit));

      const metrics = await until('the edge-proxy serving, offline', async () => {
        const now = await proxyMetrics();
        return now.get('edgeadm_edge_proxy_online') === 0 ? now : undefined;
      });
      expect(metrics.get('edgeadm_edge_proxy_cache_entries')).toBeGreaterThanOrEqual(2);
      const processes = cli.processesIn(edgeNode()).join('\n');
      expect(processes).toContain('agent edge-proxy');
      expect(processes).toContain(specifics.agentProcess);

      runningAfterReboot = await until('both pods started again from the cache', async () => {
        const running = await runningPods();
        return running.length === POD_NAMES.length ? running : undefined;
      });
      // The same pods (UIDs), started again after the reboot.
      expect(runningAfterReboot.map((p) => p.uid).sort()).toEqual(runningBefore.map((p) => p.uid).sort());
      for (const pod of runningAfterReboot) {
        expect(pod.startedAt >= runningBefore.find((p) => p.uid === pod.uid)!.startedAt).toBe(true);
      }
      const log = await env.run(edgeNode(), `tail -c +${logOffset + 1} ${specifics.agentLog}`);
      expect(log.slice(log.indexOf('Node informer synced'))).toContain('started pod default/shop-till');
      if (specifics.isSupervisorThroughProxy) {
        // k3s, offline: /cacerts checked against the token's CA hash and the start-up answers, from the
        // proxy's cache; the tunnel held by the proxy; /readyz answered by it; then the kubelet.
        expect(log).not.toContain('token CA hash does not match');
        expect(log).not.toContain('Waiting to retrieve agent configuration');
        expect(log).not.toContain('Tunnel watches failed');
        const tunnel = log.indexOf(TUNNEL_TO_PROXY);
        expect(tunnel).toBeGreaterThan(-1);
        expect(log.indexOf('Node informer synced', tunnel)).toBeGreaterThan(tunnel);
        expect(log).toContain('apiserver ready: https://127.0.0.1:10261/readyz answered ok');
        const supervisor = await proxyMetrics();
        expect(
          supervisor.get('edgeadm_edge_proxy_requests_total{outcome="tunnel_held_offline"}'),
        ).toBeGreaterThanOrEqual(1);
        expect(supervisor.get('edgeadm_edge_proxy_requests_total{outcome="answered_by_proxy"}')).toBeGreaterThanOrEqual(
          2,
        );
      }
      // Registration: POST answered 409 by the proxy for the node it knows, then the Node read from the cache.
      expect(log).toContain(`Node ${edgeNode().name} was previously registered (409 AlreadyExists, then GET)`);
      const offline = await proxyMetrics();
      expect(offline.get('edgeadm_edge_proxy_online')).toBe(0);
      expect(offline.get('edgeadm_edge_proxy_requests_total{outcome="write_answered_offline"}')).toBeGreaterThanOrEqual(
        1,
      );
      // Node informer LIST, Node GET, pods LIST: all from the cache; no miss.
      expect(offline.get('edgeadm_edge_proxy_requests_total{outcome="cache_hit_offline"}')).toBeGreaterThanOrEqual(3);
      expect(offline.get('edgeadm_edge_proxy_requests_total{outcome="cache_miss_offline"}') ?? 0).toBe(0);
      // The kubelet's pod and Node watches are held open offline, not refused.
      await until('the kubelet watches held by the proxy', async () =>
        ((await proxyMetrics()).get('edgeadm_edge_proxy_held_watches') ?? 0) >= 2 ? true : undefined,
      );
      // Status writes are refused offline, and retried by the kubelet.
      expect(offline.get('edgeadm_edge_proxy_requests_total{outcome="write_refused_offline"}')).toBeGreaterThanOrEqual(
        1,
      );
    },
    timeout,
  );

  it(
    'when the link returns nothing is recreated and the cloud catches up: the Node Ready, the pods the same with the new status',
    async () => {
      const restoredAt = new Date(Date.now() - 1_000).toISOString().replace(/\.\d+Z$/, 'Z');
      for (const route of routes) await env.run(edgeNode(), `ip -4 route add ${route.replace(/\\\s*/g, ' ')}`);
      await until('the edge-proxy back online', async () =>
        (await proxyMetrics()).get('edgeadm_edge_proxy_online') === 1 ? true : undefined,
      );
      const client = await admin();
      await until(
        'a heartbeat after the link returned',
        async () => {
          const node = (await client.get(`/api/v1/nodes/${edgeNode().name}`)) as NodeObject | undefined;
          const ready = node?.status?.conditions?.find((c) => c.type === 'Ready');
          return ready?.status === 'True' && (ready.lastHeartbeatTime ?? '') >= restoredAt ? true : undefined;
        },
        SETTLE_TIMEOUT_MS,
      );
      const running = await until('both pods running', async () => {
        const now = await runningPods();
        return now.length === POD_NAMES.length ? now : undefined;
      });
      // Not started a third time: the watch resumed, and what the kubelet already ran stays.
      expect(running).toEqual(expect.arrayContaining(runningAfterReboot));
      if (specifics.isSupervisorThroughProxy) {
        // The proxy let go of the tunnel it held; the agent opened it again, through the proxy to the server.
        const log = await env.run(edgeNode(), `cat ${specifics.agentLog}`);
        expect(log.split(TUNNEL_TO_PROXY).length).toBeGreaterThanOrEqual(4);
      }
      // The cloud has the status written after the reboot, for the same pods.
      const after = await until('the pods reported with their start after the reboot', async () => {
        const now = await pods();
        return [...now.values()].every(
          (pod) =>
            pod.status?.containerStatuses?.[0]?.state?.running?.startedAt ===
            running.find((r) => r.uid === pod.metadata.uid)?.startedAt,
        )
          ? now
          : undefined;
      });
      for (const [name, before] of podsBefore) {
        const pod = after.get(name)!;
        expect(pod.metadata.uid).toBe(before.metadata.uid);
        expect(pod.metadata.creationTimestamp).toBe(before.metadata.creationTimestamp);
      }
    },
    timeout,
  );

  it(
    'after a power loss that tore its files, rebooted with its network down, the edge-proxy starts offline, serves nothing torn, and the node recovers when the network comes up',
    async () => {
      const cacheDir = '/var/lib/edgeadm/edge-proxy';
      const logOffset = Number((await env.run(edgeNode(), `wc -c < ${specifics.agentLog}`)).trim());
      await rebootHost(env, edgeNode(), {
        kind: 'power-loss',
        whileDown: async () => {
          await env.run(
            edgeNode(),
            [
              // The network is not up yet when the services start (superedge#418).
              'ip link set eth0 down',
              // What a power loss on storage that does not honour fsync can leave: an empty serving
              // certificate (of the proxy's own making), a torn entry (the kubelet's pod list), a
              // temporary of a write in flight.
              ...(specifics.ownServingCert ? [`: > ${specifics.ownServingCert}`] : []),
              `entry=$(grep -l 'spec.nodeName' ${cacheDir}/entries/* | head -1)`,
              'test -n "$entry"',
              'truncate -s $(( $(stat -c %s "$entry") / 2 )) "$entry"',
              `echo half > ${cacheDir}/entries/${'0'.repeat(64)}.4242.tmp`,
            ].join('\n'),
          );
        },
      });
      const metrics = await until('the edge-proxy serving, offline', async () => {
        const now = await proxyMetrics();
        return now.get('edgeadm_edge_proxy_online') === 0 ? now : undefined;
      });
      expect(metrics.get('edgeadm_edge_proxy_cache_entries')).toBeGreaterThanOrEqual(2);
      // A new serving certificate, the temporary gone.
      if (specifics.ownServingCert) {
        expect(Number((await env.run(edgeNode(), `stat -c %s ${specifics.ownServingCert}`)).trim())).toBeGreaterThan(0);
      }
      expect(await env.run(edgeNode(), `ls ${cacheDir}/entries`)).not.toContain('.tmp');
      {
        // The kubelet reaches the proxy (TLS with the new certificate), registers, and asks for its pods:
        // the torn list is dropped, never served, so no pod runs until the link returns.
        await until('the torn entry dropped when the kubelet read it', async () =>
          ((await proxyMetrics()).get('edgeadm_edge_proxy_cache_corrupt_dropped_total') ?? 0) >= 1 ? true : undefined,
        );
        const log = await env.run(edgeNode(), `tail -c +${logOffset + 1} ${specifics.agentLog}`);
        expect(log).toContain(`Node ${edgeNode().name} was previously registered (409 AlreadyExists, then GET)`);
        expect(log).toContain('Node informer synced');
        expect(log).not.toContain('started pod');
      }
      expect(await runningPods()).toEqual([]);

      await env.run(edgeNode(), 'ip link set eth0 up');
      await until('the edge-proxy back online', async () =>
        (await proxyMetrics()).get('edgeadm_edge_proxy_online') === 1 ? true : undefined,
      );
      const running = await until('both pods running again', async () => {
        const now = await runningPods();
        return now.length === POD_NAMES.length ? now : undefined;
      });
      expect(running.map((p) => p.uid).sort()).toEqual([...podsBefore.values()].map((p) => p.metadata.uid).sort());
      const now = await pods();
      for (const [name, before] of podsBefore) expect(now.get(name)?.metadata.uid).toBe(before.metadata.uid);
    },
    timeout,
  );
});
