/**
 * `edgeadm fleet reset` over test hosts behind a bastion: a dry run changes
 * nothing and reports every host (the unreachable one as failed), a real run
 * limited to one host resets that host only.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetResetResult } from '../../../src/fleet/fleet-reset.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { runCli, type CliResult } from '../../support/cli.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';
import { printedBy } from '../../support/run-output.js';

const TARGET_COUNT = 2;
const CLI_TIMEOUT_MS = 90_000;
const TEST_TIMEOUT_MS = 180_000;
/** A file in a directory the distribution owns, so reset removes it. */
const MARKER = '/var/lib/rancher/k3s/fleet-marker';

let env: TestHosts;
let home: string;
let inventory: string;

beforeAll(async () => {
  ensureCliBuilt('commands/fleet/reset.js', [
    'src/fleet',
    'src/cluster',
    'src/hosts',
    'src/commands/fleet',
    'src/index.ts',
  ]);
  env = await startTestHosts({ count: TARGET_COUNT + 1, bastion: true });
  home = mkdtempSync(join(env.dir, 'fleet-reset-home-'));
  inventory = join(home, 'inventory.yaml');
  writeFileSync(
    inventory,
    [
      'kind: FleetInventory',
      'ssh:',
      '  user: root',
      `  keyFile: ${env.keys.root}`,
      `  jump: root@${env.bastion!.address}`,
      'nodeGroups:',
      '  stores:',
      '    hosts:',
      ...env.targets.flatMap((target, index) => [`      store-${index + 1}:`, `        address: ${target.address}`]),
      '      lost:',
      `        address: ${env.unreachableAddress}`,
      '',
    ].join('\n'),
  );
  for (const target of env.targets) await env.run(target, `mkdir -p $(dirname ${MARKER}) && touch ${MARKER}`);
});

afterAll(async () => {
  await env?.teardown();
});

async function fleetReset(args: string[]): Promise<{ run: CliResult; result: FleetResetResult }> {
  const run = await runCli(
    ['fleet', 'reset', '-i', inventory, '--ssh-accept-new', '--ssh-timeout', '3', '--json', ...args],
    {
      env: { HOME: home, EDGEADM_HOME: join(home, '.edgeadm'), SSH_AUTH_SOCK: '', EDGEADM_SERVICE_MANAGER: 'direct' },
      timeoutMs: CLI_TIMEOUT_MS,
    },
  );
  try {
    return { run, result: JSON.parse(run.stdout) as FleetResetResult };
  } catch {
    throw new Error(`fleet reset printed no JSON (exit ${run.exitCode}):\n${run.stdout}\n${run.stderr}`);
  }
}

async function hasMarker(target: TestHost): Promise<boolean> {
  return (await env.run(target, `test -e ${MARKER} && echo yes || echo no`)).trim() === 'yes';
}

describe('edgeadm fleet reset', () => {
  it(
    'under --dry-run changes nothing and reports every host, the unreachable one as failed',
    async () => {
      const { run, result } = await fleetReset(['--force', '--dry-run']);
      expect(run.exitCode).toBe(1);
      expect(result.isDryRun).toBe(true);
      expect(result.hosts.map((entry) => [entry.host, entry.status])).toEqual([
        ['store-1', 'done'],
        ['store-2', 'done'],
        ['lost', 'failed'],
      ]);
      expect(result.hosts[2]).toMatchObject({ phase: 'connect', error: { code: 'E_SSH_UNREACHABLE' } });
      expect(result.hosts[0]!.removed).toEqual([]);
      for (const target of env.targets) expect(await hasMarker(target)).toBe(true);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'resets only the hosts --limit selects',
    async () => {
      const { run, result } = await fleetReset(['--force', '--limit', 'store-1']);
      expect(run.exitCode, printedBy(run)).toBe(0);
      expect(result.hosts.map((entry) => [entry.host, entry.status])).toEqual([['store-1', 'done']]);
      expect(result.hosts[0]!.removed).toContain('/var/lib/rancher/k3s');
      expect(await hasMarker(env.targets[0]!)).toBe(false);
      expect(await hasMarker(env.targets[1]!)).toBe(true);
    },
    TEST_TIMEOUT_MS,
  );
});
