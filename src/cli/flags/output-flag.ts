/**
 * `--output jsonl`: progress for scripts. The long-running commands (init,
 * join, reset, fleet up/join/reset/check) write one JSON event per line on
 * stdout as it happens — the workflow events (workflow/events.ts) with their
 * host, then one `{"type":"result",…}` line — redacted, and nothing else on
 * stdout: the text meant for people goes to stderr. `--json` (one final
 * document) and `--output jsonl` exclude each other.
 */
import { Flags } from '@oclif/core';

/** The values of `--output`. */
export const OUTPUT_FORMATS = ['text', 'jsonl'] as const;

/** What `--output` selects. */
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** The `--output` flag, for the commands that report progress as they run. */
export const outputFlags = {
  output: Flags.string({
    summary: 'text: progress for people on stderr. jsonl: one JSON event per line on stdout as it happens.',
    description:
      'With jsonl, stdout carries only events ({"type":"phase-started",…}, "phase-finished", "phase-skipped", ' +
      '"phase-failed", each with "time", "host" and "phase") and a last {"type":"result",…} line; text for people ' +
      'goes to stderr. Not with --json.',
    options: [...OUTPUT_FORMATS],
    default: 'text',
    helpGroup: 'GLOBAL',
  }),
};
