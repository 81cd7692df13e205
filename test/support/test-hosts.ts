/**
 * Test hosts: real OpenSSH servers, each in its own network, mount and UTS
 * namespace on this machine, for the integration suites.
 *
 * Layout of one harness (its "slot" `s` keeps concurrent harnesses apart):
 *
 * ```
 *  root namespace            switch netns (eadmt<s>-sw)          test host netns (eadmt<s>-h<i>)
 *  eadmt<s> 10.213.s.1/24 ── uplink ─ brout ─┬─ o<i> ───────────── eth0 10.213.s.<10+i>   (no bastion)
 *                                        └─ o0 ─────────────── eth0 10.213.s.2        (bastion)
 *                                 brin ─┬─ i0 ─────────────── eth1 10.214.s.2        (bastion)
 *                                       └─ i<i> ───────────── eth0 10.214.s.<10+i>   (behind it)
 * ```
 *
 * With a bastion, the root namespace has no route to 10.214.s.0/24 and the
 * bastion does not forward packets, so the hosts behind it are reachable only
 * through an SSH jump. Every host runs `sshd -D` inside
 * `unshare --mount --uts`, with overlays over /etc and /var (so users, sudoers
 * and package state written by a test never reach this machine) and tmpfs
 * over the directories edgeadm installs into.
 *
 * Nothing is installed here: `.ci/run` installs openssh-server, iproute2 and
 * sudo. Teardown kills every process in the host namespaces and deletes the
 * namespaces (which removes their veth pairs and the root-side link); a sweep
 * at start removes what a crashed run left, found by the `eadmt` prefix and a
 * dead owner process.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  mkdtempSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** Every namespace, link and state directory of the harness starts with this. */
export const TEST_HOSTS_PREFIX = 'eadmt';
/** Where slot ownership lives: /run is a tmpfs, cleared at boot like the namespaces themselves. */
const STATE_DIR = '/run/edgeadm-test-hosts';
/** How many harnesses may run at once on one machine (one /24 per slot). */
const MAX_SLOTS = 200;
/** The outer (reachable) network is 10.213.<slot>.0/24, the inner one 10.214.<slot>.0/24. */
const OUTER_NET = '10.213';
const INNER_NET = '10.214';
/** Host i gets .<FIRST_HOST_OCTET + i>; the bastion gets .2 on both networks, the root side .1. */
const FIRST_HOST_OCTET = 10;
/**
 * Hosts set up at once (their links, then their sshd). Bounded so that each
 * start gets the machine's time within {@link SSHD_START_TIMEOUT_MS} when
 * a harness has dozens of hosts on two busy cores.
 */
const SETUP_CONCURRENCY = 6;
/** How long an sshd may take to print "Server listening" (generous: dozens of hosts start on two busy cores). */
const SSHD_START_TIMEOUT_MS = 60_000;
/** How long teardown waits for killed processes to go before deleting namespaces. */
const PROCESS_EXIT_WAIT_MS = 5_000;
/** Bytes of each sshd's stderr kept for failure messages. */
const SSHD_LOG_TAIL_BYTES = 64 * 1024;
/** sshd session limit per connection; edgeadm bounds its channels below OpenSSH's default of 10. */
const SSHD_MAX_SESSIONS = 10;
/** The non-root user created inside every test host, with sudo that asks for a password. */
export const TEST_SUDO_USER = 'edgeadm-test';
/** Directories a test host gets a fresh tmpfs over (edgeadm's install targets, plus scratch space). */
export const TMPFS_DIRS = [
  '/etc/edgeadm',
  '/usr/local/bin',
  '/var/lib/edgeadm',
  '/etc/systemd/system',
  '/opt',
  '/etc/rancher',
  '/var/lib/rancher',
  '/etc/kubernetes',
  '/var/lib/kubelet',
  '/var/lib/etcd',
  '/etc/containerd',
  '/var/lib/containerd',
] as const;
const SSHD = '/usr/sbin/sshd';
/** The repository root, kept visible inside every test host. */
const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** One running test host. */
export interface TestHost {
  /** Short name, also its hostname inside its UTS namespace (`eadmt<s>-h<i>`). */
  name: string;
  /** The network namespace the host lives in. */
  netns: string;
  /** The address tests connect to (through the bastion for hosts behind it). */
  address: string;
  port: number;
  /** For a bastion or a dual-homed host: its address on the inner network. */
  innerAddress?: string;
  isBastion: boolean;
  /** `ssh-ed25519 AAAA…` */
  hostPublicKey: string;
  /** OpenSSH's `SHA256:…` form of the host key fingerprint. */
  hostKeyFingerprint: string;
  /** The listening sshd (its per-connection children are its child processes). */
  sshdPid: number;
}

/** Client credentials generated for one harness run. */
export interface TestHostKeys {
  /** Private key authorized for root on every host. */
  root: string;
  /** Private key authorized for {@link TEST_SUDO_USER}. */
  user: string;
  /** A passphrase-protected key, also authorized for {@link TEST_SUDO_USER}. */
  encrypted: string;
  encryptedPassphrase: string;
  /** A key authorized nowhere. */
  stranger: string;
}

