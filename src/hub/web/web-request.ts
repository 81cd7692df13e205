/**
 * The plumbing of the web view's requests: its JSON answers with the
 * view's security headers, the bounded read of any body (no route takes
 * one), and the CSRF check of every state-changing request.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpError } from '../http/http-replies.js';
import { SECURITY_HEADERS } from './assets.js';
import { MAX_WEB_BODY_BYTES } from './limits.js';
import { CSRF_HEADER, csrfVerdict, type WebSession } from './sessions.js';

/** Sends a JSON answer with the view's security headers, never cached. */
export function sendWebJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    ...headers,
    'content-type': 'application/json',
    'cache-control': 'no-store',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

function bodyTooLarge(): HttpError {
  return new HttpError(413, 'E_WEB_BODY_TOO_LARGE', `the request body is larger than ${MAX_WEB_BODY_BYTES} bytes`);
}

/**
 * Reads and drops the body of any request to the view, at most
 * {@link MAX_WEB_BODY_BYTES}, before it is routed: no route of the view
 * takes a body (sign-in reads the token from its header, commands carry
 * none), and a body left unread would be read to its end by Node after the
 * answer, however large, from anyone, signed in or not. Past the bound the
 * rest is not read: the answer closes the connection.
 */
export function readWebBody(req: IncomingMessage): Promise<void> {
  if (Number(req.headers['content-length'] ?? 0) > MAX_WEB_BODY_BYTES) return Promise.reject(bodyTooLarge());
  if (req.complete) return Promise.resolve();
  return new Promise((resolve, reject) => {
    let size = 0;
    const settle = (error?: Error): void => {
      req.off('data', onData).off('end', onEnd).off('error', onClose).off('close', onClose);
      if (error === undefined) resolve();
      else reject(error);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= MAX_WEB_BODY_BYTES) return;
      req.pause();
      settle(bodyTooLarge());
    };
    const onEnd = (): void => settle();
    // Nobody is left to answer: an error of the view, so that it is not logged as the hub's own.
    const onClose = (): void =>
      settle(new HttpError(400, 'E_WEB_INCOMPLETE_REQUEST', 'the connection closed before the request was complete'));
    req.on('data', onData).once('end', onEnd).once('error', onClose).once('close', onClose);
  });
}

/** A request header's (first) value. */
export function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Refuses a request the CSRF check does not pass (403). */
export function checkCsrf(req: IncomingMessage, session: WebSession | undefined): void {
  const refusal = csrfVerdict({
    method: req.method ?? 'GET',
    host: header(req, 'host'),
    origin: header(req, 'origin'),
    secFetchSite: header(req, 'sec-fetch-site'),
    headerToken: header(req, CSRF_HEADER),
    sessionToken: session?.csrfToken,
  });
  if (refusal !== undefined) throw new HttpError(403, 'E_WEB_CSRF', refusal);
}
