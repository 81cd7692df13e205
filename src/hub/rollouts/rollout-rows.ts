/**
 * What a rollout's per-cluster row says of the cluster itself, for an
 * operator to act on a row that waits (issue #30): the hold of a held
 * cluster (who, since when, why) and when a cluster that is not connected
 * was last seen, as fields and in the row's message, which the CLI table
 * and the web view show.
 *
 * Pure: no I/O.
 */
import type { ClusterRowView } from '../../rollout/api.js';
import type { ClusterRecord } from '../store/store.js';

/** Adds the cluster's hold and last-seen time to `row` (changed in place, and returned). */
export function withClusterFacts(
  row: ClusterRowView,
  facts: ClusterRecord | undefined,
  isConnected: boolean,
): ClusterRowView {
  if (row.phase === 'held' && facts?.hold !== undefined) {
    row.hold = facts.hold;
    row.message = `held by ${facts.hold.by} since ${facts.hold.since}: ${facts.hold.reason}`;
  }
  if (!isConnected) {
    const seen = facts?.lastSeen === undefined ? 'never seen by the hub' : `last seen ${facts.lastSeen}`;
    if (facts?.lastSeen !== undefined) row.lastSeen = facts.lastSeen;
    row.message = row.message === undefined ? seen : `${row.message} (${seen})`;
  }
  return row;
}
