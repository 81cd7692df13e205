/**
 * The part of every node workflow's request that says how to run it: dry
 * run or not, which preflight failures only warn, which phases to skip, and
 * the one phase to run alone (`edgeadm init phase <name>`). Phase names are
 * checked against the workflow's tree here, before any host is reached.
 */
import type { Phase } from '../workflow/phase.js';
import { validatePhasePaths } from '../workflow/runner.js';

/** How a workflow runs, parsed. */
export interface RunRequest {
  isDryRun: boolean;
  /** Preflight check ids whose failure only warns (`all` for every one). */
  ignorePreflightErrors: string[];
  /** Phase paths of the tree, skipped with their children. */
  skipPhases: string[];
  /** A phase path of the tree to run alone, with its children. */
  only?: string;
}

/** The run flags as oclif gives them. */
export interface RunFlagValues {
  'dry-run'?: boolean | undefined;
  'ignore-preflight-errors'?: string[] | undefined;
  'skip-phases'?: string[] | undefined;
}

/** Splits repeatable, comma-separated flag values (`--skip-phases a,b --skip-phases c`). */
export function listFlag(values: readonly string[] | undefined): string[] | undefined {
  if (values === undefined) return undefined;
  return values
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '');
}

/**
 * Parses the run flags against a phase tree.
 *
 * @throws {ValidationError} `E_UNKNOWN_PHASE` for a phase name the tree does not have.
 */
export function parseRunRequest<C>(phases: Phase<C>[], flags: RunFlagValues, only?: string): RunRequest {
  const skipPhases = listFlag(flags['skip-phases']) ?? [];
  validatePhasePaths(phases, skipPhases, '--skip-phases');
  if (only !== undefined) validatePhasePaths(phases, [only], 'phase');
  return {
    isDryRun: flags['dry-run'] === true,
    ignorePreflightErrors: listFlag(flags['ignore-preflight-errors']) ?? [],
    skipPhases,
    ...(only === undefined ? {} : { only }),
  };
}
