/**
 * The logger of long-running services (`hub serve`, the tunnel agent):
 * every line goes to the run log and, timestamped, to stderr, where a
 * service manager's journal picks it up. Lines pass the redactor first.
 */
import type { Redactor } from './redact.js';
import type { Logger, LogLevel } from './run-log.js';

/** Wraps `logger` so that info and above (debug too, when verbose) also reach stderr. */
export function serviceLogger(options: { logger: Logger; redactor: Redactor; isVerbose: boolean }): Logger {
  const echo = (level: LogLevel, message: string): void => {
    if (level === 'debug' && !options.isVerbose) return;
    process.stderr.write(`${new Date().toISOString()} ${level} ${options.redactor.redact(message)}\n`);
  };
  return {
    debug: (message) => {
      options.logger.debug(message);
      echo('debug', message);
    },
    info: (message) => {
      options.logger.info(message);
      echo('info', message);
    },
    warn: (message) => {
      // The run log echoes warnings itself only in some modes; the service line is the one that counts.
      options.logger.debug(`warning: ${message}`);
      echo('warn', message);
    },
    error: (message) => {
      options.logger.debug(`error: ${message}`);
      echo('error', message);
    },
  };
}

/** Resolves when the process is asked to stop (SIGINT or SIGTERM); the signal aborts then. */
export function stopSignal(): AbortSignal {
  const controller = new AbortController();
  const stop = (): void => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return controller.signal;
}
