/**
 * Edge autonomy end to end, through the CLI, on two netns+sshd test hosts,
 * once for each distribution with its SIMULATION (test/support/sim-k3s: not
 * k3s; test/support/sim-kubeadm: stand-in kubeadm, kubelet and containerd,
 * not Kubernetes): `init --enable-edge` applies the edge addon manifests and
 * prints a join command with `--enable-edge` (and `--distribution kubeadm`
 * for kubeadm), as `token create --print-join-command` does; `join
 * --enable-edge` (from that printed command) installs the real edge-proxy
 * (this tree's edgeadm, shipped in the install package as bin/edgeadm) on
 * the node, and the node's kubelet then reaches the API server through it —
 * shown by the proxy's own metrics and cache; the Node registers with the
 * edge label and taint; reset removes it all and leaves the file trees as
 * before.
 *
 * How the kubelet is sent to the proxy is the distribution's own: the
 * simulated k3s honours `kubelet-arg: kubeconfig=…` in its config file as
 * k3s does; for kubeadm, edgeadm adds a kubelet drop-in and the simulated
 * kubelet honours `--kubeconfig` from the unit's drop-ins as systemd would
 * expand it. Those checks are in {@link SPECIFICS}.
 *
 * The hosts have no systemd, so the harness asks for the direct service
 * manager explicitly (EDGEADM_SERVICE_MANAGER=direct).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load, loadAll } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InitResult } from '../../../src/cluster/init.js';
import type { JoinResult } from '../../../src/cluster/join.js';
import type { ResetResult } from '../../../src/cluster/reset.js';
import { KubeClient } from '../../../src/kube/client.js';
import { kubeCredentialsOf } from '../../../src/kube/kubeconfig.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import type { CliResult } from '../../support/cli.js';
import { clusterCliFor, type ClusterCli } from '../../support/cluster-cli.js';
import { DISTRIBUTIONS, type DistributionName, type TestDistribution } from '../../support/distributions.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';
import { printedBy } from '../../support/run-output.js';

/** How long the restarted kubelet may take to reach the API server through the proxy on 2 busy cores. */
const KUBELET_THROUGH_PROXY_TIMEOUT_MS = 60_000;
/** edgeadm's kubelet drop-in on a kubeadm node. */
const EDGE_DROP_IN = '/etc/systemd/system/kubelet.service.d/20-edgeadm-edge-proxy.conf';

/** What each distribution does its own way, checked inside the shared tests. */
interface Specifics {
  /** Test titles that have always differed between the distributions. */
  titles: { suite: string; init: string; token: string; dryRun: string; reset: string };
  /** The join command init printed. */
  expectInitJoinCommand(joinCommand: string): void;
  /** The plan of join --enable-edge --dry-run. */
  expectJoinPlan(plan: string): void;
  /** The edge node after join --enable-edge: how its kubelet is sent to the proxy. */
  expectEdgeNode(env: TestHosts, cli: ClusterCli, edgeNode: TestHost): Promise<void>;
  /** What the node's kubelet itself says once its requests went through the proxy. */
  expectKubeletThroughProxy(env: TestHosts, edgeNode: TestHost): Promise<void>;
}

