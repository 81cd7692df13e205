/**
 * `edgeadm reset`'s one request: built once from the flags, checked with no
 * I/O (the confirmation, the distribution, the phase names), and then
 * passed down as it is, so that a mistake fails before any host is reached.
 */
import { ValidationError } from '../errors.js';
import { distributionFor } from './distributions/index.js';
import { resetPhases } from './reset.js';
import { validatePhasePaths } from '../workflow/runner.js';
import { listFlag } from './run-request.js';

/** Everything a reset does, parsed. */
export interface ResetRequest {
  isDryRun: boolean;
  /** `--force`: go ahead without a terminal to confirm on, and without an install state. */
  isForced: boolean;
  /** A distribution edgeadm knows; otherwise the install state's. */
  distribution?: string;
  /** Phase paths of the reset tree. */
  skipPhases: string[];
}

/** reset's flags as oclif gives them. */
export interface ResetFlagValues {
  force?: boolean | undefined;
  'dry-run'?: boolean | undefined;
  distribution?: string | undefined;
  'skip-phases'?: string[] | undefined;
}

/**
 * Builds reset's request.
 *
 * @throws {ValidationError} (exit 3) `E_RESET_NOT_CONFIRMED`,
 * `E_DISTRIBUTION_UNKNOWN`, `E_UNKNOWN_PHASE`.
 */
export function parseResetRequest(flags: ResetFlagValues): ResetRequest {
  const isForced = flags.force === true;
  const isDryRun = flags['dry-run'] === true;
  if (!isForced && !isDryRun) {
    throw new ValidationError(
      'reset removes the cluster from the host: pass --force to go ahead, or --dry-run to see what would go',
      { code: 'E_RESET_NOT_CONFIRMED' },
    );
  }
  if (flags.distribution !== undefined) distributionFor(flags.distribution);
  const skipPhases = listFlag(flags['skip-phases']) ?? [];
  validatePhasePaths(resetPhases(), skipPhases, '--skip-phases');
  return {
    isDryRun,
    isForced,
    ...(flags.distribution === undefined ? {} : { distribution: flags.distribution }),
    skipPhases,
  };
}
