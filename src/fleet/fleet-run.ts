/**
 * One fleet run, whatever it does per host: creates (or, with `--resume`,
 * reloads) the run state, runs the rollout (in stages when asked: `fleet up`
 * joins the control planes one at a time before any node), and keeps the run
 * directory up to date: `state.json` after every change and one log per
 * host, both with secrets redacted. Commands give the per-host task; this
 * module owns the bookkeeping around it.
 */
import { ValidationError } from '../errors.js';
import type { FleetHost } from './inventory/types.js';
import { runRollout, type HostTaskContext, type RolloutEvent, type RolloutOptions } from './rollout.js';
import {
  appendHostLog,
  countStatuses,
  loadRunState,
  newRunState,
  resumeRunState,
  runDirectory,
  saveRunState,
  type HostStatus,
  type RunState,
  type StopReason,
} from './run-state.js';

/** What a fleet task gets besides the rollout context. */
export interface FleetTaskContext extends HostTaskContext {
  /** Appends a line to the host's log in the run directory. */
  log(line: string): void;
}

/** The rollout settings a stage or a whole run takes. */
export type FleetRolloutSettings = Omit<RolloutOptions, 'state' | 'task' | 'onEvent' | 'hosts' | 'firstWave'>;

/** One stage of a run: its hosts start once every host of the earlier stages has finished. */
export interface FleetStage {
  /** Which hosts of the run belong to the stage. */
  includes: (host: FleetHost) => boolean;
  rollout: FleetRolloutSettings;
  /**
   * When a host of this stage fails, no host of a later stage starts: each is
   * skipped with this reason and message (resume runs them).
   */
  blocksLaterStages?: { reason: StopReason; message: (failed: string[]) => string };
}

/** Options of {@link runFleet}. */
export interface FleetRunOptions {
  /** The fleet command (`check`, …), recorded in the state. */
  command: string;
  /** The inventory file, recorded in the state. */
  inventoryFile: string;
  /** The hosts of this run (after `--limit`); with `resume`, the inventory's hosts to look names up in. */
  hosts: FleetHost[];
  edgeadmHome: string;
  /** Run id (or `last`) to continue. */
  resume?: string;
  /** Other commands whose runs this one continues (`fleet up` recorded its runs as `join` before it joined control planes). */
  alsoResumes?: string[];
  rollout: FleetRolloutSettings;
  /** Stages in order, each with its own rollout settings; absent: one stage of every host with `rollout`. */
  stages?: FleetStage[];
  /** The number of the run's first wave; `fleet up`'s is 2, its init being wave 1, as `fleet plan` counts. */
  firstWave?: number;
  task: (host: FleetHost, context: FleetTaskContext) => Promise<void>;
  onEvent?: (event: RolloutEvent, state: RunState) => void;
  /** Applied to every host log line (secrets out). */
  redact?: (text: string) => string;
}

/** The finished (or stopped) run. */
export interface FleetRunResult {
  state: RunState;
  runDir: string;
}

/** Runs `task` over the hosts, saving the state as it goes. */
export async function runFleet(options: FleetRunOptions): Promise<FleetRunResult> {
  const byName = new Map(options.hosts.map((host) => [host.name, host]));
  let state: RunState;
  let runDir: string;
  if (options.resume !== undefined) {
    const loaded = await loadRunState(options.edgeadmHome, options.resume);
    if (loaded.state.command !== options.command && !options.alsoResumes?.includes(loaded.state.command)) {
      throw new ValidationError(
        `fleet run ${loaded.state.id} was a fleet ${loaded.state.command} run, not fleet ${options.command}`,
        { code: 'E_FLEET_RESUME' },
      );
    }
    const missing = loaded.state.order.filter((name) => !byName.has(name));
    if (missing.length > 0) {
      throw new ValidationError(
        `fleet run ${loaded.state.id} has hosts the inventory no longer lists: ${missing.join(', ')}`,
        {
          code: 'E_FLEET_RESUME',
        },
      );
    }
    state = resumeRunState(loaded.state);
    runDir = loaded.runDir;
  } else {
    state = newRunState({
      command: options.command,
      inventory: options.inventoryFile,
      hosts: options.hosts.map((host) => host.name),
      now: new Date(),
    });
    runDir = runDirectory(options.edgeadmHome, state.id);
  }
  const redact = options.redact ?? ((text: string) => text);
  // One chain for every write, so that state files land in order and a failed write surfaces at the end.
  let writes: Promise<void> = saveRunState(runDir, redactedState(state, redact));
  const enqueue = (write: () => Promise<void>): void => {
    writes = writes.then(write);
  };
  const hostLog = (host: string, line: string): void => {
    const now = new Date();
    enqueue(() => appendHostLog(runDir, host, redact(line), now));
  };
  let lastWave = (options.firstWave ?? 1) - 1;
  const onEvent = (event: RolloutEvent, current: RunState): void => {
    if (event.type === 'wave') lastWave = event.wave;
    const snapshot = redactedState(current, redact);
    enqueue(() => saveRunState(runDir, snapshot));
    const line = hostLogLine(event);
    if (line !== undefined && 'host' in event) hostLog(event.host, line);
    options.onEvent?.(event, current);
  };
  const stages = options.stages ?? [{ includes: () => true, rollout: options.rollout }];
  try {
    for (const stage of stages) {
      const names = state.order.filter((name) => stage.includes(byName.get(name)!));
      if (names.length === 0) continue;
      await runRollout({
        ...stage.rollout,
        hosts: names,
        firstWave: lastWave + 1,
        state,
        onEvent,
        task: (name, context) => options.task(byName.get(name)!, { ...context, log: (line) => hostLog(name, line) }),
      });
      const failed = names.filter((name) => state.hosts[name]!.status === 'failed');
      if (stage.blocksLaterStages !== undefined && failed.length > 0) {
        blockRest(state, stage.blocksLaterStages.reason, stage.blocksLaterStages.message(failed), onEvent);
        break;
      }
    }
  } finally {
    await writes;
  }
  return { state, runDir };
}

