/**
 * Which clusters need an operator now, and why (issue #38), as pure
 * functions over the cluster views the operator API shows and the halted
 * rollouts: each cluster's reasons (offline, a halted rollout that places
 * it, nodes not Ready, certificates expiring, held), then the list filtered,
 * sorted and cut into one bounded page, with counts per reason.
 *
 * Pure: no I/O; the time is passed in.
 */
import { matchesSelector } from '../../kube/label-selector.js';
import type { ClusterPhase } from '../../rollout/progress.js';
import { AGENT_CERT_ORGANIZATION } from '../contract/agent-certificate.js';
import {
  ATTENTION_REASON_KINDS,
  type AttentionPage,
  type AttentionReason,
  type AttentionReasonKind,
  type AttentionRow,
  type AttentionSortKey,
  type HaltedRolloutTarget,
} from '../contract/attention.js';
import type { CertificateExpiryView, ClusterView } from '../contract/views.js';
import type { AttentionQuery } from './attention-query.js';
import { HUB_CLIENT_CERT_OVERDUE_WITHIN_MS } from './limits.js';

const DAY_MS = 86_400_000;

/** A halted rollout the caller may see, and the phase of each cluster it places. */
export interface HaltedRollout {
  name: string;
  haltReason?: string | undefined;
  /** When it last changed (ISO 8601): its halt. */
  since: string;
  clusters: ReadonlyMap<string, ClusterPhase>;
}

/** What decides a cluster's reasons, besides the cluster itself. */
export interface AttentionRules {
  now: number;
  offlineForMs: number;
  certsWithinMs: number;
  /** Per cluster, the halted rollouts that place it (see {@link haltedTargets}). */
  halted: ReadonlyMap<string, { since: string; rollouts: HaltedRolloutTarget[] }>;
}

/** Per cluster, the halted rollouts that place it; `since` the earliest halt among them (it has waited since). */
export function haltedTargets(
  halted: readonly HaltedRollout[],
): Map<string, { since: string; rollouts: HaltedRolloutTarget[] }> {
  const targets = new Map<string, { since: string; rollouts: HaltedRolloutTarget[] }>();
  for (const rollout of halted) {
    for (const [cluster, phase] of rollout.clusters) {
      const entry = targets.get(cluster) ?? { since: rollout.since, rollouts: [] };
      entry.rollouts.push({ rollout: rollout.name, phase });
      // The hub writes every time with toISOString: text order is time order.
      if (rollout.since < entry.since) entry.since = rollout.since;
      targets.set(cluster, entry);
    }
  }
  return targets;
}

/**
 * The certificates of a cluster that expire within the bound, soonest
 * first. The agent's hub client certificate is read from the hub's own
 * record (`certNotAfter`: the hub issued it, and knows a renewal before the
 * agent reports it), and counts only once its renewal is overdue
 * ({@link HUB_CLIENT_CERT_OVERDUE_WITHIN_MS}). An expiry the agent sent that
 * is no time is left out: nothing can be said of it.
 */
export function expiringCertificates(cluster: ClusterView, rules: AttentionRules): CertificateExpiryView[] {
  const expiring: { certificate: CertificateExpiryView; at: number }[] = [];
  const hubClientAt = Date.parse(cluster.certNotAfter);
  if (hubClientAt - rules.now <= Math.min(rules.certsWithinMs, HUB_CLIENT_CERT_OVERDUE_WITHIN_MS)) {
    expiring.push({
      certificate: {
        kind: 'hub-client',
        subject: `CN=${cluster.name},O=${AGENT_CERT_ORGANIZATION}`,
        notAfter: cluster.certNotAfter,
      },
      at: hubClientAt,
    });
  }
  for (const certificate of cluster.health?.certificates ?? []) {
    if (certificate.kind === 'hub-client') continue;
    const at = Date.parse(certificate.notAfter);
    if (at - rules.now <= rules.certsWithinMs) expiring.push({ certificate, at });
  }
  return expiring.sort((a, b) => a.at - b.at).map((item) => item.certificate);
}

