/**
 * What a cluster that connects again is owed: the rule the hub's catch-up
 * follows so that a returning cluster gets the current revision whatever
 * state it was left in (issue #30: a cluster failed while its agent drained
 * was never sent the revision again).
 *
 * Pure: no I/O.
 */
import type { ClusterProgress } from './progress.js';

/** What the hub knows of the cluster's copy besides its progress. */
export interface CopyEvidence {
  /** A copy was handed out and no delivery of it was confirmed. */
  isUnconfirmed: boolean;
  /** The copy revision the cluster last reported running, if any. */
  lastReported: string | undefined;
}

/**
 * Whether a cluster that just connected is sent its current copy again:
 * one handed out that its agent has not confirmed taking (applying), or
 * one handed out that it never reported running: its tunnel refused it
 * (offline-pending, waiting) or a deadline passed while it was away
 * (failed).
 */
export function isOwedOnReturn(progress: ClusterProgress, evidence: CopyEvidence): boolean {
  if (progress.targetRevision === undefined) return false;
  if (progress.phase === 'applying') return evidence.isUnconfirmed;
  const isNeverRun = evidence.lastReported !== progress.targetRevision;
  return (
    isNeverRun && (progress.phase === 'failed' || progress.phase === 'offline-pending' || progress.phase === 'waiting')
  );
}
