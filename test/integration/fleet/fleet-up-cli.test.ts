/**
 * `edgeadm fleet up` over test hosts with the simulated k3s: one command
 * inits the inventory's control plane and joins its nodes; a second run finds
 * everything done.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetUpResult } from '../../../src/fleet/fleet-up.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { runCli, type CliResult } from '../../support/cli.js';
import { buildSimK3sPackage } from '../../support/sim-k3s/fixture.js';
import { startTestHosts, type TestHosts } from '../../support/test-hosts.js';

/** A CLI run may start a simulated server and wait for it on 2 busy cores. */
const CLI_TIMEOUT_MS = 150_000;
const TEST_TIMEOUT_MS = 300_000;

let env: TestHosts;
let home: string;
let inventory: string;

beforeAll(async () => {
  ensureCliBuilt('commands/fleet/up.js', ['src', 'test/support/sim-k3s']);
  env = await startTestHosts({ count: 3 });
  home = mkdtempSync(join(env.dir, 'fleet-up-home-'));
  const pkg = (await buildSimK3sPackage(mkdtempSync(join(env.dir, 'pkg-')))).file;
  const [controlPlane, ...nodes] = env.targets;
  inventory = join(home, 'hosts.yml');
  // An Ansible inventory, as a team moving over would have it.
  writeFileSync(
    inventory,
    [
      'all:',
      '  vars:',
      '    ansible_user: root',
      `    ansible_ssh_private_key_file: ${env.keys.root}`,
      `    edgeadm_package: ${pkg}`,
      '  children:',
      '    control_plane:',
      '      hosts:',
      `        cp: { ansible_host: ${controlPlane!.address} }`,
      '    stores:',
      '      hosts:',
      ...nodes.map((node, index) => `        store-${index + 1}: { ansible_host: ${node.address} }`),
      '',
    ].join('\n'),
  );
}, 180_000);

afterAll(async () => {
  await env?.teardown();
});

async function fleetUp(): Promise<{ run: CliResult; result: FleetUpResult }> {
  const run = await runCli(
    ['fleet', 'up', '-i', inventory, '--ssh-known-hosts', env.knownHostsFile, '--concurrency', '2', '--json'],
    {
      env: { HOME: home, EDGEADM_HOME: join(home, '.edgeadm'), SSH_AUTH_SOCK: '', EDGEADM_SERVICE_MANAGER: 'direct' },
      timeoutMs: CLI_TIMEOUT_MS,
    },
  );
  try {
    return { run, result: JSON.parse(run.stdout) as FleetUpResult };
  } catch {
    throw new Error(`fleet up printed no JSON (exit ${run.exitCode}):\n${run.stdout}\n${run.stderr}`);
  }
}

describe('edgeadm fleet up', () => {
  it(
    'inits the control plane and joins every node; a second run finds them joined',
    async () => {
      const [controlPlane, ...nodes] = env.targets;
      const first = await fleetUp();
      expect(first.run.exitCode, first.run.stderr).toBe(0);
      expect(first.result.controlPlane).toMatchObject({
        host: 'cp',
        isChanged: true,
        server: `https://${controlPlane!.address}:6443`,
      });
      expect(first.result.hosts.map((entry) => [entry.host, entry.status, entry.node])).toEqual(
        nodes.map((node, index) => [`store-${index + 1}`, 'done', { name: node.name, isReady: true }]),
      );

      const second = await fleetUp();
      expect(second.run.exitCode, second.run.stderr).toBe(0);
      expect(second.result.runId).not.toBe(first.result.runId);
      expect(second.result.hosts.map((entry) => [entry.host, entry.status, entry.isChanged])).toEqual(
        nodes.map((_node, index) => [`store-${index + 1}`, 'done', false]),
      );
    },
    TEST_TIMEOUT_MS,
  );
});
