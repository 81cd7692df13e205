/**
 * The state of one fleet run: every host's status, attempts, phase, error and
 * duration. It is what `--json` reports, what `--resume` continues from, and
 * it is written atomically to `$EDGEADM_HOME/fleet/runs/<id>/state.json`
 * after every change, beside one log file per host.
 */
import { createHash, randomBytes } from 'node:crypto';
import { appendFile, mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ValidationError } from '../errors.js';
import { isValidHostName } from './inventory/host-fields.js';

/** Where a host is in the run. */
export type HostStatus = 'pending' | 'running' | 'done' | 'failed' | 'skipped';

/** One host's part of the run. */
export interface HostRunState {
  status: HostStatus;
  /** Attempts made, over every run that resumed this state. */
  attempts: number;
  /** The phase running or reached (the failing one when failed). */
  phase?: string;
  error?: { code: string; message: string };
  /** Milliseconds spent on the host in the last run that started it. */
  durationMs?: number;
}

/**
 * Why a run stopped starting hosts before the end: the failure budget, Ctrl-C,
 * (`fleet up`) a control plane that did not join, before any node started, or
 * (`fleet upgrade`) the end of the maintenance window.
 */
export type StopReason = 'max-failures' | 'cancelled' | 'control-plane-failed' | 'maintenance-window';

/** A whole run; plain JSON. */
export interface RunState {
  version: 1;
  id: string;
  /** The fleet command (`check`, `join`, …). */
  command: string;
  inventory: string;
  createdAt: string;
  updatedAt: string;
  /** Host names in the order they are started. */
  order: string[];
  hosts: Record<string, HostRunState>;
  stopReason?: StopReason;
}

/** The format version {@link loadRunState} reads. */
export const RUN_STATE_VERSION = 1;
/** Directory of the runs under the edgeadm home. */
export const RUNS_DIR = join('fleet', 'runs');
/** `--resume` value that means the newest run. */
export const LAST_RUN = 'last';

/** Options of {@link newRunState}. */
export interface NewRunStateOptions {
  command: string;
  inventory: string;
  hosts: string[];
  now: Date;
  /** Default: a sortable timestamp with a random suffix. */
  id?: string;
}

/** A fresh state with every host pending. */
export function newRunState(options: NewRunStateOptions): RunState {
  const stamp = options.now.toISOString();
  const id = options.id ?? `${stamp.replace(/[-:]/g, '').replace(/\..*$/, '')}-${randomBytes(3).toString('hex')}`;
  return {
    version: RUN_STATE_VERSION,
    id,
    command: options.command,
    inventory: options.inventory,
    createdAt: stamp,
    updatedAt: stamp,
    order: [...options.hosts],
    hosts: Object.fromEntries(options.hosts.map((host) => [host, { status: 'pending', attempts: 0 }])),
  };
}

/**
 * The state to continue a stopped or failed run from: finished hosts stay
 * done (and are not started again); every other host is pending again,
 * keeping its attempt count.
 */
export function resumeRunState(previous: RunState): RunState {
  const hosts: Record<string, HostRunState> = {};
  for (const name of previous.order) {
    const host = previous.hosts[name]!;
    hosts[name] = host.status === 'done' ? host : { status: 'pending', attempts: host.attempts };
  }
  const { stopReason: _stopped, ...rest } = previous;
  return { ...rest, hosts };
}

/** Hosts per status. */
export function countStatuses(state: RunState): Record<HostStatus, number> {
  const counts: Record<HostStatus, number> = { pending: 0, running: 0, done: 0, failed: 0, skipped: 0 };
  for (const name of state.order) counts[state.hosts[name]!.status]++;
  return counts;
}

/** The directory of run `id`. */
export function runDirectory(edgeadmHome: string, id: string): string {
  if (!/^[\w.-]+$/.test(id) || id.startsWith('.')) {
    throw new ValidationError(`invalid fleet run id ${JSON.stringify(id)}`, { code: 'E_FLEET_RUN_ID' });
  }
  return join(edgeadmHome, RUNS_DIR, id);
}

/** Hex digits of the name hash that tells apart hosts whose names are not file-safe. */
const HOST_LOG_HASH_LENGTH = 16;

/**
 * The log file of `host` in a run directory: `hosts/<name>.log`, one file
 * per host, never shared. Inventory host names are validated to a file-safe
 * set (inventory/host-fields.ts), so they map to themselves. Any other name
 * gets its unsafe characters replaced and a hash of the whole name after a
 * `~`, a character no valid name has: two distinct hosts can never share a
 * file (once `a b`, `a_b` and `a/b` all wrote to `a_b.log`).
 */
export function hostLogPath(runDir: string, host: string): string {
  if (isValidHostName(host)) return join(runDir, 'hosts', `${host}.log`);
  const hash = createHash('sha256').update(host, 'utf8').digest('hex').slice(0, HOST_LOG_HASH_LENGTH);
  return join(runDir, 'hosts', `${host.replace(/[^\w.-]/g, '_').slice(0, 64)}~${hash}.log`);
}

/** Writes the state atomically (temporary file, then rename). */
export async function saveRunState(runDir: string, state: RunState): Promise<void> {
  await mkdir(join(runDir, 'hosts'), { recursive: true });
  const file = join(runDir, 'state.json');
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(temporary, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  await rename(temporary, file);
}

/**
 * Appends an entry to a host's log: timestamp, `[host]`, then the text, so
 * every line still says which host it is about when logs are concatenated
 * or grepped together. A text of several lines (a multi-line error) gives
 * each of its lines the same prefix.
 */
export async function appendHostLog(runDir: string, host: string, text: string, now = new Date()): Promise<void> {
  await mkdir(join(runDir, 'hosts'), { recursive: true });
  const prefix = `${now.toISOString()} [${host}] `;
  const lines = text.split(/\r?\n/).map((line) => `${prefix}${line}\n`);
  await appendFile(hostLogPath(runDir, host), lines.join(''), { mode: 0o600 });
}

/** Loads run `id` (or the newest with {@link LAST_RUN}). */
export async function loadRunState(edgeadmHome: string, id: string): Promise<{ state: RunState; runDir: string }> {
  let runId = id;
  if (id === LAST_RUN) {
    const entries = await readdir(join(edgeadmHome, RUNS_DIR)).catch(() => [] as string[]);
    const newest = entries.sort().at(-1);
    if (newest === undefined) throw new ValidationError('there is no fleet run to resume', { code: 'E_FLEET_RESUME' });
    runId = newest;
  }
  const runDir = runDirectory(edgeadmHome, runId);
  let state: RunState;
  try {
    state = JSON.parse(await readFile(join(runDir, 'state.json'), 'utf8')) as RunState;
  } catch (error) {
    throw new ValidationError(`cannot read fleet run ${runId}: ${(error as Error).message}`, {
      code: 'E_FLEET_RESUME',
      cause: error,
    });
  }
  if (state.version !== RUN_STATE_VERSION || !Array.isArray(state.order) || typeof state.hosts !== 'object') {
    throw new ValidationError(`fleet run ${runId} has a state file this edgeadm does not read`, {
      code: 'E_FLEET_RESUME',
    });
  }
  return { state, runDir };
}
