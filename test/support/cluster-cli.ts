/**
 * What the cluster CLI suites (init, join, reset on netns+sshd test hosts
 * with the SIMULATED k3s) share: running edgeadm as an operator would, with
 * SSH flags for a test host, listing a host's install targets, and finding
 * the processes in a host's namespace.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { runCli, type CliResult } from './cli.js';
import { TMPFS_DIRS, type TestHost, type TestHosts } from './test-hosts.js';

/** The helpers, bound to one harness and one operator home. */
export interface ClusterCli {
  /** `edgeadm <args>` with the direct service manager (test hosts have no systemd). */
  edgeadm(args: string[]): Promise<CliResult>;
  sshArgs(host: TestHost): string[];
  /** Every path (with type and mode) under the host's tmpfs directories and `extraDirs`. */
  listing(host: TestHost, extraDirs?: string[]): Promise<string>;
  /** The command lines of the processes in the host's network namespace (the PID namespace is shared). */
  processesIn(host: TestHost): string[];
  /** The JSON document of a successful run. */
  json<T>(run: CliResult): T;
}

/** Makes the helpers. */
export function clusterCli(env: TestHosts, home: string, timeoutMs: number): ClusterCli {
  return {
    edgeadm: (args) =>
      runCli(args, {
        env: {
          HOME: home,
          EDGEADM_HOME: join(home, '.edgeadm'),
          SSH_AUTH_SOCK: '',
          EDGEADM_SERVICE_MANAGER: 'direct',
        },
        timeoutMs,
      }),
    sshArgs: (host) => [
      '--host',
      `root@${host.address}`,
      '--ssh-key',
      env.keys.root,
      '--ssh-known-hosts',
      env.knownHostsFile,
    ],
    listing: (host, extraDirs = []) =>
      env.run(host, `find ${[...TMPFS_DIRS, ...extraDirs].join(' ')} -printf '%p %y %m\\n' 2>/dev/null | sort`),
    processesIn: (host) =>
      execFileSync('ip', ['netns', 'pids', host.netns], { encoding: 'utf8' })
        .split('\n')
        .filter(Boolean)
        .map((pid) => {
          try {
            return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
          } catch {
            return '';
          }
        }),
    json: <T>(run: CliResult): T => {
      expect(run.exitCode, run.stderr).toBe(0);
      return JSON.parse(run.stdout) as T;
    },
  };
}
