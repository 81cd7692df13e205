/**
 * Edge autonomy end to end, through the CLI, on two netns+sshd test hosts
 * with the SIMULATED k3s (test/support/sim-k3s, not k3s): `init
 * --enable-edge` applies the edge addon manifests; `join --enable-edge`
 * installs the real edge-proxy (this tree's edgeadm, shipped in the install
 * package as bin/edgeadm) on the node, and the node's kubelet (the
 * simulation's, which honours k3s's `kubelet-arg: kubeconfig=…` as k3s
 * does) then reaches the API server through it — shown by the proxy's own
 * metrics and cache; reset removes it all and leaves the file trees as
 * before.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InitResult } from '../../../src/cluster/init.js';
import type { JoinResult } from '../../../src/cluster/join.js';
import type { ResetResult } from '../../../src/cluster/reset.js';
import { KubeClient } from '../../../src/kube/client.js';
import { kubeCredentialsOf } from '../../../src/kube/kubeconfig.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import type { CliResult } from '../../support/cli.js';
import { clusterCliFor, type ClusterCli } from '../../support/cluster-cli.js';
import { buildSimK3sPackage } from '../../support/sim-k3s/fixture.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';

/** A CLI run may start a simulated server and the edge-proxy and wait for them on 2 busy cores. */
const CLI_TIMEOUT_MS = 180_000;

let env: TestHosts;
let cli: ClusterCli;
let home: string;
let pkg: string;
let pkgWithoutEdgeadm: string;
let adminKubeconfig: string;
let joinCommand = '';
const before = new Map<string, string>();

beforeAll(async () => {
  ensureCliBuilt('commands/join.js', ['src']);
  env = await startTestHosts({ count: 2 });
  home = mkdtempSync(join(env.dir, 'cli-home-'));
  cli = clusterCliFor(env, home, CLI_TIMEOUT_MS);
  pkg = (await buildSimK3sPackage(mkdtempSync(join(env.dir, 'pkg-')), { withEdgeadm: true })).file;
  pkgWithoutEdgeadm = (await buildSimK3sPackage(mkdtempSync(join(env.dir, 'pkg-')))).file;
  adminKubeconfig = join(home, 'admin.yaml');
  for (const host of env.targets) before.set(host.name, await listing(host));
}, 180_000);

const edgeadm = (args: string[]): Promise<CliResult> => cli.edgeadm(args);
const sshArgs = (host: TestHost): string[] => cli.sshArgs(host);
/** /var/log/edgeadm holds the edge-proxy's log; /var is per host. */
const listing = (host: TestHost): Promise<string> => cli.listing(host, ['/var/log/edgeadm']);
const processesIn = (host: TestHost): string[] => cli.processesIn(host);
const json = <T>(run: CliResult): T => cli.json<T>(run);

afterAll(async () => {
  await env?.teardown();
});

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

/** How long the restarted agent may take to reach the API server through the proxy on 2 busy cores. */
const KUBELET_THROUGH_PROXY_TIMEOUT_MS = 60_000;

