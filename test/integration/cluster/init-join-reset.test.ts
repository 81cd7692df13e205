/**
 * The main job end to end, through the CLI as operators run it, on three
 * netns+sshd test hosts, once for each distribution with its SIMULATION
 * (test/support/sim-k3s: not k3s; test/support/sim-kubeadm: stand-in
 * kubeadm, kubelet and containerd, not Kubernetes) shipped in a real
 * install package: init --dry-run changes nothing; init on one host; a
 * re-run changes nothing; init's phases run alone; join failures (wrong
 * token, wrong pin, unreachable control plane, preflight) install nothing;
 * join on two more; token create/list/delete; reset ×3 leaves every host's
 * file tree as before. What each distribution does its own way (the files
 * and commands of its plan, containerd, kubeadm's own configuration) is
 * checked in the same test, from {@link SPECIFICS}.
 *
 * The hosts have no systemd, so the harness asks for the direct service
 * manager explicitly (EDGEADM_SERVICE_MANAGER=direct).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InitResult } from '../../../src/cluster/init.js';
import type { JoinResult } from '../../../src/cluster/join.js';
import type { ResetResult } from '../../../src/cluster/reset.js';
import { KubeClient } from '../../../src/kube/client.js';
import { kubeCredentialsOf } from '../../../src/kube/kubeconfig.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import type { CliResult } from '../../support/cli.js';
import {
  clusterCli,
  json,
  listing as hostListing,
  processesIn,
  sshArgs as hostSshArgs,
} from '../../support/cluster-cli.js';
import { DISTRIBUTIONS, type DistributionName, type TestDistribution } from '../../support/distributions.js';
import { SIM_IMPORTED_IMAGES_LIST } from '../../support/sim-kubeadm/containerd.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';
import { printedBy } from '../../support/run-output.js';

/** What a distribution's suite run can reach: the harness, the CLI and the cluster. */
interface Suite {
  env: TestHosts;
  edgeadm(args: string[]): Promise<CliResult>;
  admin(): Promise<KubeClient>;
  controlPlane(): TestHost;
  worker1(): TestHost;
  joinCommand(): string;
}

/** What each distribution does its own way, checked inside the shared tests. */
interface Specifics {
  /** Test titles that have always differed between the distributions. */
  titles: {
    /** The suite's own title (it has always named the distribution its own way). */
    suite: string;
    initDryRun: string;
    init: string;
    rerun: string;
    join: string;
    token: string;
    reset: string;
  };
  /** The files and commands of init's plan. */
  expectInitPlan(plan: string, result: InitResult): void;
  /** The control plane after init. */
  expectAfterInit(suite: Suite): Promise<void>;
  /** The progress lines of a re-run of init, for people. */
  expectRerunOutput(output: string, suite: Suite): Promise<void>;
  /** The node after join. */
  expectAfterJoin(result: JoinResult, suite: Suite): Promise<void>;
  /** The plan of reset. */
  expectResetPlan(plan: string): void;
  /** One host's reset. */
  expectReset(result: ResetResult): void;
}

