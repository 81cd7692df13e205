/**
 * The main job with `--distribution kubeadm`, end to end through the CLI as
 * operators run it, on three netns+sshd test hosts with the SIMULATED
 * kubeadm distribution (test/support/sim-kubeadm: stand-in kubeadm, kubelet
 * and containerd; not Kubernetes) shipped in a real install package:
 * init --dry-run changes nothing; init installs containerd, the kubelet and
 * runs kubeadm init; a re-run changes nothing; join on two more hosts; token
 * create/list/delete; reset ×3 leaves every host's file tree as before.
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
import { SIM_IMPORTED_IMAGES_LIST } from '../../support/sim-kubeadm/containerd.js';
import { buildSimKubeadmPackage } from '../../support/sim-kubeadm/fixture.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';

/** A CLI run may start several simulated services and wait for them on 2 busy cores. */
const CLI_TIMEOUT_MS = 240_000;
/** One test may run the CLI on several hosts. */
const TEST_TIMEOUT_MS = 600_000;

let env: TestHosts;
let home: string;
let pkg: string;
let adminKubeconfig: string;
const before = new Map<string, string>();

beforeAll(async () => {
  ensureCliBuilt('commands/init.js', ['src', 'test/support/sim-kubeadm']);
  env = await startTestHosts({ count: 3 });
  home = mkdtempSync(join(env.dir, 'cli-home-'));
  pkg = (await buildSimKubeadmPackage(mkdtempSync(join(env.dir, 'pkg-')))).file;
  adminKubeconfig = join(home, 'admin.yaml');
  for (const host of env.targets) before.set(host.name, await listing(host));
}, 180_000);

afterAll(async () => {
  await env?.teardown();
});

const edgeadm = (args: string[]): Promise<CliResult> => clusterCli(home, CLI_TIMEOUT_MS)(args);
const sshArgs = (target: TestHost): string[] => hostSshArgs(env, target);
const listing = (host: TestHost): Promise<string> => hostListing(env, host);

async function admin(): Promise<KubeClient> {
  return new KubeClient(await kubeCredentialsOf(readFileSync(adminKubeconfig, 'utf8'), { what: 'admin' }));
}

const controlPlane = (): TestHost => env.targets[0]!;
const worker1 = (): TestHost => env.targets[1]!;
const worker2 = (): TestHost => env.targets[2]!;
const initArgs = (): string[] => [
  'init',
  ...sshArgs(controlPlane()),
  '--distribution',
  'kubeadm',
  '--install-pkg-path',
  pkg,
  '--kubeconfig-out',
  adminKubeconfig,
  '--json',
];
let joinCommand = '';

