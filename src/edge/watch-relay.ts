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
import type { BufferBudget } from './buffer-budget.js';
import type { DiskCache } from './disk-cache.js';
import { MAX_WATCH_EVENT_BYTES } from './limits.js';
import { applyWatchEvent, isKubeList, type WatchEvent } from './list-patch.js';
import { isUnreachableError, type UpstreamClient } from './upstream-client.js';
import type { UpstreamState } from './upstream-state.js';
import {
  WatchLineSplitter,
  initialVersionOf,
  parseWatchEvent,
  resumeTarget,
  versionAfter,
  watchTimeoutMs,
} from './watch-stream.js';
import { readBody, resyncFromCachedList } from './watch-resync.js';

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

/** Serves one client watch until the client leaves or the upstream ends it. */
export function relayWatch(options: WatchRelayOptions): void {
  const relay = new WatchRelay(options);
  const { state, cache, listKey, res, classified } = options;
  if (state.isOnline) relay.connect();
  else if (listKey !== undefined && cache.has(listKey)) relay.hold();
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

/** One client watch: streaming, held, or resyncing. */
class WatchRelay {
  #lastVersion: string | undefined;
  readonly #headers: IncomingHttpHeaders;
  readonly #heldContentType: string;
  #isClosed = false;
  #isHeld = false;
  #current: ClientRequest | undefined;
  #cancelOnline: (() => void) | undefined;
  #cacheChain: Promise<void> = Promise.resolve();
  readonly #timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: WatchRelayOptions) {
    const { req, res, classified } = options;
    this.#lastVersion = initialVersionOf(classified.target.query);
    const isJson = classified.representation === 'json';
    this.#headers = { ...options.headers };
    delete this.#headers['accept-encoding']; // events are parsed, so the stream must not be compressed
    if (isJson) this.#headers['accept'] = 'application/json';
    this.#heldContentType = isJson ? 'application/json' : (req.headers.accept ?? 'application/json').split(',')[0]!;
    const timeoutMs = watchTimeoutMs(classified.target.query);
    // The client asked for the watch to end after this long; held or not, it ends cleanly then.
    if (timeoutMs !== undefined) this.#timer = setTimeout(() => res.end(), timeoutMs);
    res.on('close', () => {
      this.#isClosed = true;
      this.#current?.destroy();
      this.#cancelOnline?.();
      if (this.#isHeld) options.onHeld(-1);
      this.#isHeld = false;
      clearTimeout(this.#timer);
    });
  }

  /** Watches upstream from the client's target, its resourceVersion moved on to what the client has seen. */
  connect(): void {
    if (this.#isClosed) return;
    const { upstream, res, state } = this.options;
    const request = upstream.request({
      method: 'GET',
      path: resumeTarget(this.options.classified.target, this.#lastVersion),
      headers: this.#headers,
      clientCertCn: this.options.clientCertCn,
    });
    this.#current = request;
    let isLost = false;
    const lost = (): void => {
      if (isLost || this.#isClosed || this.#current !== request) return;
      isLost = true;
      this.hold();
    };
    request.on('response', (upstreamResponse) => this.#onResponse(request, upstreamResponse, lost));
    request.on('error', (error) => {
      if (this.#isClosed || this.#current !== request) return;
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
  }

  /** Keeps the client's stream open, sending nothing, until the upstream is back. */
  hold(): void {
    if (this.#isClosed || this.#isHeld) return;
    const { state, logger, classified } = this.options;
    this.#current = undefined;
    this.#startStream(200, { 'content-type': this.#heldContentType, 'cache-control': 'no-cache, private' });
    this.#isHeld = true;
    this.options.onHeld(1);
    logger.debug(`edge-proxy: holding a watch on ${classified.path} until the API server returns`);
    void state.checkNow().then((isOnline) => {
      if (this.#isClosed || !this.#isHeld) return;
      if (isOnline) void this.#resync();
      else this.#cancelOnline = state.onceOnline(() => void this.#resync());
    });
  }

  #onResponse(request: ClientRequest, upstreamResponse: IncomingMessage, lost: () => void): void {
    const { res, logger, classified } = this.options;
    if (this.#isClosed) {
      upstreamResponse.destroy();
      return;
    }
    const status = upstreamResponse.statusCode ?? 502;
    if (status !== 200) {
      this.#passRefusal(status, upstreamResponse);
      return;
    }
    this.#startStream(200, responseHeaders(upstreamResponse.headers));
    upstreamResponse.setEncoding('utf8');
    const splitter = new WatchLineSplitter(MAX_WATCH_EVENT_BYTES);
    upstreamResponse.on('data', (chunk: string) => {
      const { lines, isOverflow } = splitter.push(chunk);
      let isFull = false;
      for (const line of lines) {
        if (!this.#writeEvent(line)) isFull = true;
        const event = parseWatchEvent(line);
        // Not JSON: forwarded as it came, nothing to learn from it.
        if (event) this.#noteEvent(event);
      }
      if (isOverflow) {
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
      if (upstreamResponse.complete && this.#current === request) res.end();
    });
    upstreamResponse.on('error', lost);
    upstreamResponse.on('aborted', lost);
    upstreamResponse.on('close', () => {
      if (!upstreamResponse.complete) lost();
    });
  }

  /** The upstream refused the watch: its answer as it is, or as an ERROR event once streaming (as the API server does). */
  #passRefusal(status: number, upstreamResponse: IncomingMessage): void {
    const { res } = this.options;
    if (!res.headersSent) {
      res.writeHead(status, responseHeaders(upstreamResponse.headers));
      upstreamResponse.pipe(res);
      return;
    }
    void readBody(upstreamResponse, MAX_WATCH_EVENT_BYTES)
      .then((body) => this.#writeEvent(JSON.stringify({ type: 'ERROR', object: JSON.parse(body.toString('utf8')) })))
      .catch(() => {})
      .finally(() => res.end());
  }

  #startStream(status: number, streamHeaders: IncomingHttpHeaders): void {
    const { res } = this.options;
    if (res.headersSent) return;
    res.writeHead(status, streamHeaders);
    res.flushHeaders();
  }

  #writeEvent(line: string): boolean {
    return this.options.res.write(`${line}\n`);
  }

  /** Moves the client's position on and applies the event to the cached list. */
  #noteEvent(event: WatchEvent): void {
    this.#lastVersion = versionAfter(event) ?? this.#lastVersion;
    const { listKey, cache, logger } = this.options;
    if (!listKey || event.type === 'ERROR') return;
    this.#cacheChain = this.#cacheChain
      .then(() => cache.updateJson(listKey, (list) => isKubeList(list) && applyWatchEvent(list, event)))
      .catch((error) => logger.warn(`edge-proxy: cannot patch a cached list: ${(error as Error).message}`));
  }

  /** Re-lists, sends the difference from what the client has seen, then watches from the fresh list. */
  async #resync(): Promise<void> {
    if (this.#isClosed || !this.#isHeld) return;
    this.#isHeld = false;
    this.options.onHeld(-1);
    this.#cancelOnline = undefined;
    const listKey = this.options.listKey;
    if (listKey) {
      await this.#cacheChain;
      const outcome = await resyncFromCachedList(
        { ...this.options, listKey, headers: this.#headers },
        {
          isClosed: () => this.#isClosed,
          setCurrent: (request) => (this.#current = request),
          write: async (line) => {
            if (!this.#writeEvent(line)) await new Promise<void>((resolve) => this.options.res.once('drain', resolve));
          },
        },
      );
      if (outcome.next === 'closed') return;
      if (outcome.next === 'hold') {
        this.hold();
        return;
      }
      this.#lastVersion = outcome.version ?? this.#lastVersion;
    }
    this.connect();
  }
}
