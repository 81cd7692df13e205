/**
 * Workflow events: what a running workflow tells the world, as data.
 *
 * The runner (runner.ts) produces one event when a phase starts and one when
 * it ends (finished, skipped or failed), each naming the phase path and the
 * host. Every consumer reads these: the terminal renderer turns them into
 * `[phase] …` lines for people, the fleet follows each host's phase with
 * them, and `--output jsonl` writes them one per line for scripts. Nobody
 * parses the lines back: a phase may print anything without confusing them.
 *
 * The `type` names and fields are a stable schema (`--output jsonl`): add
 * fields, never rename or remove them.
 */
import type { PhaseOutcome } from './phase.js';

/** How a finished phase ended. */
export type PhaseFinishOutcome =
  /** It changed something. */
  | 'done'
  /** Everything was already as it wanted: nothing was changed. */
  | 'already-done'
  /** A check phase (preflight, waiting) found what it looked for. */
  | 'checked'
  /** Under --dry-run: it would have changed something (see the plan). */
  | 'would-do';

/** What every event carries. */
interface WorkflowEventBase {
  /** When it happened, ISO 8601 (UTC). */
  time: string;
  /** The host the workflow runs on, as edgeadm names it (`root@10.0.0.5:22`, a fleet host's name). */
  host: string;
  /** The phase path, `parent/child`. */
  phase: string;
}

/** A phase began. */
export interface PhaseStartedEvent extends WorkflowEventBase {
  type: 'phase-started';
  /** The phase's one-line summary. */
  summary: string;
}

/** A phase ended without error. */
export interface PhaseFinishedEvent extends WorkflowEventBase {
  type: 'phase-finished';
  outcome: PhaseFinishOutcome;
  /**
   * The same end in the words of the `--json` report's `phases[].status`
   * (`changed` or `unchanged`; a skipped phase is a `phase-skipped` event, a
   * failed one `phase-failed`), so a script can read either.
   */
  status: PhaseOutcome;
  /** Wall time of the phase's own run, without its children. */
  durationMs: number;
}

/** A phase (and its children) did not run. */
export interface PhaseSkippedEvent extends WorkflowEventBase {
  type: 'phase-skipped';
  /** Why: `--skip-phases`, or its condition's reason. */
  reason: string;
}

/** A phase failed; the workflow stops. */
export interface PhaseFailedEvent extends WorkflowEventBase {
  type: 'phase-failed';
  durationMs: number;
  /** The error's stable code and its message (`error execution phase <path>: …`); sinks redact it. */
  error: { code: string; message: string };
}

/** Everything a workflow reports while it runs. */
export type WorkflowEvent = PhaseStartedEvent | PhaseFinishedEvent | PhaseSkippedEvent | PhaseFailedEvent;

/** Where events go. */
export type WorkflowEventSink = (event: WorkflowEvent) => void;
