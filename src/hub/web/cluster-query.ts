/**
 * The clusters list and the fleet summary of the web view, as pure
 * functions over the cluster views the operator API also shows: filtering
 * (label selector, text, state, version, time offline, held), sorting, bounded
 * pages, and the counts of the fleet at a glance. The page asks; the hub
 * filters, so a browser never receives 10,000 rows.
 */
import { matchesSelector, parseLabelSelector, type LabelSelector } from '../../kube/label-selector.js';
import { HttpError } from '../http/http-replies.js';
import type { ClusterView } from '../contract/views.js';
import {
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  MAX_SELECTOR_LENGTH,
  MAX_SUMMARY_LABEL_KEYS,
  MAX_SUMMARY_LABEL_VALUES,
  MAX_SUMMARY_VERSIONS,
  MAX_TEXT_FILTER_LENGTH,
} from './limits.js';

/** How long a disconnected cluster has been away, in the buckets the fleet view counts. */
export type OfflineBucket = 'lt5m' | 'lt1h' | 'lt1d' | 'gte1d' | 'never';
export const OFFLINE_BUCKETS: readonly OfflineBucket[] = ['lt5m', 'lt1h', 'lt1d', 'gte1d', 'never'];
const BUCKET_LIMITS_MS: readonly [OfflineBucket, number][] = [
  ['lt5m', 5 * 60_000],
  ['lt1h', 60 * 60_000],
  ['lt1d', 24 * 60 * 60_000],
];

/** The columns the clusters table sorts by. */
export type ClusterSortKey = 'name' | 'state' | 'lastSeen' | 'version' | 'nodes';
const SORT_KEYS: readonly ClusterSortKey[] = ['name', 'state', 'lastSeen', 'version', 'nodes'];

/** The version filter value for clusters whose version is not known. */
export const UNKNOWN_VERSION = 'unknown';

/** A parsed clusters list request. */
export interface ClusterQuery {
  selector: LabelSelector;
  /** Lower-case text looked for in the name and the labels' keys and values. */
  text: string;
  state?: ClusterView['state'];
  version?: string;
  offline?: OfflineBucket;
  /** Only clusters an operator holds (`held=true`). */
  isHeld?: boolean;
  sort: ClusterSortKey;
  isDescending: boolean;
  offset: number;
  limit: number;
}

/** One page of the clusters list. */
export interface ClusterPage {
  total: number;
  offset: number;
  limit: number;
  clusters: ClusterView[];
}

function bad(message: string): HttpError {
  return new HttpError(400, 'E_WEB_BAD_QUERY', message);
}

function wholeNumber(params: URLSearchParams, key: string, fallback: number, max: number): number {
  const text = params.get(key);
  if (text === null || text === '') return fallback;
  if (!/^\d{1,9}$/.test(text) || Number(text) > max) throw bad(`${key} must be a whole number from 0 to ${max}`);
  return Number(text);
}

/** Parses the list's query string; every mistake is a 400 naming the parameter. */
export function parseClusterQuery(params: URLSearchParams): ClusterQuery {
  const selectorText = params.get('selector') ?? '';
  if (selectorText.length > MAX_SELECTOR_LENGTH) throw bad(`selector: at most ${MAX_SELECTOR_LENGTH} characters`);
  let selector: LabelSelector;
  try {
    selector = parseLabelSelector(selectorText);
  } catch (error) {
    throw new HttpError(400, 'E_SELECTOR_INVALID', (error as Error).message);
  }
  const text = params.get('q') ?? '';
  if (text.length > MAX_TEXT_FILTER_LENGTH) throw bad(`q: at most ${MAX_TEXT_FILTER_LENGTH} characters`);
  const query: ClusterQuery = {
    selector,
    text: text.trim().toLowerCase(),
    sort: 'name',
    isDescending: params.get('order') === 'desc',
    offset: wholeNumber(params, 'offset', 0, 1e9),
    limit: Math.max(1, wholeNumber(params, 'limit', DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)),
  };
  const order = params.get('order');
  if (order !== null && order !== 'asc' && order !== 'desc') throw bad('order must be asc or desc');
  const sort = params.get('sort');
  if (sort !== null && sort !== '') {
    if (!SORT_KEYS.includes(sort as ClusterSortKey)) throw bad(`sort must be one of ${SORT_KEYS.join(', ')}`);
    query.sort = sort as ClusterSortKey;
  }
  const state = params.get('state');
  if (state !== null && state !== '') {
    if (state !== 'Connected' && state !== 'Disconnected') throw bad('state must be Connected or Disconnected');
    query.state = state;
  }
  const version = params.get('version');
  if (version !== null && version !== '') query.version = version;
  const held = params.get('held');
  if (held !== null && held !== '') {
    if (held !== 'true') throw bad('held must be true (or absent)');
    query.isHeld = true;
  }
  const offline = params.get('offline');
  if (offline !== null && offline !== '') {
    if (!OFFLINE_BUCKETS.includes(offline as OfflineBucket)) {
      throw bad(`offline must be one of ${OFFLINE_BUCKETS.join(', ')}`);
    }
    query.offline = offline as OfflineBucket;
  }
  return query;
}

/** Which offline bucket a disconnected cluster falls in at `now`. */
export function offlineBucket(cluster: ClusterView, now: number): OfflineBucket {
  if (cluster.lastSeen === undefined) return 'never';
  const away = now - Date.parse(cluster.lastSeen);
  for (const [bucket, limit] of BUCKET_LIMITS_MS) if (away < limit) return bucket;
  return 'gte1d';
}

