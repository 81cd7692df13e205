/**
 * `edgeadm host check` as operators run it: the CLI as a subprocess, against
 * ten test hosts that are reachable only through one bastion (the issue's
 * first acceptance item), plus the exit codes, host key errors and secret
 * hygiene of the SSH flags.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostCheckReport } from '../../../src/hosts/host-check.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { runCli, type CliResult } from '../../support/cli.js';
import { TEST_SUDO_USER, startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';

/** The ten hosts of acceptance item 1, behind one bastion. */
const TARGET_COUNT = 10;
/** CLI processes at once (each is a Node start-up on a 2-core machine). */
const CLI_CONCURRENCY = 5;

let env: TestHosts;
let home: string;

beforeAll(async () => {
  ensureCliBuilt('commands/host/check.js', ['src/hosts', 'src/cli', 'src/commands/host', 'src/index.ts']);
  env = await startTestHosts({ count: TARGET_COUNT + 1, bastion: true });
  home = mkdtempSync(join(env.dir, 'cli-home-'));
});

afterAll(async () => {
  await env?.teardown();
});

/** Runs the CLI with a clean HOME (no ssh config, keys or agent of whoever runs the tests). */
async function edgeadm(args: string[], extraEnv: Record<string, string> = {}): Promise<CliResult> {
  return runCli(args, {
    env: { HOME: home, EDGEADM_HOME: join(home, '.edgeadm'), SSH_AUTH_SOCK: '', ...extraEnv },
    timeoutMs: 60_000,
  });
}

function sshArgs(target: TestHost, knownHosts = env.knownHostsFile): string[] {
  return [
    '--host',
    `root@${target.address}`,
    '--ssh-jump',
    `root@${env.bastion!.address}`,
    '--ssh-key',
    env.keys.root,
    '--ssh-known-hosts',
    knownHosts,
  ];
}

async function mapLimited<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const index = next++;
        results[index] = await fn(items[index]!);
      }
    }),
  );
  return results;
}

