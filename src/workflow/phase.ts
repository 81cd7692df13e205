/**
 * Phases: the steps of a workflow (init, join, reset), as data.
 *
 * A phase is a plain record with a name, a one-line summary, an optional run
 * function, an optional condition and optional child phases. The runner
 * (runner.ts) flattens the tree into `parent/child` paths, applies
 * `--skip-phases`, runs one phase alone for `edgeadm init phase <name>`, times
 * every phase and names the phase path in every failure.
 */

/** What a phase reports when it finishes. */
export type PhaseOutcome =
  /** The phase changed something on a host or cluster. */
  | 'changed'
  /** Everything was already as the phase wanted: nothing was changed. */
  | 'unchanged';

/**
 * One step of a workflow. `C` is the workflow's data interface (for example
 * `InitData`): phases depend on it, never on the command.
 */
export interface Phase<C> {
  /** kebab-case, unique among its siblings. */
  name: string;
  /** One line for `--help` and progress output. */
  summary: string;
  /** Does the work. A phase with children may have no run of its own. */
  run?: (ctx: C) => Promise<PhaseOutcome | void>;
  /** Skip the phase (and its children) when this returns false. */
  runIf?: (ctx: C) => boolean;
  /** Why `runIf` skipped it, for the operator; default "not needed for this configuration". */
  skipReason?: (ctx: C) => string;
  /** Child phases, run in order after this phase's own run. */
  phases?: Phase<C>[];
  /** Hidden phases run but are not listed or offered as `phase` subcommands. */
  hidden?: boolean;
  /**
   * The phase only checks (preflight, discovery, waiting): it never changes
   * a host, so finding nothing to change is its success, not "already done".
   */
  isCheck?: boolean;
}

/** A phase with its full path, as the runner lists it. */
export interface FlatPhase<C> {
  /** `parent/child`, for example `edge-addons/tunnel`. */
  path: string;
  depth: number;
  phase: Phase<C>;
}

/** Flattens a phase tree depth-first into paths, parents before children. */
export function flattenPhases<C>(phases: Phase<C>[], parent = '', depth = 0): FlatPhase<C>[] {
  const out: FlatPhase<C>[] = [];
  for (const phase of phases) {
    const path = parent ? `${parent}/${phase.name}` : phase.name;
    out.push({ path, depth, phase });
    if (phase.phases) out.push(...flattenPhases(phase.phases, path, depth + 1));
  }
  return out;
}

/** The phase tree as indented lines, for `--help` ("  preflight  Run pre-flight checks"). */
export function describePhases<C>(phases: Phase<C>[]): string {
  const flat = flattenPhases(phases).filter((p) => !p.phase.hidden);
  const width = Math.max(...flat.map((p) => p.depth * 2 + p.phase.name.length));
  return flat
    .map((p) => `${' '.repeat(p.depth * 2)}${p.phase.name.padEnd(width - p.depth * 2)}  ${p.phase.summary}`)
    .join('\n');
}
