/**
 * What every fleet command does around its run: Ctrl-C stops starting new
 * hosts (running ones finish their current phase and the state is saved),
 * and progress is a listr2 display on a TTY or plain timestamped lines on
 * stderr otherwise (and always with --json, whose stdout is the report).
 */
import { plainProgress, ttyProgress, type FleetProgress } from '../fleet/fleet-progress.js';

/** The parts of a command the fleet run needs. */
export interface FleetRunCommand {
  jsonEnabled(): boolean;
  logToStderr(message: string): void;
}

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
  const progress =
    process.stdout.isTTY && !command.jsonEnabled()
      ? ttyProgress(options.title)
      : plainProgress((line) => command.logToStderr(line));
  process.once('SIGINT', onInterrupt);
  try {
    return options.isWrapped === false
      ? await run(controller.signal, progress)
      : await progress.run(() => run(controller.signal, progress));
  } finally {
    process.removeListener('SIGINT', onInterrupt);
  }
}
