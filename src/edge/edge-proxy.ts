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
 * It owns the listeners (the proxy port, and a plain-HTTP `/healthz` and
 * `/metrics` port), identity resolution, forwarding (bodies streamed both
 * ways with backpressure, protocol upgrades piped), caching of GET/LIST
 * answers, and the online/offline state driven by connection failures and a
 * periodic `/readyz` probe. Watches are in watch-relay.ts, the cache in
 * disk-cache.ts, the offline write policy in offline-writes.ts.
 *
 * Every request target passes `parseApiPath` (src/kube/api-path.ts) first,
 * or is answered 400 before anything is forwarded or looked up; what passes
 * is sent upstream byte for byte and is the path of its cache key.
 *
 * `node:http`/`node:https` are loaded in {@link startEdgeProxy}, never at
 * import (the single binary's startup snapshot cannot hold them).
 */
import type { IncomingHttpHeaders, IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import { isIP, type Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Duplex } from 'node:stream';
import { EdgeadmError, ValidationError } from '../errors.js';
import { parseApiPath, type ApiPath } from '../kube/api-path.js';
import { silentLogger, type Logger } from '../log/run-log.js';
import { CACHE_HEADER, apiStatus, rawStatusResponse, sendStatus, type ApiStatus } from './api-status.js';
import {
  acceptsPlainJson,
  cacheKeyOf,
  classifyRequest,
  identityKeyOf,
  type ClassifiedRequest,
  type RequestIdentity,
} from './cache-key.js';
import type { CacheEntry } from './cache-entry.js';
import { BufferBudget, BufferLease } from './buffer-budget.js';
import { DiskCache } from './disk-cache.js';
import {
  CLIENT_KEEP_ALIVE_TIMEOUT_MS,
  MAX_BUFFERED_CACHE_BYTES,
  MAX_CACHED_BODY_BYTES,
  MAX_OFFLINE_WRITE_BODY_BYTES,
  MAX_WATCHES_PER_IDENTITY,
  MAX_WATCHES_TOTAL,
  OFFLINE_PROBE_INTERVAL_MS,
  SHUTDOWN_GRACE_MS,
  UPSTREAM_RESPONSE_TIMEOUT_MS,
  WATCH_QUOTA_RETRY_AFTER_SECONDS,
} from './limits.js';
import { isKubeList, type KubeObjectLike } from './list-patch.js';
import { RequestCounters, renderMetrics } from './metrics.js';
import {
  answerOfflineNodeRegistration,
  isDnsSubdomainName,
  isNodeRegistration,
  offlineRefusal,
  registeredNodeName,
} from './offline-writes.js';
import { ensureServingCertificate } from './serving-cert.js';
import { createUpstreamClient, isUnreachableError, timeoutError, type UpstreamClient } from './upstream-client.js';
import type { UpstreamClientCertificate, UpstreamConfig } from './upstream-config.js';
import { relayWatch, type UpstreamState } from './watch-relay.js';
import { WatchQuota } from './watch-quota.js';

/** A listen address. */
export interface HostPort {
  host: string;
  port: number;
}

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
  /** CA that client certificates must chain to; defaults to the upstream CA (which signs kubelet certificates). */
  clientCaPem?: string | undefined;
  /** `--client-cert-map`: client certificate CN → the certificate and key presented upstream. */
  clientCerts: ReadonlyMap<string, UpstreamClientCertificate>;
  /** How often mapped certificate files are checked for rotation (tests shorten it). */
  clientCertReloadCheckMs?: number;
  /** Interval of the `/readyz` probe while online. */
  healthIntervalMs: number;
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
  metrics(): string;
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

/** Request headers never forwarded (hop-by-hop, or the proxy's own). */
const REQUEST_HOP_BY_HOP = [
  'host',
  'connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
];
const RESPONSE_HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'proxy-connection',
  'trailer',
  'upgrade',
]);

type Resolved = { identity: RequestIdentity; clientCertCn: string | undefined } | { refusal: string };

/** The online/offline state and the probe loop. */
class UpstreamStateMachine implements UpstreamState {
  #isOnline = true;
  #probing: Promise<boolean> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #isStopped = false;
  readonly #waiters = new Set<() => void>();

  constructor(
    private readonly upstream: UpstreamClient,
    private readonly intervalMs: number,
    private readonly logger: Logger,
  ) {}

  get isOnline(): boolean {
    return this.#isOnline;
  }

