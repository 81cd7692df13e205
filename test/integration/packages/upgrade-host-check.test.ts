/**
 * What an upgrade installs is what was verified, on real test hosts (netns +
 * sshd) whose tools lie, through the real phases of `upgrade apply` and
 * `upgrade node`, once per distribution with its SIMULATION
 * (test/support/sim-k3s, test/support/sim-kubeadm; neither is the real
 * thing). Issue #40.
 *
 * - A `cp` that writes one more line into the copy of the package's binary
 *   (bind-mounted over the system's own cp in the host's private mount
 *   namespace): the swap refuses the staged copy, the old binary stays, and
 *   the old version runs again (apply: the k3s binary; kubeadm: kubeadm,
 *   which would next run as root; node: the node's binaries).
 * - k3s: the unpacked bin/k3s changed between the package check and the
 *   swap (by a `tar` that does it while the backup is archived) is refused.
 * - A package for another architecture, and one carrying bin/sha256sum, are
 *   refused before anything on the host changes.
 * - The backup is private (archives 0600, its directory 0700 even when it
 *   existed as 0755), and a rollback refuses a backup swapped together with
 *   the MANIFEST.sha256 beside it.
 */
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BuiltPackage } from '../../../src/packages/build.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import type { CliResult } from '../../support/cli.js';
import { clusterCli, json, printedJoinArgs, sshArgs } from '../../support/cluster-cli.js';
import { DISTRIBUTIONS, type TestDistribution } from '../../support/distributions.js';
import { plantLyingTool, realTool, toolThatTampersPackageCopies } from '../../support/lying-tools.js';
import { buildSimK3sPackage } from '../../support/sim-k3s/fixture.js';
import { buildSimKubeadmPackage } from '../../support/sim-kubeadm/fixture.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';
import { printedBy } from '../../support/run-output.js';

/** The node joins at `old`, the control plane starts at `next` and is upgraded to `third`; the node to `next`. */
const VERSIONS = {
  k3s: { old: 'v1.31.4+k3s1', next: 'v1.32.1+k3s1', third: 'v1.33.0+k3s1' },
  kubeadm: { old: 'v1.31.4', next: 'v1.32.1', third: 'v1.33.0' },
} as const;

