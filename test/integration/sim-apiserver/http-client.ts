/**
 * A small HTTPS client for the simulated API server's own tests: one-shot
 * requests with a bearer token, a client certificate or no credentials, and
 * line streams (watches, followed logs) that a test reads event by event.
 */
import { request as httpsRequest } from 'node:https';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { CertificateAndKey, SimApiServer } from '../../support/sim-apiserver/index.js';

/** How long a test waits for an expected stream line before failing (a safety net, not a timing assertion). */
export const STREAM_WAIT_MS = 10_000;

/** One request to the simulation. */
export interface SimRequest {
  method?: string;
  path: string;
  /** An object is sent as JSON; a string as is. */
  body?: unknown;
  contentType?: string;
  /** Bearer token; the admin token when absent; `null` sends no credentials. */
  token?: string | null;
  cert?: CertificateAndKey;
  headers?: Record<string, string | string[]>;
}

/** A complete response. */
export interface SimResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary Kubernetes JSON
  json: any;
}

function start(server: SimApiServer, req: SimRequest): Promise<IncomingMessage> {
  const headers: Record<string, string | string[]> = { Accept: 'application/json', ...req.headers };
  const token = req.token === undefined ? (req.cert ? null : server.adminToken) : req.token;
  if (token) headers['Authorization'] = `Bearer ${token}`;
  let body: string | undefined;
  if (req.body !== undefined) {
    body = typeof req.body === 'string' ? req.body : JSON.stringify(req.body);
    headers['Content-Type'] = req.contentType ?? 'application/json';
  }
  return new Promise((resolve, reject) => {
    const outgoing = httpsRequest(`${server.url}${req.path}`, {
      method: req.method ?? 'GET',
      headers,
      ca: server.caPem,
      agent: false,
      ...(req.cert ? { cert: req.cert.certPem, key: req.cert.keyPem } : {}),
    });
    outgoing.on('response', resolve);
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

/** Sends a request and reads the whole response. */
export async function call(server: SimApiServer, req: SimRequest): Promise<SimResponse> {
  const res = await start(server, req);
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

/** An open response read line by line. */
export interface LineStream {
  status: number;
  headers: IncomingHttpHeaders;
  /** Resolves with the next line that satisfies `matches` (lines before it are consumed). */
  next(matches?: (line: string) => boolean): Promise<string>;
  /** Resolves when the server ends the response. */
  ended: Promise<void>;
  close(): void;
}

/** Opens a streaming response (watch, followed log). */
export async function openStream(server: SimApiServer, req: SimRequest): Promise<LineStream> {
  const res = await start(server, req);
  const lines: string[] = [];
  const waiters: (() => void)[] = [];
  let partial = '';
  let isEnded = false;
  const wake = (): void => {
    for (const waiter of waiters.splice(0)) waiter();
  };
  res.setEncoding('utf8');
  res.on('data', (chunk: string) => {
    partial += chunk;
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts.filter((l) => l.length > 0));
    wake();
  });
  const ended = new Promise<void>((resolve) => {
    const finish = (): void => {
      isEnded = true;
      if (partial) lines.push(partial);
      partial = '';
      wake();
      resolve();
    };
    res.on('end', finish);
    res.on('close', finish);
    res.on('error', finish);
  });
  return {
    status: res.statusCode ?? 0,
    headers: res.headers,
    ended,
    close: () => res.destroy(),
    async next(matches = () => true) {
      const deadline = Date.now() + STREAM_WAIT_MS;
      for (;;) {
        const index = lines.findIndex(matches);
        if (index >= 0) {
          const [line] = lines.splice(0, index + 1).slice(-1);
          return line as string;
        }
        lines.length = 0;
        if (isEnded) throw new Error('the stream ended before the expected line');
        if (Date.now() > deadline) throw new Error('no matching line arrived');
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 200).unref();
        });
      }
    },
  };
}