/** The proxy's metrics once it has cached something (the kubelet's Node), or as they are at the deadline. */
async function metricsOnceKubeletThrough(host: TestHost): Promise<Map<string, number>> {
  const deadline = Date.now() + KUBELET_THROUGH_PROXY_TIMEOUT_MS;
  for (;;) {
    const metrics = await proxyMetrics(host);
    if ((metrics.get('edgeadm_edge_proxy_cache_entries') ?? 0) > 0 || Date.now() > deadline) return metrics;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}

async function adminClient(): Promise<KubeClient> {
  return new KubeClient(await kubeCredentialsOf(readFileSync(adminKubeconfig, 'utf8'), { what: 'admin' }));
}

const controlPlane = (): TestHost => env.targets[0]!;
const edgeNode = (): TestHost => env.targets[1]!;

function joinArgs(packagePath: string): string[] {
  const words = joinCommand.split(' ');
  const at = (flag: string) => words[words.indexOf(flag) + 1]!;
  return [
    'join',
    words[2]!,
    '--token',
    at('--token'),
    '--discovery-token-ca-cert-hash',
    at('--discovery-token-ca-cert-hash'),
    '--install-pkg-path',
    packagePath,
    '--enable-edge',
    '--json',
    ...sshArgs(edgeNode()),
  ];
}

describe('edgeadm init and join --enable-edge on test hosts (simulated k3s, real edge-proxy)', () => {
  it(
    'init --enable-edge applies the edge addon manifests with server-side apply',
    async () => {
      const result = json<InitResult>(
        await edgeadm([
          'init',
          ...sshArgs(controlPlane()),
          '--install-pkg-path',
          pkg,
          '--enable-edge',
          '--kubeconfig-out',
          adminKubeconfig,
          '--json',
        ]),
      );
      expect(result.phases.find((p) => p.path === 'edge-addons')?.status).toBe('changed');
      joinCommand = result.joinCommand!;
      // Nodes of an edge cluster join as edge nodes; k3s is the default distribution and is not named.
      expect(joinCommand).toMatch(/ --install-pkg-path \S+ --enable-edge$/);
      expect(joinCommand).not.toContain('--distribution');
      const client = await adminClient();
      const config = await client.get<{ data: Record<string, string>; metadata: { managedFields?: unknown[] } }>(
        '/api/v1/namespaces/kube-system/configmaps/edgeadm-edge',
      );
      expect(config?.data).toEqual({
        nodeLabels: 'edgeadm.io/edge=true',
        nodeTaints: 'edgeadm.io/edge=true:NoSchedule',
        proxyCacheMaxBytes: '256Mi',
        proxyCacheMaxEntries: '10000',
      });
      const binding = await client.get<{ subjects: Array<{ name: string }> }>(
        '/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings/edgeadm:edge-join',
      );
      expect(binding?.subjects.map((s) => s.name)).toEqual(['system:bootstrappers', 'system:nodes']);
    },
    CLI_TIMEOUT_MS,
  );

  it(
    'token create --print-join-command on the edge cluster adds --enable-edge (and no --distribution: k3s)',
    async () => {
      const run = await edgeadm(['token', 'create', '--kubeconfig', adminKubeconfig, '--print-join-command']);
      expect(run.exitCode, run.stderr).toBe(0);
      expect(run.stdout.trim()).toMatch(
        /^edgeadm join \S+:6443 --token [a-z0-9]{6}\.[a-z0-9]{16} --discovery-token-ca-cert-hash sha256:[0-9a-f]{64} --enable-edge$/,
      );
    },
    CLI_TIMEOUT_MS,
  );

  it(
    'join --enable-edge with a package without bin/edgeadm stops before anything reaches the host',
    async () => {
      const run = await edgeadm(joinArgs(pkgWithoutEdgeadm));
      expect(run.exitCode).toBe(3);
      const error = (JSON.parse(run.stdout) as { error: { code: string; message: string } }).error;
      expect(error.code).toBe('E_EDGE_NO_BINARY');
      expect(error.message).toContain('has no bin/edgeadm');
      expect(await listing(edgeNode())).toBe(before.get(edgeNode().name));
    },
    CLI_TIMEOUT_MS,
  );

  it(
    'join --enable-edge --dry-run prints the edge phase and changes nothing',
    async () => {
      const result = json<JoinResult>(await edgeadm([...joinArgs(pkg), '--dry-run']));
      const plan = result.plan!.join('\n');
      expect(plan).toContain('[package] ');
      expect(plan).toMatch(/\[package\] .*install \/usr\/local\/bin\/edgeadm/);
      expect(plan).toContain('[edge] Would start edgeadm-edge-proxy.service');
      expect(plan).toContain('[edge] Would write /etc/edgeadm/edge-proxy/kubelet.kubeconfig');
      expect(await listing(edgeNode())).toBe(before.get(edgeNode().name));
    },
    CLI_TIMEOUT_MS,
  );

  it(
    "join --enable-edge runs the edge-proxy on the node and the node's kubelet goes through it",
    async () => {
      const result = json<JoinResult>(await edgeadm(joinArgs(pkg)));
      expect(result.phases.map((p) => `${p.path}:${p.status}`)).toEqual([
        'preflight:unchanged',
        'discovery:unchanged',
        'package:changed',
        'runtime:skipped',
        'node-join:changed',
        'control-plane-join:skipped',
        'edge:changed',
        'wait-ready:unchanged',
        'labels:unchanged',
      ]);
      expect(result.node).toEqual({ name: edgeNode().name, isReady: true });

      // The proxy runs on the node, from the edgeadm the package installed.
      expect(processesIn(edgeNode()).some((p) => p.includes('agent edge-proxy'))).toBe(true);
      // The agent is configured the way k3s reads it.
      const agentConfig = load(await env.run(edgeNode(), 'cat /etc/rancher/k3s/config.yaml')) as Record<
        string,
        unknown
      >;
      expect(agentConfig['kubelet-arg']).toEqual(['kubeconfig=/etc/edgeadm/edge-proxy/kubelet.kubeconfig']);
      expect(agentConfig['node-taint']).toEqual(['edgeadm.io/edge=true:NoSchedule']);

      // The node's traffic goes through it: the proxy forwarded the restarted kubelet's requests and cached its Node.
      const metrics = await metricsOnceKubeletThrough(edgeNode());
      expect(metrics.get('edgeadm_edge_proxy_online')).toBe(1);
      expect(metrics.get('edgeadm_edge_proxy_requests_total{outcome="forwarded"}')).toBeGreaterThanOrEqual(3);
      expect(metrics.get('edgeadm_edge_proxy_cache_entries')).toBeGreaterThanOrEqual(1);

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
      const result = json<JoinResult>(await edgeadm(joinArgs(pkg)));
      expect(result.isChanged).toBe(false);
      expect(result.phases.find((p) => p.path === 'edge')?.status).toBe('unchanged');
    },
    CLI_TIMEOUT_MS,
  );

  it(
    'reset removes the edge-proxy with everything else and leaves both file trees as before',
    async () => {
      for (const host of [edgeNode(), controlPlane()]) {
        // The simulated k3s runs as `node …/sim-main.ts k3s …`: it is there before the reset, gone after.
        expect(processesIn(host).join('\n')).toContain('sim-main.ts');
        const result = json<ResetResult>(await edgeadm(['reset', ...sshArgs(host), '--force', '--json']));
        expect(result.hadState).toBe(true);
        expect(await listing(host)).toBe(before.get(host.name));
        const processes = processesIn(host).join('\n');
        expect(processes).not.toContain('agent edge-proxy');
        expect(processes).not.toContain('sim-main.ts');
      }
    },
    CLI_TIMEOUT_MS,
  );
});
