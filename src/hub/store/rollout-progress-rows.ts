/**
 * How a rollout record is stored: its head (the record with its progress
 * but without the clusters' entries) and one row per cluster's progress,
 * so that a controller pass writes only the clusters it changed, not every
 * cluster's progress at every pass (at 10,000 clusters that rewrote
 * megabytes per pass). A head stored before this layout still carries its
 * clusters inline; reading merges them under the rows, and the next whole
 * write moves them into rows. Pure: the stores (sqlite-rollouts.ts,
 * etcd/etcd-rollouts.ts) do the I/O.
 */
import type { ClusterProgress } from '../../rollout/progress.js';
import type { RolloutRecord, RolloutWrite } from './store.js';

/** The record as its head row stores it: every cluster's progress left out. */
export function headOf(record: RolloutRecord): RolloutRecord {
  return { ...record, progress: { ...record.progress, clusters: {} } };
}

/** The record a head and its cluster rows make (rows win over clusters a head stored inline). */
export function joinRollout(head: RolloutRecord, rows: Iterable<readonly [string, ClusterProgress]>): RolloutRecord {
  const clusters: Record<string, ClusterProgress> = { ...head.progress.clusters };
  for (const [cluster, progress] of rows) clusters[cluster] = progress;
  return { ...head, progress: { ...head.progress, clusters } };
}

/** What one write does to a rollout's cluster rows. */
export interface ProgressRowChanges {
  /** Every row of the rollout is dropped before `put` (a whole write). */
  isWhole: boolean;
  put: [string, ClusterProgress][];
  /** Rows removed (named as changed and no longer in the record). */
  removed: string[];
}

/** The row changes of one write: the named clusters, or all of them. */
export function rowChangesOf(write: RolloutWrite): ProgressRowChanges {
  const clusters = write.record.progress.clusters;
  if (write.changedClusters === undefined) {
    return { isWhole: true, put: Object.entries(clusters), removed: [] };
  }
  const put: [string, ClusterProgress][] = [];
  const removed: string[] = [];
  for (const name of write.changedClusters) {
    const progress = clusters[name];
    if (progress === undefined) removed.push(name);
    else put.push([name, progress]);
  }
  return { isWhole: false, put, removed };
}
