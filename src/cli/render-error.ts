/**
 * The one place that turns an error into what the user sees: a message, a
 * stable code and hints, for people (stderr) or for scripts (one JSON
 * document on stdout).
 */
import { EdgeadmError, ExitCode, isEdgeadmError } from '../errors.js';
import type { Redactor } from '../log/redact.js';
import type { ChalkInstance } from 'chalk';

/** The `--json` document of a failed command. */
export interface ErrorDocument {
  error: {
    code: string;
    message: string;
    exitCode: number;
    hints: string[];
    details?: Record<string, unknown>;
    logFile?: string;
  };
}

interface OclifLikeError extends Error {
  oclif?: { exit?: number };
  parse?: unknown;
  code?: string;
}

/**
 * Maps anything thrown to an {@link EdgeadmError}. Usage errors from the flag
 * parser become validation errors (exit 3, as kubeadm); anything unknown is
 * an internal error (exit 1) whose stack goes to the run log only.
 */
export function toEdgeadmError(error: unknown, commandId?: string): EdgeadmError {
  if (isEdgeadmError(error)) return error;
  const err = error instanceof Error ? (error as OclifLikeError) : new Error(String(error));
  if ('parse' in err || (err as OclifLikeError).code === 'ERR_PARSE') return usageError(err, commandId);
  if (/command .* not found/i.test(err.message)) {
    return new EdgeadmError(`unknown command "${displayId(/command (.*) not found/i.exec(err.message)?.[1] ?? '')}"`, {
      code: 'E_UNKNOWN_COMMAND',
      exitCode: ExitCode.Validation,
      hints: ['Run "edgeadm --help" to list the commands.'],
      cause: err,
    });
  }
  return new EdgeadmError(stripAnsi(err.message) || 'unexpected error', {
    code: 'E_INTERNAL',
    exitCode: ExitCode.General,
    hints: ['This is unexpected. The run log has the full stack trace; please include it in a bug report.'],
    cause: err,
  });
}

/**
 * An error of the flag parser as a usage error (exit 3): every problem it
 * found in one line (oclif puts them under "The following errors occurred:",
 * which alone says nothing), flags named as they are typed, and the help
 * command as it runs. An {@link EdgeadmError} from a flag's own parser is
 * kept as it is.
 */
export function usageError(error: unknown, commandId?: string): EdgeadmError {
  if (isEdgeadmError(error)) return error;
  const err = error instanceof Error ? error : new Error(String(error));
  const problems = stripAnsi(err.message)
    .split('\n')
    .map((line) => line.trim())
    .filter(
      (line) => line !== '' && !/^The following errors? occurred:?$/i.test(line) && !/^See more help with/i.test(line),
    )
    .map((line) => line.replace(/^Missing required flag (?!-)(\S+)/i, 'missing required flag --$1'));
  const helpHint = commandId
    ? `Run "edgeadm ${displayId(commandId)} --help" for usage.`
    : 'Run "edgeadm --help" for usage.';
  return new EdgeadmError(problems.length > 0 ? problems.join('; ') : 'invalid command line', {
    code: 'E_USAGE',
    exitCode: ExitCode.Validation,
    hints: [helpHint],
    cause: err,
  });
}

/** A command id as it is typed (`hub serve`), not as oclif keeps it (`hub:serve`). */
export function displayId(commandId: string): string {
  return commandId.replaceAll(':', ' ');
}

/** The JSON document for a failure, redacted. */
export function errorDocument(error: EdgeadmError, redactor: Redactor, logFile?: string): ErrorDocument {
  const doc: ErrorDocument = {
    error: {
      code: error.code,
      message: redactor.redact(error.message),
      exitCode: error.exitCode,
      hints: error.hints.map((hint) => redactor.redact(hint)),
    },
  };
  if (error.details) doc.error.details = redactor.redactValue(error.details);
  if (logFile) doc.error.logFile = logFile;
  return doc;
}

/** The human rendering for a failure, redacted: message, code, hints, log path. */
export function renderErrorText(
  error: EdgeadmError,
  redactor: Redactor,
  style: ChalkInstance,
  logFile?: string,
): string {
  const lines = [`${style.red.bold('error:')} ${redactor.redact(error.message)}`];
  lines.push(style.dim(`  code: ${error.code}`));
  for (const hint of error.hints) lines.push(`  ${style.cyan('hint:')} ${redactor.redact(hint)}`);
  if (logFile) lines.push(style.dim(`  log:  ${logFile}`));
  return lines.join('\n');
}

function stripAnsi(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\u001b\[[0-9;]*m/g, '');
}