/** A running harness. */
export interface TestHosts {
  /** All hosts; with a bastion, `hosts[0]` is the bastion. */
  hosts: TestHost[];
  /** The bastion, when asked for. */
  bastion: TestHost | undefined;
  /** The hosts other than the bastion. */
  targets: TestHost[];
  keys: TestHostKeys;
  /** Password of {@link TEST_SUDO_USER} (login and sudo). */
  userPassword: string;
  /** A known_hosts file with every host's key, by the address tests use. */
  knownHostsFile: string;
  /** An address in the reachable subnet where nothing answers. */
  unreachableAddress: string;
  /** The harness's scratch directory (removed by teardown). */
  dir: string;
  /** Drops every SSH connection to a host by killing its per-connection sshd processes. */
  dropConnections(host: TestHost): number;
  /** The tail of a host's sshd log (stderr), for failure messages. */
  sshdLog(host: TestHost): string;
  /** Runs a command inside a host's namespaces as root, outside SSH (for setting up and checking state). */
  run(host: TestHost, script: string): Promise<string>;
  /** Stops everything and removes every trace; safe to call twice. */
  teardown(): Promise<void>;
}

export interface StartTestHostsOptions {
  /** Hosts to start, bastion included. */
  count: number;
  /** Make `hosts[0]` a bastion that is the only way to reach the others. */
  bastion?: boolean;
  /**
   * With a bastion: hosts (by index) that sit on both networks, as a control
   * plane in a datacenter does: this machine reaches them directly at
   * `address` (on eth0, so it is their first address), and every host behind
   * the bastion has a route to that address through their `innerAddress`.
   * The other hosts behind the bastion stay reachable only through it.
   */
  dualHomed?: number[];
  /**
   * Give each host its own cgroup subtree and cgroup namespace, with the
   * cgroup v1 hierarchies mounted at /sys/fs/cgroup, as a container runtime
   * gives a node: a real kubelet and containerd on the host then see their
   * own subtree as the root (`/kubepods` of three kubelets never meet).
   * Teardown kills every process of a host's subtree (pods too, which live
   * in network namespaces of their own) and removes it.
   */
  cgroups?: boolean;
}

interface SlotOwner {
  pid: number;
  startTime: string;
  dir: string;
}

/**
 * Starts `count` test hosts and returns once every sshd listens. Throws with
 * the missing package named when this machine cannot run them (not root, no
 * sshd, no ip); cleans up whatever it started if it fails half way.
 */
export async function startTestHosts(options: StartTestHostsOptions): Promise<TestHosts> {
  assertCanRunTestHosts();
  sweepStaleTestHosts();
  const dir = mkdtempSync(join(tmpdir(), `${TEST_HOSTS_PREFIX}-`));
  const slot = claimSlot(dir);
  const harness = new Harness(slot, dir, options);
  try {
    await harness.start();
  } catch (error) {
    await harness.teardown();
    throw error;
  }
  return harness.view();
}

/** Fails loudly (never skips) when the machine lacks what the harness needs. */
function assertCanRunTestHosts(): void {
  const problems: string[] = [];
  if (process.getuid?.() !== 0) problems.push('the tests must run as root (network namespaces, mounts)');
  for (const [tool, pkg] of [
    [SSHD, 'openssh-server'],
    ['/usr/bin/ssh-keygen', 'openssh-client'],
    ['/usr/bin/unshare', 'util-linux'],
    ['/usr/bin/sudo', 'sudo'],
  ] as const) {
    if (!existsSync(tool)) problems.push(`${tool} is missing (Debian package ${pkg})`);
  }
  if (!existsSync('/usr/sbin/ip') && !existsSync('/sbin/ip') && !existsSync('/usr/bin/ip')) {
    problems.push('ip is missing (Debian package iproute2)');
  }
  if (problems.length > 0) {
    throw new Error(`cannot start SSH test hosts: ${problems.join('; ')}. .ci/run installs the packages.`);
  }
}

/** The kernel's start time of a process, to tell a live owner from a reused pid. */
function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 22 (starttime), counted after the parenthesised command name.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

function isOwnerAlive(owner: SlotOwner | undefined): boolean {
  return owner !== undefined && processStartTime(owner.pid) === owner.startTime;
}

function readOwner(slot: number, stateDir = STATE_DIR): SlotOwner | undefined {
  try {
    return JSON.parse(readFileSync(join(stateDir, `slot-${slot}`, 'owner.json'), 'utf8')) as SlotOwner;
  } catch {
    return undefined;
  }
}

/**
 * Claims the lowest free slot for this process, in `stateDir` (the
 * machine's {@link STATE_DIR}, but in the harness's own tests). The claim
 * is made complete, owner and all, in a directory of its own and then
 * renamed to `slot-N`: rename fails when `slot-N` exists, so it is the
 * atomic lock, and no sweep (of this or another checkout's run) can ever
 * see a claim without its owner and take it for a dead one.
 */
export function claimSlot(dir: string, stateDir = STATE_DIR): number {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  return withSlotLock(stateDir, () => claimFreeSlot(dir, stateDir));
}

