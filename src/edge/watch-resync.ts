/**
 * The resync of a held watch when the upstream is back: re-list, send the
 * difference from the cached list (what the client has seen) as events,
 * store the fresh list, and tell the relay the resourceVersion to resume
 * from. The re-list is held within the proxy-wide buffering budget; without
 * room the watch resumes from the client's last resourceVersion instead.
 */
import type { ClientRequest, IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Logger } from '../log/run-log.js';
import { BufferLease, type BufferBudget } from './buffer-budget.js';
import type { ClassifiedRequest } from './cache-key.js';
import type { DiskCache } from './disk-cache.js';
import { MAX_CACHED_BODY_BYTES } from './limits.js';
import { diffLists, isKubeList } from './list-patch.js';
import { isUnreachableError, type UpstreamClient } from './upstream-client.js';
import type { UpstreamState } from './upstream-state.js';

/** Why a body was not read: larger than its bound, or than what the memory budget had left. */
export class BodyTooLargeError extends Error {}

/** Reads a whole (bounded) body, taking its bytes from `lease` when given. */
export function readBody(response: IncomingMessage, limit: number, lease?: BufferLease): Promise<Buffer> {
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

/** A body as JSON, or `undefined`. */
function parseJson(body: Buffer | undefined): unknown {
  try {
    return body ? JSON.parse(body.toString('utf8')) : undefined;
  } catch {
    return undefined;
  }
}

/** What one watch's resync works with. */
export interface ResyncParts {
  classified: ClassifiedRequest;
  /** Key of the cached list the client has seen. */
  listKey: string;
  headers: IncomingHttpHeaders;
  clientCertCn: string | undefined;
  upstream: UpstreamClient;
  cache: DiskCache;
  budget: BufferBudget;
  state: UpstreamState;
  logger: Logger;
}

/** The relay's side of a resync: whether the client left, the request in flight, and writing an event. */
export interface ResyncSink {
  isClosed(): boolean;
  /** The re-list request (destroyed if the client leaves). */
  setCurrent(request: ClientRequest | undefined): void;
  /** Writes one event line, waiting while the client's socket is full. */
  write(line: string): Promise<void>;
}

/**
 * What the relay does next: resume watching (from `version` when the
 * re-list gave one, else from what the client saw), hold again (the upstream
 * went away again), or nothing (the client left).
 */
export type ResyncOutcome = { next: 'connect'; version: string | undefined } | { next: 'hold' } | { next: 'closed' };

/** Re-lists, sends the difference from the cached list, and stores the fresh one. */
export async function resyncFromCachedList(parts: ResyncParts, sink: ResyncSink): Promise<ResyncOutcome> {
  const { classified, cache, logger } = parts;
  const cached = await cache.get(parts.listKey);
  const before = parseJson(cached?.body);
  if (!cached || !isKubeList(before)) return { next: 'connect', version: undefined };
  const lease = new BufferLease(parts.budget);
  let status: number;
  let body: Buffer;
  try {
    ({ status, body } = await relist(parts, sink, lease));
  } catch (error) {
    lease.release();
    if (sink.isClosed()) return { next: 'closed' };
    sink.setCurrent(undefined);
    if (error instanceof BodyTooLargeError) {
      // No memory for the diff now: resume from what the client saw instead (it re-lists on a 410).
      logger.warn(`edge-proxy: watch on ${classified.path} resumes without a resync: ${error.message}`);
      return { next: 'connect', version: undefined };
    }
    if (isUnreachableError(error)) parts.state.markUnreachable((error as Error).message);
    return { next: 'hold' };
  }
  if (sink.isClosed()) {
    lease.release();
    return { next: 'closed' };
  }
  const fresh = status === 200 ? parseJson(body) : undefined;
  if (!isKubeList(fresh)) {
    lease.release();
    return { next: 'connect', version: undefined };
  }
  const events = diffLists(before, fresh);
  try {
    for (const event of events) await sink.write(JSON.stringify(event));
    if (sink.isClosed()) return { next: 'closed' };
    await cache.put({ meta: { ...cached.meta, storedAt: new Date().toISOString() }, body });
  } finally {
    lease.release();
  }
  logger.info(`edge-proxy: watch on ${classified.path} resynced with ${events.length} change(s) from the outage`);
  return { next: 'connect', version: fresh.metadata?.resourceVersion };
}

/** The fresh LIST, its bytes taken from `lease`. */
async function relist(parts: ResyncParts, sink: ResyncSink, lease: BufferLease) {
  const { classified } = parts;
  const request = parts.upstream.request({
    method: 'GET',
    path: `${classified.path}${classified.query ? `?${classified.query}` : ''}`,
    headers: parts.headers,
    clientCertCn: parts.clientCertCn,
  });
  sink.setCurrent(request);
  const response = await new Promise<IncomingMessage>((resolve, reject) => {
    request.on('response', resolve);
    request.on('error', reject);
    request.end();
  });
  const status = response.statusCode ?? 502;
  return { status, body: await readBody(response, MAX_CACHED_BODY_BYTES, lease) };
}
