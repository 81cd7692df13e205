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

/** A point in time, as text in the form the hub writes (toISOString) and in milliseconds. */
interface Cutoff {
  text: string;
  ms: number;
}

function cutoffAt(ms: number): Cutoff {
  return { text: new Date(ms).toISOString(), ms };
}

/** The rules, with the moments each test compares against, computed once per list. */
interface Bounds {
  rules: AttentionRules;
  /** Disconnected and last seen at or before it: offline. */
  offline: Cutoff;
  /** Expiring at or before it: a cluster's certificate counts. */
  certificates: Cutoff;
  /** The same for the agent's own hub certificate: only once its renewal is overdue. */
  hubClient: Cutoff;
}

function boundsOf(rules: AttentionRules): Bounds {
  return {
    rules,
    offline: cutoffAt(rules.now - rules.offlineForMs),
    certificates: cutoffAt(rules.now + rules.certsWithinMs),
    hubClient: cutoffAt(rules.now + Math.min(rules.certsWithinMs, HUB_CLIENT_CERT_OVERDUE_WITHIN_MS)),
  };
}

/**
 * Whether a time is in the form the hub writes every time it keeps
 * (`2026-06-01T12:00:00.000Z`): such times order as text in time order, and
 * comparing text is several times cheaper than parsing, which at 10,000
 * clusters and four times each was most of the list's cost.
 */
function isHubTime(text: string): boolean {
  return text.length === 24 && text.charCodeAt(10) === 84 /* T */ && text.charCodeAt(23) === 90; /* Z */
}

/** `time` is after `cutoff`; a time that is no time is not. */
function isAfter(time: string, cutoff: Cutoff): boolean {
  return isHubTime(time) ? time > cutoff.text : Date.parse(time) > cutoff.ms;
}

/** `time` is at or before `cutoff`; a time that is no time is not. */
function isAtOrBefore(time: string, cutoff: Cutoff): boolean {
  return isHubTime(time) ? time <= cutoff.text : Date.parse(time) <= cutoff.ms;
}

function expiringWithin(cluster: ClusterView, bounds: Bounds): CertificateExpiryView[] {
  const expiring: CertificateExpiryView[] = [];
  if (isAtOrBefore(cluster.certNotAfter, bounds.hubClient)) {
    const subject = `CN=${cluster.name},O=${AGENT_CERT_ORGANIZATION}`;
    expiring.push({ kind: 'hub-client', subject, notAfter: cluster.certNotAfter });
  }
  for (const certificate of cluster.health?.certificates ?? []) {
    if (certificate.kind !== 'hub-client' && isAtOrBefore(certificate.notAfter, bounds.certificates)) {
      expiring.push(certificate);
    }
  }
  return expiring.sort((a, b) => Date.parse(a.notAfter) - Date.parse(b.notAfter));
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
  return expiringWithin(cluster, boundsOf(rules));
}

/*
 * Each reason's test, apart from the reason it builds: the list tests all
 * of a fleet's clusters at each request and builds the reasons of one page
 * only. reasonsWithin and reasonBits read the same tests, so what is
 * counted is what is shown.
 */

function isOffline(cluster: ClusterView, bounds: Bounds): boolean {
  if (cluster.state !== 'Disconnected') return false;
  // Never seen, or seen at or before the cutoff; a last-seen time that is no time does not hide it.
  return cluster.lastSeen === undefined || !isAfter(cluster.lastSeen, bounds.offline);
}

function hasNodesNotReady(cluster: ClusterView): boolean {
  const nodes = cluster.health?.nodes;
  return nodes !== undefined && nodes.ready < nodes.total;
}

function hasCertificateExpiring(cluster: ClusterView, bounds: Bounds): boolean {
  if (isAtOrBefore(cluster.certNotAfter, bounds.hubClient)) return true;
  for (const certificate of cluster.health?.certificates ?? []) {
    if (certificate.kind !== 'hub-client' && isAtOrBefore(certificate.notAfter, bounds.certificates)) return true;
  }
  return false;
}

