/**
 * The edge-proxy's metrics: online or offline, cache size, watches, and
 * requests by outcome, in the proxy's own registry
 * (src/metrics/metrics-registry.ts). The parts that answer requests bump the
 * counters; the gauges read the proxy's state at each scrape.
 */
import { MetricsRegistry, type Counter } from '../metrics/metrics-registry.js';

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

/** What the proxy's gauges read at each scrape ({@link registerProxyGauges}). */
export interface ProxyState {
  isOnline: boolean;
  /** Offline because the server's certificate does not verify against the proxy's CA (not an outage). */
  isCertificateRejected: boolean;
  cacheEntries: number;
  cacheBytes: number;
  heldWatches: number;
  openWatches: number;
  bufferedCacheBytes: number;
}

/** Counts requests by outcome, and cache entries dropped as corrupt. */
export class RequestCounters {
  readonly #requests: Counter<'outcome'>;
  readonly #corruptEntriesDropped: Counter;

  /** Registers the counters in `registry` (the proxy's; a registry of their own when none is given). */
  constructor(registry: MetricsRegistry = new MetricsRegistry()) {
    this.#requests = registry.counter({
      name: 'edgeadm_edge_proxy_requests_total',
      help: 'Requests by outcome.',
      labelNames: ['outcome'],
    });
    this.#corruptEntriesDropped = registry.counter({
      name: 'edgeadm_edge_proxy_cache_corrupt_dropped_total',
      help: 'Cache entries dropped because their checksum did not match.',
    });
  }

  count(outcome: RequestOutcome): void {
    this.#requests.inc({ outcome });
  }

  countCorruptEntry(): void {
    this.#corruptEntriesDropped.inc();
  }
}

/** Registers the gauges of the proxy's state in `registry`; each reads `read()` at each scrape. */
export function registerProxyGauges(registry: MetricsRegistry, read: () => ProxyState): void {
  const gauge = (name: string, help: string, value: (state: ProxyState) => number): void =>
    registry.readGauge({ name, help, read: () => value(read()) });
  gauge(
    'edgeadm_edge_proxy_online',
    'Whether the upstream API server is reachable (1) or the proxy serves from its cache (0).',
    (state) => (state.isOnline ? 1 : 0),
  );
  gauge(
    'edgeadm_edge_proxy_upstream_certificate_rejected',
    'Whether the API server answers with a certificate the CA in the upstream kubeconfig does not verify (1): its CA changed; not an outage.',
    (state) => (state.isCertificateRejected ? 1 : 0),
  );
  gauge('edgeadm_edge_proxy_cache_entries', 'Entries in the on-disk cache.', (state) => state.cacheEntries);
  gauge(
    'edgeadm_edge_proxy_cache_bytes',
    'Bytes on disk taken by cache entries and writes in progress.',
    (state) => state.cacheBytes,
  );
  gauge(
    'edgeadm_edge_proxy_held_watches',
    'Client watches held open while the upstream is away.',
    (state) => state.heldWatches,
  );
  gauge('edgeadm_edge_proxy_open_watches', 'Client watches open (held or streaming).', (state) => state.openWatches);
  gauge(
    'edgeadm_edge_proxy_cache_buffered_bytes',
    'Bytes of upstream answers held in memory until they are cached.',
    (state) => state.bufferedCacheBytes,
  );
}
