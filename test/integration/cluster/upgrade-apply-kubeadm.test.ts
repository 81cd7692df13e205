/**
 * `edgeadm upgrade apply` on a kubeadm control plane, end to end through the
 * CLI on a netns+sshd test host with no route out, with the SIMULATED
 * kubeadm, kubelet and containerd (test/support/sim-kubeadm: stand-ins, not
 * Kubernetes) in real install packages of two versions:
 * - a dry run changes nothing;
 * - a package whose kubelet fails is rolled back: the old binaries, the
 *   static Pod manifests, kubeconfigs and etcd data back, the old version
 *   answering with the objects written before;
 * - edgeadm killed (SIGKILL) once the host's state file says the backup is
 *   complete: a re-run resumes from there, imports the images, runs
 *   `kubeadm upgrade apply` with no image pull and swaps the kubelet, and
 *   the host's tree is the new version's; a further run finds it done;
 * - the SSH connection cut in the middle of the kubelet's swap (kubeadm
 *   upgrade apply already done): the run rolls back over a new connection,
 *   the tree is the old one's; a re-run completes;
 * - the disk filling up during the backup (a small tmpfs over the upgrade
 *   directory, filled while the etcd data is archived with the static Pods
 *   stopped): the static Pods come back, the old version runs again on the
 *   old tree; with room again, a re-run completes.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UpgradeApplyResult } from '../../../src/cluster/upgrade/apply.js';
import { KubeClient } from '../../../src/kube/client.js';
import { kubeCredentialsOf } from '../../../src/kube/kubeconfig.js';
import type { BuiltPackage } from '../../../src/packages/build.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { runCli, type CliResult } from '../../support/cli.js';
import { clusterCli, json, sshArgs } from '../../support/cluster-cli.js';
import { BROKEN_KUBELET_MARKER, buildSimKubeadmPackage } from '../../support/sim-kubeadm/fixture.js';
import { liftLyingTool, plantLyingTool, realTool } from '../../support/lying-tools.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';
import { printedBy } from '../../support/run-output.js';

const CLI_TIMEOUT_MS = 300_000;
const TEST_TIMEOUT_MS = 600_000;

function errorOf(run: CliResult): { code: string; message: string } {
  return (JSON.parse(run.stdout) as { error: { code: string; message: string } }).error;
}

/**
 * What a kubeadm upgrade replaces: the binaries, the static Pod manifests,
 * pki and kubeconfigs, the kubelet's configuration, and the etcd data
 * directory's files that do not change while the API server runs.
 */
export const KUBEADM_TREE_SCRIPT = [
  'sha256sum /usr/local/bin/kubeadm /usr/local/bin/kubelet /usr/local/bin/kubectl',
  'cd /etc/kubernetes && find manifests pki -type f -exec sha256sum {} + | sort && sha256sum *.conf',
  'cd /var/lib/kubelet && sha256sum config.yaml kubeadm-flags.env',
  'cd /var/lib/etcd && find . -type f ! -path "./sim-apiserver/*" -exec sha256sum {} + | sort',
].join('; ');

