/**
 * The one HTTP(S) client of the test suites: one-shot requests with a
 * bearer token, a client certificate or no credentials; responses read
 * whole, as lines (watches, followed logs) or as an upgrade. Each request
 * gets a connection of its own (no agent: tests count connections and TLS
 * sessions), and the path goes out byte for byte as the test wrote it (a
 * URL string would be normalised first: `\` to `/`, `..` resolved).
 *
 * Suites that must write bytes no HTTP client would (hostile request lines,
 * trickled bodies, half-open TLS) keep their own sockets on purpose.
 */
import { request as httpRequest, type ClientRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';

/** How long a test waits for an expected stream line before failing (a safety net, not a timing assertion). */
export const LINE_WAIT_MS = 20_000;

/** Where requests go: `https://host:port` with the CA that verifies it, or a plain `http://` URL. */
export interface HttpTarget {
  url: string;
  caPem?: string;
}

/** An HTTPS target, with the CA that verifies it. */
export interface HttpsTarget extends HttpTarget {
  caPem: string;
}

/** One request. */
export interface HttpRequest {
  method?: string;
  /** Sent as written, query included. */
  path: string;
  /** An object is sent as JSON; a string as it is. */
  body?: unknown;
  /** The Content-Type of a body; JSON when absent. */
  contentType?: string;
  /** A bearer token; none when absent. */
  token?: string | undefined;
  cert?: { certPem: string; keyPem: string };
  headers?: Record<string, string | string[]>;
  /** Called with the connection as soon as there is one (to track or destroy it). */
  onSocket?: (socket: Socket) => void;
}

/** A complete response. */
export interface HttpResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary Kubernetes JSON
  json: any;
}

/** A request under way: its response head once it comes, and a way to give up on it before. */
export interface PendingRequest {
  request: ClientRequest;
  response: Promise<IncomingMessage>;
  abort(): void;
}

/** Sends a request; the response is read by the caller. */
export function send(target: HttpTarget, req: HttpRequest): PendingRequest {
  const given = req.headers ?? {};
  const hasAccept = Object.keys(given).some((name) => name.toLowerCase() === 'accept');
  const headers: Record<string, string | string[]> = { ...(hasAccept ? {} : { Accept: 'application/json' }), ...given };
  if (req.token) headers['Authorization'] = `Bearer ${req.token}`;
  let body: string | undefined;
  if (req.body !== undefined) {
    body = typeof req.body === 'string' ? req.body : JSON.stringify(req.body);
    headers['Content-Type'] = req.contentType ?? 'application/json';
  }
  const base = new URL(target.url);
  const options = {
    hostname: base.hostname.replace(/^\[|\]$/g, ''),
    port: base.port,
    path: req.path,
    method: req.method ?? 'GET',
    headers,
    agent: false as const,
  };
  const outgoing =
    base.protocol === 'http:'
      ? httpRequest(options)
      : httpsRequest({
          ...options,
          ...(target.caPem === undefined ? {} : { ca: target.caPem }),
          ...(req.cert ? { cert: req.cert.certPem, key: req.cert.keyPem } : {}),
        });
  if (req.onSocket) outgoing.on('socket', req.onSocket);
  const response = new Promise<IncomingMessage>((resolve, reject) => {
    outgoing.on('response', resolve);
    outgoing.on('error', reject);
  });
  // A caller that waits for something else (an upgrade, an abort) may never read this promise.
  response.catch(() => {});
  outgoing.end(body);
  return { request: outgoing, response, abort: () => outgoing.destroy() };
}

