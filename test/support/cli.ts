/**
 * Runs the edgeadm CLI as a subprocess, the way a user does: `bin/run.js`
 * from the built source tree, or the single binary when `EDGEADM_BIN` is set.
 * Every run gets its own EDGEADM_HOME unless one is given.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface CliResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  env?: Record<string, string>;
  input?: string;
  cwd?: string;
  timeoutMs?: number;
  /** Told once the process has started, with a way to signal it (tests that kill edgeadm mid-run). */
  onStarted?: (process: { kill(signal: NodeJS.Signals): void }) => void;
}

/** Runs `edgeadm <args>` and returns its exit code and output; never throws on a non-zero exit. */
export async function runCli(args: string[], options: CliOptions = {}): Promise<CliResult> {
  const binary = process.env.EDGEADM_BIN;
  const [file, fileArgs] = binary ? [binary, args] : [process.execPath, [join(REPO_ROOT, 'bin/run.js'), ...args]];
  const subprocess = execa(file, fileArgs, {
    reject: false,
    env: {
      EDGEADM_HOME: options.env?.EDGEADM_HOME ?? mkdtempSync(join(tmpdir(), 'edgeadm-cli-home-')),
      NO_COLOR: '1',
      ...options.env,
    },
    input: options.input ?? '',
    cwd: options.cwd ?? REPO_ROOT,
    timeout: options.timeoutMs ?? 60_000,
    stripFinalNewline: false,
  });
  options.onStarted?.({ kill: (signal) => subprocess.kill(signal) });
  const result = await subprocess;
  return { exitCode: result.exitCode ?? 1, stdout: String(result.stdout), stderr: String(result.stderr) };
}
