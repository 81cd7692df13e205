/**
 * What the init/join/reset integration suites share: running the CLI as an
 * operator would against netns+sshd test hosts (direct service manager, as
 * the hosts have no systemd), the SSH flags of a host, a listing of a
 * host's install directories (to prove reset leaves it as before), the
 * processes left in a host, and reading `--json` output.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { runCli, type CliResult } from './cli.js';
import { TMPFS_DIRS, type TestHost, type TestHosts } from './test-hosts.js';

/** The CLI as the suites run it: a private home, no SSH agent, the direct service manager. */
export function clusterCli(home: string, timeoutMs: number): (args: string[]) => Promise<CliResult> {
  return (args) =>
    runCli(args, {
      env: {
        HOME: home,
        EDGEADM_HOME: join(home, '.edgeadm'),
        SSH_AUTH_SOCK: '',
        EDGEADM_SERVICE_MANAGER: 'direct',
      },
      timeoutMs,
    });
}

/** `--host root@… --ssh-key … --ssh-known-hosts …` for a test host. */
export function sshArgs(env: TestHosts, target: TestHost): string[] {
  return ['--host', `root@${target.address}`, '--ssh-key', env.keys.root, '--ssh-known-hosts', env.knownHostsFile];
}

/** Every path (with type and mode) under the directories a test host has on tmpfs, and `extraDirs`. */
export function listing(env: TestHosts, host: TestHost, extraDirs: string[] = []): Promise<string> {
  return env.run(host, `find ${[...TMPFS_DIRS, ...extraDirs].join(' ')} -printf '%p %y %m\\n' 2>/dev/null | sort`);
}

/** The command lines of the processes in a host's network namespace (the PID namespace is shared). */
export function processesIn(host: TestHost): string[] {
  const pids = execFileSync('ip', ['netns', 'pids', host.netns], { encoding: 'utf8' }).split('\n').filter(Boolean);
  return pids.map((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
    } catch {
      return '';
    }
  });
}

/**
 * The `--json` document of a run that must have succeeded. On failure the
 * message carries both streams: with `--json` the error envelope (code,
 * message, hints) is on stdout and the progress that led to it on stderr.
 */
export function json<T>(run: CliResult): T {
  expect(run.exitCode, `stdout:\n${run.stdout}\nstderr:\n${run.stderr}`).toBe(0);
  return JSON.parse(run.stdout) as T;
}

/** The helpers above, bound to one harness and one operator home. */
export interface ClusterCli {
  /** `edgeadm <args>` with the direct service manager (test hosts have no systemd). */
  edgeadm(args: string[]): Promise<CliResult>;
  sshArgs(host: TestHost): string[];
  /** Every path (with type and mode) under the host's tmpfs directories and `extraDirs`. */
  listing(host: TestHost, extraDirs?: string[]): Promise<string>;
  /** The command lines of the processes in the host's network namespace. */
  processesIn(host: TestHost): string[];
  /** The JSON document of a successful run. */
  json<T>(run: CliResult): T;
}

/** Binds the helpers to one harness and one operator home. */
export function clusterCliFor(env: TestHosts, home: string, timeoutMs: number): ClusterCli {
  return {
    edgeadm: clusterCli(home, timeoutMs),
    sshArgs: (host) => sshArgs(env, host),
    listing: (host, extraDirs) => listing(env, host, extraDirs),
    processesIn,
    json,
  };
}

/**
 * The first words of a join command an init printed, as an operator runs
 * them: `join SERVER --token T --discovery-token-ca-cert-hash H`, and the
 * printed `--distribution` too when `isDistributionKept` and it has one.
 * Callers add the package, the host and their own flags.
 */
export function printedJoinArgs(printed: string, options: { isDistributionKept?: boolean } = {}): string[] {
  const words = printed.split(' ');
  const at = (flag: string): string => words[words.indexOf(flag) + 1]!;
  return [
    'join',
    words[2]!,
    '--token',
    at('--token'),
    '--discovery-token-ca-cert-hash',
    at('--discovery-token-ca-cert-hash'),
    ...(options.isDistributionKept && words.includes('--distribution') ? ['--distribution', at('--distribution')] : []),
  ];
}