const SPECIFICS: Record<DistributionName, Specifics> = {
  k3s: {
    titles: {
      suite: 'edgeadm init and join --enable-edge on test hosts (simulated k3s, real edge-proxy)',
      init: 'init --enable-edge applies the edge addon manifests with server-side apply',
      token: 'token create --print-join-command on the edge cluster adds --enable-edge (and no --distribution: k3s)',
      dryRun: 'join --enable-edge --dry-run prints the edge phase and changes nothing',
      reset: 'reset removes the edge-proxy with everything else and leaves both file trees as before',
    },
    expectInitJoinCommand(joinCommand) {
      // Nodes of an edge cluster join as edge nodes; k3s is the default distribution and is not named.
      expect(joinCommand).toMatch(/ --install-pkg-path \S+ --enable-edge$/);
      expect(joinCommand).not.toContain('--distribution');
    },
    expectJoinPlan() {},
    async expectEdgeNode(env, _cli, edgeNode) {
      // The agent is configured the way k3s reads it.
      const agentConfig = load(await env.run(edgeNode, 'cat /etc/rancher/k3s/config.yaml')) as Record<string, unknown>;
      expect(agentConfig['kubelet-arg']).toEqual(['kubeconfig=/etc/edgeadm/edge-proxy/kubelet.kubeconfig']);
      expect(agentConfig['node-taint']).toEqual(['edgeadm.io/edge=true:NoSchedule']);
    },
    async expectKubeletThroughProxy() {},
  },
  kubeadm: {
    titles: {
      suite: 'edgeadm init and join --enable-edge with --distribution kubeadm (simulated kubeadm, real edge-proxy)',
      init: 'init --enable-edge applies the edge addons and prints a join command with --distribution kubeadm --enable-edge',
      token: 'token create --print-join-command tells from the cluster that it is kubeadm and edge',
      dryRun: 'join --enable-edge --dry-run names the kubelet drop-in and changes nothing',
      reset: 'reset removes the edge-proxy and the drop-in with everything else and leaves both file trees as before',
    },
    expectInitJoinCommand(joinCommand) {
      expect(joinCommand).toMatch(
        /^edgeadm join \S+:6443 --token \S+ --discovery-token-ca-cert-hash sha256:[0-9a-f]{64} --install-pkg-path \S+ --distribution kubeadm --enable-edge$/,
      );
    },
    expectJoinPlan(plan) {
      expect(plan).toContain(`in ${EDGE_DROP_IN}) and restart kubelet.service`);
    },
    async expectEdgeNode(env, cli, edgeNode) {
      // The proxy's upstream is the kubelet's kubeadm identity.
      const proxy = cli.processesIn(edgeNode).find((p) => p.includes('agent edge-proxy'));
      expect(proxy).toContain('--kubeconfig /etc/kubernetes/kubelet.conf');
      // kubeadm joined the node with the edge taint, and the kubelet got it as kubeadm passes it.
      const joinConfig = loadAll(await env.run(edgeNode, 'cat /etc/kubernetes/edgeadm-kubeadm-join.yaml')) as Array<{
        nodeRegistration?: Record<string, unknown>;
      }>;
      expect(joinConfig[0]?.nodeRegistration?.taints).toEqual([
        { key: 'edgeadm.io/edge', value: 'true', effect: 'NoSchedule' },
      ]);
      expect(await env.run(edgeNode, 'cat /var/lib/kubelet/kubeadm-flags.env')).toContain(
        '--register-with-taints=edgeadm.io/edge=true:NoSchedule',
      );
      // The kubelet is sent to the proxy by edgeadm's own drop-in, not by a file kubeadm rewrites.
      expect(await env.run(edgeNode, `cat ${EDGE_DROP_IN}`)).toContain(
        'Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/edgeadm/edge-proxy/kubelet.kubeconfig"',
      );
      expect(await env.run(edgeNode, 'cat /var/lib/kubelet/kubeadm-flags.env')).not.toContain('edge-proxy');
    },
    async expectKubeletThroughProxy(env, edgeNode) {
      const kubeletLog = await env.run(edgeNode, 'cat /var/lib/edgeadm/services/kubelet.service.log');
      expect(kubeletLog).toContain(
        'using --kubeconfig /etc/edgeadm/edge-proxy/kubelet.kubeconfig: https://127.0.0.1:10261',
      );
    },
  },
};

