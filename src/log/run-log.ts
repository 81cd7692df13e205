/**
 * The run log: one file per command run, under `$EDGEADM_HOME/logs` by default.
 *
 * Every line passes through a {@link Redactor} first, so tokens, keys and
 * passwords never reach the disk. Writes are synchronous: a log must survive
 * the crash it is meant to explain, and a CLI writes few lines.
 */
import { closeSync, mkdirSync, openSync, readdirSync, rmSync, writeSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Redactor } from './redact.js';

/** How many run logs are kept in the default log directory; older ones are removed. */
export const MAX_KEPT_RUN_LOGS = 200;

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** What domain code logs through. */
export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** A logger that drops everything: for library use and tests. */
export const silentLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
};

/** The edgeadm home directory: `$EDGEADM_HOME`, or `~/.edgeadm`. */
export function edgeadmHome(env: NodeJS.ProcessEnv = process.env): string {
  return env.EDGEADM_HOME && env.EDGEADM_HOME.length > 0 ? env.EDGEADM_HOME : join(homedir(), '.edgeadm');
}

export interface RunLogOptions {
  /** Command id, for the file name and the first line (`init`, `token create`). */
  commandId: string;
  /** Write here instead of the default directory. */
  file?: string | undefined;
  /** Environment to read `EDGEADM_HOME` from. */
  env?: NodeJS.ProcessEnv;
  /** Shared redactor, so that secrets registered anywhere are hidden here too. */
  redactor: Redactor;
  /** Receives every line at or above `echoLevel` (for `--verbose` on stderr). */
  echo?: (line: string, level: LogLevel) => void;
  echoLevel?: LogLevel;
  /** Clock, for tests. */
  now?: () => Date;
}

const LEVEL_ORDER: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

/** A redacting, append-only log file for one command run. */
export class RunLog implements Logger {
  readonly path: string;
  readonly #fd: number;
  readonly #options: RunLogOptions;
  #closed = false;

  private constructor(path: string, fd: number, options: RunLogOptions) {
    this.path = path;
    this.#fd = fd;
    this.#options = options;
  }

  /** Opens (creating with mode 0600) the log for one run. */
  static open(options: RunLogOptions): RunLog {
    const now = options.now?.() ?? new Date();
    let path = options.file;
    if (path === undefined) {
      const dir = join(edgeadmHome(options.env), 'logs');
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      pruneOldLogs(dir);
      const stamp = now.toISOString().replace(/[:.]/g, '-');
      const slug = options.commandId.replace(/[^a-z0-9-]+/gi, '-') || 'edgeadm';
      path = join(dir, `${stamp}-${slug}-${process.pid}.log`);
    } else {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    }
    const fd = openSync(path, 'a', 0o600);
    return new RunLog(path, fd, options);
  }

  debug(message: string): void {
    this.write('debug', message);
  }
  info(message: string): void {
    this.write('info', message);
  }
  warn(message: string): void {
    this.write('warn', message);
  }
  error(message: string): void {
    this.write('error', message);
  }

  /** Writes one redacted line. Writing after close is a no-op, never a crash. */
  write(level: LogLevel, message: string): void {
    const safe = this.#options.redactor.redact(message);
    const stamp = (this.#options.now?.() ?? new Date()).toISOString();
    const line = `${stamp} ${level.toUpperCase().padEnd(5)} ${safe}\n`;
    if (!this.#closed) writeSync(this.#fd, line);
    const echoLevel = this.#options.echoLevel ?? 'warn';
    if (this.#options.echo && LEVEL_ORDER[level] >= LEVEL_ORDER[echoLevel]) this.#options.echo(safe, level);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    closeSync(this.#fd);
  }
}

function pruneOldLogs(dir: string): void {
  const logs = readdirSync(dir)
    .filter((name) => name.endsWith('.log'))
    .sort();
  for (const name of logs.slice(0, Math.max(0, logs.length - MAX_KEPT_RUN_LOGS + 1))) {
    rmSync(join(dir, name), { force: true });
  }
}