function claimFreeSlot(dir: string, stateDir: string): number {
  const owner: SlotOwner = { pid: process.pid, startTime: processStartTime(process.pid) ?? '', dir };
  const pending = mkdtempSync(join(stateDir, '.claim-'));
  writeFileSync(join(pending, 'owner.json'), JSON.stringify(owner));
  try {
    for (let slot = 0; slot < MAX_SLOTS; slot++) {
      const claimed = join(stateDir, `slot-${slot}`);
      // rename(2) would replace an empty directory: never take one (a claim being made by older code).
      if (existsSync(claimed)) continue;
      try {
        renameSync(pending, claimed);
      } catch {
        continue;
      }
      return slot;
    }
  } catch (error) {
    rmSync(pending, { recursive: true, force: true });
    throw error;
  }
  rmSync(pending, { recursive: true, force: true });
  throw new Error(`all ${MAX_SLOTS} test host slots are in use (${stateDir})`);
}

/** How long a claim or a sweep waits for another process's to finish. */
const SLOT_LOCK_WAIT_MS = 180_000;
/** How often it looks again. */
const SLOT_LOCK_POLL_MS = 20;

/**
 * Runs `work` holding the state directory's lock, which every claim and
 * every sweep takes: a sweep that finds a slot stale destroys it with no
 * claim in between. (Without it, a sweep could list a namespace of a slot
 * whose owner was tearing it down, see the slot released, and then destroy
 * the namespaces and the claim of a harness, maybe another checkout's, that
 * took the freed slot meanwhile.) The lock is made like a claim: complete
 * with its owner, then renamed into place; one left by a dead process is
 * broken.
 */
export function withSlotLock<T>(stateDir: string, work: () => T): T {
  const lock = join(stateDir, '.lock');
  const owner: SlotOwner = { pid: process.pid, startTime: processStartTime(process.pid) ?? '', dir: '' };
  const pending = mkdtempSync(join(stateDir, '.lock-pending-'));
  writeFileSync(join(pending, 'owner.json'), JSON.stringify(owner));
  const deadline = Date.now() + SLOT_LOCK_WAIT_MS;
  for (;;) {
    try {
      renameSync(pending, lock);
      break;
    } catch {
      breakDeadLock(lock, stateDir);
    }
    if (Date.now() > deadline) {
      rmSync(pending, { recursive: true, force: true });
      throw new Error(`the test host slot lock ${lock} was held for ${SLOT_LOCK_WAIT_MS} ms`);
    }
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, SLOT_LOCK_POLL_MS);
  }
  try {
    return work();
  } finally {
    const released = join(stateDir, `.lock-released-${process.pid}-${randomBytes(4).toString('hex')}`);
    renameSync(lock, released);
    rmSync(released, { recursive: true, force: true });
  }
}

/** Removes the lock when the process holding it is gone (renamed away first, so only one breaker wins). */
function breakDeadLock(lock: string, stateDir: string): void {
  let holder: SlotOwner | undefined;
  try {
    holder = JSON.parse(readFileSync(join(lock, 'owner.json'), 'utf8')) as SlotOwner;
  } catch {
    return; // Released meanwhile.
  }
  if (isOwnerAlive(holder)) return;
  const broken = join(stateDir, `.lock-broken-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    renameSync(lock, broken);
  } catch {
    return; // Broken or released by another process.
  }
  rmSync(broken, { recursive: true, force: true });
}

/**
 * Gives slot `slot` up: renamed away first (atomically, so a sweep never
 * sees it half deleted, without its owner), then deleted.
 */
export function releaseSlot(slot: number, stateDir = STATE_DIR): void {
  const released = join(stateDir, `.released-${slot}-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    renameSync(join(stateDir, `slot-${slot}`), released);
  } catch {
    return; // Released by another sweep of the same dead owner.
  }
  rmSync(released, { recursive: true, force: true });
}

/**
 * How old a slot directory without an owner must be to count as stale. A
 * claim of this code is never visible without its owner; one of older code
 * (mkdir, then the owner written) is for a moment, and a slot being released
 * is gone the next moment: neither may be swept.
 */
const OWNERLESS_SLOT_STALE_MS = 60_000;

/** The slots claimed in `stateDir` whose owner process is gone (what a sweep may destroy). */
export function staleSlots(stateDir = STATE_DIR): number[] {
  if (!existsSync(stateDir)) return [];
  const stale: number[] = [];
  for (const entry of readdirSync(stateDir)) {
    const slot = Number(entry.replace(/^slot-/, ''));
    if (!entry.startsWith('slot-') || !Number.isInteger(slot)) continue;
    const owner = readOwner(slot, stateDir);
    if (owner !== undefined ? !isOwnerAlive(owner) : isOwnerlessLongEnough(join(stateDir, entry))) stale.push(slot);
  }
  return stale;
}

function isOwnerlessLongEnough(slotDir: string): boolean {
  try {
    return Date.now() - statSync(slotDir).mtimeMs > OWNERLESS_SLOT_STALE_MS;
  } catch {
    return false; // Released meanwhile.
  }
}

