/**
 * One client WATCH through the edge-proxy.
 *
 * While the upstream is there, events stream through line by line (the
 * upstream is paused whenever the client's socket is full) and each one is
 * applied to the cached LIST of the same identity, path and selectors.
 *
 * When the upstream goes away, the client's watch is **held**: the
 * connection stays open and nothing is sent (a client that sees its watch
 * end would re-list, and a re-list offline only returns the cache again).
 * When the upstream is back the watch resyncs: the list is fetched again,
 * the difference from the cached list — which is what the client has seen —
 * is sent as ADDED/MODIFIED/DELETED events, and the real watch resumes from
 * the fresh list's resourceVersion, so no change made during the outage is
 * lost. Without a cached list the watch resumes from the last
 * resourceVersion the client saw; if the upstream no longer has that
 * history it says so (410 Expired) and the client re-lists, as it would
 * against the API server.
 *
 * A watch that starts while the upstream is away is held only when this
 * identity has the list it watches cached: the proxy cannot authenticate
 * anyone offline, and a cached list shows the API server once answered this
 * identity for it. Any other watch started offline gets the same 503 as an
 * uncached read. The request goes upstream as the client sent it (the
 * checked target), only its `resourceVersion` moved on when it resumes.
 */
import type { ClientRequest, IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../log/run-log.js';
import { sendStatus, apiStatus } from './api-status.js';
import type { ClassifiedRequest } from './cache-key.js';
import { BufferLease, type BufferBudget } from './buffer-budget.js';
import type { DiskCache } from './disk-cache.js';
import { MAX_CACHED_BODY_BYTES, MAX_WATCH_EVENT_BYTES } from './limits.js';
import { applyWatchEvent, diffLists, isKubeList, type KubeListLike, type WatchEvent } from './list-patch.js';
import { isUnreachableError, type UpstreamClient } from './upstream-client.js';
import type { UpstreamState } from './upstream-state.js';

/** Options of {@link relayWatch}. */
export interface WatchRelayOptions {
  req: IncomingMessage;
  res: ServerResponse;
  classified: ClassifiedRequest;
  /** Request headers to send upstream (hop-by-hop ones removed, identity applied). */
  headers: IncomingHttpHeaders;
  clientCertCn: string | undefined;
  /** Key of the cached LIST this watch keeps current (JSON watches only). */
  listKey: string | undefined;
  upstream: UpstreamClient;
  cache: DiskCache;
  /** The proxy-wide budget for answers held in memory (the re-list of a resync). */
  budget: BufferBudget;
  state: UpstreamState;
  logger: Logger;
  /** Told when a watch starts or stops being held (for metrics). */
  onHeld(delta: 1 | -1): void;
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'trailer', 'upgrade']);

function responseHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name)));
}

/** Why a body was not read: larger than its bound, or than what the memory budget had left. */
class BodyTooLargeError extends Error {}

/** Reads a whole (bounded) body, taking its bytes from `lease` when given. */
function readBody(response: IncomingMessage, limit: number, lease?: BufferLease): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    response.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit || (lease && !lease.tryTake(chunk.length))) {
        const error = new BodyTooLargeError(`answer larger than ${limit} bytes or than the memory budget left`);
        reject(error);
        response.destroy(error);
      } else chunks.push(chunk);
    });
    response.on('end', () => resolve(Buffer.concat(chunks)));
    response.on('error', reject);
    response.on('aborted', () => reject(Object.assign(new Error('aborted'), { code: 'ECONNRESET' })));
  });
}