describe.each(DISTRIBUTIONS)('$name', (distribution: TestDistribution) => {
  const specifics = SPECIFICS[distribution.name];
  const timeout = distribution.cliTimeoutMs;

  let env: TestHosts;
  let cli: ClusterCli;
  let home: string;
  let pkg: string;
  let pkgWithoutEdgeadm: string;
  let adminKubeconfig: string;
  let initJoinCommand = '';
  let tokenJoinCommand = '';
  const before = new Map<string, string>();

  beforeAll(async () => {
    ensureCliBuilt('commands/join.js', [...distribution.sources]);
    env = await startTestHosts({ count: 2 });
    home = mkdtempSync(join(env.dir, 'cli-home-'));
    cli = clusterCliFor(env, home, distribution.cliTimeoutMs);
    pkg = (await distribution.buildPackage(mkdtempSync(join(env.dir, 'pkg-')), { withEdgeadm: true })).file;
    pkgWithoutEdgeadm = (await distribution.buildPackage(mkdtempSync(join(env.dir, 'pkg-')))).file;
    adminKubeconfig = join(home, 'admin.yaml');
    for (const host of env.targets) before.set(host.name, await listing(host));
  }, 180_000);

  afterAll(async () => {
    await env?.teardown();
  });

  const edgeadm = (args: string[]): Promise<CliResult> => cli.edgeadm(args);
  const sshArgs = (host: TestHost): string[] => cli.sshArgs(host);
  /** /var/log/edgeadm holds the edge-proxy's log; /var is per host. */
  const listing = (host: TestHost): Promise<string> => cli.listing(host, ['/var/log/edgeadm']);
  const processesIn = (host: TestHost): string[] => cli.processesIn(host);
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

  /** The join command `token create --print-join-command --install-pkg-path` printed, as the operator runs it (another package if given). */
  function joinArgs(packagePath = pkg): string[] {
    const [edgeadmWord, joinWord, ...rest] = tokenJoinCommand.split(' ');
    expect(`${edgeadmWord} ${joinWord}`).toBe('edgeadm join');
    const packageAt = rest.indexOf('--install-pkg-path') + 1;
    expect(packageAt).toBeGreaterThan(0);
    rest[packageAt] = packagePath;
    return ['join', ...rest, '--json', ...sshArgs(edgeNode())];
  }

  describe(specifics.titles.suite, () => {
    it(
      specifics.titles.init,
      async () => {
        const result = json<InitResult>(
          await edgeadm([
            'init',
            ...sshArgs(controlPlane()),
            ...distribution.initFlags,
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
        // Nodes of an edge cluster join as edge nodes, with the distribution named unless it is the default.
        expect(initJoinCommand).toMatch(
          new RegExp(
            `^edgeadm join \\S+:6443 --token \\S+ --discovery-token-ca-cert-hash sha256:[0-9a-f]{64} --install-pkg-path \\S+${distribution.joinCommandDistributionWords} --enable-edge$`,
          ),
        );
        specifics.expectInitJoinCommand(initJoinCommand);
        const client = await adminClient();
        const config = await client.get<{ data: Record<string, string>; metadata: { managedFields?: unknown[] } }>(
          '/api/v1/namespaces/kube-system/configmaps/edgeadm-edge',
        );
        expect(config?.data.nodeTaints).toBe('edgeadm.io/edge=true:NoSchedule');
        expect(config?.data).toEqual({
          autonomyDuration: '24h0m0s',
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
      timeout,
    );

    it(
      specifics.titles.token,
      async () => {
        const run = await edgeadm([
          'token',
          'create',
          '--kubeconfig',
          adminKubeconfig,
          '--print-join-command',
          '--install-pkg-path',
          pkg,
        ]);
        expect(run.exitCode, printedBy(run)).toBe(0);
        tokenJoinCommand = run.stdout.trim();
        expect(tokenJoinCommand).toMatch(
          new RegExp(
            `^edgeadm join \\S+:6443 --token [a-z0-9]{6}\\.[a-z0-9]{16} --discovery-token-ca-cert-hash sha256:[0-9a-f]{64} --install-pkg-path \\S+${distribution.joinCommandDistributionWords} --enable-edge$`,
          ),
        );
        // The same cluster and CA as init printed; a token of its own.
        const words = initJoinCommand.split(' ');
        expect(tokenJoinCommand).toContain(`edgeadm join ${words[2]} `);
        expect(tokenJoinCommand).toContain(words[words.indexOf('--discovery-token-ca-cert-hash') + 1]);
      },
      timeout,
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
      timeout,
    );

    it(
      specifics.titles.dryRun,
      async () => {
        const result = json<JoinResult>(await edgeadm([...joinArgs(), '--dry-run']));
        const plan = result.plan!.join('\n');
        expect(plan).toContain('[package] ');
        expect(plan).toMatch(/\[package\] .*install \/usr\/local\/bin\/edgeadm/);
        expect(plan).toContain('[edge] Would start edgeadm-edge-proxy.service');
        expect(plan).toContain('[edge] Would write /etc/edgeadm/edge-proxy/kubelet.kubeconfig');
        specifics.expectJoinPlan(plan);
        expect(await listing(edgeNode())).toBe(before.get(edgeNode().name));
      },
      timeout,
    );

    it(
      "join --enable-edge runs the edge-proxy on the node and the node's kubelet goes through it",
      async () => {
        const result = json<JoinResult>(await edgeadm(joinArgs()));
        expect(result.phases.map((p) => `${p.path}:${p.status}`)).toEqual([
          'preflight:unchanged',
          'discovery:unchanged',
          'package:changed',
          `runtime:${distribution.runtimeOnInstall}`,
          'node-join:changed',
          'egress-selector:skipped',
          'control-plane-join:skipped',
          'edge:changed',
          'wait-ready:unchanged',
          // The labels came with the agent's configuration; the autonomy duration annotation is written here.
          'labels:changed',
          // kubeadm's edge nodes carry the API server's kubelet connections themselves (k3s: its agent's tunnel).
          `node-tunnel:${distribution.name === 'kubeadm' ? 'changed' : 'skipped'}`,
        ]);
        expect(result.node).toEqual({ name: edgeNode().name, isReady: true });

        // The proxy runs on the node, from the edgeadm the package installed.
        expect(processesIn(edgeNode()).some((p) => p.includes('agent edge-proxy'))).toBe(true);
        await specifics.expectEdgeNode(env, cli, edgeNode());

        // The node's traffic goes through it: the proxy forwarded the restarted kubelet's requests and cached its Node.
        const metrics = await metricsOnceKubeletThrough(edgeNode());
        expect(metrics.get('edgeadm_edge_proxy_online')).toBe(1);
        expect(metrics.get('edgeadm_edge_proxy_requests_total{outcome="forwarded"}')).toBeGreaterThanOrEqual(3);
        expect(metrics.get('edgeadm_edge_proxy_cache_entries')).toBeGreaterThanOrEqual(1);
        await specifics.expectKubeletThroughProxy(env, edgeNode());

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
      timeout,
    );

    it(
      'a re-run of join --enable-edge changes nothing',
      async () => {
        const result = json<JoinResult>(await edgeadm(joinArgs()));
        expect(result.isChanged).toBe(false);
        expect(result.phases.find((p) => p.path === 'edge')?.status).toBe('unchanged');
        expect(result.phases.find((p) => p.path === 'node-join')?.status).toBe('unchanged');
      },
      timeout,
    );

    it(
      specifics.titles.reset,
      async () => {
        for (const host of [edgeNode(), controlPlane()]) {
          // The simulation runs as `node …/sim-main.ts <tool> …`: it is there before the reset, gone after.
          expect(processesIn(host).join('\n')).toContain('sim-main.ts');
          const result = json<ResetResult>(await edgeadm(['reset', ...sshArgs(host), '--force', '--json']));
          expect(result.hadState).toBe(true);
          expect(await listing(host)).toBe(before.get(host.name));
          const processes = processesIn(host).join('\n');
          expect(processes).not.toContain('agent edge-proxy');
          expect(processes).not.toContain('sim-main.ts');
        }
      },
      2 * timeout,
    );
  });
});