function listTestNetns(): string[] {
  let out: string;
  try {
    out = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' });
  } catch {
    return [];
  }
  return out
    .split('\n')
    .map((line) => line.split(' ')[0] ?? '')
    .filter((name) => name.startsWith(TEST_HOSTS_PREFIX));
}

function slotOfName(name: string): number | undefined {
  const match = new RegExp(`^${TEST_HOSTS_PREFIX}(\\d+)(?:-|$)`).exec(name);
  return match ? Number(match[1]) : undefined;
}

/**
 * Removes what crashed runs left behind: namespaces (and their processes),
 * root-side links, scratch directories and slot claims whose owner process
 * is gone. Harnesses of live processes (other test files) are left alone.
 */
export function sweepStaleTestHosts(): void {
  mkdirSync(STATE_DIR, { recursive: true, mode: 0o700 });
  withSlotLock(STATE_DIR, () => {
    const stale = new Set<number>(staleSlots());
    for (const netns of listTestNetns()) {
      const slot = slotOfName(netns);
      if (slot !== undefined && !existsSync(join(STATE_DIR, `slot-${slot}`))) stale.add(slot);
    }
    for (const slot of stale) destroySlotSync(slot);
  });
}

/** Kills and deletes everything of one slot, synchronously (also usable from an exit handler). */
function destroySlotSync(slot: number): void {
  const owner = readOwner(slot);
  const names = listTestNetns().filter((name) => slotOfName(name) === slot);
  destroySlotCgroupsSync(slot);
  for (const netns of names) killNetnsProcessesSync(netns);
  for (const netns of names) {
    try {
      execFileSync('ip', ['netns', 'delete', netns], { stdio: 'ignore' });
    } catch {
      // Already gone.
    }
  }
  try {
    execFileSync('ip', ['link', 'delete', `${TEST_HOSTS_PREFIX}${slot}`], { stdio: 'ignore' });
  } catch {
    // Deleting the switch namespace already removed it.
  }
  if (owner?.dir.includes(TEST_HOSTS_PREFIX)) rmSync(owner.dir, { recursive: true, force: true });
  releaseSlot(slot);
}

function netnsPidsSync(netns: string): number[] {
  try {
    return execFileSync('ip', ['netns', 'pids', netns], { encoding: 'utf8' })
      .split('\n')
      .map(Number)
      .filter((pid) => Number.isInteger(pid) && pid > 0);
  } catch {
    return [];
  }
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // Exited meanwhile.
  }
}

function killNetnsProcessesSync(netns: string): void {
  for (const pid of netnsPidsSync(netns)) killQuietly(pid);
}

/** Polls `condition` until it holds or {@link PROCESS_EXIT_WAIT_MS} passes. */
async function waitFor(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + PROCESS_EXIT_WAIT_MS;
  while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
}

function fingerprintOf(publicKeyLine: string): string {
  const blob = Buffer.from(publicKeyLine.split(' ')[1] ?? '', 'base64');
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

async function sh(file: string, args: string[]): Promise<string> {
  try {
    const { stdout } = await execFileAsync(file, args, { encoding: 'utf8' });
    return stdout;
  } catch (error) {
    const err = error as Error & { stderr?: string };
    throw new Error(`${file} ${args.join(' ')} failed: ${err.stderr?.trim() || err.message}`, { cause: error });
  }
}

/** The cgroup v1 hierarchies of this machine: mount point under /sys/fs/cgroup and mount options (`cpu`, `name=systemd`). */
function cgroupHierarchies(): Array<{ dir: string; options: string; controller: string }> {
  const out: Array<{ dir: string; options: string; controller: string }> = [];
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const mountPoint = left.split(' ')[4] ?? '';
    const [fstype, , superOptions = ''] = right.split(' ');
    if (fstype !== 'cgroup' || !mountPoint.startsWith('/sys/fs/cgroup/')) continue;
    const options = superOptions
      .split(',')
      .filter((o) => o !== 'rw' && o !== 'ro')
      .join(',');
    out.push({ dir: mountPoint, options, controller: options });
  }
  return out;
}

/** This process's cgroup in the hierarchy mounted with `options` (`/` at the root). */
function ownCgroup(options: string): string {
  for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
    const [, controllers, path] = line.split(':');
    if (controllers !== undefined && controllers.split(',').sort().join(',') === options.split(',').sort().join(','))
      return path ?? '/';
  }
  return '/';
}

/** Where the test hosts' cgroups live in a hierarchy: below this process's own cgroup, so its accounting holds. */
function testCgroupsBase(hierarchy: { dir: string; options: string }): string {
  return join(hierarchy.dir, ownCgroup(hierarchy.options), 'edgeadm-test');
}

/**
 * A shell script (run with the command to exec as its arguments) that makes
 * the host's cgroup in every hierarchy, moves itself there, and execs the
 * rest; `unshare --cgroup` in the rest then roots the host's cgroup
 * namespace at that cgroup.
 */
