/**
 * `edgeadm fleet join` over test hosts with the simulated k3s: `edgeadm init`
 * on the inventory's control-plane host, then one fleet join for the nodes,
 * with an unreachable node reported as failed while the others join.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InitResult } from '../../../src/cluster/init.js';
import type { FleetJoinResult } from '../../../src/fleet/fleet-join.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { runCli, type CliResult } from '../../support/cli.js';
import { buildSimK3sPackage } from '../../support/sim-k3s/fixture.js';
import { startTestHosts, type TestHosts } from '../../support/test-hosts.js';
import { printedBy } from '../../support/run-output.js';

/** A CLI run may start a simulated server and wait for it on 2 busy cores. */
const CLI_TIMEOUT_MS = 150_000;
const TEST_TIMEOUT_MS = 300_000;

let env: TestHosts;
let home: string;
let pkg: string;

beforeAll(async () => {
  ensureCliBuilt('commands/fleet/join.js', ['src', 'test/support/sim-k3s']);
  env = await startTestHosts({ count: 3 });
  home = mkdtempSync(join(env.dir, 'fleet-join-home-'));
  pkg = (await buildSimK3sPackage(mkdtempSync(join(env.dir, 'pkg-')))).file;
}, 180_000);

afterAll(async () => {
  await env?.teardown();
});

async function edgeadm(args: string[]): Promise<CliResult> {
  return runCli(args, {
    env: { HOME: home, EDGEADM_HOME: join(home, '.edgeadm'), SSH_AUTH_SOCK: '', EDGEADM_SERVICE_MANAGER: 'direct' },
    timeoutMs: CLI_TIMEOUT_MS,
  });
}

describe('edgeadm fleet join', () => {
  it(
    'joins every reachable node of the inventory and reports the unreachable one as failed',
    async () => {
      const [controlPlane, worker1, worker2] = env.targets;
      const sshArgs = ['--ssh-key', env.keys.root, '--ssh-known-hosts', env.knownHostsFile];
      const init = await edgeadm([
        'init',
        '--host',
        `root@${controlPlane!.address}`,
        ...sshArgs,
        '--install-pkg-path',
        pkg,
        '--json',
      ]);
      expect(init.exitCode, printedBy(init)).toBe(0);
      const joinCommand = (JSON.parse(init.stdout) as InitResult).joinCommand!;
      const token = /--token (\S+)/.exec(joinCommand)![1]!;
      const pin = /--discovery-token-ca-cert-hash (\S+)/.exec(joinCommand)![1]!;

      const inventory = join(home, 'inventory.yaml');
      writeFileSync(
        inventory,
        [
          'kind: FleetInventory',
          `package: ${pkg}`,
          'ssh: { user: root }',
          'controlPlane:',
          '  hosts:',
          `    cp: { address: ${controlPlane!.address} }`,
          'nodeGroups:',
          '  stores:',
          '    labels: { tier: store }',
          '    hosts:',
          `      store-1: { address: ${worker1!.address} }`,
          `      lost: { address: ${env.unreachableAddress} }`,
          `      store-2: { address: ${worker2!.address} }`,
          '',
        ].join('\n'),
      );
      const run = await edgeadm([
        'fleet',
        'join',
        '-i',
        inventory,
        ...sshArgs,
        '--ssh-timeout',
        '3',
        '--endpoint',
        `${controlPlane!.address}:6443`,
        '--token',
        token,
        '--discovery-token-ca-cert-hash',
        pin,
        '--concurrency',
        '2',
        '--json',
      ]);
      expect(run.exitCode, printedBy(run)).toBe(1);
      const result = JSON.parse(run.stdout) as FleetJoinResult;
      // The control-plane host is not a node to join.
      expect(result.hosts.map((entry) => [entry.host, entry.status])).toEqual([
        ['store-1', 'done'],
        ['lost', 'failed'],
        ['store-2', 'done'],
      ]);
      expect(result.hosts[1]).toMatchObject({ phase: 'connect', error: { code: 'E_SSH_UNREACHABLE' } });
      expect(result.hosts[0]).toMatchObject({ isChanged: true, node: { name: worker1!.name, isReady: true } });
      expect(result.hosts[2]).toMatchObject({ isChanged: true, node: { name: worker2!.name, isReady: true } });
      // The token never reaches the output.
      expect(run.stderr).not.toContain(token.split('.')[1]!);
    },
    TEST_TIMEOUT_MS,
  );
});
