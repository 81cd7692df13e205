/**
 * The package phase on a real test host (netns + sshd) whose tools disagree
 * with what edgeadm verified: a `tar` that unpacks other bytes into bin/k3s,
 * then an `install` that writes other bytes. Both are planted in the host's
 * own /usr/local/bin (a tmpfs of that host only), ahead of the real tools on
 * root's PATH. init must stop with a typed error naming the file, expected
 * against found, and install nothing from the tree it refused; a tree
 * changed after unpacking is refused and removed, and the next run recovers.
 */
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyPackage } from '../../../src/packages/verify.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
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
    await env.run(
      host,
      [
        "cat > /usr/local/bin/tar <<'SH'",
        '#!/bin/sh',
        '/usr/bin/tar "$@" || exit $?',
        'while [ $# -gt 0 ]; do if [ "$1" = -C ]; then printf "echo tampered\\n" >> "$2/bin/k3s"; fi; shift; done',
        'SH',
        'chmod 755 /usr/local/bin/tar',
      ].join('\n'),
    );
    const run = await edgeadm(['init', ...sshArgs(env, host), '--install-pkg-path', pkg, '--json']);
    expect(run.exitCode, printedBy(run)).toBe(3);
    const error = errorOf(run);
    expect(error.code).toBe('E_PACKAGE_HOST_MISMATCH');
    expect(error.message).toMatch(/"bin\/k3s": expected SHA-256 [0-9a-f]{64}, found SHA-256 [0-9a-f]{64}/);
    expect(await env.run(host, 'ls /usr/local/bin; ls /var/lib/edgeadm/packages')).not.toMatch(/k3s\n|\.partial/);
  });

  it('an install that writes other bytes: E_PACKAGE_INSTALLED_MISMATCH naming the target', async () => {
    await env.run(
      host,
      [
        'rm /usr/local/bin/tar',
        "cat > /usr/local/bin/install <<'SH'",
        '#!/bin/sh',
        '/usr/bin/install "$@" || exit $?',
        'for last; do :; done',
        'printf "echo tampered\\n" >> "$last"',
        'SH',
        'chmod 755 /usr/local/bin/install',
      ].join('\n'),
    );
    const run = await edgeadm(['init', ...sshArgs(env, host), '--install-pkg-path', pkg, '--json']);
    expect(run.exitCode, printedBy(run)).toBe(3);
    const error = errorOf(run);
    expect(error.code).toBe('E_PACKAGE_INSTALLED_MISMATCH');
    expect(error.message).toMatch(/\/usr\/local\/bin\/k3s .*has SHA-256 [0-9a-f]{64}; the manifest says [0-9a-f]{64}/);
  });

  it('a tree changed after it was unpacked: refused on the next run and removed, and the run after unpacks it afresh', async () => {
    await env.run(
      host,
      'rm /usr/local/bin/install && for f in /var/lib/edgeadm/packages/*/bin/k3s; do printf "echo changed\\n" >> "$f"; done',
    );
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