function joinHostCgroupsScript(slot: number, hostName: string): string {
  const lines = ['set -eu'];
  for (const hierarchy of cgroupHierarchies()) {
    const base = testCgroupsBase(hierarchy);
    const dir = join(base, `${TEST_HOSTS_PREFIX}${slot}`, hostName);
    lines.push(`mkdir -p ${quote(dir)}`);
    if (hierarchy.options.split(',').includes('cpuset')) {
      // A new cpuset cgroup has no CPUs or memory nodes until given its parent's.
      for (const level of [join(base), join(base, `${TEST_HOSTS_PREFIX}${slot}`), dir]) {
        lines.push(`cat ${quote(join(level, '..', 'cpuset.cpus'))} > ${quote(join(level, 'cpuset.cpus'))}`);
        lines.push(`cat ${quote(join(level, '..', 'cpuset.mems'))} > ${quote(join(level, 'cpuset.mems'))}`);
      }
    }
    lines.push(`echo $$ > ${quote(join(dir, 'cgroup.procs'))}`);
  }
  lines.push('exec "$@"');
  return lines.join('\n');
}

/** Mounts the cgroup v1 hierarchies inside a host's mount and cgroup namespaces (ip netns exec hid them). */
function mountCgroupsScript(): string {
  return [
    'mount -t tmpfs -o mode=0755 cgroup /sys/fs/cgroup',
    ...cgroupHierarchies().map(
      (h) => `mkdir -p ${quote(h.dir)} && mount -t cgroup -o ${quote(h.options)} cgroup ${quote(h.dir)}`,
    ),
  ].join('\n');
}

/**
 * Kills every process in a slot's cgroups (a host's pods run in network
 * namespaces of their own, so the network namespace does not find them) and
 * removes the cgroups, deepest first.
 */
function destroySlotCgroupsSync(slot: number): void {
  const hierarchies = cgroupHierarchies();
  const slotDirs = hierarchies
    .map((h) => join(testCgroupsBase(h), `${TEST_HOSTS_PREFIX}${slot}`))
    .filter((dir) => existsSync(dir));
  if (slotDirs.length === 0) return;
  const pidsOf = (): number[] => {
    const pids = new Set<number>();
    for (const dir of slotDirs) {
      for (const procs of execFileSync('find', [dir, '-name', 'cgroup.procs'], { encoding: 'utf8' }).split('\n')) {
        if (!procs) continue;
        for (const pid of readFileSync(procs, 'utf8').split('\n')) if (pid) pids.add(Number(pid));
      }
    }
    return [...pids];
  };
  for (let round = 0; round < 50; round++) {
    const pids = pidsOf();
    if (pids.length === 0) break;
    for (const pid of pids) killQuietly(pid);
    execFileSync('sleep', ['0.1']);
  }
  for (const dir of slotDirs) {
    const dirs = execFileSync('find', [dir, '-depth', '-type', 'd'], { encoding: 'utf8' }).split('\n').filter(Boolean);
    for (const cgroup of dirs) {
      try {
        rmdirSync(cgroup);
      } catch {
        // A process that would not die keeps it; the next sweep tries again.
      }
    }
  }
}

/** Runs `ip -n <netns> -batch -` with `commands`, one per line. */
async function ipBatch(netns: string, commands: string[]): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const child = execFile('ip', ['-n', netns, '-batch', '-'], { encoding: 'utf8' }, (error, _stdout, stderr) =>
      error ? reject(new Error(`ip -n ${netns} -batch failed: ${stderr.trim() || error.message}`)) : resolve(),
    );
    child.stdin!.end(`${commands.join('\n')}\n`);
  });
}

/** Runs `task` over `items`, {@link SETUP_CONCURRENCY} at a time; rejects with the first failure once all settled. */
async function inBatches<T>(items: T[], task: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  const failures: unknown[] = [];
  const worker = async (): Promise<void> => {
    for (let item = queue.shift(); item !== undefined; item = queue.shift()) {
      await task(item).catch((error: unknown) => failures.push(error));
    }
  };
  await Promise.all(Array.from({ length: Math.min(SETUP_CONCURRENCY, items.length) }, worker));
  if (failures.length > 0) throw failures[0];
}

function quote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

interface HostPlan {
  name: string;
  netns: string;
  isBastion: boolean;
  /** [interface, address/prefix] inside the host. */
  links: Array<{ ifname: string; port: string; bridge: 'brout' | 'brin'; cidr: string }>;
  address: string;
  innerAddress?: string;
}

interface RunningHost {
  plan: HostPlan;
  child: ChildProcess;
  logTail: string;
  hostPublicKey: string;
}

class Harness {
  readonly #slot: number;
  readonly #dir: string;
  readonly #options: StartTestHostsOptions;
  readonly #running: RunningHost[] = [];
  readonly #plans: HostPlan[] = [];
  #keys: TestHostKeys | undefined;
  #userPassword = randomBytes(12).toString('base64url');
  #knownHostsFile = '';
  #tornDown = false;
  readonly #onExit = (): void => {
    if (!this.#tornDown) destroySlotSync(this.#slot);
  };

  constructor(slot: number, dir: string, options: StartTestHostsOptions) {
    this.#slot = slot;
    this.#dir = dir;
    this.#options = options;
    process.once('exit', this.#onExit);
  }

  get #switchNetns(): string {
    return `${TEST_HOSTS_PREFIX}${this.#slot}-sw`;
  }

