/**
 * An init whose SSH connection is killed while the install package is being
 * uploaded, then re-run: the second run completes (resuming the upload) and
 * reset still leaves the host as it was. SIMULATED k3s (test/support/sim-k3s).
 */
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InitResult } from '../../../src/cluster/init.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { runCli, type CliResult } from '../../support/cli.js';
import { buildSimK3sPackage } from '../../support/sim-k3s/fixture.js';
import { TMPFS_DIRS, startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';
import { printedBy } from '../../support/run-output.js';

/** Big enough that the upload is still running when the connection is killed. */
const IMAGE_BYTES = 96 * 1024 * 1024;
const CLI_TIMEOUT_MS = 120_000;
/** How often the host is checked for the partial upload. */
const POLL_MS = 20;

let env: TestHosts;
let home: string;
let pkg: string;

beforeAll(async () => {
  ensureCliBuilt('commands/init.js', ['src', 'test/support/sim-k3s']);
  env = await startTestHosts({ count: 1 });
  home = mkdtempSync(join(env.dir, 'cli-home-'));
  pkg = (await buildSimK3sPackage(mkdtempSync(join(env.dir, 'pkg-')), { imageBytes: IMAGE_BYTES })).file;
}, 180_000);

afterAll(async () => {
  await env?.teardown();
});

function edgeadm(args: string[]): Promise<CliResult> {
  return runCli(args, {
    env: { HOME: home, EDGEADM_HOME: join(home, '.edgeadm'), SSH_AUTH_SOCK: '', EDGEADM_SERVICE_MANAGER: 'direct' },
    timeoutMs: CLI_TIMEOUT_MS,
  });
}

function sshArgs(target: TestHost): string[] {
  return ['--host', `root@${target.address}`, '--ssh-key', env.keys.root, '--ssh-known-hosts', env.knownHostsFile];
}

function listing(host: TestHost): Promise<string> {
  return env.run(host, `find ${TMPFS_DIRS.join(' ')} -printf '%p %y %m\\n' | sort`);
}

describe('init after a dropped SSH connection', () => {
  it('fails naming the package phase, and a re-run completes', async () => {
    const host = env.targets[0]!;
    const before = await listing(host);
    const args = ['init', ...sshArgs(host), '--install-pkg-path', pkg, '--skip-kubeconfig', '--json'];
    let isDone = false;
    const first = edgeadm(args).finally(() => {
      isDone = true;
    });
    let dropped = 0;
    while (!isDone && dropped === 0) {
      const partial = await env.run(host, 'find /var/lib/edgeadm/packages -type f -size +1024k 2>/dev/null || true');
      if (partial.trim() !== '') dropped = env.dropConnections(host);
      else await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    const firstRun = await first;
    expect(dropped).toBeGreaterThan(0);
    expect(firstRun.exitCode).not.toBe(0);
    expect((JSON.parse(firstRun.stdout) as { error: { message: string } }).error.message).toMatch(
      /^error execution phase package: /,
    );

    const second = await edgeadm(args);
    expect(second.exitCode, printedBy(second)).toBe(0);
    const result = JSON.parse(second.stdout) as InitResult;
    expect(result.phases.find((p) => p.path === 'wait-ready')?.status).toBe('unchanged');
    expect(result.joinCommand).toMatch(/^edgeadm join /);

    const reset = await edgeadm(['reset', ...sshArgs(host), '--force', '--json']);
    expect(reset.exitCode, printedBy(reset)).toBe(0);
    expect(await listing(host)).toBe(before);
  });
});
