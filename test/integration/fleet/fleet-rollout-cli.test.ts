/**
 * The fleet rollout at scale, as operators run it: the CLI as a subprocess
 * over 20 store hosts behind a bastion, with the **simulated** k3s
 * (`test/support/sim-k3s`, not k3s), and a control-plane host that this
 * machine and the stores both reach (dual-homed, as a control plane in a
 * datacenter is). One harness serves every test of the file, in order:
 *
 * 1. `fleet check` from an Ansible inventory and from the equivalent edgeadm
 *    inventory: the same per-host results, and an unreachable host reported
 *    as failed with the reason;
 * 2. `fleet up --max-failures 2` with three broken stores: no host starts
 *    once the budget is spent;
 * 3. `fleet up` interrupted with Ctrl-C, then `--resume last`: it completes
 *    without redoing finished hosts; the store that still fails preflight is
 *    reported and the rest proceed;
 * 4. `fleet up` from the edgeadm inventory once that store is fixed: every
 *    store is a Ready node, over one SSH connection per host, and the
 *    package is uploaded only where it was missing.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetCheckResult } from '../../../src/fleet/fleet-check.js';
import type { FleetUpResult } from '../../../src/fleet/fleet-up.js';
import { hostLogPath, type RunState } from '../../../src/fleet/run-state.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { REPO_ROOT, runCli, type CliResult } from '../../support/cli.js';
import { buildSimK3sPackage } from '../../support/sim-k3s/fixture.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';
import { printedBy } from '../../support/run-output.js';

/** Stores behind the bastion. */
const STORE_COUNT = 20;
/** Hosts at once in every run. */
const CONCURRENCY = '8';
/**
 * Seconds an SSH connection may take to set up; the unreachable host fails
 * after it. Generous: 20 hosts set up through one bastion on two busy cores.
 */
const SSH_TIMEOUT_SECONDS = '15';
/** Stores (1-based) broken for the failure budget test; the first stays broken for the preflight test. */
const BROKEN_STORES = [2, 3, 4];
/**
 * Stores done in the interrupted run before Ctrl-C, and its concurrency: low
 * enough that many stores are still waiting when Ctrl-C is handled, even
 * when a busy machine delays the state file and the signal.
 */
const DONE_BEFORE_INTERRUPT = 3;
const INTERRUPTED_CONCURRENCY = '4';
/** Bounds for one CLI run and one test on a busy 2-core machine. */
const CLI_TIMEOUT_MS = 300_000;
const TEST_TIMEOUT_MS = 600_000;
/** Bound on waiting for the interrupted run to get far enough (polled, not raced). */
const STATE_WAIT_MS = 240_000;
const STATE_POLL_MS = 100;
/** What a port listener that makes a store unfit (its kubelet port taken) marks when it listens. */
const LISTENER_READY = '/var/lib/edgeadm/fleet-port-10250-ready';
const SIM_K3S_ENV = { EDGEADM_SERVICE_MANAGER: 'direct' };

let env: TestHosts;
let home: string;
let pkg: string;
let controlPlane: TestHost;
let stores: TestHost[];
/** Store name to its listener's pid, for the stores currently broken. */
const listeners = new Map<string, string>();

const storeName = (index: number): string => `store-${String(index + 1).padStart(2, '0')}`;

beforeAll(async () => {
  ensureCliBuilt('commands/fleet/up.js', ['src', 'test/support/sim-k3s']);
  env = await startTestHosts({ count: STORE_COUNT + 2, bastion: true, dualHomed: [1] });
  [controlPlane, ...stores] = env.targets as [TestHost, ...TestHost[]];
  home = mkdtempSync(join(env.dir, 'fleet-rollout-home-'));
  pkg = (await buildSimK3sPackage(mkdtempSync(join(env.dir, 'pkg-')))).file;
}, 180_000);

afterAll(async () => {
  await env?.teardown();
});

