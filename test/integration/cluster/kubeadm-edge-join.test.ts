/**
 * Edge autonomy with `--distribution kubeadm`, end to end through the CLI,
 * on two netns+sshd test hosts with the SIMULATED kubeadm distribution
 * (test/support/sim-kubeadm: stand-in kubeadm, kubelet and containerd; not
 * Kubernetes): `init --enable-edge` applies the edge addons and prints a
 * join command with `--distribution kubeadm --enable-edge`, as `token create
 * --print-join-command` does; `join --enable-edge` (from that printed
 * command) installs the real edge-proxy (this tree's edgeadm, shipped in the
 * install package as bin/edgeadm), adds edgeadm's kubelet drop-in, and the
 * node's kubelet (the simulation's, which honours `--kubeconfig` from the
 * unit's drop-ins as systemd would expand it) then reaches the API server
 * through the proxy — shown by the proxy's own metrics and cache; the Node
 * registers with the edge label and taint (kubeadm's
 * nodeRegistration.taints); reset removes it all and leaves the file trees
 * as before.
 *
 * The hosts have no systemd, so the harness asks for the direct service
 * manager explicitly (EDGEADM_SERVICE_MANAGER=direct).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAll } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InitResult } from '../../../src/cluster/init.js';
import type { JoinResult } from '../../../src/cluster/join.js';
import type { ResetResult } from '../../../src/cluster/reset.js';
import { KubeClient } from '../../../src/kube/client.js';
import { kubeCredentialsOf } from '../../../src/kube/kubeconfig.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import type { CliResult } from '../../support/cli.js';
import { clusterCliFor, type ClusterCli } from '../../support/cluster-cli.js';
import { buildSimKubeadmPackage } from '../../support/sim-kubeadm/fixture.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';

/** A CLI run may start several simulated services and the edge-proxy and wait for them on 2 busy cores. */
const CLI_TIMEOUT_MS = 240_000;
/** How long the restarted kubelet may take to reach the API server through the proxy on 2 busy cores. */
const KUBELET_THROUGH_PROXY_TIMEOUT_MS = 60_000;
const EDGE_DROP_IN = '/etc/systemd/system/kubelet.service.d/20-edgeadm-edge-proxy.conf';

let env: TestHosts;
let cli: ClusterCli;
let home: string;
let pkg: string;
let adminKubeconfig: string;
let initJoinCommand = '';
let tokenJoinCommand = '';
const before = new Map<string, string>();

beforeAll(async () => {
  ensureCliBuilt('commands/join.js', ['src', 'test/support/sim-kubeadm']);
  env = await startTestHosts({ count: 2 });
  home = mkdtempSync(join(env.dir, 'cli-home-'));
  cli = clusterCliFor(env, home, CLI_TIMEOUT_MS);
  pkg = (await buildSimKubeadmPackage(mkdtempSync(join(env.dir, 'pkg-')), { withEdgeadm: true })).file;
  adminKubeconfig = join(home, 'admin.yaml');
  for (const host of env.targets) before.set(host.name, await listing(host));
}, 180_000);

afterAll(async () => {
  await env?.teardown();
});

const edgeadm = (args: string[]): Promise<CliResult> => cli.edgeadm(args);
/** /var/log/edgeadm holds the edge-proxy's log; /var is per host. */
const listing = (host: TestHost): Promise<string> => cli.listing(host, ['/var/log/edgeadm']);
const json = <T>(run: CliResult): T => cli.json<T>(run);
const controlPlane = (): TestHost => env.targets[0]!;
const edgeNode = (): TestHost => env.targets[1]!;

async function adminClient(): Promise<KubeClient> {
  return new KubeClient(await kubeCredentialsOf(readFileSync(adminKubeconfig, 'utf8'), { what: 'admin' }));
}

/** The edge-proxy's Prometheus metrics, read on the node itself (it listens on the node's loopback). */
async function proxyMetrics(host: TestHost): Promise<Map<string, number>> {
  const text = await env.run(host, 'curl -fsS --max-time 5 http://127.0.0.1:10262/metrics');
  const metrics = new Map<string, number>();
  for (const line of text.split('\n')) {
    const match = /^(\S+) (\S+)$/.exec(line);
    if (match) metrics.set(match[1]!, Number(match[2]));
  }
  return metrics;
}