  checkNow(): Promise<boolean> {
    this.#probing ??= this.upstream.probe().then((isOnline) => {
      this.#probing = undefined;
      this.#set(isOnline, isOnline ? 'the readiness probe passed' : 'the readiness probe failed');
      return isOnline;
    });
    return this.#probing;
  }

  onceOnline(callback: () => void): () => void {
    const waiter = (): void => {
      this.#waiters.delete(waiter);
      callback();
    };
    this.#waiters.add(waiter);
    return () => this.#waiters.delete(waiter);
  }

  markUnreachable(reason: string): void {
    this.#set(false, reason);
  }

  start(): void {
    this.#schedule();
  }

  stop(): void {
    this.#isStopped = true;
    clearTimeout(this.#timer);
  }

  #schedule(): void {
    if (this.#isStopped) return;
    clearTimeout(this.#timer);
    const delay = this.#isOnline ? this.intervalMs : Math.min(OFFLINE_PROBE_INTERVAL_MS, this.intervalMs);
    this.#timer = setTimeout(() => void this.checkNow().finally(() => this.#schedule()), delay);
    this.#timer.unref();
  }

  #set(isOnline: boolean, reason: string): void {
    if (isOnline === this.#isOnline) return;
    this.#isOnline = isOnline;
    if (isOnline) {
      this.logger.info(`edge-proxy: the API server is back (${reason}); forwarding again`);
      for (const waiter of [...this.#waiters]) waiter();
    } else {
      this.logger.warn(`edge-proxy: the API server is unreachable (${reason}); serving from the cache`);
    }
    this.#schedule();
  }
}

/** Starts the edge-proxy; resolves once both listeners accept connections. */
export async function startEdgeProxy(options: EdgeProxyOptions): Promise<RunningEdgeProxy> {
  const logger = options.logger ?? silentLogger;
  const counters = new RequestCounters();
  let heldWatches = 0;
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
    onCorrupt: () => counters.corruptEntriesDropped++,
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

  const serving = options.tls
    ? { ...options.tls, caFile: undefined }
    : await ensureServingCertificate({ dir: `${options.cacheDir}/pki`, host: options.listen.host });

  const resolveIdentity = (req: IncomingMessage): Resolved => {
    const impersonation = Object.entries(req.headers)
      .filter(([name]) => name.startsWith('impersonate-'))
      .map(([name, value]) => `${name}=${[value].flat().join(',')}`);
    const authorization = req.headers.authorization;
    if (authorization && /^bearer\s+\S/i.test(authorization)) {
      return {
        identity: { principal: `token:${authorization.replace(/^bearer\s+/i, '').trim()}`, impersonation },
        clientCertCn: undefined,
      };
    }
    const socket = req.socket as TLSSocket;
    const certificate = socket.getPeerCertificate?.();
    if (certificate && Object.keys(certificate).length > 0) {
      if (!socket.authorized) return { refusal: 'the client certificate is not signed by a CA edge-proxy trusts' };
      const cn = [certificate.subject?.CN].flat()[0];
      if (!cn || !options.clientCerts.has(cn)) {
        return { refusal: `no --client-cert-map entry for client certificate CN ${JSON.stringify(cn ?? '')}` };
      }
      return { identity: { principal: `cert:${cn}`, impersonation }, clientCertCn: cn };
    }
    return {
      identity: { principal: authorization ? `authorization:${authorization}` : 'anonymous', impersonation },
      clientCertCn: undefined,
    };
  };

  const forwardHeaders = (
    req: IncomingMessage,
    resolved: { clientCertCn: string | undefined },
    isUpgrade: boolean,
  ): IncomingHttpHeaders => {
    const headers: IncomingHttpHeaders = { ...req.headers };
    for (const name of REQUEST_HOP_BY_HOP) delete headers[name];
    if (resolved.clientCertCn !== undefined) delete headers.authorization;
    if (isUpgrade) {
      headers.connection = 'Upgrade';
      if (req.headers.upgrade) headers.upgrade = req.headers.upgrade;
    }
    return headers;
  };

  const responseHeaders = (headers: IncomingHttpHeaders): IncomingHttpHeaders =>
    Object.fromEntries(Object.entries(headers).filter(([name]) => !RESPONSE_HOP_BY_HOP.has(name)));

  /** An object GET answered from a cached LIST of its collection (kubelet reads its Node this way offline). */
  const findInCachedList = async (identityKey: string, path: string): Promise<CacheEntry | undefined> => {
    const match = /^(\/api\/v1|\/apis\/[^/]+\/[^/]+)(?:\/namespaces\/([^/]+))?\/([^/]+)\/([^/]+)$/.exec(path);
    if (!match) return undefined;
    const [, prefix, namespace, resource, name] = match;
    const collections = new Set([
      namespace ? `${prefix}/namespaces/${namespace}/${resource}` : `${prefix}/${resource}`,
      `${prefix}/${resource}`,
    ]);
    for (const meta of cache.entriesOf(identityKey)) {
      if (!collections.has(meta.path) || !meta.key.startsWith(`${identityKey} json `)) continue;
      const entry = await cache.get(meta.key);
      if (!entry) continue;
      let list: unknown;
      try {
        list = JSON.parse(entry.body.toString('utf8'));
      } catch {
        continue;
      }
      if (!isKubeList(list)) continue;
      const item = list.items.find(
        (candidate: KubeObjectLike) =>
          candidate.metadata?.name === name && (namespace === undefined || candidate.metadata?.namespace === namespace),
      );
      if (!item) continue;
      const object = {
        kind: list.kind!.replace(/List$/, ''),
        apiVersion: list['apiVersion'],
        ...item,
      };
      return { meta: entry.meta, body: Buffer.from(JSON.stringify(object)) };
    }
    return undefined;
  };

  const serveFromCache = async (
    req: IncomingMessage,
    res: ServerResponse,
    classified: ClassifiedRequest,
    identityKey: string,
  ): Promise<void> => {
    let entry = await cache.get(cacheKeyOf(identityKey, classified));
    if (!entry && classified.representation !== 'json' && acceptsPlainJson(req.headers.accept)) {
      entry = await cache.get(cacheKeyOf(identityKey, { ...classified, representation: 'json' }));
    }
    if (!entry && acceptsPlainJson(req.headers.accept) && classified.query === '') {
      entry = await findInCachedList(identityKey, classified.path);
    }
    if (!entry) {
      counters.count('cache_miss_offline');
      // Not 404: a kubelet would take "not found" as "deleted" and kill pods.
      sendStatus(
        res,
        apiStatus(
          503,
          'ServiceUnavailable',
          `edge-proxy: the API server is unreachable and this node has no cached answer for GET ${classified.path}`,
        ),
      );
      return;
    }
    counters.count('cache_hit_offline');
    res.writeHead(200, {
      'content-type': entry.meta.contentType,
      'content-length': entry.body.length,
      'cache-control': 'no-cache, private',
      [CACHE_HEADER]: `cached; stored=${entry.meta.storedAt}`,
    });
    res.end(entry.body);
  };

  const storeAnswer = (
    key: string,
    identityKey: string,
    classified: ClassifiedRequest,
    contentType: string,
    body: Buffer,
  ): Promise<void> => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      return Promise.resolve();
    }
    // A page of a chunked LIST is not the list: never cache it as such.
    const listContinue = (parsed as { metadata?: { continue?: unknown } } | null)?.metadata?.continue;
    if (typeof listContinue === 'string' && listContinue !== '') return Promise.resolve();
    return cache
      .put({ meta: { key, identityKey, path: classified.path, contentType, storedAt: new Date().toISOString() }, body })
      .catch((error) => logger.warn(`edge-proxy: cannot cache ${classified.path}: ${(error as Error).message}`));
  };

  const answerOffline = async (
    req: IncomingMessage,
    res: ServerResponse,
    classified: ClassifiedRequest,
    identityKey: string,
  ): Promise<void> => {
    if (isCacheableRead(classified)) {
      await serveFromCache(req, res, classified, identityKey);
      return;
    }
    const method = req.method ?? 'GET';
    if (isNodeRegistration(method, classified.path)) {
      const body = await readRequestBody(req, MAX_OFFLINE_WRITE_BODY_BYTES).catch(() => '');
      const name = registeredNodeName(body);
      // Only a DNS-1123 name is looked up: anything else would be read as a
      // path (`../namespaces/…`) and answer whether some other entry exists.
      const nodeTarget =
        name !== undefined && isDnsSubdomainName(name) ? parseApiPath(`/api/v1/nodes/${name}`) : undefined;
      let isKnown = false;
      if (name !== undefined && nodeTarget?.ok) {
        const nodeRead = classifyRequest('GET', nodeTarget.value, 'application/json');
        isKnown =
          (await cache.get(cacheKeyOf(identityKey, nodeRead))) !== undefined ||
          (await findInCachedList(identityKey, nodeRead.path)) !== undefined;
      }
      const answer = answerOfflineNodeRegistration(name, isKnown);
      counters.count(answer.kind === 'already-exists' ? 'write_answered_offline' : 'write_refused_offline');
      sendStatus(res, answer.status);
      return;
    }
    counters.count('write_refused_offline');
    req.resume();
    sendStatus(res, offlineRefusal(method, classified.path));
  };

  const forward = (
    req: IncomingMessage,
    res: ServerResponse,
    classified: ClassifiedRequest,
    identityKey: string,
    resolved: { clientCertCn: string | undefined },
  ): void => {
    const isCacheable = isCacheableRead(classified);
    const headers = forwardHeaders(req, resolved, false);
    if (isCacheable) {
      // The cache keeps decoded JSON: ask for it uncompressed (a Go client's "protobuf,json" takes JSON too).
      delete headers['accept-encoding'];
      if (classified.representation === 'json') headers.accept = 'application/json';
    }
    const key = cacheKeyOf(identityKey, classified);
    const request = upstream.request({
      method: req.method ?? 'GET',
      path: classified.target.target,
      headers,
      clientCertCn: resolved.clientCertCn,
    });
    let hasResponse = false;
    const timer = isCacheable
      ? setTimeout(() => request.destroy(timeoutError('waiting for the API server')), UPSTREAM_RESPONSE_TIMEOUT_MS)
      : undefined;
    res.on('close', () => {
      clearTimeout(timer);
      if (!res.writableFinished) request.destroy();
    });
    request.on('response', (upstreamResponse) => {
      clearTimeout(timer);
      hasResponse = true;
      const status = upstreamResponse.statusCode ?? 502;
      res.writeHead(status, upstreamResponse.statusMessage, responseHeaders(upstreamResponse.headers));
      // A watch may send nothing for minutes: its client must see the answer start now.
      if (classified.verb === 'watch') res.flushHeaders();
      const contentType = upstreamResponse.headers['content-type'] ?? '';
      let isKept =
        isCacheable &&
        status === 200 &&
        /^application\/json\b/.test(contentType) &&
        upstreamResponse.headers['content-encoding'] === undefined;
      const chunks: Buffer[] = [];
      let size = 0;
      // The answer is held until stored, within the proxy-wide budget.
      const lease = new BufferLease(budget);
      let isStoring = false;
      if (isKept) {
        upstreamResponse.on('data', (chunk: Buffer) => {
          if (!isKept) return;
          size += chunk.length;
          const fits = size <= MAX_CACHED_BODY_BYTES && lease.tryTake(chunk.length);
          if (!fits) {
            isKept = false;
            chunks.length = 0;
            lease.release();
            if (size <= MAX_CACHED_BODY_BYTES) counters.count('not_cached_memory_bound');
          } else chunks.push(chunk);
        });
      }
      upstreamResponse.on('end', () => {
        counters.count('forwarded');
        if (isKept && upstreamResponse.complete) {
          isStoring = true;
          void storeAnswer(key, identityKey, classified, contentType, Buffer.concat(chunks)).finally(() =>
            lease.release(),
          );
          chunks.length = 0;
        }
        if (isCacheable && status === 404) void cache.delete(key);
      });
      upstreamResponse.on('close', () => {
        if (!isStoring) lease.release();
      });
      upstreamResponse.on('aborted', () => res.destroy());
      upstreamResponse.on('error', () => res.destroy());
      upstreamResponse.pipe(res);
    });
    request.on('error', (error) => {
      clearTimeout(timer);
      if (hasResponse || res.destroyed) {
        res.destroy();
        return;
      }
      if (isUnreachableError(error)) {
        state.markUnreachable(error.message);
        if (isCacheable) {
          void serveFromCache(req, res, classified, identityKey);
        } else {
          counters.count('write_refused_offline');
          sendStatus(res, offlineRefusal(req.method ?? 'GET', classified.path));
        }
        return;
      }
      counters.count('upstream_error');
      logger.warn(`edge-proxy: ${req.method} ${classified.path} failed upstream: ${error.message}`);
      sendStatus(
        res,
        apiStatus(502, 'InternalError', `edge-proxy: the request to the API server failed: ${error.message}`),
      );
    });
    req.pipe(request);
  };

  /** The request target if it passes the one path rule; otherwise the 400 has been sent. */
  const checkedTarget = (req: IncomingMessage, refuse: (status: ApiStatus) => void): ApiPath | undefined => {
    const checked = parseApiPath(req.url ?? '');
    if (checked.ok) return checked.value;
    counters.count('bad_request_path');
    refuse(
      apiStatus(
        400,
        'BadRequest',
        `edge-proxy: ${checked.message}; request paths are forwarded only when they have exactly one reading`,
      ),
    );
    return undefined;
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const target = checkedTarget(req, (status) => {
      req.resume();
      sendStatus(res, status);
    });
    if (!target) return;
    const resolved = resolveIdentity(req);
    if ('refusal' in resolved) {
      counters.count('unauthorized');
      req.resume();
      sendStatus(res, apiStatus(401, 'Unauthorized', `edge-proxy: ${resolved.refusal}`));
      return;
    }
    const classified = classifyRequest(req.method ?? 'GET', target, req.headers.accept);
    const identityKey = identityKeyOf(cache.installKey, resolved.identity);
    if (classified.verb === 'watch') {
      // Every watch takes a slot, whatever form it streams in.
      const slot = watchQuota.tryAcquire(identityKey);
      if ('refusal' in slot) {
        counters.count('watch_refused_quota');
        sendStatus(
          res,
          apiStatus(
            429,
            'TooManyRequests',
            slot.refusal === 'identity'
              ? `edge-proxy: this client already has ${watchQuota.perIdentity} open watches (the most one client may hold)`
              : `edge-proxy: ${watchQuota.total} watches are open (the most this proxy holds)`,
            { retryAfterSeconds: WATCH_QUOTA_RETRY_AFTER_SECONDS },
          ),
          { 'retry-after': String(WATCH_QUOTA_RETRY_AFTER_SECONDS) },
        );
        return;
      }
      res.once('close', slot.release);
      if (classified.representation === undefined) {
        // A form the proxy cannot read (protobuf only): streamed through, never held offline.
        if (state.isOnline) forward(req, res, classified, identityKey, resolved);
        else void answerOffline(req, res, classified, identityKey);
        return;
      }
      counters.count('forwarded');
      relayWatch({
        req,
        res,
        classified,
        headers: forwardHeaders(req, resolved, false),
        clientCertCn: resolved.clientCertCn,
        listKey:
          classified.representation === 'json' && classified.isCacheable
            ? cacheKeyOf(identityKey, classified)
            : undefined,
        upstream,
        cache,
        budget,
        state,
        logger,
        onHeld: (delta) => (heldWatches += delta),
      });
      return;
    }
    if (!state.isOnline) {
      void answerOffline(req, res, classified, identityKey).catch((error) => {
        logger.warn(`edge-proxy: offline answer failed: ${(error as Error).message}`);
        sendStatus(res, apiStatus(500, 'InternalError', 'edge-proxy: cannot answer from the cache'));
      });
      return;
    }
    forward(req, res, classified, identityKey, resolved);
  };

  const handleUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => socket.destroy());
    const target = checkedTarget(req, (status) => socket.end(rawStatusResponse(status)));
    if (!target) return;
    const resolved = resolveIdentity(req);
    if ('refusal' in resolved) {
      counters.count('unauthorized');
      socket.end(rawStatusResponse(apiStatus(401, 'Unauthorized', `edge-proxy: ${resolved.refusal}`)));
      return;
    }
    const path = target.path;
    if (!state.isOnline) {
      counters.count('write_refused_offline');
      socket.end(rawStatusResponse(offlineRefusal(req.method ?? 'GET', path)));
      return;
    }
    const request = upstream.request({
      method: req.method ?? 'GET',
      path: target.target,
      headers: forwardHeaders(req, resolved, true),
      clientCertCn: resolved.clientCertCn,
    });
    request.on('upgrade', (upstreamResponse, upstreamSocket, upstreamHead) => {
      counters.count('forwarded');
      const lines = [`HTTP/1.1 ${upstreamResponse.statusCode} ${upstreamResponse.statusMessage ?? ''}`];
      for (let i = 0; i < upstreamResponse.rawHeaders.length; i += 2) {
        lines.push(`${upstreamResponse.rawHeaders[i]}: ${upstreamResponse.rawHeaders[i + 1]}`);
      }
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (upstreamHead.length > 0) socket.write(upstreamHead);
      if (head.length > 0) upstreamSocket.write(head);
      upstreamSocket.on('error', () => socket.destroy());
      socket.on('error', () => upstreamSocket.destroy());
      upstreamSocket.on('close', () => socket.destroy());
      socket.on('close', () => upstreamSocket.destroy());
      // pipe() pauses each side while the other's buffer is full.
      upstreamSocket.pipe(socket);
      socket.pipe(upstreamSocket);
    });
    request.on('response', (upstreamResponse) => {
      // The API server refused the upgrade (403, 400…): pass its answer on and close.
      counters.count('forwarded');
      const lines = [`HTTP/1.1 ${upstreamResponse.statusCode} ${upstreamResponse.statusMessage ?? ''}`];
      for (let i = 0; i < upstreamResponse.rawHeaders.length; i += 2) {
        const name = upstreamResponse.rawHeaders[i]!;
        if (RESPONSE_HOP_BY_HOP.has(name.toLowerCase())) continue;
        lines.push(`${name}: ${upstreamResponse.rawHeaders[i + 1]}`);
      }
      lines.push('Connection: close');
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
      upstreamResponse.pipe(socket);
    });
    request.on('error', (error) => {
      if (isUnreachableError(error)) state.markUnreachable(error.message);
      counters.count('upstream_error');
      socket.end(
        rawStatusResponse(
          isUnreachableError(error)
            ? offlineRefusal(req.method ?? 'GET', path)
            : apiStatus(502, 'InternalError', `edge-proxy: the upgrade to the API server failed: ${error.message}`),
        ),
      );
    });
    request.end();
  };

  const https = await import('node:https');
  const server: HttpsServer = https.createServer({
    cert: serving.certPem,
    key: serving.keyPem,
    ca: options.clientCaPem ?? options.upstream.caPem,
    requestCert: true,
    rejectUnauthorized: false,
  });
  server.keepAliveTimeout = CLIENT_KEEP_ALIVE_TIMEOUT_MS;
  server.on('request', handle);
  server.on('upgrade', handleUpgrade);
  server.on('clientError', (_error, socket) => socket.destroy());
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  const metrics = (): string =>
    renderMetrics({
      isOnline: state.isOnline,
      cacheEntries: cache.entryCount,
      cacheBytes: cache.byteCount,
      corruptEntriesDropped: counters.corruptEntriesDropped,
      heldWatches,
      openWatches: watchQuota.open,
      bufferedCacheBytes: budget.used,
      requests: counters.byOutcome,
    });

  let metricsServer: HttpServer | undefined;
  if (options.metricsListen) {
    const http = await import('node:http');
    metricsServer = http.createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://edge-proxy.invalid').pathname;
      if (path === '/healthz') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('ok\n');
      } else if (path === '/metrics') {
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
        res.end(metrics());
      } else {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('not found: the edge-proxy serves /healthz and /metrics here\n');
      }
    });
  }

  const listen = (target: HttpServer | HttpsServer, address: HostPort, what: string): Promise<number> =>
    new Promise((resolve, reject) => {
      const onError = (error: Error): void =>
        reject(
          new EdgeadmError(`edge-proxy cannot listen on ${address.host}:${address.port} (${what}): ${error.message}`, {
            code: 'E_EDGE_LISTEN',
            cause: error,
          }),
        );
      target.once('error', onError);
      target.listen(address.port, address.host, () => {
        target.off('error', onError);
        resolve((target.address() as { port: number }).port);
      });
    });

  const close = async (): Promise<void> => {
    state.stop();
    const closing = [new Promise<void>((resolve) => server.close(() => resolve()))];
    if (metricsServer) closing.push(new Promise<void>((resolve) => metricsServer!.close(() => resolve())));
    const grace = setTimeout(() => {
      for (const socket of sockets) socket.destroy();
      metricsServer?.closeAllConnections();
    }, SHUTDOWN_GRACE_MS);
    server.closeIdleConnections();
    metricsServer?.closeIdleConnections();
    await Promise.all(closing);
    clearTimeout(grace);
    await cache.flush();
    upstream.close();
  };

  let port: number;
  let metricsPort: number | undefined;
  try {
    port = await listen(server, options.listen, 'proxy');
    if (metricsServer && options.metricsListen)
      metricsPort = await listen(metricsServer, options.metricsListen, 'metrics');
  } catch (error) {
    await close().catch(() => {});
    throw error;
  }

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
    metrics,
    close,
  };
}

/** Whether a request's answer is stored, and served from the cache offline. */
function isCacheableRead(classified: ClassifiedRequest): boolean {
  return classified.verb === 'read' && classified.isCacheable && classified.representation !== undefined;
}

/** Reads a request body up to `limit` bytes. */
function readRequestBody(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.destroy();
        reject(new Error('request body too large'));
      } else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