function reasonsWithin(cluster: ClusterView, bounds: Bounds): AttentionReason[] {
  const reasons: AttentionReason[] = [];
  if (isOffline(cluster, bounds)) {
    reasons.push({
      kind: 'offline',
      since: cluster.lastSeen ?? cluster.registeredAt,
      isNeverConnected: cluster.lastSeen === undefined,
    });
  }
  const halted = bounds.rules.halted.get(cluster.name);
  if (halted !== undefined) reasons.push({ kind: 'rollout-halted', since: halted.since, rollouts: halted.rollouts });
  const health = cluster.health;
  if (health?.nodes !== undefined && hasNodesNotReady(cluster)) {
    const { ready, total, notReady } = health.nodes;
    reasons.push({ kind: 'nodes-not-ready', ready, total, notReady, reportedAt: health.reportedAt });
  }
  if (hasCertificateExpiring(cluster, bounds)) {
    reasons.push({ kind: 'certificate-expiring', certificates: expiringWithin(cluster, bounds) });
  }
  if (cluster.hold !== undefined) {
    reasons.push({ kind: 'held', since: cluster.hold.since, by: cluster.hold.by, reason: cluster.hold.reason });
  }
  return reasons;
}

/** A cluster's reasons to need attention, most severe first; empty when it needs none. */
export function reasonsOf(cluster: ClusterView, rules: AttentionRules): AttentionReason[] {
  return reasonsWithin(cluster, boundsOf(rules));
}

/** One bit per reason, the most severe the highest: a larger number is a more severe set of reasons. */
const BIT = Object.fromEntries(
  ATTENTION_REASON_KINDS.map((kind, index) => [kind, 1 << (ATTENTION_REASON_KINDS.length - 1 - index)]),
) as Record<AttentionReasonKind, number>;

/** The bits of a cluster's reasons ({@link BIT}), without building them. */
function reasonBits(cluster: ClusterView, bounds: Bounds): number {
  let bits = 0;
  if (isOffline(cluster, bounds)) bits |= BIT.offline;
  if (bounds.rules.halted.has(cluster.name)) bits |= BIT['rollout-halted'];
  if (hasNodesNotReady(cluster)) bits |= BIT['nodes-not-ready'];
  if (hasCertificateExpiring(cluster, bounds)) bits |= BIT['certificate-expiring'];
  if (cluster.hold !== undefined) bits |= BIT.held;
  return bits;
}

/** The earlier of two times; the hub writes every time with toISOString, so text order is time order. */
function earlier(a: string | undefined, b: string | undefined): string | undefined {
  return a === undefined || (b !== undefined && b < a) ? b : a;
}

/** The earliest `since` of a cluster's reasons (those that tell one), as {@link reasonsOf} gives them. */
function sinceOf(cluster: ClusterView, bits: number, rules: AttentionRules): string | undefined {
  let since = bits & BIT.offline ? (cluster.lastSeen ?? cluster.registeredAt) : undefined;
  if (bits & BIT['rollout-halted']) since = earlier(since, rules.halted.get(cluster.name)?.since);
  if (bits & BIT.held) since = earlier(since, cluster.hold?.since);
  return since;
}

/** A cluster that needs attention, with the keys it is sorted by, computed once. */
interface Ranked {
  cluster: ClusterView;
  /** Its reasons' bits: a larger number is a more severe set of reasons. */
  severity: number;
  since: string | undefined;
}

/** After every time (ISO 8601 begins with a digit): an unknown `since` sorts last. */
const NO_SINCE = '~';

function compareBy(key: AttentionSortKey): (a: Ranked, b: Ranked) => number {
  const byName = (a: Ranked, b: Ranked): number =>
    a.cluster.name < b.cluster.name ? -1 : a.cluster.name > b.cluster.name ? 1 : 0;
  const bySince = (a: Ranked, b: Ranked): number => {
    const x = a.since ?? NO_SINCE;
    const y = b.since ?? NO_SINCE;
    return x < y ? -1 : x > y ? 1 : 0;
  };
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
  const bounds = boundsOf(rules);
  const counts = zeroCounts();
  const matching: Ranked[] = [];
  const wanted = query.reason === undefined ? 0 : BIT[query.reason];
  for (const cluster of clusters) {
    if (!matchesSelector(query.selector, cluster.labels)) continue;
    const bits = reasonBits(cluster, bounds);
    if (bits === 0) continue;
    for (const kind of ATTENTION_REASON_KINDS) if (bits & BIT[kind]) counts[kind] += 1;
    if (wanted !== 0 && (bits & wanted) === 0) continue;
    matching.push({ cluster, severity: bits, since: sinceOf(cluster, bits, rules) });
  }
  const compare = compareBy(query.sort);
  matching.sort(query.isDescending ? (a, b) => compare(b, a) : compare);
  const rows = matching
    .slice(query.offset, query.offset + query.limit)
    .map(({ cluster, since }): AttentionRow =>
      since === undefined
        ? { cluster, reasons: reasonsWithin(cluster, bounds) }
        : { cluster, reasons: reasonsWithin(cluster, bounds), since },
    );
  return {
    total: matching.length,
    offset: query.offset,
    limit: query.limit,
    rows,
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