/** The proxy's metrics once it has cached something (the kubelet's Node), or as they are at the deadline. */
async function metricsOnceKubeletThrough(host: TestHost): Promise<Map<string, number>> {
  const deadline = Date.now() + KUBELET_THROUGH_PROXY_TIMEOUT_MS;
  for (;;) {
    const metrics = await proxyMetrics(host);
    if ((metrics.get('edgeadm_edge_proxy_cache_entries') ?? 0) > 0 || Date.now() > deadline) return metrics;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}

/** The join command `token create --print-join-command` printed, as the operator runs it (plus the package). */
function joinArgs(): string[] {
  const [edgeadmWord, joinWord, ...rest] = tokenJoinCommand.split(' ');
  expect(`${edgeadmWord} ${joinWord}`).toBe('edgeadm join');
  return ['join', ...rest, '--install-pkg-path', pkg, '--json', ...cli.sshArgs(edgeNode())];
}

describe('edgeadm init and join --enable-edge with --distribution kubeadm (simulated kubeadm, real edge-proxy)', () => {
  it(
    'init --enable-edge applies the edge addons and prints a join command with --distribution kubeadm --enable-edge',
    async () => {
      const result = json<InitResult>(
        await edgeadm([
          'init',
          ...cli.sshArgs(controlPlane()),
          '--distribution',
          'kubeadm',
          '--install-pkg-path',
          pkg,
          '--enable-edge',
          '--kubeconfig-out',
          adminKubeconfig,
          '--json',
        ]),
      );
      expect(result.phases.find((p) => p.path === 'edge-addons')?.status).toBe('changed');
      initJoinCommand = result.joinCommand!;
      expect(initJoinCommand).toMatch(
        /^edgeadm join \S+:6443 --token \S+ --discovery-token-ca-cert-hash sha256:[0-9a-f]{64} --install-pkg-path \S+ --distribution kubeadm --enable-edge$/,
      );
      const config = await (
        await adminClient()
      ).get<{ data: Record<string, string> }>('/api/v1/namespaces/kube-system/configmaps/edgeadm-edge');
      expect(config?.data.nodeTaints).toBe('edgeadm.io/edge=true:NoSchedule');
    },
    CLI_TIMEOUT_MS,
  );

  it(
    'token create --print-join-command tells from the cluster that it is kubeadm and edge',
    async () => {
      const run = await edgeadm(['token', 'create', '--kubeconfig', adminKubeconfig, '--print-join-command']);
      expect(run.exitCode, run.stderr).toBe(0);
      tokenJoinCommand = run.stdout.trim();
      expect(tokenJoinCommand).toMatch(
        /^edgeadm join \S+:6443 --token [a-z0-9]{6}\.[a-z0-9]{16} --discovery-token-ca-cert-hash sha256:[0-9a-f]{64} --distribution kubeadm --enable-edge$/,
      );
      // The same cluster and CA as init printed; a token of its own.
      const words = initJoinCommand.split(' ');
      expect(tokenJoinCommand).toContain(`edgeadm join ${words[2]} `);
      expect(tokenJoinCommand).toContain(words[words.indexOf('--discovery-token-ca-cert-hash') + 1]);
    },
    CLI_TIMEOUT_MS,
  );

  it(
    'join --enable-edge --dry-run names the kubelet drop-in and changes nothing',
    async () => {
      const result = json<JoinResult>(await edgeadm([...joinArgs(), '--dry-run']));
      const plan = result.plan!.join('\n');
      expect(plan).toMatch(/\[package\] .*install \/usr\/local\/bin\/edgeadm/);
      expect(plan).toContain('[edge] Would start edgeadm-edge-proxy.service');
      expect(plan).toContain('[edge] Would write /etc/edgeadm/edge-proxy/kubelet.kubeconfig');
      expect(plan).toContain(`in ${EDGE_DROP_IN}) and restart kubelet.service`);
      expect(await listing(edgeNode())).toBe(before.get(edgeNode().name));
    },
    CLI_TIMEOUT_MS,
  );

  it(
    "join --enable-edge runs the edge-proxy on the node and the node's kubelet goes through it",
    async () => {
      const result = json<JoinResult>(await edgeadm(joinArgs()));
      expect(result.phases.map((p) => `${p.path}:${p.status}`)).toEqual([
        'preflight:unchanged',
        'discovery:unchanged',
        'package:changed',
        'runtime:changed',
        'node-join:changed',
        'control-plane-join:skipped',
        'edge:changed',
        'wait-ready:unchanged',
        'labels:unchanged',
      ]);
      expect(result.node).toEqual({ name: edgeNode().name, isReady: true });

      // The proxy runs on the node, from the edgeadm the package installed, upstream the kubelet's kubeadm identity.
      const proxy = cli.processesIn(edgeNode()).find((p) => p.includes('agent edge-proxy'));
      expect(proxy).toContain('--kubeconfig /etc/kubernetes/kubelet.conf');
      // kubeadm joined the node with the edge taint, and the kubelet got it as kubeadm passes it.
      const joinConfig = loadAll(await env.run(edgeNode(), 'cat /etc/kubernetes/edgeadm-kubeadm-join.yaml')) as Array<{
        nodeRegistration?: Record<string, unknown>;
      }>;
      expect(joinConfig[0]?.nodeRegistration?.taints).toEqual([
        { key: 'edgeadm.io/edge', value: 'true', effect: 'NoSchedule' },
      ]);
      expect(await env.run(edgeNode(), 'cat /var/lib/kubelet/kubeadm-flags.env')).toContain(
        '--register-with-taints=edgeadm.io/edge=true:NoSchedule',
      );
      // The kubelet is sent to the proxy by edgeadm's own drop-in, not by a file kubeadm rewrites.
      expect(await env.run(edgeNode(), `cat ${EDGE_DROP_IN}`)).toContain(
        'Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/edgeadm/edge-proxy/kubelet.kubeconfig"',
      );
      expect(await env.run(edgeNode(), 'cat /var/lib/kubelet/kubeadm-flags.env')).not.toContain('edge-proxy');

      // The node's traffic goes through it: the proxy forwarded the restarted kubelet's requests and cached its Node.
      const metrics = await metricsOnceKubeletThrough(edgeNode());
      expect(metrics.get('edgeadm_edge_proxy_online')).toBe(1);
      expect(metrics.get('edgeadm_edge_proxy_requests_total{outcome="forwarded"}')).toBeGreaterThanOrEqual(3);
      expect(metrics.get('edgeadm_edge_proxy_cache_entries')).toBeGreaterThanOrEqual(1);
      const kubeletLog = await env.run(edgeNode(), 'cat /var/lib/edgeadm/services/kubelet.service.log');
      expect(kubeletLog).toContain(
        'using --kubeconfig /etc/edgeadm/edge-proxy/kubelet.kubeconfig: https://127.0.0.1:10261',
      );

      // The Node carries the edge label and taint.
      const node = await (
        await adminClient()
      ).get<{
        metadata: { labels: Record<string, string> };
        spec?: { taints?: Array<{ key: string; value?: string; effect: string }> };
      }>(`/api/v1/nodes/${edgeNode().name}`);
      expect(node?.metadata.labels['edgeadm.io/edge']).toBe('true');
      expect(node?.spec?.taints).toEqual([{ key: 'edgeadm.io/edge', value: 'true', effect: 'NoSchedule' }]);
    },
    CLI_TIMEOUT_MS,
  );

  it(
    'a re-run of join --enable-edge changes nothing',
    async () => {
      const result = json<JoinResult>(await edgeadm(joinArgs()));
      expect(result.isChanged).toBe(false);
      expect(result.phases.find((p) => p.path === 'edge')?.status).toBe('unchanged');
      expect(result.phases.find((p) => p.path === 'node-join')?.status).toBe('unchanged');
    },
    CLI_TIMEOUT_MS,
  );

  it(
    'reset removes the edge-proxy and the drop-in with everything else and leaves both file trees as before',
    async () => {
      for (const host of [edgeNode(), controlPlane()]) {
        const result = json<ResetResult>(await edgeadm(['reset', ...cli.sshArgs(host), '--force', '--json']));
        expect(result.hadState).toBe(true);
        expect(await listing(host)).toBe(before.get(host.name));
        const processes = cli.processesIn(host).join('\n');
        expect(processes).not.toContain('agent edge-proxy');
        expect(processes).not.toContain('sim-main.ts');
      }
    },
    CLI_TIMEOUT_MS,
  );
});
