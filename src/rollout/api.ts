/**
 * The operator API for rollouts and cluster holds: routes and the JSON
 * views the hub answers with. The hub implements them (hub/api/rollout-api.ts),
 * the hub client and the CLI call them, and `import { … } from 'edgeadm'`
 * exposes the same types to scripts.
 *
 * Routes (bearer token of a hub user; a scoped user sees and changes only
 * rollouts whose placement stays within their clusters selector):
 * - `PUT /hub/v1/rollouts/{name}` body: the Rollout document as JSON, with
 *   file references already read into `spec.resources`; `?dryRun=true`
 *   stores nothing. Answers {@link ApplyResult}.
 * - `GET /hub/v1/rollouts` → `{ rollouts: RolloutListItem[], quarantined: QuarantinedRollout[] }`
 *   (quarantined: stored rollouts the hub could not load at its start; an
 *   admin sees all of them, a user those they own).
 * - `GET /hub/v1/rollouts/{name}` → {@link RolloutStatusView};
 *   `?clusters=true` adds the per-cluster rows; `?waitForChangeFrom=N`
 *   answers when `statusVersion` differs from N, or after
 *   {@link STATUS_LONG_POLL_MS} with the unchanged view (the watch is a
 *   long poll: it survives the hub's socket deadlines and any proxy).
 * - `GET /hub/v1/rollouts/{name}/document` → `{ revision, document }`, the stored document.
 * - `POST /hub/v1/rollouts/{name}/pause|resume|abort|undo` → {@link RolloutStatusView}.
 * - `DELETE /hub/v1/rollouts/{name}` → {@link DeleteResult}.
 * - `PUT /hub/v1/clusters/{name}/hold` body `{ reason }`, `DELETE /hub/v1/clusters/{name}/hold`
 *   → the cluster view with its hold.
 * - `PUT /hub/v1/clusters/{name}/properties` body `{ properties: {k: v} }` → the cluster view
 *   (properties are what customization reads besides name and labels).
 */
import type { ClusterPhase, RolloutState } from './progress.js';
import type { SummaryValue } from './readiness.js';

/** How long a status long poll waits for a change. */
export const STATUS_LONG_POLL_MS = 20_000;

/** What `apply` did. */
export interface ApplyResult {
  name: string;
  revision: number;
  /** True when the document equals the stored one: no new revision. */
  isUnchanged: boolean;
  isCreated: boolean;
  /** With `dryRun`: what would happen, nothing stored. */
  dryRun?: DryRunPlan;
}

/** A dry run's answer. */
export interface DryRunPlan {
  /** Cluster names per wave, in order. */
  waves: string[][];
  /** Each placed cluster's rendered objects, or why its copy cannot be rendered. */
  copies: Array<{ cluster: string; revision?: string; objects?: unknown[]; error?: string }>;
}

/** Counts of clusters per state. */
export type PhaseCounts = Record<ClusterPhase, number>;

/** One row of `rollout list`. */
export interface RolloutListItem {
  name: string;
  revision: number;
  state: RolloutState;
  owner: string;
  clusters: number;
  counts: PhaseCounts;
  updatedAt: string;
}

/**
 * A stored rollout the hub could not load at its start (a document past the
 * hub's limits, or one that no longer parses). The hub serves everyone else;
 * the rollout does nothing until its owner or an admin deletes it (its
 * clusters are then owed a removal as usual).
 */
export interface QuarantinedRollout {
  name: string;
  revision: number;
  owner: string;
  /** Why it could not be loaded. */
  reason: string;
}

/** One wave's progress. */
export interface WaveView {
  index: number;
  clusters: number;
  counts: PhaseCounts;
  /** started, soaking (done, waiting out the soak), done, or waiting. */
  state: 'waiting' | 'started' | 'soaking' | 'done';
}

/** One cluster's row. */
export interface ClusterRowView {
  cluster: string;
  wave: number;
  phase: ClusterPhase;
  targetRevision?: string;
  message?: string;
  /** A held cluster's hold: who, since when, why. */
  hold?: ClusterHold;
  /** When a cluster not connected now was last connected (ISO 8601); absent: never, or connected now. */
  lastSeen?: string;
}

/** `rollout status`. */
export interface RolloutStatusView {
  name: string;
  revision: number;
  state: RolloutState;
  haltReason?: string;
  /** On a revision the hub applied to roll back a failed one (`onFailure: rollback`): which, and why. */
  rollbackOf?: { revision: number; reason: string };
  /** Increases at every change of what this view shows. */
  statusVersion: number;
  owner: string;
  currentWave: number;
  waves: WaveView[];
  counts: PhaseCounts;
  summaries: SummaryValue[];
  clusters?: ClusterRowView[];
  updatedAt: string;
}

/** What `delete` did. */
export interface DeleteResult {
  name: string;
  /** Clusters whose copy was removed now. */
  removed: string[];
  /** Clusters offline now: their copy is removed when they return. */
  pendingRemovals: string[];
}

/** A cluster's hold, as shown with the cluster. */
export interface ClusterHold {
  reason: string;
  since: string;
  by: string;
}
