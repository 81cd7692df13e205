/**
 * When a watched rollout has done what it can: `hub rollout status --watch`
 * and {@link HubClient.watchRollout} end there. Besides the states after
 * which a rollout changes no more by itself (complete, halted, aborted), a
 * rollout is done wherever reachable when every wave has started and every
 * cluster is ready, held or offline-pending: nothing moves until an offline
 * cluster returns, which in a large fleet may be never. A watch that waited
 * for that hung (issue #30: the help's own `--watch && echo` example).
 *
 * Pure: no I/O.
 */
import type { RolloutStatusView } from '../rollout/api.js';

/** Why a watch ends at a view; undefined while the rollout still moves. */
export type WatchEnd = 'complete' | 'halted' | 'aborted' | 'done-where-reachable';

/** Why a watch ends at `view`, if it does. */
export function watchEndOf(view: RolloutStatusView): WatchEnd | undefined {
  if (view.state === 'complete' || view.state === 'halted' || view.state === 'aborted') return view.state;
  if (view.state !== 'progressing') return undefined;
  const { counts } = view;
  const isStill = counts.waiting + counts.applying + counts.progressing + counts.failed === 0;
  const isLastWave = view.currentWave >= view.waves.length - 1;
  return isStill && isLastWave && counts['offline-pending'] > 0 ? 'done-where-reachable' : undefined;
}

/** The clusters still pending when a rollout is done wherever reachable (offline-pending ones). */
export function pendingClusters(view: RolloutStatusView): number {
  return view.counts['offline-pending'];
}
