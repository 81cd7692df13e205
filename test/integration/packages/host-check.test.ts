/**
 * The package phase on a real test host (netns + sshd) whose tools disagree
 * with what edgeadm verified: a `tar` that unpacks other bytes into bin/k3s,
 * then a `cp` and an `install` that write other bytes, and a `sha256sum` in
 * /usr/local/bin that says every file is the manifest's. The lying tar, cp
 * and install are bind-mounted over the system's own in the host's private
 * mount namespace (test/support/lying-tools.ts), so that edgeadm meets them
 * however it calls them. init must stop with a typed error naming the file,
 * expected against found, and install nothing from the tree it refused nor
 * any copy it refused (the target is never written); a tree changed after
 * unpacking is refused and removed, and the next run recovers. A package
 * that carries bin/sha256sum is refused before it reaches the host.
 */
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyPackage } from '../../../src/packages/verify.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { plantLyingTool, realTool, toolThatTampersPackageCopies } from '../../support/lying-tools.js';
import type { CliResult } from '../../support/cli.js';
import { clusterCli, sshArgs } from '../../support/cluster-cli.js';
import { buildSimK3sPackage } from '../../support/sim-k3s/fixture.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';
import { printedBy } from '../../support/run-output.js';

const CLI_TIMEOUT_MS = 120_000;

let env: TestHosts;
let home: string;
let pkg: string;
let host: TestHost;

beforeAll(async () => {
  ensureCliBuilt('commands/init.js', ['src', 'test/support/sim-k3s']);
  env = await startTestHosts({ count: 1 });
  host = env.targets[0]!;
  home = mkdtempSync(join(env.dir, 'cli-home-'));
  pkg = (await buildSimK3sPackage(mkdtempSync(join(env.dir, 'pkg-')))).file;
}, 180_000);

afterAll(async () => {
  await env?.teardown();
});

const edgeadm = (args: string[]): Promise<CliResult> => clusterCli(home, CLI_TIMEOUT_MS)(args);

function errorOf(run: CliResult): { code: string; message: string } {
  return (JSON.parse(run.stdout) as { error: { code: string; message: string } }).error;
}

describe('the package phase checks what the host unpacked and installed', () => {
  it('a tar that unpacks other bytes into bin/k3s: E_PACKAGE_HOST_MISMATCH, nothing installed, the tree removed', async () => {
    // Unpacks like GNU tar, then changes bin/k3s in the target directory (the argument after -C).
    const restore = await plantLyingTool(
      env,
      host,
      'tar',
      [
        `${realTool('tar')} "$@" || exit $?`,
        'while [ $# -gt 0 ]; do if [ "$1" = -C ]; then printf "echo tampered\\n" >> "$2/bin/k3s"; fi; shift; done',
      ].join('\n'),
    );
    const run = await edgeadm(['init', ...sshArgs(env, host), '--install-pkg-path', pkg, '--json']).finally(restore);
    expect(run.exitCode, printedBy(run)).toBe(3);
    const error = errorOf(run);
    expect(error.code).toBe('E_PACKAGE_HOST_MISMATCH');
    expect(error.message).toMatch(/"bin\/k3s": expected SHA-256 [0-9a-f]{64}, found SHA-256 [0-9a-f]{64}/);
    expect(await env.run(host, 'ls /usr/local/bin; ls /var/lib/edgeadm/packages')).not.toMatch(/k3s\n|\.partial/);
  });

  it('a cp or install that writes other bytes, a sha256sum in /usr/local/bin that agrees: E_PACKAGE_STAGED_MISMATCH, the target never written', async () => {
    const restores = [
      await plantLyingTool(env, host, 'cp', toolThatTampersPackageCopies('cp')),
      await plantLyingTool(env, host, 'install', toolThatTampersPackageCopies('install')),
    ];
    const sha256 = (await verifyPackage(pkg)).manifest.files.find((file) => file.path === 'bin/k3s')!.sha256;
    // First on root's PATH, and it says every file is the manifest's bin/k3s.
    await env.run(
      host,
      `printf '#!/bin/sh\\necho "${sha256}  -"\\n' > /usr/local/bin/sha256sum && chmod 755 /usr/local/bin/sha256sum`,
    );
    let run: CliResult;
    try {
      run = await edgeadm(['init', ...sshArgs(env, host), '--install-pkg-path', pkg, '--json']);
    } finally {
      for (const restore of restores) await restore();
      await env.run(host, 'rm -f /usr/local/bin/sha256sum');
    }
    expect(run.exitCode, printedBy(run)).toBe(3);
    const error = errorOf(run);
    expect(error.code).toBe('E_PACKAGE_STAGED_MISMATCH');
    expect(error.message).toMatch(
      /staged as \/usr\/local\/bin\/k3s\.edgeadm-new .*has SHA-256 [0-9a-f]{64}; it must be [0-9a-f]{64}\. It was removed, and \/usr\/local\/bin\/k3s was left as it was/,
    );
    expect(await env.run(host, 'ls /usr/local/bin')).not.toMatch(/k3s/);
  });

  it('a package that carries bin/sha256sum: E_PACKAGE_UNEXPECTED_BINARY before anything reaches the host', async () => {
    const shadowing = await buildSimK3sPackage(mkdtempSync(join(env.dir, 'pkg-')), {
      tag: 'shadow',
      extraBinaries: { sha256sum: '#!/bin/sh\necho 0000\n' },
    });
    const run = await edgeadm(['init', ...sshArgs(env, host), '--install-pkg-path', shadowing.file, '--json']);
    expect(run.exitCode, printedBy(run)).toBe(3);
    expect(errorOf(run).code).toBe('E_PACKAGE_UNEXPECTED_BINARY');
    expect(errorOf(run).message).toContain('bin/sha256sum');
    expect(await env.run(host, 'ls /var/lib/edgeadm/packages')).not.toMatch(/shadow/);
  });

  it('a tree changed after it was unpacked: refused on the next run and removed, and the run after unpacks it afresh', async () => {
    await env.run(host, 'for f in /var/lib/edgeadm/packages/*/bin/k3s; do printf "echo changed\\n" >> "$f"; done');
    const refused = await edgeadm(['init', ...sshArgs(env, host), '--install-pkg-path', pkg, '--json']);
    expect(refused.exitCode, printedBy(refused)).toBe(3);
    expect(errorOf(refused).code).toBe('E_PACKAGE_HOST_MISMATCH');
    const left = (await env.run(host, 'ls /var/lib/edgeadm/packages')).trim().split('\n');
    expect(
      left.every((name) => name.endsWith('.tar.gz')),
      left.join(' '),
    ).toBe(true);

    const run = await edgeadm(['init', ...sshArgs(env, host), '--install-pkg-path', pkg, '--json']);
    expect(run.exitCode, printedBy(run)).toBe(0);
    const installed = await env.run(host, 'sha256sum < /usr/local/bin/k3s');
    const manifest = (await verifyPackage(pkg)).manifest;
    expect(installed.slice(0, 64)).toBe(manifest.files.find((file) => file.path === 'bin/k3s')?.sha256);
  });
});
