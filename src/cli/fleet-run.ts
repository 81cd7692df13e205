/**
 * What every fleet command does around its run: Ctrl-C stops starting new
 * hosts (running ones finish their current phase and the state is saved),
 * and progress is a listr2 display on a TTY or plain timestamped lines on
 * stderr otherwise (and always with --json, whose stdout is the report, and
 * with --output jsonl, whose stdout carries the events: each host's start,
 * retry, end and failure as `host-…` events, beside its workflow's phases).
 */
import { plainProgress, ttyProgress, type FleetProgress } from '../fleet/fleet-progress.js';
import type { RolloutEvent } from '../fleet/rollout.js';
import type { WorkflowEvent } from '../workflow/events.js';

/** The parts of a command the fleet run needs. */
export interface FleetRunCommand {
  /** `--json` or `--output jsonl`: stdout is not for a progress display. */
  isStdoutForPrograms(): boolean;
  logToStderr(message: string): void;
  /** Writes an `--output jsonl` event (nothing without it). */
  emitEvent(event: { type: string } & Record<string, unknown>): void;
}

/** `--output jsonl` names of the fleet's own events (a host's phases come from its workflow). */
const FLEET_EVENT_TYPES: Record<Exclude<RolloutEvent['type'], 'phase'>, string> = {
  wave: 'fleet-wave',
  start: 'host-started',
  done: 'host-done',
  retry: 'host-retry',
  failed: 'host-failed',
  stopped: 'fleet-stopped',
};

export interface FleetRunOptions {
  /** The progress display's title on a TTY. */
  title: string;
  /**
   * Run inside the progress display (the default). `fleet up` runs outside it,
   * because its control-plane phase prints lines of its own first.
   */
  isWrapped?: boolean;
}

/** Runs `run` with a Ctrl-C handler and a progress display, and removes the handler after. */
export async function runFleetWithProgress<T>(
  command: FleetRunCommand,
  options: FleetRunOptions,
  run: (signal: AbortSignal, progress: FleetProgress) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const onInterrupt = (): void => {
    command.logToStderr('interrupted: no new host starts; waiting for the running ones (the state is saved)');
    controller.abort();
  };
  const display =
    process.stdout.isTTY && !command.isStdoutForPrograms()
      ? ttyProgress(options.title)
      : plainProgress((line) => command.logToStderr(line));
  const progress: FleetProgress = {
    onEvent: (event, state) => {
      display.onEvent(event, state);
      if (event.type !== 'phase') command.emitEvent({ ...event, type: FLEET_EVENT_TYPES[event.type] });
    },
    run: (work) => display.run(work),
  };
  process.once('SIGINT', onInterrupt);
  try {
    return options.isWrapped === false
      ? await run(controller.signal, progress)
      : await progress.run(() => run(controller.signal, progress));
  } finally {
    process.removeListener('SIGINT', onInterrupt);
  }
}

/**
 * The `host-…` events of the control plane `fleet up` inits before its
 * rollout (which reports the other hosts): `host-started` before its first
 * phase event, `host-failed` when a phase fails, and `host-done` when its
 * last phase (`lastPhase`) ends, so every host of the run has the same
 * events in `--output jsonl`.
 */
export function initHostEvents(
  command: Pick<FleetRunCommand, 'emitEvent'>,
  options: { host: string; lastPhase: string },
): (event: WorkflowEvent) => void {
  const { host, lastPhase } = options;
  let isStarted = false;
  return (event) => {
    if (event.host === host && !isStarted) {
      isStarted = true;
      // Wave 1, as fleet plan numbers it; the rollout's waves follow from 2.
      command.emitEvent({ type: 'fleet-wave', wave: 1, hosts: [host] });
      command.emitEvent({ type: 'host-started', host, attempt: 1 });
    }
    command.emitEvent({ ...event });
    if (event.host !== host) return;
    if (event.type === 'phase-failed') command.emitEvent({ type: 'host-failed', host, attempt: 1, error: event.error });
    else if (event.type !== 'phase-started' && event.phase === lastPhase) {
      command.emitEvent({ type: 'host-done', host, attempt: 1 });
    }
  };
}