const SPECIFICS: Record<DistributionName, Specifics> = {
  k3s: {
    titles: {
      suite: 'edgeadm init, join, token and reset on test hosts (simulated k3s)',
      initDryRun: 'init --dry-run prints the plan per phase, with the binaries and the unit, and changes nothing',
      init: 'init installs the control plane and prints the join command',
      rerun: 'a re-run of init changes nothing and says every phase is already done',
      join: 'join adds two nodes that become Ready, with their labels',
      token: 'token create, list and delete work against the cluster, and a new token can discover',
      reset: 'reset on all three hosts leaves each file tree as it was before init',
    },
    expectInitPlan(plan) {
      expect(plan).toMatch(/\[package\] .*install \/usr\/local\/bin\/k3s/);
      expect(plan).toMatch(/\[control-plane\] .*\/etc\/systemd\/system\/k3s\.service/);
      expect(plan).toMatch(/\[control-plane\] .*\/etc\/rancher\/k3s\/config\.yaml/);
    },
    async expectAfterInit() {},
    async expectRerunOutput() {},
    async expectAfterJoin() {},
    expectResetPlan() {},
    expectReset() {},
  },
  kubeadm: {
    titles: {
      suite: 'edgeadm init, join, token and reset with --distribution kubeadm (simulated kubeadm)',
      initDryRun: 'init --dry-run prints every file and command per phase, runtime included, and changes nothing',
      init: 'init installs containerd and the kubelet, runs kubeadm init and prints the join command',
      rerun: 'a re-run of init changes nothing: the runtime and kubeadm init are already done',
      join: 'join runs kubeadm join on two nodes that become Ready, with their labels',
      token: 'token create, list and delete work against the cluster',
      reset: 'reset on all three hosts runs kubeadm reset and leaves each file tree as it was before init',
    },
    expectInitPlan(plan, result) {
      for (const binary of ['kubeadm', 'kubelet', 'containerd', 'containerd-shim-runc-v2', 'runc', 'kubectl']) {
        expect(plan).toMatch(new RegExp(`\\[package\\] .*install /usr/local/bin/${binary} `));
      }
      expect(plan).toMatch(/\[runtime\] .*\/opt\/cni\/bin\/bridge/);
      expect(plan).toMatch(/\[runtime\] .*\/etc\/containerd\/config\.toml/);
      expect(plan).toMatch(/\[runtime\] .*\/etc\/systemd\/system\/containerd\.service/);
      expect(plan).toMatch(/\[runtime\] Would wait for the containerd socket/);
      expect(plan).toMatch(
        /\[runtime\] .*import the airgap images images\/sim-pause\.tar into containerd \(\/usr\/local\/bin\/ctr --address \/run\/containerd\/containerd\.sock -n k8s\.io images import '\S+\/images\/sim-pause\.tar'\)/,
      );
      expect(plan).toMatch(/\[control-plane\] .*\/etc\/kubernetes\/edgeadm-kubeadm-init\.yaml/);
      expect(plan).toMatch(/\[control-plane\] .*\/etc\/systemd\/system\/kubelet\.service\b/);
      expect(plan).toMatch(/\[control-plane\] .*\/etc\/systemd\/system\/kubelet\.service\.d\/10-kubeadm\.conf/);
      expect(plan).toMatch(/\[control-plane\] .*kubeadm init --config \/etc\/kubernetes\/edgeadm-kubeadm-init\.yaml/);
      expect(plan).toContain('[bootstrap-token] Would apply the ClusterRoleBinding kubeadm:kubelet-bootstrap');
      expect(result.joinCommand).toMatch(/ --distribution kubeadm$/);
    },
    async expectAfterInit({ env, admin, controlPlane }) {
      const client = await admin();
      const node = await client.get<{ metadata: { labels: Record<string, string> } }>(
        `/api/v1/nodes/${controlPlane().name}`,
      );
      expect(node?.metadata.labels).toHaveProperty('node-role.kubernetes.io/control-plane');
      const kubeadmConfig = await client.get<{ data: Record<string, string> }>(
        '/api/v1/namespaces/kube-system/configmaps/kubeadm-config',
      );
      expect(kubeadmConfig?.data.ClusterConfiguration).toContain('kubernetesVersion: v1.30.4');
      const binding = await client.get<{ roleRef: { name: string } }>(
        '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/kubeadm:kubelet-bootstrap',
      );
      expect(binding?.roleRef.name).toBe('system:node-bootstrapper');
      // kubeadm's own bootstrap-token phase was skipped: the printed token is the only one.
      const tokens = await client.list('/api/v1/namespaces/kube-system/secrets', {
        fieldSelector: 'type=bootstrap.kubernetes.io/token',
      });
      expect(tokens).toHaveLength(1);
      expect(await env.run(controlPlane(), 'cat /etc/containerd/config.toml')).toMatch(/SystemdCgroup = false/);
      expect(await env.run(controlPlane(), `cat ${SIM_IMPORTED_IMAGES_LIST}`)).toMatch(
        /^k8s\.io \S+\/images\/sim-pause\.tar [0-9a-f]{64}\n$/,
      );
      expect(await env.run(controlPlane(), 'test -S /run/containerd/containerd.sock && echo socket')).toBe('socket\n');
    },
    async expectRerunOutput(output, { env, controlPlane }) {
      expect(output).toContain('[runtime] containerd.service already running');
      expect((await env.run(controlPlane(), `cat ${SIM_IMPORTED_IMAGES_LIST}`)).split('\n')).toHaveLength(2);
      expect(output).toContain('init --config /etc/kubernetes/edgeadm-kubeadm-init.yaml already ran');
    },
    async expectAfterJoin(result, { env, worker1, joinCommand }) {
      expect(result.phases.map((p) => `${p.path}:${p.status}`)).toContain('runtime:changed');
      const joinConfig = await env.run(worker1(), 'cat /etc/kubernetes/edgeadm-kubeadm-join.yaml');
      const words = joinCommand().split(' ');
      expect(joinConfig).toContain(`- ${words[words.indexOf('--discovery-token-ca-cert-hash') + 1]}`);
    },
    expectResetPlan(plan) {
      expect(plan).toContain('[distribution-reset]');
      expect(plan).toContain('kubeadm reset -f');
      expect(plan).toContain('/etc/containerd/config.toml');
    },
    expectReset(result) {
      expect(result.phases.map((p) => `${p.path}:${p.status}`)).toContain('distribution-reset:changed');
    },
  },
};