/** An Ansible inventory, as a team moving over would have it; `extra` stores are [name, address]. */
function writeAnsibleInventory(file: string, extra: [string, string][] = []): string {
  const lines = [
    'all:',
    '  vars:',
    '    ansible_user: root',
    `    ansible_ssh_private_key_file: ${env.keys.root}`,
    `    edgeadm_package: ${pkg}`,
    '  children:',
    '    control_plane:',
    '      hosts:',
    `        cp: { ansible_host: ${controlPlane.address} }`,
    '    stores:',
    '      vars:',
    `        ansible_ssh_common_args: -J root@${env.bastion!.address}`,
    '      hosts:',
    ...stores.map((store, index) => `        ${storeName(index)}: { ansible_host: ${store.address} }`),
    ...extra.map(([name, address]) => `        ${name}: { ansible_host: ${address} }`),
  ];
  const path = join(home, file);
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

/** The same fleet in edgeadm's own format. */
function writeEdgeadmInventory(file: string, extra: [string, string][] = []): string {
  const lines = [
    'kind: FleetInventory',
    `package: ${pkg}`,
    'ssh:',
    '  user: root',
    `  keyFile: ${env.keys.root}`,
    'controlPlane:',
    '  hosts:',
    `    cp: { address: ${controlPlane.address} }`,
    'nodeGroups:',
    '  stores:',
    `    ssh: { jump: root@${env.bastion!.address} }`,
    '    hosts:',
    ...stores.map((store, index) => `      ${storeName(index)}: { address: ${store.address} }`),
    ...extra.map(([name, address]) => `      ${name}: { address: ${address} }`),
  ];
  const path = join(home, file);
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

const cliEnv = (): Record<string, string> => ({
  HOME: home,
  EDGEADM_HOME: join(home, '.edgeadm'),
  SSH_AUTH_SOCK: '',
  ...SIM_K3S_ENV,
});

/** Where every `fleet up` writes the admin kubeconfig (the first run writes it; later runs find it current). */
const adminKubeconfig = (): string => join(home, 'admin.kubeconfig');

function fleetArgs(command: string, inventory: string, extra: string[], concurrency = CONCURRENCY): string[] {
  return [
    'fleet',
    command,
    '-i',
    inventory,
    '--ssh-known-hosts',
    env.knownHostsFile,
    '--ssh-timeout',
    SSH_TIMEOUT_SECONDS,
    '--concurrency',
    concurrency,
    '--json',
    ...(command === 'up' ? ['--kubeconfig-out', adminKubeconfig()] : []),
    ...extra,
  ];
}

function parse<T>(run: CliResult, what: string): T {
  try {
    return JSON.parse(run.stdout) as T;
  } catch {
    throw new Error(`${what} printed no JSON (exit ${run.exitCode}):\n${run.stdout}\n${run.stderr}`);
  }
}

async function fleet<T>(
  command: string,
  inventory: string,
  extra: string[] = [],
): Promise<{ run: CliResult; result: T }> {
  const run = await runCli(fleetArgs(command, inventory, extra), { env: cliEnv(), timeoutMs: CLI_TIMEOUT_MS });
  return { run, result: parse<T>(run, `fleet ${command}`) };
}

/** SSH connections each host has accepted so far (sshd logs one line per connection). */
function connectionCounts(): Map<string, number> {
  return new Map(
    [controlPlane, ...stores].map((host) => [
      host.name,
      env.sshdLog(host).match(/Accepted publickey for root from /g)?.length ?? 0,
    ]),
  );
}

function connectionsSince(before: Map<string, number>): Map<string, number> {
  const after = connectionCounts();
  return new Map([...after].map(([name, count]) => [name, count - before.get(name)!]));
}

/** Takes the store's kubelet port, which makes it unfit for a node (the join preflight fails). */
async function breakStore(index: number): Promise<void> {
  const store = stores[index]!;
  const pid = await env.run(
    store,
    `rm -f ${LISTENER_READY}; nohup ${process.execPath} -e "require('node:net').createServer().listen(10250, () => require('node:fs').writeFileSync('${LISTENER_READY}', '')); setInterval(() => {}, 60000)" >/dev/null 2>&1 & echo $!`,
  );
  await env.run(store, `for i in $(seq 1 600); do [ -e ${LISTENER_READY} ] && exit 0; sleep 0.1; done; exit 1`);
  listeners.set(storeName(index), pid.trim());
}

async function fixStore(index: number): Promise<void> {
  const name = storeName(index);
  await env.run(stores[index]!, `kill ${listeners.get(name)!}`);
  listeners.delete(name);
}

/** `<ISO time> [<host>] <line>` entries of a host's log in a run directory, without the time and host. */
function hostLog(runDir: string, host: string): { at: number; line: string }[] {
  const path = hostLogPath(runDir, host);
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      // `<time> [<host>] <what happened>`: every line names its host.
      const match = /^(\S+) \[([^\]]+)\] (.*)$/.exec(line);
      expect(match?.[2], `a line of ${host}'s log names its host: ${line}`).toBe(host);
      return { at: Date.parse(match?.[1] ?? ''), line: match?.[3] ?? '' };
    });
}