/** Serves one client watch until the client leaves or the upstream ends it. */
export function relayWatch(options: WatchRelayOptions): void {
  const { req, res, classified, upstream, cache, state, logger } = options;
  const clientQuery = new URLSearchParams(classified.target.query);
  const initialVersion = clientQuery.get('resourceVersion');
  let lastVersion = initialVersion && initialVersion !== '0' ? initialVersion : undefined;
  const isJson = classified.representation === 'json';
  const headers: IncomingHttpHeaders = { ...options.headers };
  delete headers['accept-encoding']; // events are parsed, so the stream must not be compressed
  if (isJson) headers['accept'] = 'application/json';
  const heldContentType = isJson ? 'application/json' : (req.headers.accept ?? 'application/json').split(',')[0]!;

  let isClosed = false;
  let isHeld = false;
  let current: ClientRequest | undefined;
  let cancelOnline: (() => void) | undefined;
  let cacheChain: Promise<void> = Promise.resolve();
  const timers: NodeJS.Timeout[] = [];

  const timeoutSeconds = Number(clientQuery.get('timeoutSeconds'));
  if (Number.isFinite(timeoutSeconds) && timeoutSeconds > 0) {
    // The client asked for the watch to end after this long; held or not, it ends cleanly then.
    timers.push(setTimeout(() => res.end(), timeoutSeconds * 1000));
  }

  res.on('close', () => {
    isClosed = true;
    current?.destroy();
    cancelOnline?.();
    if (isHeld) options.onHeld(-1);
    isHeld = false;
    for (const timer of timers) clearTimeout(timer);
  });

  const startStream = (status: number, streamHeaders: IncomingHttpHeaders): void => {
    if (res.headersSent) return;
    res.writeHead(status, streamHeaders);
    res.flushHeaders();
  };

  const writeEvent = (line: string): boolean => res.write(`${line}\n`);

  const noteEvent = (event: WatchEvent): void => {
    const version = event.object?.metadata?.resourceVersion;
    if (event.type !== 'ERROR' && typeof version === 'string') lastVersion = version;
    const listKey = options.listKey;
    if (!listKey || event.type === 'ERROR') return;
    cacheChain = cacheChain
      .then(() => cache.updateJson(listKey, (list) => isKubeList(list) && applyWatchEvent(list, event)))
      .catch((error) => logger.warn(`edge-proxy: cannot patch a cached list: ${(error as Error).message}`));
  };

  /** The client's own target; when resuming, its resourceVersion moved on (the path is never re-parsed). */
  const watchPath = (): string => {
    const { path, query, target } = classified.target;
    if (lastVersion === undefined) return target;
    const replaced = new Set(['resourceVersion', 'sendInitialEvents', 'resourceVersionMatch']);
    const kept = query
      .split('&')
      .filter((pair) => pair !== '' && !replaced.has([...new URLSearchParams(pair).keys()][0] ?? ''));
    kept.push(`resourceVersion=${encodeURIComponent(lastVersion)}`);
    return `${path}?${kept.join('&')}`;
  };

  const hold = (): void => {
    if (isClosed || isHeld) return;
    current = undefined;
    startStream(200, { 'content-type': heldContentType, 'cache-control': 'no-cache, private' });
    isHeld = true;
    options.onHeld(1);
    logger.debug(`edge-proxy: holding a watch on ${classified.path} until the API server returns`);
    void state.checkNow().then((isOnline) => {
      if (isClosed || !isHeld) return;
      if (isOnline) void resync();
      else cancelOnline = state.onceOnline(() => void resync());
    });
  };

  const connect = (): void => {
    if (isClosed) return;
    const request = upstream.request({ method: 'GET', path: watchPath(), headers, clientCertCn: options.clientCertCn });
    current = request;
    let isLost = false;
    const lost = (): void => {
      if (isLost || isClosed || current !== request) return;
      isLost = true;
      hold();
    };
    request.on('response', (upstreamResponse) => {
      if (isClosed) {
        upstreamResponse.destroy();
        return;
      }
      const status = upstreamResponse.statusCode ?? 502;
      if (status !== 200) {
        if (!res.headersSent) {
          res.writeHead(status, responseHeaders(upstreamResponse.headers));
          upstreamResponse.pipe(res);
        } else {
          // Already streaming: the client learns through an ERROR event, as from the API server.
          void readBody(upstreamResponse, MAX_WATCH_EVENT_BYTES)
            .then((body) => writeEvent(JSON.stringify({ type: 'ERROR', object: JSON.parse(body.toString('utf8')) })))
            .catch(() => {})
            .finally(() => res.end());
        }
        return;
      }
      startStream(200, responseHeaders(upstreamResponse.headers));
      upstreamResponse.setEncoding('utf8');
      let partial = '';
      upstreamResponse.on('data', (chunk: string) => {
        partial += chunk;
        let newline: number;
        let isFull = false;
        while ((newline = partial.indexOf('\n')) >= 0) {
          const line = partial.slice(0, newline).trim();
          partial = partial.slice(newline + 1);
          if (line === '') continue;
          if (!writeEvent(line)) isFull = true;
          try {
            noteEvent(JSON.parse(line) as WatchEvent);
          } catch {
            // Not JSON: forwarded as it came, nothing to learn from it.
          }
        }
        if (partial.length > MAX_WATCH_EVENT_BYTES) {
          logger.warn(
            `edge-proxy: a watch event on ${classified.path} passed ${MAX_WATCH_EVENT_BYTES} bytes; ending the watch`,
          );
          upstreamResponse.destroy();
          res.end();
          return;
        }
        if (isFull) {
          upstreamResponse.pause();
          res.once('drain', () => upstreamResponse.resume());
        }
      });
      upstreamResponse.on('end', () => {
        // A clean end (timeoutSeconds, or the API server rotating watches): the client re-watches by itself.
        if (upstreamResponse.complete && current === request) res.end();
      });
      upstreamResponse.on('error', lost);
      upstreamResponse.on('aborted', lost);
      upstreamResponse.on('close', () => {
        if (!upstreamResponse.complete) lost();
      });
    });
    request.on('error', (error) => {
      if (isClosed || current !== request) return;
      if (isUnreachableError(error)) {
        state.markUnreachable(error.message);
        lost();
      } else if (!res.headersSent) {
        sendStatus(res, apiStatus(502, 'InternalError', `edge-proxy: watch failed upstream: ${error.message}`));
      } else {
        res.end();
      }
    });
    request.end();
  };

  const writeWithDrain = async (line: string): Promise<void> => {
    if (!writeEvent(line)) await new Promise<void>((resolve) => res.once('drain', resolve));
  };

  /** Re-lists, sends the difference from what the client has seen, then watches from the fresh list. */
  const resync = async (): Promise<void> => {
    if (isClosed || !isHeld) return;
    isHeld = false;
    options.onHeld(-1);
    cancelOnline = undefined;
    const listKey = options.listKey;
    if (listKey) {
      await cacheChain;
      const cached = await cache.get(listKey);
      let before: unknown;
      try {
        before = cached ? JSON.parse(cached.body.toString('utf8')) : undefined;
      } catch {
        before = undefined;
      }
      if (cached && isKubeList(before)) {
        let body: Buffer;
        let status: number;
        const lease = new BufferLease(options.budget);
        try {
          const request = upstream.request({
            method: 'GET',
            path: `${classified.path}${classified.query ? `?${classified.query}` : ''}`,
            headers,
            clientCertCn: options.clientCertCn,
          });
          current = request;
          const response = await new Promise<IncomingMessage>((resolve, reject) => {
            request.on('response', resolve);
            request.on('error', reject);
            request.end();
          });
          status = response.statusCode ?? 502;
          body = await readBody(response, MAX_CACHED_BODY_BYTES, lease);
        } catch (error) {
          lease.release();
          if (isClosed) return;
          if (error instanceof BodyTooLargeError) {
            // No memory for the diff now: resume from what the client saw instead (it re-lists on a 410).
            logger.warn(`edge-proxy: watch on ${classified.path} resumes without a resync: ${error.message}`);
            current = undefined;
            connect();
            return;
          }
          if (isUnreachableError(error)) state.markUnreachable((error as Error).message);
          current = undefined;
          hold();
          return;
        }
        if (isClosed) {
          lease.release();
          return;
        }
        let fresh: unknown;
        try {
          fresh = status === 200 ? JSON.parse(body.toString('utf8')) : undefined;
        } catch {
          fresh = undefined;
        }
        if (!isKubeList(fresh)) {
          lease.release();
        } else {
          const events = diffLists(before, fresh);
          try {
            for (const event of events) await writeWithDrain(JSON.stringify(event));
            if (isClosed) return;
            await cache.put({ meta: { ...cached.meta, storedAt: new Date().toISOString() }, body });
          } finally {
            lease.release();
          }
          lastVersion = (fresh as KubeListLike).metadata?.resourceVersion ?? lastVersion;
          logger.info(
            `edge-proxy: watch on ${classified.path} resynced with ${events.length} change(s) from the outage`,
          );
        }
      }
    }
    connect();
  };

  if (state.isOnline) connect();
  else if (options.listKey !== undefined && cache.has(options.listKey)) hold();
  else
    sendStatus(
      res,
      apiStatus(
        503,
        'ServiceUnavailable',
        `edge-proxy: the API server is unreachable and this node has no cached list to watch for ${classified.path}`,
      ),
    );
}