/** A cluster's reasons to need attention, most severe first; empty when it needs none. */
export function reasonsOf(cluster: ClusterView, rules: AttentionRules): AttentionReason[] {
  const reasons: AttentionReason[] = [];
  if (cluster.state === 'Disconnected') {
    const away = cluster.lastSeen === undefined ? Infinity : rules.now - Date.parse(cluster.lastSeen);
    // A last-seen time that is no time does not hide a disconnected cluster.
    if (!(away < rules.offlineForMs)) {
      reasons.push({
        kind: 'offline',
        since: cluster.lastSeen ?? cluster.registeredAt,
        isNeverConnected: cluster.lastSeen === undefined,
      });
    }
  }
  const halted = rules.halted.get(cluster.name);
  if (halted !== undefined) reasons.push({ kind: 'rollout-halted', since: halted.since, rollouts: halted.rollouts });
  const health = cluster.health;
  if (health?.nodes !== undefined && health.nodes.ready < health.nodes.total) {
    const { ready, total, notReady } = health.nodes;
    reasons.push({ kind: 'nodes-not-ready', ready, total, notReady, reportedAt: health.reportedAt });
  }
  const certificates = expiringCertificates(cluster, rules);
  if (certificates.length > 0) reasons.push({ kind: 'certificate-expiring', certificates });
  if (cluster.hold !== undefined) {
    reasons.push({ kind: 'held', since: cluster.hold.since, by: cluster.hold.by, reason: cluster.hold.reason });
  }
  return reasons;
}

/** The earliest `since` of a cluster's reasons. */
function sinceOf(reasons: readonly AttentionReason[]): string | undefined {
  let since: string | undefined;
  for (const reason of reasons) {
    if (!('since' in reason)) continue;
    if (since === undefined || reason.since < since) since = reason.since;
  }
  return since;
}

/** A row with the keys it is sorted by, computed once. */
interface Ranked {
  row: AttentionRow;
  /** One bit per reason, the most severe the highest: a larger number is a more severe set of reasons. */
  severity: number;
  /** Milliseconds; unknown ones last. */
  since: number;
}

const SEVERITY_BIT = new Map<AttentionReasonKind, number>(
  ATTENTION_REASON_KINDS.map((kind, index) => [kind, 1 << (ATTENTION_REASON_KINDS.length - 1 - index)]),
);

function compareBy(key: AttentionSortKey): (a: Ranked, b: Ranked) => number {
  const byName = (a: Ranked, b: Ranked): number =>
    a.row.cluster.name < b.row.cluster.name ? -1 : a.row.cluster.name > b.row.cluster.name ? 1 : 0;
  const bySince = (a: Ranked, b: Ranked): number => a.since - b.since;
  switch (key) {
    case 'name':
      return byName;
    case 'since':
      return (a, b) => bySince(a, b) || byName(a, b);
    case 'severity':
      // Most severe first; among equals, who has waited longest.
      return (a, b) => b.severity - a.severity || bySince(a, b) || byName(a, b);
  }
}

function zeroCounts(): Record<AttentionReasonKind, number> {
  return Object.fromEntries(ATTENTION_REASON_KINDS.map((kind) => [kind, 0])) as Record<AttentionReasonKind, number>;
}

/**
 * One page of the clusters that need attention, among `clusters` (those the
 * caller may see), with the halted rollouts the caller may see; `halted`
 * undefined when this replica does not know the rollouts' state.
 */
export function queryAttention(
  clusters: readonly ClusterView[],
  halted: readonly HaltedRollout[] | undefined,
  query: AttentionQuery,
  now: number,
): AttentionPage {
  const rules: AttentionRules = {
    now,
    offlineForMs: query.offlineForSeconds * 1000,
    certsWithinMs: query.certsWithinDays * DAY_MS,
    halted: haltedTargets(halted ?? []),
  };
  const counts = zeroCounts();
  const matching: Ranked[] = [];
  for (const cluster of clusters) {
    if (!matchesSelector(query.selector, cluster.labels)) continue;
    const reasons = reasonsOf(cluster, rules);
    if (reasons.length === 0) continue;
    let severity = 0;
    for (const reason of reasons) {
      counts[reason.kind] += 1;
      severity |= SEVERITY_BIT.get(reason.kind) ?? 0;
    }
    if (query.reason !== undefined && !reasons.some((reason) => reason.kind === query.reason)) continue;
    const since = sinceOf(reasons);
    const row: AttentionRow = since === undefined ? { cluster, reasons } : { cluster, reasons, since };
    matching.push({ row, severity, since: since === undefined ? Infinity : Date.parse(since) });
  }
  const compare = compareBy(query.sort);
  matching.sort(query.isDescending ? (a, b) => compare(b, a) : compare);
  return {
    total: matching.length,
    offset: query.offset,
    limit: query.limit,
    rows: matching.slice(query.offset, query.offset + query.limit).map((ranked) => ranked.row),
    counts,
    haltedRollouts: (halted ?? []).map((rollout) => ({
      name: rollout.name,
      haltReason: rollout.haltReason,
      since: rollout.since,
      clusters: rollout.clusters.size,
    })),
    isRolloutStateKnown: halted !== undefined,
    offlineForSeconds: query.offlineForSeconds,
    certsWithinDays: query.certsWithinDays,
    now: new Date(now).toISOString(),
  };
}