  async start(): Promise<void> {
    if (this.#options.count < 1) throw new Error('startTestHosts needs at least one host');
    this.#planHosts();
    this.#keys = await this.#generateClientKeys();
    await this.#buildNetwork();
    await inBatches(this.#plans, (plan) => this.#startHost(plan));
    this.#knownHostsFile = join(this.#dir, 'known_hosts');
    writeFileSync(
      this.#knownHostsFile,
      this.#running.map((host) => `${host.plan.address} ${host.hostPublicKey}\n`).join(''),
      { mode: 0o600 },
    );
  }

  #planHosts(): void {
    const s = this.#slot;
    const withBastion = this.#options.bastion === true;
    const dualHomed = new Set(this.#options.dualHomed ?? []);
    if (dualHomed.size > 0 && (!withBastion || dualHomed.has(0))) {
      throw new Error('dualHomed needs a bastion, and names hosts other than the bastion (index 0)');
    }
    for (let i = 0; i < this.#options.count; i++) {
      const name = `${TEST_HOSTS_PREFIX}${s}-h${i}`;
      if (dualHomed.has(i)) {
        const octet = FIRST_HOST_OCTET + i;
        this.#plans.push({
          name,
          netns: name,
          isBastion: false,
          address: `${OUTER_NET}.${s}.${octet}`,
          innerAddress: `${INNER_NET}.${s}.${octet}`,
          links: [
            { ifname: 'eth0', port: `o${i}`, bridge: 'brout', cidr: `${OUTER_NET}.${s}.${octet}/24` },
            { ifname: 'eth1', port: `p${i}`, bridge: 'brin', cidr: `${INNER_NET}.${s}.${octet}/24` },
          ],
        });
        continue;
      }
      if (withBastion && i === 0) {
        this.#plans.push({
          name,
          netns: name,
          isBastion: true,
          address: `${OUTER_NET}.${s}.2`,
          innerAddress: `${INNER_NET}.${s}.2`,
          links: [
            { ifname: 'eth0', port: 'o0', bridge: 'brout', cidr: `${OUTER_NET}.${s}.2/24` },
            { ifname: 'eth1', port: 'i0', bridge: 'brin', cidr: `${INNER_NET}.${s}.2/24` },
          ],
        });
        continue;
      }
      const net = withBastion ? INNER_NET : OUTER_NET;
      const address = `${net}.${s}.${FIRST_HOST_OCTET + i}`;
      this.#plans.push({
        name,
        netns: name,
        isBastion: false,
        address,
        links: [{ ifname: 'eth0', port: `p${i}`, bridge: withBastion ? 'brin' : 'brout', cidr: `${address}/24` }],
      });
    }
  }

  async #generateClientKeys(): Promise<TestHostKeys> {
    const keysDir = join(this.#dir, 'client');
    mkdirSync(keysDir, { mode: 0o700 });
    const passphrase = randomBytes(9).toString('base64url');
    const make = async (name: string, pass = ''): Promise<string> => {
      const file = join(keysDir, name);
      await sh('ssh-keygen', ['-q', '-t', 'ed25519', '-N', pass, '-C', `edgeadm-test-${name}`, '-f', file]);
      return file;
    };
    const [root, user, encrypted, stranger] = await Promise.all([
      make('root'),
      make('user'),
      make('encrypted', passphrase),
      make('stranger'),
    ]);
    return { root, user, encrypted, encryptedPassphrase: passphrase, stranger };
  }

  async #buildNetwork(): Promise<void> {
    const s = this.#slot;
    const sw = this.#switchNetns;
    const rootLink = `${TEST_HOSTS_PREFIX}${s}`;
    await sh('ip', ['netns', 'add', sw]);
    for (const bridge of ['brout', 'brin']) {
      await sh('ip', ['-n', sw, 'link', 'add', bridge, 'type', 'bridge']);
      await sh('ip', ['-n', sw, 'link', 'set', bridge, 'up']);
    }
    await sh('ip', ['link', 'add', rootLink, 'type', 'veth', 'peer', 'name', 'uplink', 'netns', sw]);
    await sh('ip', ['addr', 'add', `${OUTER_NET}.${s}.1/24`, 'dev', rootLink]);
    await sh('ip', ['link', 'set', rootLink, 'up']);
    await sh('ip', ['-n', sw, 'link', 'set', 'uplink', 'master', 'brout', 'up']);
    await inBatches(this.#plans, async (plan) => {
      await sh('ip', ['netns', 'add', plan.netns]);
      // One `ip` process per namespace: a batch each, as commands in a row are slow to spawn on a busy machine.
      await ipBatch(
        sw,
        plan.links.flatMap((link) => [
          `link add ${link.port} type veth peer name ${link.ifname} netns ${plan.netns}`,
          `link set ${link.port} master ${link.bridge} up`,
        ]),
      );
      await ipBatch(plan.netns, [
        'link set lo up',
        ...plan.links.flatMap((link) => [`addr add ${link.cidr} dev ${link.ifname}`, `link set ${link.ifname} up`]),
      ]);
    });
    // Hosts behind the bastion reach a dual-homed host's outer address through its inner one.
    const gateways = this.#plans.filter((plan) => !plan.isBastion && plan.innerAddress !== undefined);
    if (gateways.length === 0) return;
    const behind = this.#plans.filter((plan) => !plan.isBastion && plan.innerAddress === undefined);
    await inBatches(behind, (plan) =>
      ipBatch(
        plan.netns,
        gateways.map((gateway) => `route add ${gateway.address}/32 via ${gateway.innerAddress!}`),
      ),
    );
  }

  async #startHost(plan: HostPlan): Promise<void> {
    const hostDir = join(this.#dir, plan.name);
    mkdirSync(join(hostDir, 'authorized_keys'), { recursive: true, mode: 0o755 });
    mkdirSync(join(hostDir, 'mnt'), { mode: 0o700 });
    const hostKey = join(hostDir, 'ssh_host_ed25519_key');
    await sh('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', plan.name, '-f', hostKey]);
    const hostPublicKey = readFileSync(`${hostKey}.pub`, 'utf8').trim().split(' ').slice(0, 2).join(' ');
    const keys = this.#keys!;
    writeFileSync(join(hostDir, 'authorized_keys', 'root'), readFileSync(`${keys.root}.pub`));
    writeFileSync(
      join(hostDir, 'authorized_keys', TEST_SUDO_USER),
      Buffer.concat([readFileSync(`${keys.user}.pub`), readFileSync(`${keys.encrypted}.pub`)]),
    );
    writeFileSync(join(hostDir, 'user-password'), `${TEST_SUDO_USER}:${this.#userPassword}\n`, { mode: 0o600 });
    // Everything sshd reads lives under /etc/ssh/edgeadm-test inside the host's
    // /etc overlay, so the tmpfs over /tmp can hide this directory.
    const sshdConfig = [
      'Port 22',
      'ListenAddress 0.0.0.0',
      'HostKey /etc/ssh/edgeadm-test/ssh_host_ed25519_key',
      'PidFile none',
      'AuthorizedKeysFile /etc/ssh/edgeadm-test/authorized_keys/%u',
      'StrictModes no',
      'PermitRootLogin prohibit-password',
      'PasswordAuthentication yes',
      'KbdInteractiveAuthentication no',
      'UsePAM no',
      'UseDNS no',
      `MaxSessions ${SSHD_MAX_SESSIONS}`,
      'MaxStartups 100',
      'AllowTcpForwarding yes',
      'Subsystem sftp internal-sftp',
      `LogLevel ${process.env.EDGEADM_TEST_SSHD_LOG_LEVEL ?? 'INFO'}`,
      '',
    ].join('\n');
    writeFileSync(join(hostDir, 'sshd_config'), sshdConfig);
    const overlay = (target: string, name: string): string[] => [
      `mkdir -p "$M/${name}-up" "$M/${name}-work"`,
      `mount -t overlay overlay -o lowerdir=${target},upperdir="$M/${name}-up",workdir="$M/${name}-work" ${target}`,
    ];
    const script = [
      'set -eu',
      `M=${quote(join(hostDir, 'mnt'))}`,
      `H=${quote(hostDir)}`,
      'mount -t tmpfs -o mode=0700 edgeadm-test "$M"',
      ...overlay('/etc', 'etc'),
      ...overlay('/var', 'var'),
      'mkdir -p /etc/ssh/edgeadm-test',
      'cp -r "$H/authorized_keys" "$H/ssh_host_ed25519_key" "$H/sshd_config" "$H/user-password" /etc/ssh/edgeadm-test/',
      'chmod 600 /etc/ssh/edgeadm-test/ssh_host_ed25519_key /etc/ssh/edgeadm-test/user-password',
      // The repository (and the Node it pins) stays visible at its own path,
      // even when it lives under a directory hidden below (a CI clone in /tmp):
      // tests and the simulated distribution run this Node inside hosts.
      `mount --bind ${quote(REPO_ROOT)} /srv`,
      // From here on the harness directory (under /tmp) is hidden.
      ...[...TMPFS_DIRS, '/run', '/tmp', '/home', '/root', '/var/tmp'].map(
        (target) => `mkdir -p ${target} && mount -t tmpfs -o mode=0755 edgeadm-test ${target}`,
      ),
      `if [ ! -e ${quote(join(REPO_ROOT, 'package.json'))} ]; then mkdir -p ${quote(REPO_ROOT)} && mount --bind /srv ${quote(REPO_ROOT)}; fi`,
      'umount /srv',
      'chmod 1777 /tmp /var/tmp && chmod 700 /root && mkdir -p /run/sshd',
      `useradd --create-home --groups sudo --shell /bin/sh ${TEST_SUDO_USER} 2>/dev/null || true`,
      'chpasswd < /etc/ssh/edgeadm-test/user-password && rm /etc/ssh/edgeadm-test/user-password',
      `hostname ${plan.name}`,
      `printf '127.0.1.1 %s\\n' ${plan.name} >> /etc/hosts`,
      `exec ${SSHD} -D -e -f /etc/ssh/edgeadm-test/sshd_config`,
    ].join('\n');
    const namespaces = ['netns', 'exec', plan.netns, 'unshare', '--mount', '--uts', '--propagation', 'private'];
    const child =
      this.#options.cgroups === true
        ? spawn(
            'sh',
            [
              '-c',
              joinHostCgroupsScript(this.#slot, plan.name),
              'sh',
              'ip',
              ...namespaces,
              '--cgroup',
              'sh',
              '-c',
              `${mountCgroupsScript()}\n${script}`,
            ],
            {
              stdio: ['ignore', 'ignore', 'pipe'],
            },
          )
        : spawn('ip', [...namespaces, 'sh', '-c', script], { stdio: ['ignore', 'ignore', 'pipe'] });
    const running: RunningHost = { plan, child, logTail: '', hostPublicKey };
    this.#running.push(running);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(new Error(`sshd on ${plan.name} did not start in ${SSHD_START_TIMEOUT_MS} ms:\n${running.logTail}`)),
        SSHD_START_TIMEOUT_MS,
      );
      child.stderr!.setEncoding('utf8');
      child.stderr!.on('data', (chunk: string) => {
        running.logTail = (running.logTail + chunk).slice(-SSHD_LOG_TAIL_BYTES);
        if (running.logTail.includes('Server listening on 0.0.0.0 port 22')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`sshd on ${plan.name} exited (${code ?? signal}) while starting:\n${running.logTail}`));
      });
    });
  }

  view(): TestHosts {
    const hosts: TestHost[] = this.#plans.map((plan) => {
      const running = this.#running.find((r) => r.plan === plan)!;
      return {
        name: plan.name,
        netns: plan.netns,
        address: plan.address,
        port: 22,
        ...(plan.innerAddress === undefined ? {} : { innerAddress: plan.innerAddress }),
        isBastion: plan.isBastion,
        hostPublicKey: running.hostPublicKey,
        hostKeyFingerprint: fingerprintOf(running.hostPublicKey),
        sshdPid: running.child.pid!,
      };
    });
    const bastion = hosts.find((host) => host.isBastion);
    return {
      hosts,
      bastion,
      targets: hosts.filter((host) => !host.isBastion),
      keys: this.#keys!,
      userPassword: this.#userPassword,
      knownHostsFile: this.#knownHostsFile,
      unreachableAddress: `${OUTER_NET}.${this.#slot}.250`,
      dir: this.#dir,
      dropConnections: (host) => this.#dropConnections(host),
      run: (host, script) => this.#run(host, script),
      sshdLog: (host) => this.#running.find((r) => r.plan.name === host.name)?.logTail ?? '',
      teardown: () => this.teardown(),
    };
  }

  #dropConnections(host: TestHost): number {
    // The per-connection sshd processes are the listener's children.
    const children: number[] = [];
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        if (ppid === host.sshdPid) children.push(Number(entry));
      } catch {
        // Exited while we looked.
      }
    }
    for (const pid of children) killQuietly(pid);
    return children.length;
  }

  /**
   * Runs a script in the host's network and mount namespaces, via the sshd's
   * own namespaces, with the sshd's root and working directory: when this
   * machine's suite runs in a chroot, entering the mount namespace alone
   * (setns(2)) would put the script at the machine's root, not the host's.
   * scripts/fresh-root.sh no longer chroots (it uses pivot_root): runc's exec
   * has the same trouble, see chrootReason() in ./real/rig.ts.
   */
  async #run(host: TestHost, script: string): Promise<string> {
    const namespaces = ['--target', String(host.sshdPid), '--net', '--mount', '--uts', '--root', '--wd'];
    if (this.#options.cgroups !== true) return sh('nsenter', [...namespaces, 'sh', '-c', script]);
    // Into the host's cgroups too, so that what the script starts belongs to the host (and to its teardown).
    const joinHost = 'for procs in /sys/fs/cgroup/*/cgroup.procs; do echo $$ > "$procs"; done';
    return sh('nsenter', [...namespaces, '--cgroup', 'sh', '-c', `${joinHost}\n${script}`]);
  }

  async teardown(): Promise<void> {
    if (this.#tornDown) return;
    // Per-connection processes first, while their sshd still lives to reap
    // them (an orphan would be left to PID 1, which may not reap at all),
    // then the listeners, which this process reaps.
    for (const running of this.#running) {
      const listener = running.child.pid;
      for (const pid of netnsPidsSync(running.plan.netns)) if (pid !== listener) killQuietly(pid);
    }
    await waitFor(() => this.#running.every((running) => netnsPidsSync(running.plan.netns).length <= 1));
    for (const running of this.#running) if (running.child.pid !== undefined) killQuietly(running.child.pid);
    await Promise.all(
      this.#running.map(
        (running) =>
          new Promise<void>((resolve) => {
            if (running.child.exitCode !== null || running.child.signalCode !== null) return resolve();
            const timer = setTimeout(resolve, PROCESS_EXIT_WAIT_MS);
            running.child.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
          }),
      ),
    );
    destroySlotSync(this.#slot);
    rmSync(this.#dir, { recursive: true, force: true });
    this.#tornDown = true;
    process.removeListener('exit', this.#onExit);
  }
}