describe('edgeadm init, join, token and reset with --distribution kubeadm (simulated kubeadm)', () => {
  it(
    'init --dry-run prints every file and command per phase, runtime included, and changes nothing',
    async () => {
      const result = json<InitResult>(await edgeadm([...initArgs(), '--dry-run']));
      expect(result.isDryRun).toBe(true);
      const plan = result.plan!.join('\n');
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
      expect(await listing(controlPlane())).toBe(before.get(controlPlane().name));
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'init installs containerd and the kubelet, runs kubeadm init and prints the join command',
    async () => {
      const result = json<InitResult>(await edgeadm(initArgs()));
      expect(result.phases.map((p) => `${p.path}:${p.status}`)).toEqual([
        'preflight:unchanged',
        'package:changed',
        'runtime:changed',
        'control-plane:changed',
        'wait-ready:unchanged',
        'bootstrap-token:changed',
        'upload-certs:skipped',
        'edge-addons:skipped',
        'show-join-command:changed',
      ]);
      expect(result.joinCommand).toMatch(
        new RegExp(
          `^edgeadm join ${controlPlane().address.replaceAll('.', '\\.')}:6443 --token [a-z0-9]{6}\\.[a-z0-9]{16} --discovery-token-ca-cert-hash sha256:[0-9a-f]{64} --install-pkg-path \\S+ --distribution kubeadm$`,
        ),
      );
      joinCommand = result.joinCommand!;
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
      expect(await env.run(controlPlane(), 'cat /etc/containerd/config.toml')).toMatch(/SystemdCgroup = true/);
      expect(await env.run(controlPlane(), `cat ${SIM_IMPORTED_IMAGES_LIST}`)).toMatch(
        /^k8s\.io \S+\/images\/sim-pause\.tar [0-9a-f]{64}\n$/,
      );
      expect(await env.run(controlPlane(), 'test -S /run/containerd/containerd.sock && echo socket')).toBe('socket\n');
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'a re-run of init changes nothing: the runtime and kubeadm init are already done',
    async () => {
      // Without --json, so that the per-phase lines for people are printed.
      const run = await edgeadm(initArgs().filter((arg) => arg !== '--json'));
      expect(run.exitCode, run.stderr).toBe(0);
      const output = `${run.stdout}\n${run.stderr}`;
      // A check phase checks again; it has nothing to be "already done".
      expect(output).toMatch(/\[preflight\] checked \(/);
      for (const phase of ['package', 'runtime', 'control-plane', 'bootstrap-token', 'show-join-command']) {
        expect(output).toMatch(new RegExp(`\\[${phase}\\] already done \\(unchanged`));
      }
      expect(output).not.toMatch(/\] done \(/);
      expect(output).toContain('[runtime] containerd.service already running');
      expect((await env.run(controlPlane(), `cat ${SIM_IMPORTED_IMAGES_LIST}`)).split('\n')).toHaveLength(2);
      expect(output).toContain('init --config /etc/kubernetes/edgeadm-kubeadm-init.yaml already ran');
      expect(output).toContain(joinCommand);
    },
    TEST_TIMEOUT_MS,
  );

  function joinArgs(): string[] {
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
      pkg,
      '--distribution',
      at('--distribution'),
      '--json',
    ];
  }

  it(
    'join runs kubeadm join on two nodes that become Ready, with their labels',
    async () => {
      const runs = await Promise.all(
        [worker1(), worker2()].map((host) =>
          edgeadm([...joinArgs(), ...sshArgs(host), '--node-labels', 'site=store-42']),
        ),
      );
      for (const [index, run] of runs.entries()) {
        const result = json<JoinResult>(run);
        expect(result.phases.map((p) => `${p.path}:${p.status}`)).toContain('runtime:changed');
        expect(result.node).toEqual({ name: env.targets[index + 1]!.name, isReady: true });
      }
      const joinConfig = await env.run(worker1(), 'cat /etc/kubernetes/edgeadm-kubeadm-join.yaml');
      expect(joinConfig).toContain(
        `- ${joinCommand.split(' ')[joinCommand.split(' ').indexOf('--discovery-token-ca-cert-hash') + 1]}`,
      );
      const nodes = await (
        await admin()
      ).list<{ metadata: { name: string } }>('/api/v1/nodes', { labelSelector: 'site=store-42' });
      expect(nodes.map((n) => n.metadata.name).sort()).toEqual([worker1().name, worker2().name].sort());
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'token create, list and delete work against the cluster',
    async () => {
      const kube = ['--kubeconfig', adminKubeconfig];
      const created = json<{ token: string; id: string }>(
        await edgeadm(['token', 'create', ...kube, '--ttl', '1h', '--description', 'store 43', '--json']),
      );
      const listed = json<{ tokens: Array<{ id: string; description?: string }> }>(
        await edgeadm(['token', 'list', ...kube, '--json']),
      );
      expect(listed.tokens.find((t) => t.id === created.id)?.description).toBe('store 43');
      // The printed command joins with kubeadm (told from kube-system/kubeadm-config), not the default k3s.
      const printed = await edgeadm(['token', 'create', ...kube, '--ttl', '1h', '--print-join-command']);
      expect(printed.exitCode, printed.stderr).toBe(0);
      expect(printed.stdout.trim()).toMatch(
        /^edgeadm join \S+:6443 --token [a-z0-9]{6}\.[a-z0-9]{16} --discovery-token-ca-cert-hash sha256:[0-9a-f]{64} --distribution kubeadm$/,
      );
      json(await edgeadm(['token', 'delete', ...kube, created.id, '--json']));
      const after = json<{ tokens: Array<{ id: string }> }>(await edgeadm(['token', 'list', ...kube, '--json']));
      expect(after.tokens.map((t) => t.id)).not.toContain(created.id);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'reset on all three hosts runs kubeadm reset and leaves each file tree as it was before init',
    async () => {
      const dry = json<ResetResult>(await edgeadm(['reset', ...sshArgs(worker1()), '--dry-run', '--json']));
      const plan = dry.plan!.join('\n');
      expect(plan).toContain('[distribution-reset]');
      expect(plan).toContain('kubeadm reset -f');
      expect(plan).toContain('/etc/containerd/config.toml');
      for (const host of [worker1(), worker2(), controlPlane()]) {
        const result = json<ResetResult>(await edgeadm(['reset', ...sshArgs(host), '--force', '--json']));
        expect(result.hadState).toBe(true);
        expect(result.phases.map((p) => `${p.path}:${p.status}`)).toContain('distribution-reset:changed');
        expect(await listing(host)).toBe(before.get(host.name));
        expect(processesIn(host).join('\n')).not.toContain('sim-main.ts');
      }
    },
    TEST_TIMEOUT_MS,
  );
});
