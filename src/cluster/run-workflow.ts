/**
 * Runs a cluster workflow's phase tree with output for people: every line a
 * phase says is prefixed with its path (`[package] uploaded …`), each phase
 * ends with "done" or "already done", and under --dry-run the host actions
 * the phase would have taken are printed as "Would …" lines under it, and a
 * phase that would take any ends with "would be done".
 *
 * The lines are rendered from the runner's events (workflow/events.ts), which
 * also go to the caller's `onEvent` as they are: the fleet and `--output
 * jsonl` follow the events, never the lines.
 */
import { DryRunHost } from '../hosts/dry-run-host.js';
import type { WorkflowEvent, WorkflowEventSink } from '../workflow/events.js';
import type { Phase } from '../workflow/phase.js';
import { runPhases, type RunReport } from '../workflow/runner.js';

/** What a workflow's data must offer the runner. */
export interface SayingData {
  say(line: string): void;
  /** The host the workflow runs on; its name is the events' host. */
  host: { readonly name: string };
  isDryRun?: boolean;
}

/** Options of {@link runClusterWorkflow}. */
export interface ClusterWorkflowOptions {
  skipPhases?: string[];
  only?: string;
  /** Where lines for people go. */
  onLine: (line: string) => void;
  /** Told every workflow event as it happens. */
  onEvent?: WorkflowEventSink;
}

/** The run's report, with the dry-run plan lines per phase. */
export interface ClusterWorkflowReport extends RunReport {
  /** `[phase] Would …` lines, under --dry-run. */
  plan: string[];
}

/** The line for people that ends a phase. */
function describeEnd(event: Exclude<WorkflowEvent, { type: 'phase-started' }>): string {
  const path = event.phase;
  if (event.type === 'phase-skipped') return `[${path}] skipped: ${event.reason}`;
  const time = `${(event.durationMs / 1000).toFixed(1)} s`;
  if (event.type === 'phase-failed') return `[${path}] FAILED after ${time}`;
  if (event.outcome === 'checked') return `[${path}] checked (${time})`;
  if (event.outcome === 'already-done') return `[${path}] already done (unchanged, ${time})`;
  if (event.outcome === 'would-do') return `[${path}] would be done (dry run, ${time})`;
  return `[${path}] done (${time})`;
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
  let planAtStart = 0;
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
    host: ctx.host.name,
    isDryRun: dryRun !== undefined || ctx.isDryRun === true,
    onEvent: (started) => {
      let event = started;
      if (event.type === 'phase-started') {
        current = event.phase;
        planAtStart = plan.length;
        options.onLine(`[${event.phase}] ${event.summary}`);
      } else {
        flushPlan(event.phase);
        // A dry-run phase that planned anything would do it: not "already done", also in jsonl.
        if (
          event.type === 'phase-finished' &&
          event.outcome === 'already-done' &&
          dryRun &&
          plan.length > planAtStart
        ) {
          event = { ...event, outcome: 'would-do' };
        }
        options.onLine(describeEnd(event));
      }
      options.onEvent?.(event);
    },
  });
  return { ...report, plan };
}