describe('edgeadm fleet over 20 hosts behind a bastion (simulated k3s)', () => {
  let fromAnsible: FleetUpResult;

  it(
    'fleet check gives the same per-host results from an Ansible and the equivalent edgeadm inventory, the unreachable host failed with the reason',
    async () => {
      const lost: [string, string][] = [['lost', env.unreachableAddress]];
      const ansible = await fleet<FleetCheckResult>('check', writeAnsibleInventory('check-ansible.yml', lost));
      const edgeadm = await fleet<FleetCheckResult>('check', writeEdgeadmInventory('check-edgeadm.yaml', lost));
      const outcome = (result: FleetCheckResult) =>
        result.hosts.map((entry) => ({
          host: entry.host,
          address: entry.address,
          role: entry.role,
          status: entry.status,
          phase: entry.phase,
          errorCode: entry.error?.code,
          failingChecks: entry.failingChecks,
          hostname: entry.report?.facts.hostname,
        }));
      for (const { run } of [ansible, edgeadm]) expect(run.exitCode).toBe(1);
      expect(outcome(edgeadm.result)).toEqual(outcome(ansible.result));
      expect(edgeadm.result.runId).not.toBe(ansible.result.runId);

      const { hosts } = ansible.result;
      expect(hosts.map((entry) => entry.host)).toEqual(['cp', ...stores.map((_, index) => storeName(index)), 'lost']);
      // Each store was reached through the bastion over its own connection: its own hostname came back.
      expect(hosts.slice(1, -1).map((entry) => entry.report?.facts.hostname)).toEqual(stores.map((s) => s.name));
      expect(hosts.slice(1, -1).every((entry) => entry.status === 'done')).toBe(true);
      const unreachable = hosts.at(-1)!;
      expect(unreachable).toMatchObject({ status: 'failed', phase: 'connect', attempts: 1 });
      expect(unreachable.error?.code).toBe('E_SSH_UNREACHABLE');
      expect(unreachable.error?.message).toContain(env.unreachableAddress);
      expect(readFileSync(hostLogPath(ansible.result.runDir, 'lost'), 'utf8')).toContain('failed: E_SSH_UNREACHABLE');
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'fleet up --max-failures 2 with three broken stores starts no host once the budget is spent',
    async () => {
      for (const store of BROKEN_STORES) await breakStore(store - 1);
      const { run, result } = await fleet<FleetUpResult>('up', writeAnsibleInventory('hosts.yml'), [
        '--max-failures',
        '2',
      ]);
      expect(run.exitCode, printedBy(run)).toBe(1);
      expect(result.controlPlane).toMatchObject({ host: 'cp', isChanged: true });
      expect(result.stopReason).toBe('max-failures');
      const broken = BROKEN_STORES.map((store) => storeName(store - 1));
      const byName = new Map(result.hosts.map((entry) => [entry.host, entry]));
      for (const name of broken) {
        expect(byName.get(name), name).toMatchObject({ status: 'failed', phase: 'preflight', attempts: 1 });
        expect(byName.get(name)!.error).toMatchObject({ code: 'E_PREFLIGHT' });
        expect(byName.get(name)!.error!.message).toContain('port-10250');
      }
      const started = result.hosts.filter((entry) => entry.status !== 'skipped');
      const skipped = result.hosts.filter((entry) => entry.status === 'skipped');
      expect(skipped.length).toBeGreaterThan(0);
      for (const entry of skipped) {
        expect(entry).toMatchObject({ attempts: 0, error: { code: 'E_FLEET_NOT_STARTED' } });
      }
      for (const entry of started.filter((e) => !broken.includes(e.host))) {
        expect(entry, entry.host).toMatchObject({ status: 'done', node: { isReady: true } });
      }
      // Every host that started did so before the third failure; none after it.
      const failedAt = broken
        .map((name) => hostLog(result.runDir, name).find((entry) => entry.line.startsWith('failed:'))!.at)
        .sort((a, b) => a - b);
      for (const entry of started) {
        const startedAt = hostLog(result.runDir, entry.host).find((e) => e.line.startsWith('start'))!.at;
        expect(startedAt, entry.host).toBeLessThanOrEqual(failedAt[2]!);
      }
      for (const entry of skipped) expect(hostLog(result.runDir, entry.host)).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'fleet up interrupted with Ctrl-C, then --resume last, completes without redoing finished hosts; the store that fails preflight is reported and the rest proceed',
    async () => {
      // Two of the three stores are fixed; the first stays broken.
      for (const store of BROKEN_STORES.slice(1)) await fixStore(store - 1);
      const inventory = writeAnsibleInventory('hosts.yml');
      const runsDir = join(home, '.edgeadm', 'fleet', 'runs');
      const earlier = new Set(readdirSync(runsDir));
      const connectionsBefore = connectionCounts();
      const child = execa(
        process.execPath,
        [join(REPO_ROOT, 'bin/run.js'), ...fleetArgs('up', inventory, [], INTERRUPTED_CONCURRENCY)],
        {
          reject: false,
          env: { ...cliEnv(), NO_COLOR: '1' },
          timeout: CLI_TIMEOUT_MS,
          input: '',
        },
      );
      const deadline = Date.now() + STATE_WAIT_MS;
      let doneCount = 0;
      while (doneCount < DONE_BEFORE_INTERRUPT && Date.now() < deadline && child.exitCode === null) {
        await new Promise((resolve) => setTimeout(resolve, STATE_POLL_MS));
        for (const id of readdirSync(runsDir).filter((entry) => !earlier.has(entry))) {
          try {
            const state = JSON.parse(readFileSync(join(runsDir, id, 'state.json'), 'utf8')) as RunState;
            doneCount = Object.values(state.hosts).filter((host) => host.status === 'done').length;
          } catch {
            // Not written yet (the write is atomic, so a partial file is never read).
          }
        }
      }
      expect(doneCount, 'the run got far enough to interrupt').toBeGreaterThanOrEqual(DONE_BEFORE_INTERRUPT);
      child.kill('SIGINT');
      const interruptedRun = await child;
      const interrupted = parse<FleetUpResult>(
        { exitCode: interruptedRun.exitCode ?? 1, stdout: String(interruptedRun.stdout), stderr: '' },
        'the interrupted fleet up',
      );
      expect(interruptedRun.exitCode).toBe(1);
      expect(interrupted.stopReason).toBe('cancelled');
      const finished = interrupted.hosts.filter((entry) => entry.status === 'done').map((entry) => entry.host);
      const notStarted = interrupted.hosts.filter((entry) => entry.status === 'skipped');
      expect(finished.length).toBeGreaterThanOrEqual(DONE_BEFORE_INTERRUPT);
      expect(notStarted.length, 'Ctrl-C came before the last store started').toBeGreaterThan(0);
      // Running when interrupted: they finished; nothing was left running.
      expect(interrupted.hosts.filter((entry) => entry.status === 'running' || entry.status === 'pending')).toEqual([]);
      const interruptedConnections = connectionsSince(connectionsBefore);

      const betweenRuns = connectionCounts();
      const resumed = await fleet<FleetUpResult>('up', inventory, ['--resume', 'last']);
      expect(resumed.result.runId).toBe(interrupted.runId);
      expect(resumed.result.stopReason).toBeUndefined();
      const byName = new Map(resumed.result.hosts.map((entry) => [entry.host, entry]));
      const resumeConnections = connectionsSince(betweenRuns);
      for (const name of finished) {
        // Finished before: not started again, not even connected to.
        expect(byName.get(name), name).toMatchObject({ status: 'done', attempts: 1 });
        expect(byName.get(name)!.node, name).toBeUndefined();
        const host = stores[Number(name.slice('store-'.length)) - 1]!;
        expect(resumeConnections.get(host.name), name).toBe(0);
      }
      for (const entry of notStarted) {
        // Started by the resume (some joined in the budget run already, so changed or not).
        expect(byName.get(entry.host), entry.host).toMatchObject({ status: 'done', attempts: 1 });
        expect(byName.get(entry.host)!.node, entry.host).toMatchObject({ isReady: true });
      }
      // One SSH connection per attempt on a store over both runs (1, and 2 for the broken store
      // retried by the resume); one per run for the control plane (init).
      const [cpConnections, ...storeConnections] = [controlPlane, ...stores].map(
        (host) => interruptedConnections.get(host.name)! + resumeConnections.get(host.name)!,
      );
      expect(cpConnections).toBe(2);
      expect(storeConnections).toEqual(stores.map((_, index) => byName.get(storeName(index))!.attempts));
      expect(storeConnections.filter((count) => count !== 1)).toEqual([2]);
      fromAnsible = resumed.result;

      // The store that still fails preflight: reported with its check, the rest proceeded.
      const broken = storeName(BROKEN_STORES[0]! - 1);
      expect(resumed.run.exitCode).toBe(1);
      expect(byName.get(broken)).toMatchObject({ status: 'failed', phase: 'preflight', attempts: 2 });
      expect(byName.get(broken)!.error?.code).toBe('E_PREFLIGHT');
      expect(byName.get(broken)!.error?.message).toContain('port-10250');
      expect(resumed.result.hosts.filter((entry) => entry.host !== broken).map((entry) => entry.status)).toEqual(
        stores.slice(1).map(() => 'done'),
      );
      expect(readFileSync(hostLogPath(resumed.result.runDir, broken), 'utf8')).toContain('failed: E_PREFLIGHT');
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'fleet up from the equivalent edgeadm inventory brings every store up as a Ready node, uploading the package only where it was missing',
    async () => {
      expect(fromAnsible, 'the interrupted run comes first').toBeDefined();
      await fixStore(BROKEN_STORES[0]! - 1);
      const connectionsBefore = connectionCounts();
      const { run, result } = await fleet<FleetUpResult>('up', writeEdgeadmInventory('inventory.yaml'));
      expect(run.exitCode, printedBy(run)).toBe(0);
      expect(result.controlPlane).toMatchObject({
        host: 'cp',
        isChanged: false,
        server: `https://${controlPlane.address}:6443`,
      });
      expect(result.runId).not.toBe(fromAnsible.runId);
      // The same hosts, addresses and roles as from the Ansible inventory.
      const identity = (r: FleetUpResult) => r.hosts.map((entry) => [entry.host, entry.address, entry.role]);
      expect(identity(result)).toEqual(identity(fromAnsible));
      const broken = storeName(BROKEN_STORES[0]! - 1);
      expect(result.hosts.map((entry) => [entry.host, entry.status, entry.isChanged, entry.node])).toEqual(
        stores.map((store, index) => [
          storeName(index),
          'done',
          storeName(index) === broken,
          { name: store.name, isReady: true },
        ]),
      );
      for (const entry of result.hosts) {
        const log = readFileSync(hostLogPath(result.runDir, entry.host), 'utf8');
        if (entry.host === broken) expect(log).toContain('uploaded /var/lib/edgeadm/packages/');
        else expect(log, entry.host).toContain('already on the host');
      }
      expect([...connectionsSince(connectionsBefore).values()]).toEqual([controlPlane, ...stores].map(() => 1));

      // The control plane's API server (simulated) lists every store as a Ready node.
      const nodes = await execa('kubectl', ['--kubeconfig', adminKubeconfig(), 'get', 'nodes', '-o', 'json'], {
        reject: false,
      });
      expect(nodes.exitCode, String(nodes.stderr)).toBe(0);
      const items = (
        JSON.parse(String(nodes.stdout)) as {
          items: { metadata: { name: string }; status: { conditions: { type: string; status: string }[] } }[];
        }
      ).items;
      const ready = items
        .filter((item) => item.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True'))
        .map((item) => item.metadata.name)
        .sort();
      expect(ready).toEqual([controlPlane.name, ...stores.map((store) => store.name)].sort());
    },
    TEST_TIMEOUT_MS,
  );
});
