/**
 * A reboot of a netns+sshd test host (test-hosts.ts), as far as a host
 * without its own kernel can have one:
 *
 * 1. every process of the host is stopped: SIGTERM, then SIGKILL after a
 *    grace (`clean`, what systemd does at shutdown), or SIGKILL at once
 *    (`power-loss`). The host's listening sshd is kept: it holds the host's
 *    mount and UTS namespaces and stands in for PID 1, which a reboot does
 *    not leave either but which comes back with nothing else. Its SSH
 *    sessions are killed like everything else;
 * 2. what a reboot clears is cleared: the content of /run and /tmp (tmpfs
 *    on the hosts, as on most systems; /run/sshd is kept for the sshd);
 * 3. the services that were enabled are started again. The hosts have no
 *    systemd: edgeadm's direct service manager (`EDGEADM_SERVICE_MANAGER=
 *    direct`) keeps a pid file per started service under
 *    /var/lib/edgeadm/services and removes it when it stops (disables) one,
 *    so those pid files are the enabled units. Each unit's `ExecStart` is
 *    started the way that manager starts it (detached, in its own session,
 *    `User=` honoured, its log appended), in the order the units' `After=`
 *    and `Before=` give, as systemd orders a boot. Nothing else is started.
 *
 * What a reboot does that this does not: a new kernel, new boot id, clock,
 * interfaces going down and up (the network namespace and its routes stay
 * as the test left them, which is how a test keeps a node offline across
 * the reboot), and the unit's sandboxing and Environment= lines (the direct
 * manager does not apply them either).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { DIRECT_SERVICE_DIR, SYSTEMD_UNIT_DIR } from '../../src/hosts/service-manager.js';
import type { TestHost, TestHosts } from './test-hosts.js';

const execFileAsync = promisify(execFile);

/** How long processes get between SIGTERM and SIGKILL in a clean reboot (systemd's DefaultTimeoutStopSec is 90 s). */
const CLEAN_STOP_GRACE_MS = 10_000;
/** How long the killed processes may take to be gone. */
const KILL_WAIT_MS = 10_000;
/** The PATH services get (systemd's default for system services). */
const SERVICE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** How the host goes down. */
export type RebootKind = 'clean' | 'power-loss';

/** What {@link rebootHost} did. */
export interface RebootResult {
  /** The units started again, in start order. */
  started: string[];
  /** How many processes were stopped. */
  stopped: number;
}

function quote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

async function netnsPids(host: TestHost): Promise<number[]> {
  const { stdout } = await execFileAsync('ip', ['netns', 'pids', host.netns], { encoding: 'utf8' });
  return stdout
    .split('\n')
    .map(Number)
    .filter((pid) => Number.isInteger(pid) && pid > 0 && pid !== host.sshdPid);
}

function signal(pids: number[], name: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, name);
    } catch {
      // Gone meanwhile.
    }
  }
}

async function waitUntilGone(host: TestHost, deadlineMs: number): Promise<number[]> {
  const deadline = Date.now() + deadlineMs;
  let left = await netnsPids(host);
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    left = await netnsPids(host);
  }
  return left;
}

/** The unit names listed after `key=` lines of a unit (space separated, several lines allowed). */
function unitList(unitText: string, key: string): string[] {
  return unitText
    .split('\n')
    .filter((line) => line.startsWith(`${key}=`))
    .flatMap((line) =>
      line
        .slice(key.length + 1)
        .trim()
        .split(/\s+/),
    )
    .filter(Boolean);
}

/**
 * The units in start order: `A After=B` or `B Before=A` starts B first.
 * Pure; units not among `units` are ignored, as systemd ignores ordering
 * against units that are not started.
 */
export function bootOrder(units: ReadonlyMap<string, string>): string[] {
  const names = [...units.keys()].sort();
  const before = new Map<string, Set<string>>(names.map((name) => [name, new Set<string>()]));
  for (const [name, text] of units) {
    for (const other of unitList(text, 'After')) if (units.has(other)) before.get(name)!.add(other);
    for (const other of unitList(text, 'Before')) if (units.has(other)) before.get(other)!.add(name);
  }
  const order: string[] = [];
  const visiting = new Set<string>();
  const visit = (name: string): void => {
    if (order.includes(name) || visiting.has(name)) return;
    visiting.add(name);
    for (const first of [...before.get(name)!].sort()) visit(first);
    visiting.delete(name);
    order.push(name);
  };
  for (const name of names) visit(name);
  return order;
}

/**
 * Reboots a test host (see the module comment): stops everything, clears
 * /run and /tmp, starts the enabled units again. `whileDown` runs while
 * the host is down (nothing runs on it then), to change what the next boot
 * finds.
 */
export async function rebootHost(
  env: TestHosts,
  host: TestHost,
  options: { kind?: RebootKind; whileDown?: () => Promise<void> } = {},
): Promise<RebootResult> {
  const listed = await env.run(
    host,
    // <unit>.pid is the launcher's; <unit>.main.pid, beside it, its service's own.
    `for f in ${DIRECT_SERVICE_DIR}/*.pid; do case "$f" in *.main.pid) continue ;; esac; [ -f "$f" ] && basename "$f" .pid; done; true`,
  );
  const units = new Map<string, string>();
  for (const name of listed.split('\n').filter(Boolean)) {
    units.set(name, await env.run(host, `cat ${quote(`${SYSTEMD_UNIT_DIR}/${name}`)}`));
  }

  const pids = await netnsPids(host);
  if (options.kind === 'power-loss') signal(pids, 'SIGKILL');
  else {
    signal(pids, 'SIGTERM');
    signal(await waitUntilGone(host, CLEAN_STOP_GRACE_MS), 'SIGKILL');
  }
  const left = await waitUntilGone(host, KILL_WAIT_MS);
  if (left.length > 0) throw new Error(`rebootHost ${host.name}: processes ${left.join(', ')} did not go`);

  await env.run(
    host,
    [
      // -xdev: never into another file system mounted below them. The
      // checkout is bind-mounted into every host at its own path, which is
      // under /tmp when the repository is cloned there (CI); `rm -rf` of
      // /tmp's entries would delete the checkout itself. A mount point is
      // listed but not entered, and its rmdir fails harmlessly.
      "find /run -mindepth 1 -xdev ! -path /run/sshd ! -path '/run/sshd/*' -delete 2>/dev/null || true",
      'find /tmp -mindepth 1 -xdev -delete 2>/dev/null || true',
      // The pid files name processes of the last boot.
      `rm -f ${DIRECT_SERVICE_DIR}/*.pid`,
    ].join('\n'),
  );
  await options.whileDown?.();

  const started = bootOrder(units);
  for (const name of started) {
    // The launcher edgeadm's direct service manager wrote (the unit and its drop-ins), as systemd would start them at boot.
    const command = `/bin/sh ${quote(`${DIRECT_SERVICE_DIR}/${name}.sh`)}`;
    await env.run(
      host,
      [
        `cd / && setsid nohup env -i PATH=${SERVICE_PATH} HOME=/root ${command} </dev/null >>${quote(`${DIRECT_SERVICE_DIR}/${name}.log`)} 2>&1 &`,
        `echo $! > ${quote(`${DIRECT_SERVICE_DIR}/${name}.pid`)}`,
      ].join('\n'),
    );
  }
  return { started, stopped: pids.length };
}