/** Skips every host still pending, for `reason`. */
function blockRest(
  state: RunState,
  reason: StopReason,
  message: string,
  onEvent: (event: RolloutEvent, state: RunState) => void,
): void {
  const skipped = state.order.filter((name) => state.hosts[name]!.status === 'pending');
  if (skipped.length === 0) return;
  for (const name of skipped) {
    state.hosts[name] = { ...state.hosts[name]!, status: 'skipped', error: { code: 'E_FLEET_NOT_STARTED', message } };
  }
  state.stopReason = reason;
  state.updatedAt = new Date().toISOString();
  onEvent({ type: 'stopped', reason, skipped }, state);
}

/** A copy of the state for the state file: error messages pass through `redact` (secrets out). */
export function redactedState(state: RunState, redact: (text: string) => string): RunState {
  const copy = structuredClone(state);
  for (const host of Object.values(copy.hosts)) {
    if (host.error !== undefined) host.error = { ...host.error, message: redact(host.error.message) };
  }
  return copy;
}

function hostLogLine(event: RolloutEvent): string | undefined {
  switch (event.type) {
    case 'start':
      return `start (attempt ${event.attempt})`;
    case 'phase':
      return `phase ${event.phase}`;
    case 'done':
      return 'done';
    case 'retry':
      return `failed (${event.error.code}: ${event.error.message}); retrying in ${event.delayMs} ms`;
    case 'failed':
      return `failed: ${event.error.code}: ${event.error.message}`;
    default:
      return undefined;
  }
}

/** What every fleet report says about a host. */
export interface FleetHostEntry {
  host: string;
  address: string;
  role: FleetHost['role'];
  status: HostStatus;
  attempts: number;
  durationMs?: number;
  /** The phase reached (the failing one when failed). */
  phase?: string;
  error?: { code: string; message: string };
}

/** What every fleet report says about the run. */
export interface FleetRunSummary {
  runId: string;
  runDir: string;
  inventory: string;
  stopReason?: RunState['stopReason'];
  summary: Record<HostStatus, number>;
}

/** The report entries of a run, in start order. */
export function fleetHostEntries(state: RunState, hosts: FleetHost[]): FleetHostEntry[] {
  const byName = new Map(hosts.map((host) => [host.name, host]));
  return state.order.map((name) => {
    const hostState = state.hosts[name]!;
    const fleetHost = byName.get(name)!;
    return {
      host: name,
      address: fleetHost.address,
      role: fleetHost.role,
      status: hostState.status,
      attempts: hostState.attempts,
      ...(hostState.durationMs === undefined ? {} : { durationMs: hostState.durationMs }),
      ...(hostState.phase === undefined ? {} : { phase: hostState.phase }),
      ...(hostState.error === undefined ? {} : { error: hostState.error }),
    };
  });
}

/** The run-level part of a report. */
export function fleetRunSummary(run: FleetRunResult): FleetRunSummary {
  return {
    runId: run.state.id,
    runDir: run.runDir,
    inventory: run.state.inventory,
    ...(run.state.stopReason === undefined ? {} : { stopReason: run.state.stopReason }),
    summary: countStatuses(run.state),
  };
}