function matchesText(cluster: ClusterView, text: string): boolean {
  if (text === '') return true;
  if (cluster.name.includes(text)) return true;
  for (const [key, value] of Object.entries(cluster.labels)) {
    if (key.toLowerCase().includes(text) || value.toLowerCase().includes(text)) return true;
  }
  return false;
}

/** Whether a cluster passes every filter of a query. */
export function matchesClusterQuery(cluster: ClusterView, query: ClusterQuery, now: number): boolean {
  if (query.state !== undefined && cluster.state !== query.state) return false;
  if (query.version !== undefined && (cluster.kubernetesVersion ?? UNKNOWN_VERSION) !== query.version) return false;
  if (query.isHeld === true && cluster.hold === undefined) return false;
  if (query.offline !== undefined) {
    if (cluster.state !== 'Disconnected' || offlineBucket(cluster, now) !== query.offline) return false;
  }
  return matchesSelector(query.selector, cluster.labels) && matchesText(cluster, query.text);
}

function compareBy(key: ClusterSortKey): (a: ClusterView, b: ClusterView) => number {
  const byName = (a: ClusterView, b: ClusterView): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  const then =
    (primary: (a: ClusterView, b: ClusterView) => number) =>
    (a: ClusterView, b: ClusterView): number =>
      primary(a, b) || byName(a, b);
  switch (key) {
    case 'name':
      return byName;
    case 'state':
      // Disconnected first: what needs attention.
      return then((a, b) => (a.state === b.state ? 0 : a.state === 'Disconnected' ? -1 : 1));
    case 'lastSeen':
      // The hub writes every lastSeen with toISOString (UTC, one format): text order is time order.
      return then((a, b) =>
        (a.lastSeen ?? '') < (b.lastSeen ?? '') ? -1 : (a.lastSeen ?? '') > (b.lastSeen ?? '') ? 1 : 0,
      );
    case 'version':
      return then((a, b) =>
        (a.kubernetesVersion ?? '').localeCompare(b.kubernetesVersion ?? '', 'en', { numeric: true }),
      );
    case 'nodes':
      return then((a, b) => (a.nodeCount ?? -1) - (b.nodeCount ?? -1));
  }
}

/** Filters, sorts and cuts one page. */
export function queryClusters(clusters: readonly ClusterView[], query: ClusterQuery, now: number): ClusterPage {
  const matching = clusters.filter((cluster) => matchesClusterQuery(cluster, query, now));
  const compare = compareBy(query.sort);
  matching.sort(query.isDescending ? (a, b) => compare(b, a) : compare);
  return {
    total: matching.length,
    offset: query.offset,
    limit: query.limit,
    clusters: matching.slice(query.offset, query.offset + query.limit),
  };
}

/** A count and the value it counts. */
export interface CountOf {
  value: string;
  count: number;
}

/** The fleet at a glance. */
export interface FleetSummary {
  total: number;
  connected: number;
  disconnected: number;
  offline: Record<OfflineBucket, number>;
  /** Clusters an operator holds: no rollout changes them until released. */
  held: number;
  /** Most common first; at most {@link MAX_SUMMARY_VERSIONS}, the rest in `otherVersions`. */
  versions: CountOf[];
  otherVersions: number;
  /** Per label key (most common keys first), its most common values. */
  labels: { key: string; values: CountOf[]; otherValues: number }[];
  otherLabelKeys: number;
}

function topCounts(counts: Map<string, number>, max: number): { top: CountOf[]; rest: number } {
  const sorted = [...counts]
    .map(([value, count]) => ({ value, count }))
    .sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : 1));
  const top = sorted.slice(0, max);
  return { top, rest: sorted.slice(max).reduce((sum, item) => sum + item.count, 0) };
}

/** Counts clusters by state, time offline, version and label. */
export function fleetSummary(clusters: readonly ClusterView[], now: number): FleetSummary {
  const offline = Object.fromEntries(OFFLINE_BUCKETS.map((bucket) => [bucket, 0])) as Record<OfflineBucket, number>;
  const versions = new Map<string, number>();
  const labels = new Map<string, Map<string, number>>();
  let connected = 0;
  let held = 0;
  for (const cluster of clusters) {
    if (cluster.state === 'Connected') connected += 1;
    else offline[offlineBucket(cluster, now)] += 1;
    if (cluster.hold !== undefined) held += 1;
    const version = cluster.kubernetesVersion ?? UNKNOWN_VERSION;
    versions.set(version, (versions.get(version) ?? 0) + 1);
    for (const [key, value] of Object.entries(cluster.labels)) {
      const values = labels.get(key) ?? new Map<string, number>();
      labels.set(key, values);
      values.set(value, (values.get(value) ?? 0) + 1);
    }
  }
  const topVersions = topCounts(versions, MAX_SUMMARY_VERSIONS);
  const keys = [...labels]
    .map(([key, values]) => ({ key, values, total: [...values.values()].reduce((a, b) => a + b, 0) }))
    .sort((a, b) => b.total - a.total || (a.key < b.key ? -1 : 1));
  return {
    total: clusters.length,
    connected,
    disconnected: clusters.length - connected,
    offline,
    held,
    versions: topVersions.top,
    otherVersions: topVersions.rest,
    labels: keys.slice(0, MAX_SUMMARY_LABEL_KEYS).map(({ key, values }) => {
      const top = topCounts(values, MAX_SUMMARY_LABEL_VALUES);
      return { key, values: top.top, otherValues: top.rest };
    }),
    otherLabelKeys: Math.max(0, keys.length - MAX_SUMMARY_LABEL_KEYS),
  };
}
