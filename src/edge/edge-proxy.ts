/**
 * The edge-proxy: the node-local HTTPS proxy in front of the API server that
 * lets an edge node keep working while its site is offline.
 *
 * ```
 * kubelet, agents ──TLS──▶ edge-proxy ──TLS (client's identity)──▶ API server
 *                              │  ▲
 *            GET/LIST answers  ▼  │  offline: answers, held watches
 *                         <cache-dir> (per-identity, checksummed, LRU)
 * ```
 *
 * This module only wires the parts together, each with one job:
 * request-router.ts (path rule, identity, routing), request-identity.ts (who
 * a request acts as), forwarding.ts (requests and upgrades upstream),
 * cached-answers.ts (the cache read/write path), offline-answers.ts (answers
 * while offline), upstream-state.ts (online/offline and the `/readyz` probe),
 * watch-relay.ts (one client watch) and listeners.ts (the two ports).
 *
 * `node:http`/`node:https` are loaded by listeners.ts when the proxy starts,
 * never at import (the single binary's startup snapshot cannot hold them).
 */
import { isIP } from 'node:net';
import { ValidationError } from '../errors.js';
import { silentLogger, type Logger } from '../log/run-log.js';
import { MetricsRegistry } from '../metrics/metrics-registry.js';
import { BufferBudget } from './buffer-budget.js';
import { CachedAnswers } from './cached-answers.js';
import { DiskCache } from './disk-cache.js';
import { Forwarder } from './forwarding.js';
import { K3sSupervisorAnswers } from './k3s-supervisor.js';
import {
  MAX_BUFFERED_CACHE_BYTES,
  MAX_WATCHES_PER_IDENTITY,
  MAX_WATCHES_TOTAL,
  SERVING_CERT_RELOAD_CHECK_MS,
} from './limits.js';
import { bindListeners, type HostPort } from './listeners.js';
import { RequestCounters, registerProxyGauges } from './metrics.js';
import { OfflineAnswers } from './offline-answers.js';
import { RequestRouter } from './request-router.js';
import { ensureServingCertificate } from './serving-cert.js';
import { ServingCertFiles, type ServingCertFilePaths } from './serving-cert-files.js';
import { createUpstreamClient } from './upstream-client.js';
import type { UpstreamClientCertificate, UpstreamConfig } from './upstream-config.js';
import { UpstreamStateMachine } from './upstream-state.js';
import { WatchQuota } from './watch-quota.js';

export type { HostPort } from './listeners.js';

/** Options of {@link startEdgeProxy}. */
export interface EdgeProxyOptions {
  upstream: UpstreamConfig;
  listen: HostPort;
  /** Where `/healthz` and `/metrics` are served (plain HTTP); none when undefined. */
  metricsListen: HostPort | undefined;
  cacheDir: string;
  cacheMaxBytes: number;
  cacheMaxEntries: number;
  /** Serving certificate; one is made for the listen address when absent. */
  tls?: { certPem: string; keyPem: string } | undefined;
  /** The files `tls` was read from: checked for a new pair every {@link SERVING_CERT_RELOAD_CHECK_MS}. */
  tlsFiles?: ServingCertFilePaths | undefined;
  /** CA that client certificates must chain to; defaults to the upstream CA (which signs kubelet certificates). */
  clientCaPem?: string | undefined;
  /** `--client-cert-map`: client certificate CN → the certificate and key presented upstream. */
  clientCerts: ReadonlyMap<string, UpstreamClientCertificate>;
  /** How often mapped certificate files are checked for rotation (tests shorten it). */
  clientCertReloadCheckMs?: number;
  /** Interval of the `/readyz` probe while online. */
  healthIntervalMs: number;
  /** Keep the k3s supervisor's start-up answers for offline starts of the node's k3s agent (k3s-supervisor.ts). */
  isK3sSupervisor?: boolean;
  /** The node's site: grid Services' EndpointSlices are answered with its endpoints only (site-filter.ts). */
  site?: string | undefined;
  /** Bounds of limits.ts, overridable so tests can reach them with small numbers. */
  bounds?: Partial<EdgeProxyBounds>;
  logger?: Logger;
}

/** The edge-proxy's resource bounds (defaults in limits.ts). */
export interface EdgeProxyBounds {
  /** {@link MAX_BUFFERED_CACHE_BYTES}. */
  bufferedCacheBytes: number;
  /** {@link MAX_WATCHES_PER_IDENTITY}. */
  watchesPerIdentity: number;
  /** {@link MAX_WATCHES_TOTAL}. */
  watchesTotal: number;
}

/** A running edge-proxy. */
export interface RunningEdgeProxy {
  /** `https://host:port` clients use. */
  readonly url: string;
  readonly port: number;
  /** `http://host:port` of `/healthz` and `/metrics`, if served. */
  readonly metricsUrl: string | undefined;
  /** The CA file clients should trust, when the proxy made its own serving certificate. */
  readonly servingCaFile: string | undefined;
  readonly isOnline: boolean;
  readonly cache: DiskCache;
  /** The Prometheus text of `/metrics`. */
  metrics(): Promise<string>;
  close(): Promise<void>;
}

/**
 * Parses `host:port` (`[v6]:port` for IPv6).
 *
 * @throws {ValidationError} `E_EDGE_LISTEN`.
 */
export function parseHostPort(text: string, flag: string): HostPort {
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(text.trim());
  const host = match?.[1] ?? match?.[2];
  const port = Number(match?.[3]);
  if (!match || !host || port > 65535) {
    throw new ValidationError(`invalid ${flag} ${JSON.stringify(text)}: expected ADDRESS:PORT`, {
      code: 'E_EDGE_LISTEN',
      hints: [`Example: ${flag} 127.0.0.1:10261`],
    });
  }
  return { host, port };
}

