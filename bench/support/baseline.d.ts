/** Types of baseline.js (plain JavaScript, so that bench/startup/run.js can use it too). */
export interface Baseline {
  /** What the results call it: the directory, or the ref and its commit. */
  label: string;
  /** The built checkout. */
  dir: string;
  /** Its `bin/run.js`. */
  runJs: string;
  /** Its single binary (built only when asked for). */
  binary: string;
}

export function prepareBaseline(spec: string, options?: { isBinaryWanted?: boolean }): Baseline;
