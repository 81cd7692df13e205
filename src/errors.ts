/**
 * Typed errors for every layer of edgeadm.
 *
 * Domain code throws an {@link EdgeadmError} (or a subclass) with a stable
 * `code`, an exit code and hints. Only the CLI layer turns it into output and
 * an exit status, so the same errors serve the CLI, the agents and the tests.
 *
 * Exit codes follow kubeadm: 1 general, 2 preflight, 3 validation; and 4
 * for a long-running agent the hub refuses for good (a unit must not
 * restart it: RestartPreventExitStatus=4); 5 and 6 end a watched rollout
 * that halted or was aborted, 7 one done wherever reachable, 8 a watch
 * whose timeout passed.
 */

/** kubeadm-compatible process exit codes. */
export const ExitCode = {
  /** Anything that is not one of the classes below. */
  General: 1,
  /** A preflight check failed (host not fit for the job). */
  Preflight: 2,
  /** Bad flags, arguments or input files. */
  Validation: 3,
  /** A long-running agent was refused for good (its cluster deleted, its certificate revoked): restarting cannot help. */
  Refused: 4,
  /** `hub rollout status --watch`: the rollout halted (its failure budget is spent). */
  RolloutHalted: 5,
  /** `hub rollout status --watch`: the rollout was aborted. */
  RolloutAborted: 6,
  /**
   * `hub rollout status --watch`: done wherever reachable; every cluster is
   * ready or held except offline ones, which get the revision when they
   * return (the count is printed).
   */
  RolloutPending: 7,
  /** `hub rollout status --watch --timeout`: the timeout passed while the rollout still moved. */
  RolloutWatchTimeout: 8,
  /** `hub certs check`: a certificate has expired or expires within the window. */
  CertificatesExpiring: 9,
} as const;

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

/** What an error carries besides its message. */
export interface EdgeadmErrorOptions {
  /** Stable, documented identifier, for example `E_DISCOVERY_PIN_MISMATCH`. */
  code: string;
  /** Process exit code when this error ends a command. Defaults to 1. */
  exitCode?: ExitCodeValue;
  /** "Try this" lines shown under the message. */
  hints?: string[];
  /** The error that caused this one, kept for the run log. */
  cause?: unknown;
  /** Structured detail for `--json` consumers (never secrets). */
  details?: Record<string, unknown>;
}

/** The one error type the CLI layer knows how to render. */
export class EdgeadmError extends Error {
  readonly code: string;
  readonly exitCode: ExitCodeValue;
  readonly hints: string[];
  readonly details: Record<string, unknown> | undefined;

  constructor(message: string, options: EdgeadmErrorOptions) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'EdgeadmError';
    this.code = options.code;
    this.exitCode = options.exitCode ?? ExitCode.General;
    this.hints = options.hints ?? [];
    this.details = options.details;
  }
}

/** Bad flags, arguments, configuration or input data. Exit code 3. */
export class ValidationError extends EdgeadmError {
  constructor(message: string, options: Omit<EdgeadmErrorOptions, 'exitCode'> = { code: 'E_VALIDATION' }) {
    super(message, { ...options, exitCode: ExitCode.Validation });
    this.name = 'ValidationError';
  }
}

/** A preflight check failed. Exit code 2. */
export class PreflightError extends EdgeadmError {
  constructor(message: string, options: Omit<EdgeadmErrorOptions, 'exitCode'> = { code: 'E_PREFLIGHT' }) {
    super(message, { ...options, exitCode: ExitCode.Preflight });
    this.name = 'PreflightError';
  }
}

/** A command that is registered but not implemented in this version. Exit code 3. */
export class NotBuiltError extends EdgeadmError {
  constructor(commandId: string, version: string) {
    super(`"edgeadm ${commandId}" is not built yet in edgeadm ${version}. Nothing was done.`, {
      code: 'E_NOT_BUILT',
      exitCode: ExitCode.Validation,
      hints: [
        `Run "edgeadm ${commandId} --help" to see what the command will do.`,
        'See "Command reference" in README.md for what works in this version.',
      ],
    });
    this.name = 'NotBuiltError';
  }
}

/** True when `value` is an {@link EdgeadmError}, also across bundle copies. */
export function isEdgeadmError(value: unknown): value is EdgeadmError {
  return (
    value instanceof EdgeadmError ||
    (value instanceof Error &&
      typeof (value as Partial<EdgeadmError>).code === 'string' &&
      typeof (value as Partial<EdgeadmError>).exitCode === 'number' &&
      Array.isArray((value as Partial<EdgeadmError>).hints))
  );
}
