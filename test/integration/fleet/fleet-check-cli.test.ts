/**
 * `edgeadm fleet check` as operators run it: the CLI as a subprocess over
 * three test hosts behind one bastion plus an address where nothing answers,
 * from an Ansible inventory (the second acceptance item), and the
 * failure budget and `--resume` at concurrency 1. The same results from the
 * equivalent edgeadm inventory, over 20 hosts, are in fleet-rollout-cli.test.ts.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetCheckResult } from '../../../src/fleet/fleet-check.js';
import type { RunState } from '../../../src/fleet/run-state.js';
import { hostLogPath } from '../../../src/fleet/run-state.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { REPO_ROOT, runCli, type CliResult } from '../../support/cli.js';
import { startTestHosts, type TestHosts } from '../../support/test-hosts.js';

/** Reachable hosts behind the bastion. */
const TARGET_COUNT = 3;
/** Seconds an SSH connection may take to set up; the unreachable host fails after it. */
const SSH_TIMEOUT_SECONDS = '3';
/** Generous bound for one CLI run on a busy 2-core machine. */
const CLI_TIMEOUT_MS = 90_000;
const TEST_TIMEOUT_MS = 180_000;
/** Bound on waiting for a run to reach a host (polled, not raced). */
const STATE_WAIT_MS = 60_000;
const STATE_POLL_MS = 100;
/** SSH timeout of the interrupted run: the window in which Ctrl-C reaches the unreachable host. */
const INTERRUPT_SSH_TIMEOUT_SECONDS = '8';

let env: TestHosts;
let home: string;

beforeAll(async () => {
  ensureCliBuilt('commands/fleet/check.js', [
    'src/fleet',
    'src/hosts',
    'src/cli',
    'src/commands/fleet',
    'src/index.ts',
  ]);
  env = await startTestHosts({ count: TARGET_COUNT + 1, bastion: true });
  home = mkdtempSync(join(env.dir, 'fleet-home-'));
});

afterAll(async () => {
  await env?.teardown();
});

/** Runs the CLI with a clean HOME (no ssh config, known hosts, keys or agent of whoever runs the tests). */
async function edgeadm(args: string[]): Promise<CliResult> {
  return runCli(args, {
    env: { HOME: home, EDGEADM_HOME: join(home, '.edgeadm'), SSH_AUTH_SOCK: '' },
    timeoutMs: CLI_TIMEOUT_MS,
  });
}

/** Inventory host name to address: the three targets, then the hosts in `unreachable`. */
function fleet(unreachable: string[]): [string, string][] {
  return [
    ...env.targets.map((target, index): [string, string] => [`store-${index + 1}`, target.address]),
    ...unreachable.map((name): [string, string] => [name, env.unreachableAddress]),
  ];
}

