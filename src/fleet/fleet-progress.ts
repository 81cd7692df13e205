/**
 * Live progress of a fleet run. On a TTY: a listr2 task whose title carries
 * the counts (done, failed, running, pending) and whose output is one line
 * per running host with its phase. Elsewhere: one timestamped line per host
 * event on stderr, so that logs of a night's rollout read top to bottom.
 */
import type { RolloutEvent } from './rollout.js';
import { countStatuses, type RunState, type StopReason } from './run-state.js';
import { counted } from '../log/counted.js';

/** How a progress line names why the run stopped. */
const STOP_WORDS: Record<StopReason, string> = {
  cancelled: 'cancelled',
  'max-failures': '--max-failures exceeded',
  'control-plane-failed': 'a control plane did not join',
  'maintenance-window': 'the maintenance window closed',
};

/** Most running hosts listed on a TTY; the rest are counted. */
export const MAX_PROGRESS_HOST_LINES = 40;

/** A progress display around one run. */
export interface FleetProgress {
  onEvent(event: RolloutEvent, state: RunState): void;
  run<T>(work: () => Promise<T>): Promise<T>;
}

/** The counts as shown in progress lines. */
export function progressTally(state: RunState): string {
  const counts = countStatuses(state);
  return `[${counts.done} done, ${counts.failed} failed, ${counts.running} running, ${counts.pending} pending]`;
}

/** The plain line for an event, or undefined for events not worth a line. */
export function progressLine(event: RolloutEvent, state: RunState, now: Date): string | undefined {
  const tally = progressTally(state);
  const stamp = now.toISOString();
  switch (event.type) {
    case 'wave':
      return `${stamp} wave ${event.wave}: ${counted(event.hosts.length, 'host')} ${tally}`;
    case 'start':
      return `${stamp} ${event.host}: started${event.attempt > 1 ? ` (attempt ${event.attempt})` : ''} ${tally}`;
    case 'done':
      return `${stamp} ${event.host}: done ${tally}`;
    case 'retry':
      return `${stamp} ${event.host}: ${event.error.code}: ${event.error.message}; retrying in ${Math.round(event.delayMs / 1000)}s`;
    case 'failed':
      return `${stamp} ${event.host}: FAILED: ${event.error.code}: ${event.error.message} ${tally}`;
    case 'stopped':
      return `${stamp} stopped (${STOP_WORDS[event.reason]}): ${counted(event.skipped.length, 'host')} not started`;
    default:
      return undefined;
  }
}

/** Timestamped lines through `write`. */
export function plainProgress(write: (line: string) => void): FleetProgress {
  return {
    onEvent: (event, state) => {
      const line = progressLine(event, state, new Date());
      if (line !== undefined) write(line);
    },
    run: (work) => work(),
  };
}

/** One line per running host with its phase (bounded), for the TTY display. */
export function runningHostLines(state: RunState): string[] {
  const running = state.order.filter((name) => state.hosts[name]!.status === 'running');
  const lines = running
    .slice(0, MAX_PROGRESS_HOST_LINES)
    .map((name) => `${name}: ${state.hosts[name]!.phase ?? 'starting'}`);
  if (running.length > MAX_PROGRESS_HOST_LINES) lines.push(`… and ${running.length - MAX_PROGRESS_HOST_LINES} more`);
  return lines;
}

/** A listr2 display titled `title`. */
export function ttyProgress(title: string): FleetProgress {
  let update: ((state: RunState) => void) | undefined;
  return {
    onEvent: (_event, state) => update?.(state),
    async run<T>(work: () => Promise<T>): Promise<T> {
      // Loaded here: the display library is only needed on a terminal.
      const { Listr } = await import('listr2');
      let result: T | undefined;
      const list = new Listr(
        [
          {
            title,
            task: async (_context, task): Promise<void> => {
              update = (state) => {
                task.title = `${title} ${progressTally(state)}`;
                task.output = runningHostLines(state).join('\n');
              };
              result = await work();
              update = undefined;
            },
            rendererOptions: { outputBar: Infinity },
          },
        ],
        // Ctrl-C belongs to the command: it stops new hosts and saves the state.
        { registerSignalListeners: false, exitOnError: true },
      );
      await list.run();
      return result as T;
    },
  };
}
