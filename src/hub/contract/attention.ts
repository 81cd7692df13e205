/**
 * Which clusters need an operator now, and why (issue #38): the answer of
 * the attention list, as the web view (`GET /ui/api/attention`), the
 * operator API (`GET /hub/v1/attention`), the hub client and
 * `hub clusters list --attention` read it. A contract, as views.ts is:
 * change it only with both sides.
 *
 * Query parameters of both routes (every mistake is a 400 naming the
 * parameter):
 * - `offlineFor`: seconds a cluster must have been disconnected to count
 *   as offline (default 0: every disconnected cluster; the hub shows a
 *   cluster Disconnected only once its tunnel was silent past
 *   TUNNEL_SILENCE_LIMIT_MS, within two agent heartbeats of its last frame);
 * - `certsWithin`: days within which a certificate's expiry counts (default 30);
 * - `reason`: only clusters with this reason; `selector`: a label selector;
 * - `sort` (`severity`, `name`, `since`), `order` (`asc`, `desc`), `offset`, `limit`.
 */
import type { ClusterPhase } from '../../rollout/progress.js';
import type { CertificateExpiryView, ClusterView } from './views.js';

/** The operator API's route of the attention list. */
export const ATTENTION_API_PATH = '/hub/v1/attention';

/** Why a cluster needs attention. */
export type AttentionReasonKind = 'offline' | 'rollout-halted' | 'nodes-not-ready' | 'certificate-expiring' | 'held';

/**
 * The reasons, most severe first: the order `sort=severity` ranks clusters
 * by. A cluster offline cannot be reached at all; a halted rollout left its
 * sites between two revisions; nodes not Ready lose workloads now; a
 * certificate's expiry is days away; a hold is an operator's own decision.
 */
export const ATTENTION_REASON_KINDS: readonly AttentionReasonKind[] = [
  'offline',
  'rollout-halted',
  'nodes-not-ready',
  'certificate-expiring',
  'held',
];

/** The columns the attention list sorts by. */
export type AttentionSortKey = 'severity' | 'name' | 'since';
export const ATTENTION_SORT_KEYS: readonly AttentionSortKey[] = ['severity', 'name', 'since'];

/** A halted rollout as one cluster's reason names it. */
export interface HaltedRolloutTarget {
  rollout: string;
  /** The cluster's phase in that rollout (`failed` where the halt came from). */
  phase: ClusterPhase;
}

/** One reason of one cluster. */
export type AttentionReason =
  | {
      kind: 'offline';
      /** Since when: its last-seen time, or its registration when it never connected. */
      since: string;
      isNeverConnected: boolean;
    }
  | { kind: 'rollout-halted'; since: string; rollouts: HaltedRolloutTarget[] }
  | {
      kind: 'nodes-not-ready';
      ready: number;
      total: number;
      /** The nodes not Ready, as the agent named them (at most twenty). */
      notReady: string[];
      /** When the agent reported it. */
      reportedAt: string;
    }
  | {
      kind: 'certificate-expiring';
      /** Every certificate within the bound (expired ones too), soonest first. */
      certificates: CertificateExpiryView[];
    }
  | { kind: 'held'; since: string; by: string; reason: string };

/** A cluster that needs attention, with every reason, most severe first. */
export interface AttentionRow {
  cluster: ClusterView;
  reasons: AttentionReason[];
  /** The earliest `since` of its reasons: how long it has needed someone. Absent when no reason tells. */
  since?: string;
}

/** A halted rollout the caller may see. */
export interface HaltedRolloutView {
  name: string;
  haltReason?: string | undefined;
  /** When it last changed: its halt. */
  since: string;
  /** Clusters it places (the caller's own). */
  clusters: number;
}

/** One page of the attention list. */
export interface AttentionPage {
  /** Clusters that match the filters (the selector and `reason`). */
  total: number;
  offset: number;
  limit: number;
  rows: AttentionRow[];
  /** Per reason, the clusters within the selector that have it (whatever `reason` asks). */
  counts: Record<AttentionReasonKind, number>;
  haltedRollouts: HaltedRolloutView[];
  /**
   * Whether this hub replica knows the rollouts' state (it runs the rollout
   * controller). When false, `rollout-halted` is never reported: ask the
   * replica that leads.
   */
  isRolloutStateKnown: boolean;
  /** The bounds the page was computed with, as the query set them or their defaults. */
  offlineForSeconds: number;
  certsWithinDays: number;
  /** The hub's time when it computed the page (ISO 8601): ages are measured from it. */
  now: string;
}