function hostForUrl(host: string): string {
  return isIP(host) === 6 ? `[${host}]` : host;
}

/** The proxy's resources: its bounds, metrics, cache, upstream client and online state (probed once). */
async function openResources(options: EdgeProxyOptions, logger: Logger) {
  const registry = new MetricsRegistry();
  const counters = new RequestCounters(registry);
  const budget = new BufferBudget(options.bounds?.bufferedCacheBytes ?? MAX_BUFFERED_CACHE_BYTES);
  const watchQuota = new WatchQuota(
    options.bounds?.watchesPerIdentity ?? MAX_WATCHES_PER_IDENTITY,
    options.bounds?.watchesTotal ?? MAX_WATCHES_TOTAL,
  );
  const cache = DiskCache.open({
    dir: options.cacheDir,
    maxBytes: options.cacheMaxBytes,
    maxEntries: options.cacheMaxEntries,
    logger,
    onCorrupt: () => counters.countCorruptEntry(),
  });
  for (const cn of options.clientCerts.keys()) logger.info(`edge-proxy: client certificate CN ${cn} is mapped`);
  const upstream = await createUpstreamClient({
    upstream: options.upstream,
    clientCerts: options.clientCerts,
    certReloadCheckMs: options.clientCertReloadCheckMs,
    logger,
  });
  const state = new UpstreamStateMachine(upstream, options.healthIntervalMs, logger);
  await state.checkNow();
  state.start();
  const stop = async (): Promise<void> => {
    state.stop();
    await cache.flush();
    upstream.close();
  };
  return { registry, counters, budget, watchQuota, cache, upstream, state, stop };
}

/** Checks the serving certificate files now and then and serves a new pair; returns the stop function. */
function reloadServingCertificate(
  files: ServingCertFilePaths,
  listeners: { setServingCertificate(certPem: string, keyPem: string): void },
  logger: Logger,
): () => void {
  let watched: ServingCertFiles;
  try {
    watched = new ServingCertFiles(files);
  } catch (error) {
    logger.warn(`edge-proxy: cannot watch ${files.certFile}: ${(error as Error).message}`);
    return () => {};
  }
  const timer = setInterval(() => {
    try {
      const pair = watched.changed();
      if (pair === undefined) return;
      listeners.setServingCertificate(pair.certPem, pair.keyPem);
      logger.info(`edge-proxy: serving with the new certificate in ${files.certFile}`);
    } catch (error) {
      logger.warn(`edge-proxy: keeping the serving certificate in use: ${(error as Error).message}`);
    }
  }, SERVING_CERT_RELOAD_CHECK_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/** Starts the edge-proxy; resolves once both listeners accept connections. */
export async function startEdgeProxy(options: EdgeProxyOptions): Promise<RunningEdgeProxy> {
  const logger = options.logger ?? silentLogger;
  const { registry, counters, budget, watchQuota, cache, upstream, state, stop } = await openResources(options, logger);
  const serving = options.tls
    ? { ...options.tls, caFile: undefined }
    : await ensureServingCertificate({ dir: `${options.cacheDir}/pki`, host: options.listen.host });

  const bound: { port?: number } = {};
  const answers = new CachedAnswers(cache, counters, logger);
  const offline = new OfflineAnswers(answers, counters);
  const forwarder = new Forwarder({ upstream, state, answers, budget, counters, logger });
  const router = new RequestRouter({
    cache,
    upstream,
    state,
    budget,
    watchQuota,
    forwarder,
    offline,
    counters,
    logger,
    mappedCns: options.clientCerts,
    site: options.site,
    k3sSupervisor: options.isK3sSupervisor
      ? new K3sSupervisorAnswers({
          cache,
          upstream,
          state,
          counters,
          logger,
          // The bound port (a test listens on port 0), known once the listeners are up.
          ownAddress: () => `${hostForUrl(options.listen.host)}:${bound.port ?? options.listen.port}`,
        })
      : undefined,
  });
  registerProxyGauges(registry, () => ({
    isOnline: state.isOnline,
    isCertificateRejected: state.isCertificateRejected,
    cacheEntries: cache.entryCount,
    cacheBytes: cache.byteCount,
    heldWatches: router.heldWatches,
    openWatches: watchQuota.open,
    bufferedCacheBytes: budget.used,
  }));
  let listeners;
  try {
    listeners = await bindListeners(
      {
        certPem: serving.certPem,
        keyPem: serving.keyPem,
        clientCaPem: options.clientCaPem ?? options.upstream.caPem,
        handle: router.handle,
        handleUpgrade: router.handleUpgrade,
      },
      options.listen,
      options.metricsListen,
      () => registry.render(),
    );
  } catch (error) {
    await stop().catch(() => {});
    throw error;
  }
  const { port, metricsPort } = listeners;
  bound.port = port;
  const stopReload = options.tlsFiles ? reloadServingCertificate(options.tlsFiles, listeners, logger) : () => {};
  return {
    url: `https://${hostForUrl(options.listen.host)}:${port}`,
    port,
    metricsUrl:
      metricsPort === undefined || !options.metricsListen
        ? undefined
        : `http://${hostForUrl(options.metricsListen.host)}:${metricsPort}`,
    servingCaFile: serving.caFile,
    get isOnline() {
      return state.isOnline;
    },
    cache,
    metrics: () => registry.render(),
    close: async () => {
      state.stop(); // no probe while the listeners drain
      stopReload();
      await listeners.close();
      await stop();
    },
  };
}
