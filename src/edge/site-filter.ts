/**
 * The site filter on the proxy's answers (`--site`): every answer to a GET
 * of EndpointSlices (a list, one slice, a watch) goes to the client through
 * {@link siteFilteredAnswer}, whichever part answers it — forwarded, relayed
 * from a watch, or served from the cache offline — so the node's
 * kube-proxy sees a grid Service's endpoints in its own site only
 * (src/sites/endpoint-filter.ts says which, and why by zone).
 *
 * The request is made to ask for uncompressed JSON, which the proxy can read
 * (kube-proxy accepts JSON). A list or object answer is held whole (at most
 * {@link MAX_CACHED_BODY_BYTES}, the bound of a cached answer) and written
 * filtered; a watch is filtered line by line as it streams, and a write
 * returns what the client's socket returned, so backpressure holds. An
 * answer over the bound ends the connection: sending it unfiltered would
 * let traffic leave the site.
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { filterEndpointSliceAnswer, filterEndpointSliceEvent, isEndpointSlicePath } from '../sites/endpoint-filter.js';
import { MAX_CACHED_BODY_BYTES } from './limits.js';

type WriteCallback = (error?: Error | null) => void;

function withoutContentLength(headers: unknown): unknown {
  if (Array.isArray(headers)) {
    // [name, value, name, value…] or [[name, value]…]
    if (headers.length > 0 && Array.isArray(headers[0])) {
      return (headers as string[][]).filter(([name]) => name?.toLowerCase() !== 'content-length');
    }
    const pairs: unknown[] = [];
    for (let i = 0; i + 1 < headers.length; i += 2) {
      if (String(headers[i]).toLowerCase() !== 'content-length') pairs.push(headers[i], headers[i + 1]);
    }
    return pairs;
  }
  if (typeof headers !== 'object' || headers === null) return headers;
  return Object.fromEntries(
    Object.entries(headers as OutgoingHttpHeaders).filter(([name]) => name.toLowerCase() !== 'content-length'),
  );
}

function isWatchRequest(url: string, path: string): boolean {
  return /[?&]watch=(1|true)(&|$)/.test(url) || path.includes('/watch/');
}

/**
 * `res`, filtered for `site` when `req` reads EndpointSlices; otherwise
 * `res` as it is. Mutates the request's Accept headers for such a read.
 */
export function siteFilteredAnswer(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  site: string,
): ServerResponse {
  if (req.method !== 'GET' || !isEndpointSlicePath(path)) return res;
  req.headers.accept = 'application/json';
  delete req.headers['accept-encoding'];
  const isWatch = isWatchRequest(req.url ?? '', path);
  const write = res.write.bind(res) as (chunk: string | Buffer, callback?: WriteCallback) => boolean;
  const end = res.end.bind(res);
  const writeHead = res.writeHead.bind(res) as (status: number, ...rest: unknown[]) => ServerResponse;
  res.writeHead = (status: number, ...rest: unknown[]) => {
    res.removeHeader('content-length');
    return writeHead(status, ...rest.map(withoutContentLength));
  };
  let pending = '';
  const take = (chunk: unknown): void => {
    if (chunk === undefined || chunk === null || typeof chunk === 'function') return;
    pending += typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8');
    if (pending.length > MAX_CACHED_BODY_BYTES) {
      pending = '';
      res.destroy(new Error('edge-proxy: an EndpointSlice answer over the bound of the site filter'));
    }
  };
  /** The complete event lines held, filtered, as one string; the incomplete rest stays held. */
  const completeLines = (): string => {
    const cut = pending.lastIndexOf('\n');
    if (cut < 0) return '';
    const lines = pending.slice(0, cut).split('\n');
    pending = pending.slice(cut + 1);
    return lines.map((line) => (line.trim() === '' ? line : filterEndpointSliceEvent(line, site))).join('\n') + '\n';
  };
  res.write = ((chunk: unknown, encodingOrCallback?: unknown, callback?: unknown): boolean => {
    if (!res.headersSent) res.removeHeader('content-length');
    const done = (typeof encodingOrCallback === 'function' ? encodingOrCallback : callback) as
      WriteCallback | undefined;
    take(chunk);
    if (!isWatch) {
      done?.();
      return true;
    }
    const lines = completeLines();
    if (lines === '') {
      done?.();
      return true;
    }
    return done ? write(lines, done) : write(lines);
  }) as typeof res.write;
  res.end = ((chunk?: unknown, encodingOrCallback?: unknown, callback?: unknown): ServerResponse => {
    if (!res.headersSent) res.removeHeader('content-length');
    const done = [chunk, encodingOrCallback, callback].find((c) => typeof c === 'function') as (() => void) | undefined;
    take(chunk);
    const text = isWatch ? completeLines() + pending : filterEndpointSliceAnswer(pending, site);
    pending = '';
    return done ? end(text, done) : end(text);
  }) as typeof res.end;
  return res;
}
