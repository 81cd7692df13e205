/**
 * The edge-proxy's state as Prometheus text: online or offline, cache size,
 * and requests by outcome. Counters live here; the proxy bumps them.
 */

/** How one request ended. */
export type RequestOutcome =
  | 'forwarded'
  | 'cache_hit_offline'
  | 'cache_miss_offline'
  | 'write_refused_offline'
  | 'write_answered_offline'
  | 'unauthorized'
  | 'upstream_error'
  /** Refused with 400: the path has more than one reading (parseApiPath). */
  | 'bad_request_path'
  /** Refused with 429: the client, or the proxy, holds the most watches allowed. */
  | 'watch_refused_quota'
  /** Forwarded but not cached: the memory budget for buffered answers was spent. */
  | 'not_cached_memory_bound'
  /** k3s supervisor (`--k3s-supervisor`): answered by the proxy itself (`/v1-k3s/apiservers`, `/readyz` offline). */
  | 'answered_by_proxy'
  /** k3s supervisor: the node's `/v1-k3s/connect` tunnel accepted and held while the server is unreachable. */
  | 'tunnel_held_offline';

/** What {@link renderMetrics} reads. */
export interface MetricsSnapshot {
  isOnline: boolean;
  /** Offline because the server's certificate does not verify against the proxy's CA (not an outage). */
  isCertificateRejected: boolean;
  cacheEntries: number;
  cacheBytes: number;
  corruptEntriesDropped: number;
  heldWatches: number;
  openWatches: number;
  bufferedCacheBytes: number;
  requests: ReadonlyMap<RequestOutcome, number>;
}

/** Counts requests by outcome. */
export class RequestCounters {
  readonly byOutcome = new Map<RequestOutcome, number>();
  corruptEntriesDropped = 0;

  count(outcome: RequestOutcome): void {
    this.byOutcome.set(outcome, (this.byOutcome.get(outcome) ?? 0) + 1);
  }
}

/** Renders the Prometheus text exposition format (version 0.0.4). */
export function renderMetrics(snapshot: MetricsSnapshot): string {
  const lines = [
    '# HELP edgeadm_edge_proxy_online Whether the upstream API server is reachable (1) or the proxy serves from its cache (0).',
    '# TYPE edgeadm_edge_proxy_online gauge',
    `edgeadm_edge_proxy_online ${snapshot.isOnline ? 1 : 0}`,
    '# HELP edgeadm_edge_proxy_upstream_certificate_rejected Whether the API server answers with a certificate the CA in the upstream kubeconfig does not verify (1): its CA changed; not an outage.',
    '# TYPE edgeadm_edge_proxy_upstream_certificate_rejected gauge',
    `edgeadm_edge_proxy_upstream_certificate_rejected ${snapshot.isCertificateRejected ? 1 : 0}`,
    '# HELP edgeadm_edge_proxy_cache_entries Entries in the on-disk cache.',
    '# TYPE edgeadm_edge_proxy_cache_entries gauge',
    `edgeadm_edge_proxy_cache_entries ${snapshot.cacheEntries}`,
    '# HELP edgeadm_edge_proxy_cache_bytes Bytes on disk taken by cache entries and writes in progress.',
    '# TYPE edgeadm_edge_proxy_cache_bytes gauge',
    `edgeadm_edge_proxy_cache_bytes ${snapshot.cacheBytes}`,
    '# HELP edgeadm_edge_proxy_cache_corrupt_dropped_total Cache entries dropped because their checksum did not match.',
    '# TYPE edgeadm_edge_proxy_cache_corrupt_dropped_total counter',
    `edgeadm_edge_proxy_cache_corrupt_dropped_total ${snapshot.corruptEntriesDropped}`,
    '# HELP edgeadm_edge_proxy_held_watches Client watches held open while the upstream is away.',
    '# TYPE edgeadm_edge_proxy_held_watches gauge',
    `edgeadm_edge_proxy_held_watches ${snapshot.heldWatches}`,
    '# HELP edgeadm_edge_proxy_open_watches Client watches open (held or streaming).',
    '# TYPE edgeadm_edge_proxy_open_watches gauge',
    `edgeadm_edge_proxy_open_watches ${snapshot.openWatches}`,
    '# HELP edgeadm_edge_proxy_cache_buffered_bytes Bytes of upstream answers held in memory until they are cached.',
    '# TYPE edgeadm_edge_proxy_cache_buffered_bytes gauge',
    `edgeadm_edge_proxy_cache_buffered_bytes ${snapshot.bufferedCacheBytes}`,
    '# HELP edgeadm_edge_proxy_requests_total Requests by outcome.',
    '# TYPE edgeadm_edge_proxy_requests_total counter',
    ...[...snapshot.requests.entries()]
      // Code-unit order: localeCompare would load ICU's collation data on the
      // first scrape, ~2.5 MiB of resident memory for ASCII label values.
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([outcome, count]) => `edgeadm_edge_proxy_requests_total{outcome="${outcome}"} ${count}`),
  ];
  return `${lines.join('\n')}\n`;
}
