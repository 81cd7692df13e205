/**
 * Runs a cluster workflow's phase tree with output for people: every line a
 * phase says is prefixed with its path (`[package] uploaded …`), each phase
 * ends with "done" or "already done", and under --dry-run the host actions
 * the phase would have taken are printed as "Would …" lines under it.
 */
import { DryRunHost } from '../hosts/dry-run-host.js';
import type { Phase } from '../workflow/phase.js';
import { runPhases, type PhaseResult, type RunReport } from '../workflow/runner.js';

/** What a workflow's data must offer the runner. */
export interface SayingData {
  say(line: string): void;
  host: unknown;
}

/** Options of {@link runClusterWorkflow}. */
export interface ClusterWorkflowOptions {
  skipPhases?: string[];
  only?: string;
  /** Where lines for people go. */
  onLine: (line: string) => void;
}

/** The run's report, with the dry-run plan lines per phase. */
export interface ClusterWorkflowReport extends RunReport {
  /** `[phase] Would …` lines, under --dry-run. */
  plan: string[];
}

function describeResult(result: PhaseResult): string {
  const time = `${(result.durationMs / 1000).toFixed(1)} s`;
  if (result.status === 'unchanged' && result.isCheck) return `[${result.path}] checked (${time})`;
  if (result.status === 'unchanged') return `[${result.path}] already done (unchanged, ${time})`;
  if (result.status === 'skipped') return `[${result.path}] skipped: ${result.reason ?? ''}`;
  if (result.status === 'failed') return `[${result.path}] FAILED after ${time}`;
  return `[${result.path}] done (${time})`;
}

/** Runs the phases; `ctx.say` is bound to the running phase. */
export async function runClusterWorkflow<C extends SayingData>(
  phases: Phase<C>[],
  ctx: C,
  options: ClusterWorkflowOptions,
): Promise<ClusterWorkflowReport> {
  let current = '';
  const plan: string[] = [];
  const dryRun = ctx.host instanceof DryRunHost ? ctx.host : undefined;
  let seenSteps = 0;
  ctx.say = (line: string) => {
    const text = `[${current}] ${line}`;
    // What a phase says it would do (API calls under --dry-run) belongs to the plan too.
    if (dryRun && line.startsWith('Would ')) plan.push(text);
    options.onLine(text);
  };
  const flushPlan = (path: string): void => {
    if (!dryRun) return;
    const steps = dryRun.renderPlan().slice(seenSteps);
    seenSteps += steps.length;
    for (const step of steps) {
      const line = `[${path}] ${step}`;
      plan.push(line);
      options.onLine(line);
    }
  };
  const report = await runPhases(phases, ctx, {
    ...(options.skipPhases ? { skipPhases: options.skipPhases } : {}),
    ...(options.only ? { only: options.only } : {}),
    listener: {
      onPhaseStart: (path, summary) => {
        current = path;
        options.onLine(`[${path}] ${summary}`);
      },
      onPhaseEnd: (result) => {
        flushPlan(result.path);
        options.onLine(describeResult(result));
      },
    },
  });
  return { ...report, plan };
}