describe('edgeadm upgrade apply on a simulated kubeadm control plane', () => {
  let env: TestHosts;
  let home: string;
  let adminKubeconfig: string;
  const old = 'v1.31.4';
  const next = 'v1.32.1';
  const third = 'v1.33.0';
  const fourth = 'v1.34.0';
  const packages = new Map<string, BuiltPackage>();

  const edgeadm = (args: string[]): Promise<CliResult> => clusterCli(home, CLI_TIMEOUT_MS)(args);
  const controlPlane = (): TestHost => env.targets[0]!;
  const applyArgs = (pkg: string, extra: string[] = []): string[] => [
    'upgrade',
    'apply',
    ...sshArgs(env, controlPlane()),
    '--install-pkg-path',
    packages.get(pkg)!.file,
    '--json',
    ...extra,
  ];
  const apply = (pkg: string, extra: string[] = []): Promise<CliResult> => edgeadm(applyArgs(pkg, extra));
  const installed = (): Promise<string> => env.run(controlPlane(), KUBEADM_TREE_SCRIPT);
  const stateStep = async (): Promise<string | undefined> => {
    const text = await env.run(controlPlane(), 'cat /var/lib/edgeadm/upgrade/state.json 2>/dev/null || true');
    return text.trim() === '' ? undefined : (JSON.parse(text) as { step: string }).step;
  };

  /**
   * Covers the host's own `tool` (cp, tar; edgeadm calls them by absolute
   * path) with a wrapper: when its arguments match `pattern` (a shell case
   * pattern on all of them), it runs `action` first; with {@link STALL}, it
   * writes 100 bytes into its last argument and stalls (its pid in
   * /opt/stalled-cp.pid).
   */
  async function wrapTool(host: TestHost, tool: 'cp' | 'tar', pattern: string, action: string): Promise<void> {
    await plantLyingTool(
      env,
      host,
      tool,
      [
        'for last; do :; done',
        'case "$*" in',
        `  ${pattern}) ${action} ;;`,
        'esac',
        `exec ${realTool(tool)} "$@"`,
      ].join('\n'),
    );
  }
  const STALL = 'echo $$ > /opt/stalled-cp.pid; head -c 100 "$1" > "$last"; sleep 30; exit 1';

  /** The tree of the version a package carries, as far as the binaries go. */
  const binariesOf = (version: string): string[] =>
    ['kubeadm', 'kubelet', 'kubectl'].map(
      (name) =>
        `${packages.get(version)!.manifest.files.find((f) => f.path === `bin/${name}`)!.sha256}  /usr/local/bin/${name}`,
    );

  async function admin(): Promise<KubeClient> {
    return new KubeClient(await kubeCredentialsOf(readFileSync(adminKubeconfig, 'utf8'), { what: 'admin' }));
  }

  async function version(): Promise<string> {
    return (await (await admin()).request<{ gitVersion: string }>('GET', '/version')).gitVersion;
  }

  beforeAll(async () => {
    ensureCliBuilt('commands/upgrade/apply.js', ['src', 'test/support/sim-kubeadm']);
    env = await startTestHosts({ count: 1 });
    home = mkdtempSync(join(env.dir, 'cli-home-'));
    adminKubeconfig = join(home, 'admin.yaml');
    const dir = mkdtempSync(join(env.dir, 'pkg-'));
    for (const v of [old, next, third, fourth])
      packages.set(v, await buildSimKubeadmPackage(dir, { kubernetesVersion: v }));
    packages.set('broken', await buildSimKubeadmPackage(dir, { kubernetesVersion: next, isKubeletBroken: true }));
    const init = await edgeadm([
      'init',
      ...sshArgs(env, controlPlane()),
      '--distribution',
      'kubeadm',
      '--install-pkg-path',
      packages.get(old)!.file,
      '--kubeconfig-out',
      adminKubeconfig,
      '--json',
    ]);
    if (init.exitCode !== 0) throw new Error(`init failed: ${init.stdout}\n${init.stderr.slice(-3000)}`);
  }, TEST_TIMEOUT_MS);

  afterAll(async () => {
    await env?.teardown();
  });

  it(
    'a dry run prints the kubeadm plan and changes nothing',
    async () => {
      const before = await installed();
      const dry = json<UpgradeApplyResult>(await apply(next, ['--dry-run']));
      expect(dry).toMatchObject({ outcome: 'would-upgrade', from: old, to: next, isDryRun: true });
      const plan = dry.plan.join('\n');
      expect(plan).toContain(`kubeadm upgrade apply ${next} --config /var/lib/edgeadm/upgrade/kubeadm-upgrade.yaml`);
      expect(plan).toMatch(/\[kubelet\] .*Would install \/usr\/local\/bin\/kubelet/);
      expect(await installed()).toBe(before);
      expect(await env.run(controlPlane(), 'test -e /var/lib/edgeadm/upgrade && echo present || echo absent')).toBe(
        'absent\n',
      );
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'a new kubelet that fails is rolled back: the old version answers, its manifests, binaries and etcd data as before',
    async () => {
      const client = await admin();
      await client.request('POST', '/api/v1/namespaces/default/configmaps', {
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'before-upgrade' }, data: { a: '1' } },
      });
      const before = await installed();
      const run = await apply('broken', ['--gate-timeout', '20s']);
      expect(run.exitCode, printedBy(run)).toBe(1);
      const error = errorOf(run);
      expect(error.code).toBe('E_UPGRADE_ROLLED_BACK');
      expect(error.message).toMatch(/the (api-ready|node-ready) gate did not pass/);
      expect(error.message).toContain(`${old} runs again`);
      // kubeadm upgrade apply had moved the manifest and kubeadm-config to the new version; both are back.
      expect(await env.run(controlPlane(), `ls ${BROKEN_KUBELET_MARKER} 2>&1 || true`)).toContain('No such file');
      expect(await installed()).toBe(before);
      expect(await version()).toBe(old);
      const kept = await client.request<{ data: { a: string } }>(
        'GET',
        '/api/v1/namespaces/default/configmaps/before-upgrade',
      );
      expect(kept.data.a).toBe('1');
      expect(await stateStep()).toBe('rolled-back');
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'edgeadm killed once the backup is complete: a re-run resumes, upgrades offline (no pull) and the tree is the new version; a further run finds it done',
    async () => {
      let killer: { kill(signal: NodeJS.Signals): void } | undefined;
      let isDone = false;
      const first = runCli(applyArgs(next, ['--gate-timeout', '90s']), {
        env: { HOME: home, EDGEADM_HOME: join(home, '.edgeadm'), SSH_AUTH_SOCK: '', EDGEADM_SERVICE_MANAGER: 'direct' },
        timeoutMs: CLI_TIMEOUT_MS,
        onStarted: (process) => {
          killer = process;
        },
      }).finally(() => {
        isDone = true;
      });
      // The phase boundary, as the host records it: the backup is complete.
      let step: string | undefined;
      while (!isDone && (step = await stateStep()) !== 'backed-up') await new Promise((r) => setTimeout(r, 20));
      expect(step).toBe('backed-up');
      killer!.kill('SIGKILL');
      expect((await first).exitCode).not.toBe(0);

      const backupOf = (): Promise<string> =>
        env.run(
          controlPlane(),
          'stat -c %i /var/lib/edgeadm/upgrade/backup && cat /var/lib/edgeadm/upgrade/backup/MANIFEST.sha256',
        );
      const backup = await backupOf();
      const rerun = json<UpgradeApplyResult>(await apply(next, ['--gate-timeout', '90s']));
      expect(rerun).toMatchObject({ outcome: 'upgraded', from: old, to: next });
      expect(rerun.resumedFrom).toBeDefined();
      // Resumed, not started over: the backup taken before the kill is the one kept (the same directory, the same
      // files), and it holds the old version's binaries.
      expect(await backupOf()).toBe(backup);
      const oldFiles = packages.get(old)!.manifest.files;
      for (const name of ['kubeadm', 'kubelet', 'kubectl']) {
        expect(backup).toContain(`${oldFiles.find((f) => f.path === `bin/${name}`)!.sha256}  bin/${name}`);
      }
      expect(await version()).toBe(next);
      const node = await (
        await admin()
      ).request<{ status: { nodeInfo: { kubeletVersion: string } } }>('GET', `/api/v1/nodes/${controlPlane().name}`);
      expect(node.status.nodeInfo.kubeletVersion).toBe(next);
      // The tree is the new version's: the package's binaries, the manifest on the new image.
      const files = packages.get(next)!.manifest.files;
      const sums = await env.run(
        controlPlane(),
        'sha256sum /usr/local/bin/kubeadm /usr/local/bin/kubelet /usr/local/bin/kubectl',
      );
      for (const name of ['kubeadm', 'kubelet', 'kubectl']) {
        expect(sums).toContain(`${files.find((f) => f.path === `bin/${name}`)!.sha256}  /usr/local/bin/${name}`);
      }
      expect(await env.run(controlPlane(), 'grep image: /etc/kubernetes/manifests/kube-apiserver.yaml')).toContain(
        `kube-apiserver:${next}`,
      );
      // Offline: kubeadm was told never to pull, and the images came from the package.
      expect(await env.run(controlPlane(), 'cat /var/lib/edgeadm/upgrade/kubeadm-upgrade.yaml')).toMatch(
        /apply:\n {2}kubernetesVersion: v1\.32\.1\n {2}imagePullPolicy: Never/,
      );
      expect(await env.run(controlPlane(), 'cat /var/lib/containerd/sim-image-refs.list')).toContain(
        `k8s.io registry.k8s.io/kube-apiserver:${next}`,
      );
      expect(await stateStep()).toBe('done');
      const again = json<UpgradeApplyResult>(await apply(next));
      expect(again.outcome).toBe('already-done');
    },
    TEST_TIMEOUT_MS,
  );
  it(
    'the SSH connection cut in the middle of the kubelet swap: the run rolls back over a new connection (the old tree, whole), and a re-run completes',
    async () => {
      const host = controlPlane();
      const before = await installed();
      await wrapTool(host, 'cp', '*/kubelet.edgeadm-new', STALL);
      let isDone = false;
      const first = apply(third, ['--gate-timeout', '90s']).finally(() => {
        isDone = true;
      });
      while (
        !isDone &&
        (await env.run(host, 'ls /usr/local/bin/kubelet.edgeadm-new 2>/dev/null || true')).trim() === ''
      ) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const dropped = isDone ? 0 : env.dropConnections(host);
      await liftLyingTool(env, host, 'cp');
      const cut = await first;
      expect(dropped).toBeGreaterThan(0);
      expect(cut.exitCode).toBe(1);
      expect(errorOf(cut).code).toBe('E_UPGRADE_ROLLED_BACK');
      expect(errorOf(cut).message).toContain('error execution phase kubelet');
      // kubeadm upgrade apply had moved the manifest to the new version: the rollback put the old tree back.
      await env.run(host, 'kill "$(cat /opt/stalled-cp.pid)" 2>/dev/null; rm -f /opt/stalled-cp.pid; sleep 0.2');
      expect(await installed()).toBe(before);
      expect(await version()).toBe(next);
      expect(await stateStep()).toBe('rolled-back');

      const rerun = json<UpgradeApplyResult>(await apply(third, ['--gate-timeout', '90s']));
      expect(rerun).toMatchObject({ outcome: 'upgraded', from: next, to: third });
      const sums = await env.run(
        host,
        'sha256sum /usr/local/bin/kubeadm /usr/local/bin/kubelet /usr/local/bin/kubectl',
      );
      for (const line of binariesOf(third)) expect(sums).toContain(line);
      expect(await env.run(host, 'ls -A /usr/local/bin')).not.toContain('edgeadm-new');
      expect(await version()).toBe(third);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'the disk filling up during the backup: the old version runs again on the old tree; with room again, a re-run completes',
    async () => {
      const host = controlPlane();
      // A small file system over the upgrade directory: room for the preflight, filled as the backup starts copying.
      await env.run(
        host,
        'mkdir -p /var/lib/edgeadm/upgrade && cp -a /var/lib/edgeadm/upgrade /opt/upgrade-before && mount -t tmpfs -o size=256m edgeadm-full /var/lib/edgeadm/upgrade && cp -a /opt/upgrade-before/. /var/lib/edgeadm/upgrade/',
      );
      try {
        const before = await installed();
        // Filled when the etcd data is being archived: the static Pods are stopped then.
        await wrapTool(
          host,
          'tar',
          '*backup.partial/etcd.tar*',
          'dd if=/dev/zero of=/var/lib/edgeadm/upgrade/filler bs=1M 2>/dev/null || true',
        );
        const full = await apply(fourth, ['--gate-timeout', '90s']);
        await liftLyingTool(env, host, 'tar');
        expect(full.exitCode).toBe(1);
        // The backup failed for want of room; the old version was started again (whether the state file could be
        // written on the full file system or not).
        expect(['E_UPGRADE_ROLLED_BACK', 'E_UPGRADE_INTERRUPTED']).toContain(errorOf(full).code);
        expect(errorOf(full).message).toContain('No space left on device');
        expect(await installed()).toBe(before);
        expect(await version()).toBe(third);

        await env.run(host, 'rm -f /var/lib/edgeadm/upgrade/filler');
        const rerun = json<UpgradeApplyResult>(await apply(fourth, ['--gate-timeout', '90s']));
        expect(rerun).toMatchObject({ outcome: 'upgraded', from: third, to: fourth });
        const sums = await env.run(
          host,
          'sha256sum /usr/local/bin/kubeadm /usr/local/bin/kubelet /usr/local/bin/kubectl',
        );
        for (const line of binariesOf(fourth)) expect(sums).toContain(line);
        expect(await version()).toBe(fourth);
      } finally {
        await liftLyingTool(env, host, 'cp');
        await liftLyingTool(env, host, 'tar');
        await env.run(host, 'umount /var/lib/edgeadm/upgrade 2>/dev/null || true');
      }
    },
    TEST_TIMEOUT_MS,
  );
});
