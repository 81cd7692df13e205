/**
 * `edgeadm upgrade apply` end to end through the CLI on netns+sshd test hosts
 * with no route out, with the SIMULATED k3s (test/support/sim-k3s: a
 * stand-in, not k3s) in real install packages of two versions: a control
 * plane and a node at v1.31; a dry run and a skipped minor change nothing;
 * a package whose k3s server fails to start is rolled back (the old binary,
 * config and datastore back, the old version answering); the good package
 * then upgrades the control plane to v1.32, and a re-run finds it done.
 * Faults: the SSH connection cut and edgeadm killed in the middle of the
 * swap, and the disk filling up during the backup (a small tmpfs over the
 * upgrade directory): each time the old version runs on the old tree or a
 * re-run completes the upgrade. A replayed older package, genuinely signed
 * by the trusted key, is refused by the skew policy (issue #39).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UpgradeApplyResult } from '../../../src/cluster/upgrade/apply.js';
import { KubeClient, type KubeObject } from '../../../src/kube/client.js';
import { kubeCredentialsOf } from '../../../src/kube/kubeconfig.js';
import type { BuiltPackage } from '../../../src/packages/build.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { runCli, type CliResult } from '../../support/cli.js';
import { clusterCli, json, printedJoinArgs, sshArgs } from '../../support/cluster-cli.js';
import { BROKEN_SERVER_MARKER, buildSimK3sPackage } from '../../support/sim-k3s/fixture.js';
import { liftLyingTool, plantLyingTool, realTool } from '../../support/lying-tools.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';
import { printedBy } from '../../support/run-output.js';
import { writeSigningKeys } from '../../support/signed-packages.js';
import { signPackage } from '../../../src/packages/sign.js';
import { createHash } from 'node:crypto';
import { INSTALLED_PACKAGE_PATH } from '../../../src/health/installed-package.js';

const CLI_TIMEOUT_MS = 240_000;
const TEST_TIMEOUT_MS = 600_000;
const NODE_WAIT_MS = 60_000;

function errorOf(run: CliResult): { code: string; message: string } {
  return (JSON.parse(run.stdout) as { error: { code: string; message: string } }).error;
}

describe('edgeadm upgrade apply on a simulated k3s control plane', () => {
  let env: TestHosts;
  let home: string;
  let adminKubeconfig: string;
  const old = 'v1.31.4+k3s1';
  const next = 'v1.32.1+k3s1';
  const skip = 'v1.33.0+k3s1';
  const last = 'v1.34.0+k3s1';
  // A patch release: the node, still at v1.31, keeps v1.35 out of reach (a kubelet lags at most three minors).
  const beyond = 'v1.34.1+k3s1';
  const packages = new Map<string, BuiltPackage>();

  const edgeadm = (args: string[]): Promise<CliResult> => clusterCli(home, CLI_TIMEOUT_MS)(args);
  const controlPlane = (): TestHost => env.targets[0]!;
  const apply = (pkg: string, extra: string[] = []): Promise<CliResult> =>
    edgeadm([
      'upgrade',
      'apply',
      ...sshArgs(env, controlPlane()),
      '--install-pkg-path',
      packages.get(pkg)!.file,
      '--json',
      ...extra,
    ]);

  /** SHA-256 of a package's manifest.json, as the cluster's record names it. */
  function manifestDigest(version: string): string {
    return createHash('sha256').update(packages.get(version)!.manifestBytes).digest('hex');
  }

  /** The cluster's record of the package it runs (kube-system/edgeadm-installed-package). */
  async function recordedPackage(): Promise<Record<string, string> | undefined> {
    return (await (await admin()).get<KubeObject & { data?: Record<string, string> }>(INSTALLED_PACKAGE_PATH))?.data;
  }

  async function admin(): Promise<KubeClient> {
    return new KubeClient(await kubeCredentialsOf(readFileSync(adminKubeconfig, 'utf8'), { what: 'admin' }));
  }

  /** What an upgrade replaces: the binary, the config, and the datastore's files that do not change while it runs. */
  function installed(): Promise<string> {
    return env.run(
      controlPlane(),
      'sha256sum /usr/local/bin/k3s /etc/rancher/k3s/config.yaml; cd /var/lib/rancher/k3s/server && find . -type f ! -path "./sim-apiserver/*" -exec sha256sum {} + | sort',
    );
  }

  /**
   * Covers the host's own `cp` (edgeadm calls it by absolute path) with one
   * that, when it writes the new k3s binary beside the old one, writes 100
   * bytes and stalls (its pid in /opt/stalled-cp.pid), so that a fault lands
   * in the middle of the swap.
   */
  async function stallTheSwap(host: TestHost): Promise<void> {
    await plantLyingTool(
      env,
      host,
      'cp',
      [
        'for last; do :; done',
        'case "$last" in',
        '  *k3s.edgeadm-new) echo $$ > /opt/stalled-cp.pid; head -c 100 "$1" > "$last"; sleep 30; exit 1 ;;',
        'esac',
        `exec ${realTool('cp')} "$@"`,
      ].join('\n'),
    );
  }

  /** Waits until the stalled swap has begun writing the new binary. */
  async function untilSwapping(host: TestHost, isDone: () => boolean): Promise<boolean> {
    while (!isDone()) {
      const partial = await env.run(host, 'ls /usr/local/bin/k3s.edgeadm-new 2>/dev/null || true');
      if (partial.trim() !== '') return true;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return false;
  }

  async function waitForNodes(version: string, count: number): Promise<void> {
    const client = await admin();
    const deadline = Date.now() + NODE_WAIT_MS;
    for (;;) {
      try {
        const listed = await client.list<{ status?: { nodeInfo?: { kubeletVersion?: string } } }>('/api/v1/nodes');
        if (listed.length === count && listed.every((n) => n.status?.nodeInfo?.kubeletVersion === version)) return;
      } catch {
        // The API server may be restarting.
      }
      if (Date.now() > deadline) throw new Error(`the Nodes did not all report ${version}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  beforeAll(async () => {
    ensureCliBuilt('commands/upgrade/apply.js', ['src', 'test/support/sim-k3s']);
    env = await startTestHosts({ count: 2 });
    home = mkdtempSync(join(env.dir, 'cli-home-'));
    adminKubeconfig = join(home, 'admin.yaml');
    const dir = mkdtempSync(join(env.dir, 'pkg-'));
    for (const version of [old, next, skip, last, beyond]) {
      packages.set(version, await buildSimK3sPackage(dir, { kubernetesVersion: version }));
    }
    packages.set('broken', await buildSimK3sPackage(dir, { kubernetesVersion: next, isServerBroken: true }));
    const init = json<{ joinCommand: string }>(
      await edgeadm([
        'init',
        ...sshArgs(env, controlPlane()),
        '--install-pkg-path',
        packages.get(old)!.file,
        '--kubeconfig-out',
        adminKubeconfig,
        '--json',
      ]),
    );
    json(
      await edgeadm([
        ...printedJoinArgs(init.joinCommand),
        '--install-pkg-path',
        packages.get(old)!.file,
        ...sshArgs(env, env.targets[1]!),
        '--json',
      ]),
    );
    await waitForNodes(old, 2);
  }, TEST_TIMEOUT_MS);

  afterAll(async () => {
    await env?.teardown();
  });

  it(
    'a dry run prints the plan and a skipped minor is refused; neither changes anything',
    async () => {
      const before = await installed();
      const dry = json<UpgradeApplyResult>(await apply(next, ['--dry-run']));
      expect(dry).toMatchObject({ outcome: 'would-upgrade', from: old, to: next, isDryRun: true });
      expect(dry.plan.join('\n')).toMatch(/\[swap\] \[\d+\] Would install \/usr\/local\/bin\/k3s/);
      // The same dry run for a script: one event per line, the phases as the runner reports them.
      const jsonl = await edgeadm([
        'upgrade',
        'apply',
        ...sshArgs(env, controlPlane()),
        '--install-pkg-path',
        packages.get(next)!.file,
        '--dry-run',
        '--output',
        'jsonl',
      ]);
      expect(jsonl.exitCode, printedBy(jsonl)).toBe(0);
      const events = jsonl.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { type: string; phase?: string });
      expect(events.filter((e) => e.type === 'phase-started').map((e) => e.phase)).toEqual([
        'preflight',
        'package',
        'backup',
        'swap',
        'restart',
        'record-package',
      ]);
      expect(events.find((e) => e.type === 'phase-skipped')).toMatchObject({ phase: 'health', reason: 'dry run' });
      expect(events.at(-1)).toMatchObject({ type: 'result', ok: true });
      const refused = await apply(skip);
      expect(refused.exitCode).toBe(2);
      expect(errorOf(refused).code).toBe('E_UPGRADE_SKEW');
      expect(await installed()).toBe(before);
      expect(await env.run(controlPlane(), 'test -e /var/lib/edgeadm/upgrade && echo present || echo absent')).toBe(
        'absent\n',
      );
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'a new binary that fails to start is rolled back: the old version answers, on the datastore as before',
    async () => {
      const client = await admin();
      await client.request('POST', '/api/v1/namespaces/default/configmaps', {
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'before-upgrade' }, data: { a: '1' } },
      });
      const before = await installed();
      const run = await apply('broken', ['--gate-timeout', '15s']);
      expect(run.exitCode, printedBy(run)).toBe(1);
      const error = errorOf(run);
      expect(error.code).toBe('E_UPGRADE_ROLLED_BACK');
      expect(error.message).toContain('the api-ready gate did not pass');
      expect(error.message).toContain(`${old} runs again`);
      // The broken binary wrote into the datastore directory; the restore took that back.
      expect(await env.run(controlPlane(), `ls ${BROKEN_SERVER_MARKER} 2>&1 || true`)).toContain('No such file');
      expect(await installed()).toBe(before);
      expect((await client.request<{ gitVersion: string }>('GET', '/version')).gitVersion).toBe(old);
      // The cluster still records the package init installed: a rolled-back upgrade records nothing.
      expect(await recordedPackage()).toMatchObject({ action: 'init', manifestSha256: manifestDigest(old) });
      const kept = await client.request<{ data: { a: string } }>(
        'GET',
        '/api/v1/namespaces/default/configmaps/before-upgrade',
      );
      expect(kept.data.a).toBe('1');
      const state = JSON.parse(await env.run(controlPlane(), 'cat /var/lib/edgeadm/upgrade/state.json')) as {
        step: string;
      };
      expect(state.step).toBe('rolled-back');
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'upgrades the control plane to the next minor; a re-run finds it done',
    async () => {
      const result = json<UpgradeApplyResult>(await apply(next, ['--gate-timeout', '90s']));
      expect(result).toMatchObject({ outcome: 'upgraded', from: old, to: next });
      const client = await admin();
      expect((await client.request<{ gitVersion: string }>('GET', '/version')).gitVersion).toBe(next);
      const node = await client.request<{ status: { nodeInfo: { kubeletVersion: string } } }>(
        'GET',
        `/api/v1/nodes/${controlPlane().name}`,
      );
      expect(node.status.nodeInfo.kubeletVersion).toBe(next);
      // The cluster records the package it now runs, for its agent to report to the hub.
      const recorded = await recordedPackage();
      expect(recorded).toMatchObject({ action: 'upgrade', version: next, manifestSha256: manifestDigest(next) });
      const again = json<UpgradeApplyResult>(await apply(next));
      expect(again.outcome).toBe('already-done');
      expect(await recordedPackage()).toEqual(recorded);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'a replayed older signed package (a downgrade) passes the signature check and is refused by the skew policy; nothing changes',
    async () => {
      // What an attacker who can write the site's package share, but holds no signing key, can still do:
      // put back an older package that the trusted key genuinely signed (issue #39).
      const keys = await writeSigningKeys(mkdtempSync(join(env.dir, 'keys-')));
      const replayed = join(home, 'replayed-old.tar.gz');
      await signPackage({ file: packages.get(old)!.file, output: replayed, signingKey: keys.trusted.key });
      const before = await installed();
      const refused = await edgeadm([
        'upgrade',
        'apply',
        ...sshArgs(env, controlPlane()),
        '--install-pkg-path',
        replayed,
        '--trusted-key',
        keys.trusted.publicKeyFile,
        '--json',
      ]);
      expect(refused.exitCode, printedBy(refused)).toBe(2);
      expect(errorOf(refused).code).toBe('E_UPGRADE_SKEW');
      expect(errorOf(refused).message).toContain('no-minor-downgrade');
      // The signature was checked and held: the refusal is the policy's, not the signature's.
      expect(refused.stderr).not.toContain('is NOT checked');
      expect(await installed()).toBe(before);
      const client = await admin();
      expect((await client.request<{ gitVersion: string }>('GET', '/version')).gitVersion).toBe(next);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'an SSH connection cut in the middle of the binary swap: the run rolls back over a new connection (the old binary whole, nothing half-written left), and a re-run completes the upgrade',
    async () => {
      const host = controlPlane();
      const binarySha = async (): Promise<string> =>
        (await env.run(host, 'sha256sum < /usr/local/bin/k3s')).slice(0, 64);
      const before = await binarySha();
      const after = packages.get(skip)!.manifest.files.find((f) => f.path === 'bin/k3s')!.sha256;
      const binDirBefore = await env.run(host, 'ls -A /usr/local/bin');
      await stallTheSwap(host);
      let isDone = false;
      const first = apply(skip, ['--gate-timeout', '90s']).finally(() => {
        isDone = true;
      });
      const dropped = (await untilSwapping(host, () => isDone)) ? env.dropConnections(host) : 0;
      await liftLyingTool(env, host, 'cp');
      const cut = await first;
      expect(dropped).toBeGreaterThan(0);
      expect(cut.exitCode).toBe(1);
      expect(errorOf(cut).code).toBe('E_UPGRADE_ROLLED_BACK');
      expect(errorOf(cut).message).toContain('error execution phase swap');
      expect(await binarySha()).toBe(before);
      expect(await env.run(host, 'ls -A /usr/local/bin')).toBe(binDirBefore);
      const state = JSON.parse(await env.run(host, 'cat /var/lib/edgeadm/upgrade/state.json')) as { step: string };
      expect(state.step).toBe('rolled-back');
      expect((await (await admin()).request<{ gitVersion: string }>('GET', '/version')).gitVersion).toBe(next);

      const rerun = json<UpgradeApplyResult>(await apply(skip, ['--gate-timeout', '90s']));
      expect(rerun).toMatchObject({ outcome: 'upgraded', from: next, to: skip });
      expect(await binarySha()).toBe(after);
      // Nothing half-written is left beside the binary, and the backup holds the old binary, not the new one.
      expect(await env.run(host, 'ls -A /usr/local/bin')).toBe(binDirBefore);
      expect((await env.run(host, 'sha256sum < /var/lib/edgeadm/upgrade/backup/k3s')).slice(0, 64)).toBe(before);
      const client = await admin();
      expect((await client.request<{ gitVersion: string }>('GET', '/version')).gitVersion).toBe(skip);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'edgeadm killed in the middle of the binary swap: k3s is left stopped on the old binary, and a re-run resumes from the recorded step (no skew check against a stopped API server, no second backup) and finishes',
    async () => {
      const host = controlPlane();
      const binarySha = async (): Promise<string> =>
        (await env.run(host, 'sha256sum < /usr/local/bin/k3s')).slice(0, 64);
      const before = await binarySha();
      const after = packages.get(last)!.manifest.files.find((f) => f.path === 'bin/k3s')!.sha256;
      const binDirBefore = await env.run(host, 'ls -A /usr/local/bin');
      await stallTheSwap(host);
      let isDone = false;
      let killer: { kill(signal: NodeJS.Signals): void } | undefined;
      const first = runCli(
        ['upgrade', 'apply', ...sshArgs(env, host), '--install-pkg-path', packages.get(last)!.file, '--json'],
        {
          env: {
            HOME: home,
            EDGEADM_HOME: join(home, '.edgeadm'),
            SSH_AUTH_SOCK: '',
            EDGEADM_SERVICE_MANAGER: 'direct',
          },
          timeoutMs: CLI_TIMEOUT_MS,
          onStarted: (process) => {
            killer = process;
          },
        },
      ).finally(() => {
        isDone = true;
      });
      expect(await untilSwapping(host, () => isDone)).toBe(true);
      killer!.kill('SIGKILL');
      const killed = await first;
      expect(killed.exitCode).not.toBe(0);
      // The stalled copy on the host ends, and with it the swap's script (set -e): no rename happens.
      await env.run(host, 'kill "$(cat /opt/stalled-cp.pid)" 2>/dev/null; rm -f /opt/stalled-cp.pid');
      await liftLyingTool(env, host, 'cp');
      expect(await binarySha()).toBe(before);
      const state = JSON.parse(await env.run(host, 'cat /var/lib/edgeadm/upgrade/state.json')) as { step: string };
      expect(state.step).toBe('backed-up');

      const rerun = await apply(last, ['--gate-timeout', '90s']);
      expect(json<UpgradeApplyResult>(rerun)).toMatchObject({
        outcome: 'upgraded',
        from: skip,
        to: last,
        resumedFrom: 'backed-up',
      });
      expect(await binarySha()).toBe(after);
      expect(await env.run(host, 'ls -A /usr/local/bin')).toBe(binDirBefore);
      expect((await env.run(host, 'sha256sum < /var/lib/edgeadm/upgrade/backup/k3s')).slice(0, 64)).toBe(before);
      const client = await admin();
      expect((await client.request<{ gitVersion: string }>('GET', '/version')).gitVersion).toBe(last);
    },
    TEST_TIMEOUT_MS,
  );
  it(
    'the disk filling up during the backup: k3s runs again on the old binary, config and datastore; with room again, a re-run completes',
    async () => {
      const host = controlPlane();
      // A small file system over the upgrade directory: room for the preflight, filled as the backup starts copying.
      await env.run(
        host,
        [
          // What is there already, a backup of the server directory, the preflight's 64 MiB of headroom, and slack.
          'kib=$(( $(du -sk /var/lib/edgeadm/upgrade | cut -f1) + 2 * $(du -sk /var/lib/rancher/k3s/server | cut -f1) + 96 * 1024 ))',
          'cp -a /var/lib/edgeadm/upgrade /opt/upgrade-before',
          'mount -t tmpfs -o size=${kib}k edgeadm-full /var/lib/edgeadm/upgrade',
          'cp -a /opt/upgrade-before/. /var/lib/edgeadm/upgrade/',
        ].join(' && '),
      );
      try {
        const before = await installed();
        await plantLyingTool(
          env,
          host,
          'cp',
          [
            'for last; do :; done',
            'case "$last" in',
            '  */backup.partial/*) dd if=/dev/zero of=/var/lib/edgeadm/upgrade/filler bs=1M 2>/dev/null || true ;;',
            'esac',
            `exec ${realTool('cp')} "$@"`,
          ].join('\n'),
        );
        const full = await apply(beyond, ['--gate-timeout', '90s']);
        await liftLyingTool(env, host, 'cp');
        expect(full.exitCode, full.stdout).toBe(1);
        // The backup failed for want of room; k3s was started again (whether the state file could be written or not).
        expect(['E_UPGRADE_ROLLED_BACK', 'E_UPGRADE_INTERRUPTED']).toContain(errorOf(full).code);
        expect(errorOf(full).message).toContain('No space left on device');
        expect(await installed()).toBe(before);
        expect((await (await admin()).request<{ gitVersion: string }>('GET', '/version')).gitVersion).toBe(last);

        await env.run(host, 'rm -f /var/lib/edgeadm/upgrade/filler');
        const rerun = json<UpgradeApplyResult>(await apply(beyond, ['--gate-timeout', '90s']));
        expect(rerun).toMatchObject({ outcome: 'upgraded', from: last, to: beyond });
        const after = packages.get(beyond)!.manifest.files.find((f) => f.path === 'bin/k3s')!.sha256;
        expect((await env.run(host, 'sha256sum < /usr/local/bin/k3s')).slice(0, 64)).toBe(after);
        expect((await (await admin()).request<{ gitVersion: string }>('GET', '/version')).gitVersion).toBe(beyond);
      } finally {
        await liftLyingTool(env, host, 'cp');
        await env.run(host, 'umount /var/lib/edgeadm/upgrade 2>/dev/null || true');
      }
    },
    TEST_TIMEOUT_MS,
  );
});
