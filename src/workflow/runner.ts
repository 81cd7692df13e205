/**
 * The workflow runner: runs a phase tree in order, honours `--skip-phases`
 * and single-phase runs, times each phase, and wraps every failure with the
 * phase path the way kubeadm does (`error execution phase preflight: …`), so
 * that operators can search for it and re-run just that phase.
 */
import { EdgeadmError, ValidationError, isEdgeadmError } from '../errors.js';
import type { PhaseFinishOutcome, WorkflowEvent, WorkflowEventSink } from './events.js';
import { flattenPhases, type FlatPhase, type Phase, type PhaseOutcome } from './phase.js';

/** How one phase ended. */
export type PhaseStatus = PhaseOutcome | 'skipped' | 'failed';

/** One line of the run's record, for `--verbose` and `--json`. */
export interface PhaseResult {
  path: string;
  status: PhaseStatus;
  /** Wall time of the phase's own run, without its children. */
  durationMs: number;
  /** Why it was skipped: `--skip-phases`, its condition, or a single-phase run. */
  reason?: string;
  /** The phase only checks (see {@link Phase.isCheck}). */
  isCheck?: boolean;
}

export interface RunOptions {
  /** Phase paths to skip, with their children (`--skip-phases`). `all` is not accepted. */
  skipPhases?: string[];
  /**
   * Run only this phase and its children (`edgeadm init phase <path>`); the
   * phases around it are not run and are not reported.
   */
  only?: string;
  /** Told every phase's start and end as it happens (see events.ts). */
  onEvent?: WorkflowEventSink;
  /** The host the events name. */
  host?: string;
  /** Under --dry-run a phase that changes something says it `would-do` it. */
  isDryRun?: boolean;
  /** Clock for durations, for tests. */
  now?: () => number;
  /** Clock for the events' times, for tests. */
  wallClock?: () => Date;
}

/** The record of a finished run. */
export interface RunReport {
  phases: PhaseResult[];
  /** True when at least one phase changed something. */
  changed: boolean;
}

/** Checks phase paths given by the user against the tree, with a helpful error. */
export function validatePhasePaths<C>(phases: Phase<C>[], paths: string[], flag: string): void {
  const known = new Set(flattenPhases(phases).map((p) => p.path));
  const unknown = paths.filter((p) => !known.has(p));
  if (unknown.length > 0) {
    throw new ValidationError(`${flag}: unknown phase ${unknown.map((p) => `"${p}"`).join(', ')}`, {
      code: 'E_UNKNOWN_PHASE',
      hints: [`Known phases: ${[...known].join(', ')}`],
    });
  }
}

/** Runs a phase tree. Throws the first failure, wrapped with its phase path. */
export async function runPhases<C>(phases: Phase<C>[], ctx: C, options: RunOptions = {}): Promise<RunReport> {
  const skip = options.skipPhases ?? [];
  validatePhasePaths(phases, skip, '--skip-phases');
  if (options.only !== undefined) validatePhasePaths(phases, [options.only], 'phase');
  const now = options.now ?? (() => performance.now());
  const wallClock = options.wallClock ?? (() => new Date());
  const host = options.host ?? 'local';
  const emit: Emit = (event) => options.onEvent?.({ ...event, time: wallClock().toISOString(), host });
  const results: PhaseResult[] = [];
  const inScope = (path: string): boolean =>
    options.only === undefined || path === options.only || path.startsWith(`${options.only}/`);
  const isUnder = (path: string, parent: string): boolean => path === parent || path.startsWith(`${parent}/`);

  const skippedParents: string[] = [];
  for (const flat of flattenPhases(phases)) {
    const { path, phase } = flat;
    // A single-phase run asked for explicitly runs that phase whatever its parents' conditions.
    if (!inScope(path)) continue;
    if (skippedParents.some((parent) => isUnder(path, parent))) continue;
    const record = (result: PhaseResult): void => {
      results.push(result);
    };
    const skipped = (reason: string): void => {
      skippedParents.push(path);
      record({ path, status: 'skipped', durationMs: 0, reason });
      emit({ type: 'phase-skipped', phase: path, reason });
    };
    if (skip.some((s) => isUnder(path, s))) {
      skipped('skipped by --skip-phases');
      continue;
    }
    // The phase a user asks for by name runs whatever its own condition says.
    if (phase.runIf && path !== options.only && !phase.runIf(ctx)) {
      skipped(phase.skipReason?.(ctx) ?? 'not needed for this configuration');
      continue;
    }
    if (!phase.run) continue;
    await runOne(flat, ctx, { now, emit, record, isDryRun: options.isDryRun === true });
  }
  return { phases: results, changed: results.some((r) => r.status === 'changed') };
}

/** An event as the runner builds it; `emit` adds the time and the host. */
type Emit = (event: DistributiveOmit<WorkflowEvent, 'time' | 'host'>) => void;
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

interface RunOneTools {
  now: () => number;
  emit: Emit;
  record: (result: PhaseResult) => void;
  isDryRun: boolean;
}

/** How a phase's outcome reads as an event. */
function finishOutcome(outcome: PhaseOutcome, isCheck: boolean, isDryRun: boolean): PhaseFinishOutcome {
  if (outcome === 'unchanged') return isCheck ? 'checked' : 'already-done';
  return isDryRun ? 'would-do' : 'done';
}

async function runOne<C>({ path, phase }: FlatPhase<C>, ctx: C, tools: RunOneTools): Promise<void> {
  const { now, emit, record } = tools;
  emit({ type: 'phase-started', phase: path, summary: phase.summary });
  const started = now();
  let outcome: PhaseOutcome;
  try {
    outcome = (await phase.run?.(ctx)) ?? 'changed';
  } catch (error) {
    const durationMs = Math.round(now() - started);
    record({ path, status: 'failed', durationMs });
    const wrapped = wrapPhaseError(path, error, { isDryRun: tools.isDryRun });
    emit({ type: 'phase-failed', phase: path, durationMs, error: { code: wrapped.code, message: wrapped.message } });
    throw wrapped;
  }
  const durationMs = Math.round(now() - started);
  record({ path, status: outcome, durationMs, ...(phase.isCheck ? { isCheck: true } : {}) });
  emit({
    type: 'phase-finished',
    phase: path,
    outcome: finishOutcome(outcome, phase.isCheck === true, tools.isDryRun),
    status: outcome,
    durationMs,
  });
}

/**
 * `error execution phase <path>: <message>`, keeping the cause's code, exit
 * code and hints, and saying how to go on: after a real run, finished phases
 * are skipped on a re-run; a dry run changed nothing, so there is nothing to
 * resume.
 */
export function wrapPhaseError(path: string, error: unknown, options: { isDryRun?: boolean } = {}): EdgeadmError {
  const prefix = `error execution phase ${path}: `;
  if (isEdgeadmError(error)) {
    if (error.message.startsWith('error execution phase ')) return error;
    return new EdgeadmError(prefix + error.message, {
      code: error.code,
      exitCode: error.exitCode,
      hints: [
        ...error.hints,
        options.isDryRun === true
          ? 'After fixing it, run the dry run again: it changed nothing on the host.'
          : 'After fixing it, re-run the whole command: finished phases are skipped as already done.',
      ],
      cause: error,
      details: { ...error.details, phase: path },
    });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new EdgeadmError(prefix + message, { code: 'E_PHASE_FAILED', cause: error, details: { phase: path } });
}