describe('edgeadm host check over SSH', () => {
  it('checks ten hosts through one bastion and reports facts and preflight results as JSON', async () => {
    expect(env.targets).toHaveLength(TARGET_COUNT);
    const runs = await mapLimited(env.targets, CLI_CONCURRENCY, (target) =>
      edgeadm(['host', 'check', ...sshArgs(target), '--json']),
    );
    runs.forEach((run, index) => {
      const target = env.targets[index]!;
      expect(run.stderr).not.toMatch(/error/i);
      const report = JSON.parse(run.stdout) as HostCheckReport;
      expect(report.host).toBe(`root@${target.address}:22`);
      expect(report.facts.hostname).toBe(target.name);
      expect(report.facts.addresses.map((a) => a.address)).toContain(target.address);
      const ids = report.checks.map((check) => check.id);
      for (const id of [
        'cpu',
        'memory',
        'swap',
        'port-6443',
        'port-10250',
        'kernel-module-overlay',
        'kernel-module-br_netfilter',
        'sysctl-net.ipv4.ip_forward',
        'sysctl-net.bridge.bridge-nf-call-iptables',
        'time-sync',
        'disk-space',
      ]) {
        expect(ids).toContain(id);
      }
      for (const check of report.checks) {
        expect(['pass', 'warn', 'fail']).toContain(check.status);
        expect(check.reason.length).toBeGreaterThan(0);
      }
      expect(report.checks.find((c) => c.id === 'port-6443')?.status).toBe('pass');
      // Exit code 2 exactly when a check failed.
      expect(run.exitCode).toBe(report.summary.fail > 0 ? 2 : 0);
      expect(report.isFit).toBe(report.summary.fail === 0);
    });
    // Ten different machines answered, not one machine ten times.
    expect(new Set(runs.map((run) => (JSON.parse(run.stdout) as HostCheckReport).facts.hostname)).size).toBe(
      TARGET_COUNT,
    );
  });

  it('exits 2 with the failing check in a human table when the host does not fit', async () => {
    const target = env.targets[0]!;
    // The test hosts share this machine's Node; a listener on 6443 makes the port check fail.
    // It marks when it listens, so that a slow start under load is waited for, not raced.
    const ready = '/var/lib/edgeadm/port-6443-ready';
    const listener = await env.run(
      target,
      `rm -f ${ready}; nohup ${process.execPath} -e "require('node:net').createServer().listen(6443, () => require('node:fs').writeFileSync('${ready}', '')); setTimeout(() => {}, 120000)" >/var/lib/edgeadm/port-6443.log 2>&1 & echo $!`,
    );
    await env.run(
      target,
      `for i in $(seq 1 600); do [ -e ${ready} ] && exit 0; sleep 0.1; done; cat /var/lib/edgeadm/port-6443.log; exit 1`,
    );
    const wrongArch = process.arch === 'arm64' ? 'amd64' : 'arm64';
    const run: CliResult = await edgeadm(['host', 'check', ...sshArgs(target), '--arch', wrongArch]);
    await env.run(target, `kill ${listener.trim()} 2>/dev/null || true`);
    expect(run.exitCode).toBe(2);
    expect(run.stdout).toMatch(/fail\s+Port 6443\s+something already listens on TCP port 6443/);
    expect(run.stdout).toMatch(
      new RegExp(`fail\\s+Architecture\\s+the host is \\w+ \\(\\w+\\), but ${wrongArch} is expected`),
    );
    expect(run.stdout).toContain(`root@${target.address}:22 (${target.name})`);
    expect(run.stdout).toMatch(/\d+ failed, \d+ warnings?, \d+ passed: not fit for a control-plane node/);
  });

  it('refuses an unknown host with its fingerprint and the --ssh-accept-new hint; --ssh-accept-new records it', async () => {
    const target = env.targets[1]!;
    const knownHosts = join(home, 'known_hosts_partial');
    // The bastion is known, the target is not.
    writeFileSync(knownHosts, `${env.bastion!.address} ${env.bastion!.hostPublicKey}\n`);
    const refused = await edgeadm(['host', 'check', ...sshArgs(target, knownHosts), '--json']);
    expect(refused.exitCode).toBe(1);
    const document = JSON.parse(refused.stdout) as { error: { code: string; message: string; hints: string[] } };
    expect(document.error.code).toBe('E_SSH_HOST_KEY_UNKNOWN');
    expect(document.error.message).toContain(target.hostKeyFingerprint);
    expect(document.error.hints.join('\n')).toContain('--ssh-accept-new');

    const accepted = await edgeadm(['host', 'check', ...sshArgs(target, knownHosts), '--ssh-accept-new', '--json']);
    expect([0, 2]).toContain(accepted.exitCode);
    expect(accepted.stderr).toContain('TRUSTED ON FIRST USE');
    expect(accepted.stderr).toContain(target.hostKeyFingerprint);
    expect(readFileSync(knownHosts, 'utf8')).toContain(`${target.address} ${target.hostPublicKey}`);

    const again = await edgeadm(['host', 'check', ...sshArgs(target, knownHosts), '--json']);
    expect([0, 2]).toContain(again.exitCode);
    expect(again.stderr).not.toContain('TRUSTED ON FIRST USE');
  });

  it('reports a host key mismatch and an authentication failure with their own codes', async () => {
    const target = env.targets[2]!;
    const knownHosts = join(home, 'known_hosts_wrong');
    writeFileSync(
      knownHosts,
      `${env.bastion!.address} ${env.bastion!.hostPublicKey}\n${target.address} ${env.targets[3]!.hostPublicKey}\n`,
    );
    const mismatch = await edgeadm(['host', 'check', ...sshArgs(target, knownHosts), '--json']);
    expect(mismatch.exitCode).toBe(1);
    expect(JSON.parse(mismatch.stdout).error.code).toBe('E_SSH_HOST_KEY_MISMATCH');

    const stranger = await edgeadm([
      'host',
      'check',
      '--host',
      `root@${env.bastion!.address}`,
      '--ssh-key',
      env.keys.stranger,
      '--ssh-known-hosts',
      env.knownHostsFile,
      '--json',
    ]);
    expect(stranger.exitCode).toBe(1);
    expect(JSON.parse(stranger.stdout).error.code).toBe('E_SSH_AUTH');
  });

  it('keeps passwords out of the output and the run log', async () => {
    const logFile = join(home, 'password-run.log');
    const bastion = env.bastion!;
    const run = await edgeadm([
      'host',
      'check',
      '--host',
      `${TEST_SUDO_USER}@${bastion.address}`,
      '--ssh-key',
      env.keys.stranger,
      '--ssh-password',
      env.userPassword,
      '--ssh-known-hosts',
      env.knownHostsFile,
      '--log-file',
      logFile,
      '--verbose',
    ]);
    expect([0, 2]).toContain(run.exitCode);
    expect(run.stdout).toContain(`(${bastion.name})`);
    expect(run.stderr).toContain('(--ssh-password) is visible in the process list');
    const log = readFileSync(logFile, 'utf8');
    expect(log).toContain('--ssh-password');
    for (const text of [run.stdout, run.stderr, log]) expect(text).not.toContain(env.userPassword);
  });
});
