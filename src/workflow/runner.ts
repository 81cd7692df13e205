/**
 * The workflow runner: runs a phase tree in order, honours `--skip-phases`
 * and single-phase runs, times each phase, and wraps every failure with the
 * phase path the way kubeadm does (`error execution phase preflight: …`), so
 * that operators can search for it and re-run just that phase.
 */
import { EdgeadmError, ValidationError, isEdgeadmError } from '../errors.js';
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

/** What the runner tells its listener (progress output, the run log). */
export interface RunnerListener {
  onPhaseStart?(path: string, summary: string): void;
  onPhaseEnd?(result: PhaseResult): void;
}

export interface RunOptions {
  /** Phase paths to skip, with their children (`--skip-phases`). `all` is not accepted. */
  skipPhases?: string[];
  /**
   * Run only this phase and its children (`edgeadm init phase <path>`); the
   * phases around it are not run and are not reported.
   */
  only?: string;
  listener?: RunnerListener;
  /** Clock, for tests. */
  now?: () => number;
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
      options.listener?.onPhaseEnd?.(result);
    };
    if (skip.some((s) => isUnder(path, s))) {
      skippedParents.push(path);
      record({ path, status: 'skipped', durationMs: 0, reason: 'skipped by --skip-phases' });
      continue;
    }
    // The phase a user asks for by name runs whatever its own condition says.
    if (phase.runIf && path !== options.only && !phase.runIf(ctx)) {
      skippedParents.push(path);
      const reason = phase.skipReason?.(ctx) ?? 'not needed for this configuration';
      record({ path, status: 'skipped', durationMs: 0, reason });
      continue;
    }
    if (!phase.run) continue;
    await runOne(flat, ctx, now, options.listener, record);
  }
  return { phases: results, changed: results.some((r) => r.status === 'changed') };
}

async function runOne<C>(
  { path, phase }: FlatPhase<C>,
  ctx: C,
  now: () => number,
  listener: RunnerListener | undefined,
  record: (result: PhaseResult) => void,
): Promise<void> {
  listener?.onPhaseStart?.(path, phase.summary);
  const started = now();
  try {
    const outcome = (await phase.run?.(ctx)) ?? 'changed';
    record({
      path,
      status: outcome,
      durationMs: Math.round(now() - started),
      ...(phase.isCheck ? { isCheck: true } : {}),
    });
  } catch (error) {
    record({ path, status: 'failed', durationMs: Math.round(now() - started) });
    throw wrapPhaseError(path, error);
  }
}

/** `error execution phase <path>: <message>`, keeping the cause's code, exit code and hints. */
export function wrapPhaseError(path: string, error: unknown): EdgeadmError {
  const prefix = `error execution phase ${path}: `;
  if (isEdgeadmError(error)) {
    if (error.message.startsWith('error execution phase ')) return error;
    return new EdgeadmError(prefix + error.message, {
      code: error.code,
      exitCode: error.exitCode,
      hints: [
        ...error.hints,
        `After fixing it, re-run the whole command: finished phases are skipped as already done.`,
      ],
      cause: error,
      details: { ...error.details, phase: path },
    });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new EdgeadmError(prefix + message, { code: 'E_PHASE_FAILED', cause: error, details: { phase: path } });
}
