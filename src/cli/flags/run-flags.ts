/**
 * Flags of how a workflow runs, whatever the workflow: `--dry-run` (each
 * command says what it prints instead), the phases to skip, and the
 * preflight checks that only warn.
 */
import { Flags } from '@oclif/core';

/** `--dry-run`: change nothing; `summary` says what the command prints instead. */
export function dryRunFlag(summary: string) {
  return Flags.boolean({ summary });
}

/** `--skip-phases`. */
export const skipPhasesFlag = Flags.string({
  summary: 'Phases to skip, comma-separated (the phase list is in the --help of init, join and reset).',
  multiple: true,
});

/** `--ignore-preflight-errors`. */
export const ignorePreflightErrorsFlag = Flags.string({
  summary: 'Preflight check ids whose failure is only a warning (comma-separated; "all" for every one).',
  multiple: true,
});
