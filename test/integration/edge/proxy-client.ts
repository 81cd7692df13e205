/**
 * A small HTTPS client for the edge-proxy tests: one-shot requests with a
 * bearer token or a client certificate, and watch streams read event by
 * event. Paths are sent byte for byte as the test wrote them.
 */
import { request as httpsRequest } from 'node:https';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';

/** How long a test waits for an expected watch event (a safety net, not a timing assertion). */
export const EVENT_WAIT_MS = 20_000;

/** Where requests go: the edge-proxy, or the upstream directly. */
export interface Target {
  url: string;
  caPem: string;
}

/** One request. */
export interface ProxyRequest {
  method?: string;
  path: string;
  body?: unknown;
  token?: string;
  cert?: { certPem: string; keyPem: string };
  headers?: Record<string, string>;
}

/** A complete response. */
export interface ProxyResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary Kubernetes JSON
  json: any;
}

function start(target: Target, req: ProxyRequest): Promise<IncomingMessage> {
  const headers: Record<string, string> = { Accept: 'application/json', ...req.headers };
  if (req.token) headers['Authorization'] = `Bearer ${req.token}`;
  const body = req.body === undefined ? undefined : JSON.stringify(req.body);
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  // The path goes out as written (a URL string would be normalised first: `\` to `/`, `..` resolved).
  const base = new URL(target.url);
  return new Promise((resolve, reject) => {
    const outgoing = httpsRequest({
      hostname: base.hostname.replace(/^\[|\]$/g, ''),
      port: base.port,
      path: req.path,
      method: req.method ?? 'GET',
      headers,
      ca: target.caPem,
      agent: false,
      ...(req.cert ? { cert: req.cert.certPem, key: req.cert.keyPem } : {}),
    });
    outgoing.on('response', resolve);
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

/** Sends a request and reads the whole response. */
export async function call(target: Target, req: ProxyRequest): Promise<ProxyResponse> {
  const res = await start(target, req);
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.statusCode ?? 0, headers: res.headers, text, json };
}

/** A watch event as parsed JSON. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary Kubernetes JSON
export type Event = { type: string; object: any };

/** An open watch, read event by event. */
export interface WatchStream {
  status: number;
  /** Every event received so far, in order. */
  readonly events: Event[];
  /** Resolves with the first event (received so far or later) that satisfies `matches`. */
  waitFor(matches: (event: Event) => boolean): Promise<Event>;
  readonly isEnded: boolean;
  close(): void;
}

/** Opens a watch. */
export async function openWatch(target: Target, req: ProxyRequest): Promise<WatchStream> {
  const res = await start(target, req);
  const events: Event[] = [];
  let partial = '';
  let isEnded = false;
  res.setEncoding('utf8');
  res.on('data', (chunk: string) => {
    partial += chunk;
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    for (const part of parts) if (part.trim() !== '') events.push(JSON.parse(part) as Event);
  });
  const finish = (): void => {
    isEnded = true;
  };
  res.on('end', finish);
  res.on('close', finish);
  res.on('error', finish);
  return {
    status: res.statusCode ?? 0,
    events,
    get isEnded() {
      return isEnded;
    },
    close: () => res.destroy(),
    async waitFor(matches) {
      const deadline = Date.now() + EVENT_WAIT_MS;
      for (;;) {
        const found = events.find(matches);
        if (found) return found;
        if (isEnded)
          throw new Error(
            `the watch ended before the expected event; got ${JSON.stringify(events.map((e) => [e.type, e.object?.metadata?.name]))}`,
          );
        if (Date.now() > deadline)
          throw new Error(
            `no matching event arrived; got ${JSON.stringify(events.map((e) => [e.type, e.object?.metadata?.name]))}`,
          );
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
  };
}
