/**
 * The failure message of a check on a run's exit code. Both streams, because
 * edgeadm prints a `--json` error document on stdout, and a failure message
 * of stderr alone hides the error that made the run fail.
 */

/** What a finished run printed: a CLI run, a host's command, an execa result. */
export interface PrintedOutput {
  stdout?: unknown;
  stderr?: unknown;
}

/** Keeps a failure message readable when a run printed a lot: the end is where its error is. */
const STREAM_TAIL_CHARS = 8000;

function tail(stream: unknown): string {
  const text = stream === undefined ? '' : String(stream);
  return text.length > STREAM_TAIL_CHARS ? `…${text.slice(-STREAM_TAIL_CHARS)}` : text;
}

/**
 * `expect(run.exitCode, printedBy(run)).toBe(0)`: on failure, shows what the
 * run printed on stdout and on stderr, each labelled.
 */
export function printedBy(run: PrintedOutput): string {
  return `stdout:\n${tail(run.stdout)}\nstderr:\n${tail(run.stderr)}`;
}
