/**
 * Automatic rollback (`spec.strategy.onFailure: rollback`): when a step
 * halts a revision (more clusters failed than its failure budget), the hub
 * applies the previous revision's document again, as a new revision owned
 * by the same owner, so the clusters the failed revision updated (the
 * canary, and any wave after it) are sent what they ran before, at once,
 * in the same pass. A rollback revision that fails in turn halts and is
 * not rolled back again: the two revisions would take turns for ever.
 *
 * Pure: no I/O.
 */
import type { RollbackRecord, RolloutProgress } from './progress.js';
import type { RolloutSpec } from './spec.js';

/** Whether the step from `before` to `after` calls for a rollback, and its record; undefined when not. */
export function rollbackFor(
  spec: RolloutSpec,
  before: RolloutProgress,
  after: RolloutProgress,
): RollbackRecord | undefined {
  if (spec.strategy.onFailure !== 'rollback') return undefined;
  if (before.state === 'halted' || after.state !== 'halted') return undefined;
  if (after.rollbackOf !== undefined) return undefined;
  return { revision: after.revision, reason: after.haltReason ?? 'the revision halted' };
}