function writeAnsibleInventory(file: string, hosts: [string, string][]): string {
  const lines = [
    'all:',
    '  vars:',
    '    ansible_user: root',
    `    ansible_ssh_private_key_file: ${env.keys.root}`,
    '  children:',
    '    stores:',
    '      vars:',
    `        ansible_ssh_common_args: -J root@${env.bastion!.address}`,
    '      hosts:',
    ...hosts.flatMap(([name, address]) => [`        ${name}:`, `          ansible_host: ${address}`]),
  ];
  const path = join(home, file);
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

async function fleetCheck(
  inventory: string,
  extra: string[] = [],
): Promise<{ run: CliResult; result: FleetCheckResult }> {
  const run = await edgeadm([
    'fleet',
    'check',
    '-i',
    inventory,
    '--ssh-accept-new',
    '--ssh-timeout',
    SSH_TIMEOUT_SECONDS,
    '--json',
    ...extra,
  ]);
  let result: FleetCheckResult;
  try {
    result = JSON.parse(run.stdout) as FleetCheckResult;
  } catch {
    throw new Error(`fleet check printed no JSON (exit ${run.exitCode}):\n${run.stdout}\n${run.stderr}`);
  }
  return { run, result };
}

describe('edgeadm fleet check', () => {
  it(
    'reports every host of an Ansible inventory, the unreachable one as failed with the reason, and exits non-zero',
    async () => {
      const inventory = writeAnsibleInventory('ansible.yaml', fleet(['lost']));
      const { run, result } = await fleetCheck(inventory);
      expect(run.exitCode).toBe(1);
      expect(result.hosts.map((entry) => entry.host)).toEqual(['store-1', 'store-2', 'store-3', 'lost']);
      env.targets.forEach((target, index) => {
        const entry = result.hosts[index]!;
        expect(entry.address).toBe(target.address);
        // Each reachable host was checked over its own connection: its own hostname came back.
        expect(entry.report?.facts.hostname).toBe(target.name);
        expect(entry.report?.checks.length).toBeGreaterThan(0);
        expect(entry.status).toBe(entry.report!.isFit ? 'done' : 'failed');
      });
      const lost = result.hosts[3]!;
      expect(lost).toMatchObject({ status: 'failed', phase: 'connect', attempts: 1 });
      expect(lost.error?.code).toBe('E_SSH_UNREACHABLE');
      expect(lost.error?.message).toContain(env.unreachableAddress);
      expect(lost.report).toBeUndefined();
      expect(result.summary.failed).toBeGreaterThanOrEqual(1);
      expect(result.isFit).toBe(false);

      // The run directory holds the state and a log per host.
      const state = JSON.parse(readFileSync(join(result.runDir, 'state.json'), 'utf8')) as RunState;
      expect(state.id).toBe(result.runId);
      expect(state.order).toEqual(['store-1', 'store-2', 'store-3', 'lost']);
      expect(state.hosts.lost).toMatchObject({ status: 'failed', error: { code: 'E_SSH_UNREACHABLE' } });
      expect(readFileSync(hostLogPath(result.runDir, 'lost'), 'utf8')).toContain('failed: E_SSH_UNREACHABLE');
      expect(readFileSync(hostLogPath(result.runDir, 'store-1'), 'utf8')).toContain(
        `connected to root@${env.targets[0]!.address}:22`,
      );
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'starts no new host once --max-failures is exceeded, and --resume runs the rest without redoing finished hosts',
    async () => {
      // At concurrency 1 the hosts start in this order.
      const hosts = fleet(['lost-1', 'lost-2']);
      const ordered = [hosts[3]!, hosts[0]!, hosts[4]!, hosts[1]!, hosts[2]!];
      const names = ordered.map(([name]) => name);
      expect(names).toEqual(['lost-1', 'store-1', 'lost-2', 'store-2', 'store-3']);
      const inventory = writeAnsibleInventory('budget.yaml', ordered);

      const none = await fleetCheck(inventory, ['--concurrency', '1', '--max-failures', '0']);
      expect(none.run.exitCode).toBe(1);
      expect(none.result.stopReason).toBe('max-failures');
      expect(none.result.hosts.map((entry) => [entry.host, entry.status, entry.attempts])).toEqual([
        ['lost-1', 'failed', 1],
        ['store-1', 'skipped', 0],
        ['lost-2', 'skipped', 0],
        ['store-2', 'skipped', 0],
        ['store-3', 'skipped', 0],
      ]);
      expect(none.result.hosts[1]!.error?.code).toBe('E_FLEET_NOT_STARTED');

      const one = await fleetCheck(inventory, ['--concurrency', '1', '--max-failures', '1']);
      expect(one.run.exitCode).toBe(1);
      expect(one.result.stopReason).toBe('max-failures');
      expect(one.result.hosts.map((entry) => [entry.host, entry.status, entry.attempts])).toEqual([
        ['lost-1', 'failed', 1],
        ['store-1', 'done', 1],
        ['lost-2', 'failed', 1],
        ['store-2', 'skipped', 0],
        ['store-3', 'skipped', 0],
      ]);

      const resumed = await fleetCheck(inventory, ['--concurrency', '1', '--resume', one.result.runId]);
      expect(resumed.run.exitCode).toBe(1);
      expect(resumed.result.runId).toBe(one.result.runId);
      expect(resumed.result.stopReason).toBeUndefined();
      expect(resumed.result.hosts.map((entry) => [entry.host, entry.status, entry.attempts])).toEqual([
        ['lost-1', 'failed', 2],
        // Finished before: not checked again (no new report, attempts unchanged).
        ['store-1', 'done', 1],
        ['lost-2', 'failed', 2],
        ['store-2', 'done', 1],
        ['store-3', 'done', 1],
      ]);
      expect(resumed.result.hosts[1]!.report).toBeUndefined();
      expect(resumed.result.hosts[3]!.report?.facts.hostname).toBe(env.targets[1]!.name);
      expect(existsSync(join(one.result.runDir, 'state.json'))).toBe(true);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'on Ctrl-C lets the running host finish, starts no other, saves the state, and --resume last continues',
    async () => {
      const hosts = fleet(['lost-1']);
      const ordered = [hosts[0]!, hosts[3]!, hosts[1]!, hosts[2]!];
      const inventory = writeAnsibleInventory('interrupt.yaml', ordered);
      const edgeadmHome = mkdtempSync(join(home, 'interrupt-'));
      const args = [
        'fleet',
        'check',
        '-i',
        inventory,
        '--ssh-accept-new',
        '--ssh-timeout',
        INTERRUPT_SSH_TIMEOUT_SECONDS,
      ];
      const child = execa(process.execPath, [join(REPO_ROOT, 'bin/run.js'), ...args, '--concurrency', '1', '--json'], {
        reject: false,
        env: { HOME: home, EDGEADM_HOME: edgeadmHome, SSH_AUTH_SOCK: '', NO_COLOR: '1' },
        timeout: CLI_TIMEOUT_MS,
        input: '',
      });
      // Wait until the unreachable host (which takes the whole SSH timeout) is the one running.
      const runsDir = join(edgeadmHome, 'fleet', 'runs');
      const deadline = Date.now() + STATE_WAIT_MS;
      let isLostRunning = false;
      while (!isLostRunning && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, STATE_POLL_MS));
        for (const id of existsSync(runsDir) ? readdirSync(runsDir) : []) {
          try {
            const state = JSON.parse(readFileSync(join(runsDir, id, 'state.json'), 'utf8')) as RunState;
            isLostRunning = state.hosts['lost-1']?.status === 'running';
          } catch {
            // Not written yet (the write is atomic, so a partial file is never read).
          }
        }
      }
      expect(isLostRunning, 'the run reached the unreachable host').toBe(true);
      child.kill('SIGINT');
      const interrupted = await child;
      expect(interrupted.exitCode).toBe(1);
      const result = JSON.parse(String(interrupted.stdout)) as FleetCheckResult;
      expect(result.stopReason).toBe('cancelled');
      expect(result.hosts.map((entry) => [entry.host, entry.status])).toEqual([
        ['store-1', 'done'],
        // Running when interrupted: it finished (its connection attempt timed out), it was not abandoned.
        ['lost-1', 'failed'],
        ['store-2', 'skipped'],
        ['store-3', 'skipped'],
      ]);
      const saved = JSON.parse(readFileSync(join(result.runDir, 'state.json'), 'utf8')) as RunState;
      expect(saved.stopReason).toBe('cancelled');
      expect(saved.hosts['store-2']).toMatchObject({ status: 'skipped', attempts: 0 });

      const resumed = await runCli([...args, '--resume', 'last', '--json'], {
        env: { HOME: home, EDGEADM_HOME: edgeadmHome, SSH_AUTH_SOCK: '' },
        timeoutMs: CLI_TIMEOUT_MS,
      });
      const after = JSON.parse(resumed.stdout) as FleetCheckResult;
      expect(after.runId).toBe(result.runId);
      expect(after.hosts.map((entry) => [entry.host, entry.status, entry.attempts])).toEqual([
        ['store-1', 'done', 1],
        ['lost-1', 'failed', 2],
        ['store-2', 'done', 1],
        ['store-3', 'done', 1],
      ]);
      expect(after.hosts[0]!.report).toBeUndefined();
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'reports a host that fails preflight with its failing check, and the rest proceed',
    async () => {
      const [busy, ...others] = env.targets;
      // Something on port 6443 makes a control-plane host unfit. The listener marks when it
      // listens, so that a slow start under load is waited for, not raced.
      const ready = '/var/lib/edgeadm/fleet-port-6443-ready';
      const listener = await env.run(
        busy!,
        `rm -f ${ready}; nohup ${process.execPath} -e "require('node:net').createServer().listen(6443, () => require('node:fs').writeFileSync('${ready}', '')); setTimeout(() => {}, 120000)" >/var/lib/edgeadm/fleet-port-6443.log 2>&1 & echo $!`,
      );
      await env.run(
        busy!,
        `for i in $(seq 1 600); do [ -e ${ready} ] && exit 0; sleep 0.1; done; cat /var/lib/edgeadm/fleet-port-6443.log; exit 1`,
      );
      const inventory = join(home, 'preflight.yaml');
      writeFileSync(
        inventory,
        [
          'all:',
          '  vars:',
          '    ansible_user: root',
          `    ansible_ssh_private_key_file: ${env.keys.root}`,
          `    ansible_ssh_common_args: -J root@${env.bastion!.address}`,
          '  children:',
          '    control_plane:',
          '      hosts:',
          `        cp: { ansible_host: ${busy!.address} }`,
          '    stores:',
          '      hosts:',
          ...others.map((target, index) => `        store-${index + 2}: { ansible_host: ${target.address} }`),
          '',
        ].join('\n'),
      );
      let checked: Awaited<ReturnType<typeof fleetCheck>>;
      try {
        checked = await fleetCheck(inventory, ['--concurrency', '1']);
      } finally {
        await env.run(busy!, `kill ${listener.trim()} 2>/dev/null || true`);
      }
      expect(checked.run.exitCode).toBe(1);
      const [cp, ...rest] = checked.result.hosts;
      expect(cp).toMatchObject({ host: 'cp', role: 'control-plane', status: 'failed', phase: 'check' });
      expect(cp!.error?.code).toBe('E_PREFLIGHT');
      expect(cp!.failingChecks).toContain('port-6443');
      expect(rest.map((entry) => [entry.host, entry.status])).toEqual([
        ['store-2', 'done'],
        ['store-3', 'done'],
      ]);
    },
    TEST_TIMEOUT_MS,
  );
});