interface CliError {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

function errorOf(run: CliResult): CliError {
  return (JSON.parse(run.stdout) as { error: CliError }).error;
}

describe.each(DISTRIBUTIONS)(
  'an upgrade installs only what was verified ($name, simulated)',
  (distribution: TestDistribution) => {
    const versions = VERSIONS[distribution.name];
    const packages = new Map<string, BuiltPackage>();
    let env: TestHosts;
    let home: string;
    const timeout = distribution.testTimeoutMs;
    const isK3s = distribution.name === 'k3s';

    const edgeadm = (args: string[]): Promise<CliResult> => clusterCli(home, distribution.cliTimeoutMs)(args);
    const controlPlane = (): TestHost => env.targets[0]!;
    const node = (): TestHost => env.targets[1]!;
    const build = (version: string, extra: { isAgentBroken?: boolean } = {}): Promise<BuiltPackage> =>
      isK3s
        ? buildSimK3sPackage(mkdtempSync(join(env.dir, 'pkg-')), {
            kubernetesVersion: version,
            ...(extra.isAgentBroken ? { isAgentBroken: true, tag: 'broken' } : {}),
          })
        : buildSimKubeadmPackage(mkdtempSync(join(env.dir, 'pkg-')), { kubernetesVersion: version });
    const apply = (pkg: BuiltPackage): Promise<CliResult> =>
      edgeadm(['upgrade', 'apply', ...sshArgs(env, controlPlane()), '--install-pkg-path', pkg.file, '--json']);
    const upgradeNode = (pkg: BuiltPackage, extra: string[] = []): Promise<CliResult> =>
      edgeadm([
        'upgrade',
        'node',
        ...sshArgs(env, node()),
        '--control-plane',
        `root@${controlPlane().address}`,
        '--install-pkg-path',
        pkg.file,
        '--json',
        ...extra,
      ]);
    /** The binaries an upgrade of the control plane swaps first (k3s; kubeadm and kubectl), hashed. */
    const controlPlaneBinaries = isK3s ? '/usr/local/bin/k3s' : '/usr/local/bin/kubeadm /usr/local/bin/kubelet';
    const nodeBinaries = controlPlaneBinaries;
    const hashes = (host: TestHost, paths: string): Promise<string> =>
      env.run(host, `sha256sum ${paths}; ls /usr/local/bin | grep -c edgeadm-new || true`);
    const manifestSha256 = (pkg: BuiltPackage, path: string): string =>
      pkg.manifest.files.find((file) => file.path === path)!.sha256;

    beforeAll(async () => {
      ensureCliBuilt('commands/upgrade/node.js', [...distribution.sources, 'test/support/sim-apiserver']);
      env = await startTestHosts({ count: 2 });
      home = mkdtempSync(join(env.dir, 'cli-home-'));
      for (const version of Object.values(versions)) packages.set(version, await build(version));
      const init = json<{ joinCommand: string }>(
        await edgeadm([
          'init',
          ...sshArgs(env, controlPlane()),
          ...distribution.initFlags,
          '--install-pkg-path',
          packages.get(versions.next)!.file,
          '--json',
        ]),
      );
      json(
        await edgeadm([
          ...printedJoinArgs(init.joinCommand),
          ...distribution.initFlags,
          '--install-pkg-path',
          packages.get(versions.old)!.file,
          ...sshArgs(env, node()),
          '--json',
        ]),
      );
      // An upgrade directory that exists already, readable by all: the backup must make it private anyway.
      await env.run(controlPlane(), 'mkdir -p /var/lib/edgeadm/upgrade && chmod 755 /var/lib/edgeadm/upgrade');
    }, timeout);

    afterAll(async () => {
      await env?.teardown();
    });

    it(
      'upgrade apply with a cp that changes the copy: the staged copy is refused, the old binaries stay and run again',
      async () => {
        const before = await hashes(controlPlane(), controlPlaneBinaries);
        const restore = await plantLyingTool(env, controlPlane(), 'cp', toolThatTampersPackageCopies('cp'));
        const third = packages.get(versions.third)!;
        let run: CliResult;
        try {
          run = await apply(third);
        } finally {
          await restore();
        }
        expect(run.exitCode, printedBy(run)).toBe(1);
        const error = errorOf(run);
        expect(error.code).toBe('E_UPGRADE_ROLLED_BACK');
        expect(error.details?.failureCode).toBe('E_PACKAGE_STAGED_MISMATCH');
        const swapped = isK3s ? 'k3s' : 'kubeadm';
        expect(error.message).toContain(`staged as /usr/local/bin/${swapped}.edgeadm-new on `);
        expect(error.message).toContain(`it must be ${manifestSha256(third, `bin/${swapped}`)}`);
        expect(await hashes(controlPlane(), controlPlaneBinaries)).toBe(before);
        const state = JSON.parse(await env.run(controlPlane(), 'cat /var/lib/edgeadm/upgrade/state.json')) as {
          step: string;
          backupSha256?: Record<string, string>;
        };
        expect(state.step).toBe('rolled-back');
        // The backup's hashes are kept outside the backup directory.
        expect(Object.keys(state.backupSha256 ?? {}).length).toBeGreaterThan(0);
        // Private backup: the directory that existed as 0755 is 0700, the archives 0600.
        const modes = await env.run(
          controlPlane(),
          'stat -c "%a %n" /var/lib/edgeadm/upgrade /var/lib/edgeadm/upgrade/backup /var/lib/edgeadm/upgrade/backup/*.tar',
        );
        for (const line of modes.trim().split('\n')) {
          expect(line, modes).toMatch(line.endsWith('.tar') ? /^600 / : /^700 /);
        }
      },
      timeout,
    );

    it.runIf(distribution.name === 'k3s')(
      'upgrade apply: an unpacked bin/k3s changed after the package check (while the backup runs) is refused at the swap',
      async () => {
        const before = await hashes(controlPlane(), controlPlaneBinaries);
        // An honest tar, except that when it archives (the backup) it changes the unpacked package's bin/k3s.
        const restore = await plantLyingTool(
          env,
          controlPlane(),
          'tar',
          [
            'case " $* " in *" -cf "*) for f in /var/lib/edgeadm/packages/*/bin/k3s; do printf "echo changed\\n" >> "$f"; done ;; esac',
            `exec ${realTool('tar')} "$@"`,
          ].join('\n'),
        );
        let run: CliResult;
        try {
          run = await apply(packages.get(versions.third)!);
        } finally {
          await restore();
        }
        expect(run.exitCode, printedBy(run)).toBe(1);
        const error = errorOf(run);
        expect(error.code).toBe('E_UPGRADE_ROLLED_BACK');
        expect(error.details?.failureCode).toBe('E_PACKAGE_STAGED_MISMATCH');
        expect(await hashes(controlPlane(), controlPlaneBinaries)).toBe(before);
      },
      timeout,
    );

    it.runIf(distribution.name === 'k3s')(
      'a package for another architecture, or carrying bin/sha256sum: refused before anything on the host changes',
      async () => {
        const dir = mkdtempSync(join(env.dir, 'pkg-'));
        const foreign = await buildSimK3sPackage(dir, { kubernetesVersion: versions.third, arch: 'arm64', tag: 'arm' });
        const shadowing = await buildSimK3sPackage(dir, {
          kubernetesVersion: versions.third,
          tag: 'shadow',
          extraBinaries: { sha256sum: '#!/bin/sh\necho 0000\n' },
        });
        const before = await hashes(controlPlane(), `${controlPlaneBinaries} /var/lib/edgeadm/upgrade/state.json`);
        const wrongArch = await apply(foreign);
        expect(wrongArch.exitCode, printedBy(wrongArch)).toBe(3);
        expect(errorOf(wrongArch).code).toBe('E_PACKAGE_ARCH');
        const shadow = await apply(shadowing);
        expect(shadow.exitCode, printedBy(shadow)).toBe(3);
        expect(errorOf(shadow).code).toBe('E_PACKAGE_UNEXPECTED_BINARY');
        expect(errorOf(shadow).message).toContain('bin/sha256sum');
        expect(await hashes(controlPlane(), `${controlPlaneBinaries} /var/lib/edgeadm/upgrade/state.json`)).toBe(
          before,
        );
        expect(await env.run(controlPlane(), 'ls /var/lib/edgeadm/packages')).not.toMatch(/-arm|-shadow/);
      },
      timeout,
    );

    it(
      'upgrade node with a cp that changes the copy: the staged copy is refused, the old binaries stay and run again',
      async () => {
        const before = await hashes(node(), nodeBinaries);
        const restore = await plantLyingTool(env, node(), 'cp', toolThatTampersPackageCopies('cp'));
        const next = packages.get(versions.next)!;
        let run: CliResult;
        try {
          run = await upgradeNode(next, ['--gate-timeout', '30s']);
        } finally {
          await restore();
        }
        expect(run.exitCode, printedBy(run)).toBe(1);
        const error = errorOf(run);
        expect(error.code).toBe('E_UPGRADE_ROLLED_BACK');
        expect(error.details?.failureCode).toBe('E_PACKAGE_STAGED_MISMATCH');
        const swapped = isK3s ? 'k3s' : 'kubeadm';
        expect(error.message).toContain(`staged as /usr/local/bin/${swapped}.edgeadm-new on `);
        expect(await hashes(node(), nodeBinaries)).toBe(before);
      },
      timeout,
    );

    it.runIf(distribution.name === 'k3s')(
      'upgrade node: a rollback refuses a backup swapped together with the MANIFEST.sha256 beside it',
      async () => {
        const broken = await build(versions.next, { isAgentBroken: true });
        // An honest cp, except that the swap's copy also swaps the backed-up k3s and rewrites the backup's manifest.
        const restore = await plantLyingTool(
          env,
          node(),
          'cp',
          [
            'case "$*" in',
            '  */var/lib/edgeadm/packages/*)',
            '    b=/var/lib/edgeadm/upgrade/node-backup',
            '    if [ -f $b/k3s ]; then printf "echo swapped\\n" >> $b/k3s; (cd $b && sha256sum k3s $( [ -f config ] && echo config ) > MANIFEST.sha256); fi ;;',
            'esac',
            `exec ${realTool('cp')} "$@"`,
          ].join('\n'),
        );
        let run: CliResult;
        try {
          run = await upgradeNode(broken, ['--gate-timeout', '10s']);
        } finally {
          await restore();
        }
        expect(run.exitCode, printedBy(run)).toBe(1);
        const error = errorOf(run);
        expect(error.code).toBe('E_UPGRADE_INTERRUPTED');
        expect(error.message).toContain('/var/lib/edgeadm/upgrade/node-backup');
        expect(error.message).toContain('is not what was backed up: k3s changed since');
        // The swapped backup was not installed.
        const installed = await env.run(node(), 'sha256sum < /usr/local/bin/k3s');
        expect(installed.slice(0, 64)).toBe(manifestSha256(broken, 'bin/k3s'));
      },
      timeout,
    );
  },
);