describe.each(DISTRIBUTIONS)('$name', (distribution: TestDistribution) => {
  const specifics = SPECIFICS[distribution.name];
  const titles = specifics.titles;
  const timeout = distribution.testTimeoutMs;

  let env: TestHosts;
  let home: string;
  let pkg: string;
  let adminKubeconfig: string;
  let joinCommand = '';
  const before = new Map<string, string>();

  beforeAll(async () => {
    ensureCliBuilt('commands/init.js', [...distribution.sources]);
    env = await startTestHosts({ count: 3 });
    home = mkdtempSync(join(env.dir, 'cli-home-'));
    pkg = (await distribution.buildPackage(mkdtempSync(join(env.dir, 'pkg-')))).file;
    adminKubeconfig = join(home, 'admin.yaml');
    for (const host of env.targets) before.set(host.name, await listing(host));
  }, 180_000);

  afterAll(async () => {
    await env?.teardown();
  });

  const edgeadm = (args: string[]): Promise<CliResult> => clusterCli(home, distribution.cliTimeoutMs)(args);
  const sshArgs = (target: TestHost): string[] => hostSshArgs(env, target);
  const listing = (host: TestHost): Promise<string> => hostListing(env, host);

  async function admin(): Promise<KubeClient> {
    return new KubeClient(await kubeCredentialsOf(readFileSync(adminKubeconfig, 'utf8'), { what: 'admin' }));
  }

  function errorOf(run: CliResult): { code: string; message: string } {
    return (JSON.parse(run.stdout) as { error: { code: string; message: string } }).error;
  }

  const controlPlane = (): TestHost => env.targets[0]!;
  const worker1 = (): TestHost => env.targets[1]!;
  const worker2 = (): TestHost => env.targets[2]!;
  const suite: Suite = {
    get env() {
      return env;
    },
    edgeadm,
    admin,
    controlPlane,
    worker1,
    joinCommand: () => joinCommand,
  };
  const initArgs = (): string[] => [
    'init',
    ...sshArgs(controlPlane()),
    ...distribution.initFlags,
    '--install-pkg-path',
    pkg,
    '--kubeconfig-out',
    adminKubeconfig,
    '--json',
  ];

  describe(specifics.titles.suite, () => {
    it(
      titles.initDryRun,
      async () => {
        const result = json<InitResult>(await edgeadm([...initArgs(), '--dry-run']));
        expect(result.isDryRun).toBe(true);
        const plan = result.plan!.join('\n');
        specifics.expectInitPlan(plan, result);
        expect(plan).toContain('[bootstrap-token] Would create the bootstrap token Secret');
        // The progress a person reads speaks of what would be done, never of what was done.
        const shown = await edgeadm([...initArgs().filter((arg) => arg !== '--json'), '--dry-run']);
        const progress = shown.stdout + shown.stderr;
        expect(progress).toMatch(/\[package\] would upload /);
        expect(progress).not.toMatch(/\[package\] (uploaded|installed|unpacked into) /);
        expect(await listing(controlPlane())).toBe(before.get(controlPlane().name));
      },
      timeout,
    );

    it(
      titles.init,
      async () => {
        const result = json<InitResult>(await edgeadm(initArgs()));
        expect(result.phases.map((p) => `${p.path}:${p.status}`)).toEqual([
          'preflight:unchanged',
          'package:changed',
          `runtime:${distribution.runtimeOnInstall}`,
          'egress-selector:skipped',
          'control-plane:changed',
          'wait-ready:unchanged',
          'bootstrap-token:changed',
          'record-package:changed',
          'upload-certs:skipped',
          'edge-addons:skipped',
          'edge-kube-proxy:skipped',
          'edge-autonomy:skipped',
          'edge-site-grids:skipped',
          'node-tunnel:skipped',
          'show-join-command:changed',
        ]);
        expect(result.joinCommand).toMatch(
          new RegExp(
            `^edgeadm join ${controlPlane().address.replaceAll('.', '\\.')}:6443 --token [a-z0-9]{6}\\.[a-z0-9]{16} --discovery-token-ca-cert-hash sha256:[0-9a-f]{64} --install-pkg-path \\S+${distribution.joinCommandDistributionWords}$`,
          ),
        );
        joinCommand = result.joinCommand!;
        const node = await (await admin()).get<{ metadata: { name: string } }>(`/api/v1/nodes/${controlPlane().name}`);
        expect(node?.metadata.name).toBe(controlPlane().name);
        await specifics.expectAfterInit(suite);
      },
      timeout,
    );

    it(
      titles.rerun,
      async () => {
        const result = json<InitResult>(await edgeadm(initArgs()));
        expect(result.isChanged).toBe(false);
        expect(result.phases.filter((p) => p.status !== 'skipped').every((p) => p.status === 'unchanged')).toBe(true);
        expect(result.joinCommand).toBe(joinCommand);
        // Without --json, so that the per-phase lines for people are printed.
        const run = await edgeadm(initArgs().filter((arg) => arg !== '--json'));
        expect(run.exitCode, printedBy(run)).toBe(0);
        const output = `${run.stdout}\n${run.stderr}`;
        // A check phase checks again; it has nothing to be "already done".
        expect(output).toMatch(/\[preflight\] checked \(/);
        const changedOnInstall = [
          'package',
          'runtime',
          'control-plane',
          'bootstrap-token',
          'record-package',
          'show-join-command',
        ].filter((phase) => phase !== 'runtime' || distribution.runtimeOnInstall === 'changed');
        for (const phase of changedOnInstall) {
          expect(output).toMatch(new RegExp(`\\[${phase}\\] already done \\(unchanged`));
        }
        expect(output).not.toMatch(/\] done \(/);
        expect(output).toContain(joinCommand);
        await specifics.expectRerunOutput(output, suite);
      },
      timeout,
    );

    it(
      'init phase show-join-command merges the admin kubeconfig into ~/.kube/config as a new context',
      async () => {
        const run = await edgeadm([
          'init',
          'phase',
          'show-join-command',
          ...sshArgs(controlPlane()),
          ...distribution.initFlags,
          '--install-pkg-path',
          pkg,
          '--json',
        ]);
        const result = json<InitResult>(run);
        expect(result.phases.map((p) => p.path)).toEqual(['show-join-command']);
        const context = `edgeadm-${controlPlane().name}`;
        expect(result.kubeconfig).toEqual({ path: join(home, '.kube', 'config'), context, isMerged: true });
        const merged = readFileSync(join(home, '.kube', 'config'), 'utf8');
        const credentials = await kubeCredentialsOf(merged, { what: 'merged' });
        expect(credentials.contextName).toBe(context);
        expect(await new KubeClient(credentials).get('/api/v1/namespaces/kube-system')).toBeDefined();
      },
      timeout,
    );

    it(
      'init phase edge-addons --enable-edge applies the edge addon manifests (edge node settings)',
      async () => {
        const args = [
          'init',
          'phase',
          'edge-addons',
          ...sshArgs(controlPlane()),
          ...distribution.initFlags,
          '--install-pkg-path',
          pkg,
          '--enable-edge',
        ];
        expect(json<InitResult>(await edgeadm([...args, '--json'])).phases).toMatchObject([
          { path: 'edge-addons', status: 'changed' },
        ]);
        expect(json<InitResult>(await edgeadm([...args, '--json'])).phases).toMatchObject([
          { path: 'edge-addons', status: 'unchanged' },
        ]);
        const config = await (
          await admin()
        ).get<{ data: Record<string, string> }>('/api/v1/namespaces/kube-system/configmaps/edgeadm-edge');
        expect(config?.data.nodeTaints).toBe('edgeadm.io/edge=true:NoSchedule');
      },
      timeout,
    );

    /** The printed join command as the operator runs it, with this package and a short discovery timeout. */
    function joinArgs(overrides: { token?: string; hash?: string; endpoint?: string } = {}): string[] {
      const words = joinCommand.split(' ');
      const at = (flag: string) => words[words.indexOf(flag) + 1]!;
      return [
        'join',
        overrides.endpoint ?? words[2]!,
        '--token',
        overrides.token ?? at('--token'),
        '--discovery-token-ca-cert-hash',
        overrides.hash ?? at('--discovery-token-ca-cert-hash'),
        '--install-pkg-path',
        pkg,
        ...(words.includes('--distribution') ? ['--distribution', at('--distribution')] : []),
        '--discovery-timeout',
        '3s',
        '--json',
      ];
    }

    it(
      'join with a token the cluster does not know fails in discovery and installs nothing',
      async () => {
        const run = await edgeadm([...joinArgs({ token: 'zzzzzz.zzzzzzzzzzzzzzzz' }), ...sshArgs(worker1())]);
        expect(run.exitCode).not.toBe(0);
        const error = errorOf(run);
        expect(error.message).toMatch(/^error execution phase discovery: /);
        expect(error.code).toMatch(/^E_DISCOVERY_/);
        expect(await listing(worker1())).toBe(before.get(worker1().name));
      },
      timeout,
    );

    it(
      'join with a wrong CA pin fails in discovery and installs nothing',
      async () => {
        const run = await edgeadm([...joinArgs({ hash: `sha256:${'0'.repeat(64)}` }), ...sshArgs(worker1())]);
        expect(errorOf(run).code).toBe('E_DISCOVERY_PIN_MISMATCH');
        expect(await listing(worker1())).toBe(before.get(worker1().name));
      },
      timeout,
    );

    it(
      'join against an unreachable control plane times out in discovery and installs nothing',
      async () => {
        const run = await edgeadm([...joinArgs({ endpoint: `${env.unreachableAddress}:6443` }), ...sshArgs(worker1())]);
        expect(errorOf(run).code).toBe('E_DISCOVERY_TIMEOUT');
        expect(await listing(worker1())).toBe(before.get(worker1().name));
      },
      timeout,
    );

    it(
      'join on a host that fails preflight stops with exit code 2 and installs nothing',
      async () => {
        // Something else holds the kubelet port.
        await env.run(
          worker2(),
          `setsid nohup ${process.execPath} -e "require('net').createServer().listen(10250)" >/dev/null 2>&1 & echo $! > /run/holder.pid; sleep 1`,
        );
        try {
          const run = await edgeadm([...joinArgs(), ...sshArgs(worker2())]);
          expect(run.exitCode).toBe(2);
          expect(errorOf(run).message).toContain('[ERROR port-10250]');
          expect(await listing(worker2())).toBe(before.get(worker2().name));
        } finally {
          await env.run(worker2(), 'kill "$(cat /run/holder.pid)"; rm -f /run/holder.pid');
        }
      },
      timeout,
    );

    it(
      'join --dry-run runs the real discovery, prints the plan and changes nothing',
      async () => {
        const result = json<JoinResult>(await edgeadm([...joinArgs(), ...sshArgs(worker1()), '--dry-run']));
        expect(result.server).toBe(`https://${controlPlane().address}:6443`);
        const plan = result.plan!.join('\n');
        expect(plan).toContain(`[package] `);
        expect(plan).toMatch(new RegExp(`\\[package\\] .*install ${distribution.mainBinary}`));
        expect(plan).toMatch(new RegExp(`\\[node-join\\] .*${distribution.nodeUnit.replaceAll('.', '\\.')}`));
        expect(await listing(worker1())).toBe(before.get(worker1().name));
      },
      timeout,
    );

    it(
      titles.join,
      async () => {
        const runs = await Promise.all(
          [worker1(), worker2()].map((host) =>
            edgeadm([...joinArgs(), ...sshArgs(host), '--node-labels', 'site=store-42']),
          ),
        );
        for (const [index, run] of runs.entries()) {
          const result = json<JoinResult>(run);
          expect(result.node).toEqual({ name: env.targets[index + 1]!.name, isReady: true });
          await specifics.expectAfterJoin(result, suite);
        }
        const nodes = await (
          await admin()
        ).list<{ metadata: { name: string; labels?: Record<string, string> } }>('/api/v1/nodes', {
          labelSelector: 'site=store-42',
        });
        expect(nodes.map((n) => n.metadata.name).sort()).toEqual([worker1().name, worker2().name].sort());
      },
      timeout,
    );

    it(
      titles.token,
      async () => {
        const kube = ['--kubeconfig', adminKubeconfig];
        const created = json<{ token: string; id: string; joinCommand: string }>(
          await edgeadm([
            'token',
            'create',
            ...kube,
            '--ttl',
            '1h',
            '--description',
            'store 42',
            '--print-join-command',
            '--json',
          ]),
        );
        expect(created.joinCommand).toContain(`--token ${created.token}`);
        const listed = json<{ tokens: Array<{ id: string; description?: string }> }>(
          await edgeadm(['token', 'list', ...kube, '--json']),
        );
        expect(listed.tokens.find((t) => t.id === created.id)?.description).toBe('store 42');
        expect(JSON.stringify(listed)).not.toContain(created.token);
        // The printed command joins with the cluster's distribution (told from the cluster: kubeadm from
        // kube-system/kubeadm-config), not the default k3s; and as an edge node, since the edge-addons phase above
        // made this an edge cluster.
        const printed = await edgeadm(['token', 'create', ...kube, '--ttl', '1h', '--print-join-command']);
        expect(printed.exitCode, printedBy(printed)).toBe(0);
        expect(printed.stdout.trim()).toMatch(
          new RegExp(
            `^edgeadm join \\S+:6443 --token [a-z0-9]{6}\\.[a-z0-9]{16} --discovery-token-ca-cert-hash sha256:[0-9a-f]{64} --install-pkg-path \\./PACKAGE\\.tar\\.gz${distribution.joinCommandDistributionWords} --enable-edge$`,
          ),
        );
        const words = created.joinCommand.split(' ');
        const discovered = await edgeadm([
          'join',
          'phase',
          'discovery',
          words[2]!,
          '--token',
          created.token,
          '--discovery-token-ca-cert-hash',
          words[words.indexOf('--discovery-token-ca-cert-hash') + 1]!,
          '--json',
        ]);
        expect(discovered.exitCode, printedBy(discovered)).toBe(0);
        json(await edgeadm(['token', 'delete', ...kube, created.id, '--json']));
        const after = json<{ tokens: Array<{ id: string }> }>(await edgeadm(['token', 'list', ...kube, '--json']));
        expect(after.tokens.map((t) => t.id)).not.toContain(created.id);
      },
      timeout,
    );

    it(
      titles.reset,
      async () => {
        const dry = json<ResetResult>(await edgeadm(['reset', ...sshArgs(worker1()), '--dry-run', '--json']));
        const plan = dry.plan!.join('\n');
        expect(plan).toContain(distribution.mainBinary);
        specifics.expectResetPlan(plan);
        for (const host of [worker1(), worker2(), controlPlane()]) {
          const result = json<ResetResult>(await edgeadm(['reset', ...sshArgs(host), '--force', '--json']));
          expect(result.hadState).toBe(true);
          specifics.expectReset(result);
          expect(await listing(host)).toBe(before.get(host.name));
          expect(processesIn(host).join('\n')).not.toContain('sim-main.ts');
        }
      },
      3 * timeout,
    );
  });
});
