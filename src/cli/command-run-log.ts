/**
 * The run log of one command, opened the same way by BaseCommand and by the
 * lean agent start path (src/cli/agent-fast-path.ts), which does not load
 * oclif: `--log-file` or $EDGEADM_HOME/logs, warnings (and with `--verbose`
 * everything) echoed on stderr, errors left to the one place that renders them.
 */
import { EdgeadmError } from '../errors.js';
import type { Redactor } from '../log/redact.js';
import { RunLog } from '../log/run-log.js';
import { styleFor } from './style.js';

/** How a command's run log is opened. */
export interface CommandRunLogOptions {
  commandId: string;
  /** `--log-file`, if given. */
  file: string | undefined;
  /** `--verbose`: echo debug lines on stderr too. */
  verbose: boolean;
  redactor: Redactor;
}

/** Opens the run log, or fails with E_LOG_FILE (exit 3) saying what to do. */
export function openCommandRunLog(options: CommandRunLogOptions): RunLog {
  const stderrStyle = styleFor(process.stderr);
  try {
    return RunLog.open({
      commandId: options.commandId,
      file: options.file,
      redactor: options.redactor,
      echoLevel: options.verbose ? 'debug' : 'warn',
      echo: (line, level) => {
        if (level === 'error') return; // errors are rendered once, by the caller
        const tag = level === 'warn' ? stderrStyle.yellow('warning:') : stderrStyle.dim(`[${level}]`);
        process.stderr.write(`${tag} ${line}\n`);
      },
    });
  } catch (error) {
    throw new EdgeadmError(`cannot write the run log: ${(error as Error).message}`, {
      code: 'E_LOG_FILE',
      exitCode: 3,
      hints: ['Pass --log-file with a writable path, or set EDGEADM_HOME to a writable directory.'],
      cause: error,
    });
  }
}