/** Reads a whole response. */
export async function readAll(res: IncomingMessage): Promise<HttpResponse> {
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

/** Sends a request and reads the whole response. */
export async function call(target: HttpTarget, req: HttpRequest): Promise<HttpResponse> {
  return readAll(await send(target, req).response);
}

/** Sends an upgrade request; resolves with the status of the answer, whether it upgraded or not. */
export async function upgradeStatus(target: HttpTarget, req: HttpRequest): Promise<number> {
  const pending = send(target, { ...req, headers: { connection: 'Upgrade', ...req.headers } });
  return new Promise<number>((resolve, reject) => {
    pending.response.then((res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }, reject);
    pending.request.on('upgrade', (res: IncomingMessage, socket: Socket) => {
      socket.destroy();
      resolve(res.statusCode ?? 0);
    });
  });
}

/** An open response read line by line. */
export interface LineStream {
  status: number;
  headers: IncomingHttpHeaders;
  /** Every complete line received so far (and the last, unterminated one once the response ended). */
  readonly lines: readonly string[];
  readonly isEnded: boolean;
  /** Whether the response ended in the middle of its last line (which `lines` then holds as it came). */
  readonly isLastLineCut: boolean;
  /** Resolves when the server ends the response. */
  ended: Promise<void>;
  /**
   * Resolves with the next line after the last one `next` returned that satisfies `matches`; the lines
   * before it are passed over.
   */
  next(matches?: (line: string) => boolean, waitMs?: number): Promise<string>;
  /** Resolves with the first line received (so far or later) that satisfies `matches`, passing none over. */
  find(matches: (line: string) => boolean, waitMs?: number): Promise<string>;
  close(): void;
}

/** Opens a streaming response (watch, followed log) and reads it as lines. */
export async function openLines(target: HttpTarget, req: HttpRequest): Promise<LineStream> {
  const res = await send(target, req).response;
  const lines: string[] = [];
  const waiters: (() => void)[] = [];
  let partial = '';
  let isEnded = false;
  let isLastLineCut = false;
  let read = 0;
  const wake = (): void => {
    for (const waiter of waiters.splice(0)) waiter();
  };
  res.setEncoding('utf8');
  res.on('data', (chunk: string) => {
    partial += chunk;
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts.filter((line) => line.length > 0));
    wake();
  });
  const ended = new Promise<void>((resolve) => {
    const finish = (): void => {
      if (isEnded) return;
      isEnded = true;
      if (partial) {
        lines.push(partial);
        isLastLineCut = true;
      }
      partial = '';
      wake();
      resolve();
    };
    res.on('end', finish);
    res.on('close', finish);
    res.on('error', finish);
  });
  /** Waits until `look` finds a line, the response ends or the safety net runs out. */
  async function until(look: () => string | undefined, waitMs: number): Promise<string> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const found = look();
      if (found !== undefined) return found;
      if (isEnded) throw new Error(`the stream ended before the expected line; got ${JSON.stringify(lines)}`);
      if (Date.now() > deadline) throw new Error(`no matching line arrived; got ${JSON.stringify(lines)}`);
      await new Promise<void>((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, 200).unref();
      });
    }
  }
  return {
    status: res.statusCode ?? 0,
    headers: res.headers,
    lines,
    get isEnded() {
      return isEnded;
    },
    get isLastLineCut() {
      return isLastLineCut;
    },
    ended,
    close: () => res.destroy(),
    next(matches = () => true, waitMs = LINE_WAIT_MS) {
      return until(() => {
        const index = lines.findIndex((line, at) => at >= read && matches(line));
        if (index < 0) {
          read = lines.length;
          return undefined;
        }
        read = index + 1;
        return lines[index];
      }, waitMs);
    },
    find(matches, waitMs = LINE_WAIT_MS) {
      return until(() => lines.find(matches), waitMs);
    },
  };
}

/** A watch event as parsed JSON. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary Kubernetes JSON
export type WatchEvent = { type: string; object: any };

/** An open watch, read event by event. */
export interface WatchStream {
  status: number;
  /** Every event received so far, in order. */
  readonly events: WatchEvent[];
  /** Resolves with the first event (received so far or later) that satisfies `matches`. */
  waitFor(matches: (event: WatchEvent) => boolean, waitMs?: number): Promise<WatchEvent>;
  readonly isEnded: boolean;
  close(): void;
}

/** Opens a watch: a line stream whose lines are JSON events. */
export async function openWatch(target: HttpTarget, req: HttpRequest): Promise<WatchStream> {
  const stream = await openLines(target, req);
  // A watch cut in the middle of an event carries no event in that fragment.
  const events = (): WatchEvent[] =>
    (stream.isLastLineCut ? stream.lines.slice(0, -1) : stream.lines).map((line) => JSON.parse(line) as WatchEvent);
  return {
    status: stream.status,
    get events() {
      return events();
    },
    get isEnded() {
      return stream.isEnded;
    },
    close: () => stream.close(),
    async waitFor(matches, waitMs = LINE_WAIT_MS) {
      const seen = (): string => JSON.stringify(events().map((event) => [event.type, event.object?.metadata?.name]));
      try {
        const found = await stream.find((text) => {
          try {
            return matches(JSON.parse(text) as WatchEvent);
          } catch (error) {
            if (error instanceof SyntaxError && stream.isLastLineCut && text === stream.lines.at(-1)) return false;
            throw error;
          }
        }, waitMs);
        return JSON.parse(found) as WatchEvent;
      } catch (error) {
        throw new Error(`${(error as Error).message.replace(/; got .*$/s, '')}; got events ${seen()}`, {
          cause: error,
        });
      }
    },
  };
}
