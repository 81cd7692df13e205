/**
 * How the integration tests reach the test hosts with edgeadm's own SSH
 * code: connection options for a test host (through the bastion when it sits
 * behind one), isolated from the ssh config, keys, agent and known_hosts of
 * whoever runs the tests.
 */
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import type { HostConnectOptions } from '../../src/hosts/connect.js';
import type { TestHost, TestHosts } from './test-hosts.js';

/**
 * An empty home directory (no ~/.ssh/config, default keys or known_hosts)
 * inside the harness's directory, so teardown removes it.
 */
export function emptyHome(env: TestHosts): string {
  return mkdtempSync(join(env.dir, 'home-'));
}

/**
 * Options that log in to `host` as root with the harness's key and known_hosts,
 * jumping through the bastion when the host is behind it.
 */
export function connectOptionsFor(
  env: TestHosts,
  host: TestHost,
  overrides: Partial<HostConnectOptions> = {},
): HostConnectOptions & { host: string } {
  const isBehindBastion = env.bastion !== undefined && !host.isBastion;
  return {
    host: `root@${host.address}`,
    keyFiles: [env.keys.root],
    knownHostsFile: env.knownHostsFile,
    homeDir: overrides.homeDir ?? emptyHome(env),
    agentSocket: '',
    connectTimeoutMs: 5_000,
    ...(isBehindBastion ? { jumps: [`root@${env.bastion!.address}`] } : {}),
    ...overrides,
  } as HostConnectOptions & { host: string };
}
