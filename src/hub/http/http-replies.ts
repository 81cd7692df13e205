/**
 * Small HTTP helpers the hub's handlers share: JSON and Kubernetes Status
 * replies, bounded JSON bodies, and bearer tokens.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { checkDocumentLimits, DocumentLimitError } from './document-limits.js';
import { MAX_REFUSED_BODY_DRAIN_BYTES } from '../limits.js';

/** An error the hub turns into an HTTP answer. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The reason phrase Kubernetes uses in a Status for each code. */
const STATUS_REASON: Readonly<Record<number, string>> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  409: 'AlreadyExists',
  413: 'RequestEntityTooLarge',
  502: 'BadGateway',
  503: 'ServiceUnavailable',
};

/**
 * A Kubernetes Status object, so kubectl prints the hub's refusals well.
 * edgeadm's stable error code, when given, is the reason of the one cause in
 * `details` (where Kubernetes clients read machine-readable causes).
 */
export function kubeStatus(status: number, message: string, code?: string): string {
  return JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason: STATUS_REASON[status] ?? 'InternalError',
    ...(code === undefined ? {} : { details: { causes: [{ reason: code, message }] } }),
    code: status,
  });
}

/** Sends a JSON document. */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Sends a Kubernetes Status (for the kube proxy). */
export function sendStatus(res: ServerResponse, status: number, message: string, code?: string): void {
  const text = kubeStatus(status, message, code);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Writes a Kubernetes Status as a raw HTTP/1.1 answer on an upgrade socket, and closes it. */
export function endSocketWithStatus(socket: Duplex, status: number, message: string, code?: string): void {
  const text = kubeStatus(status, message, code);
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_REASON[status] ?? 'Error'}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
  );
}

/**
 * Refuses a request whose body is not wanted (a 413): reads and drops the
 * rest of the body first, then answers. Answering while the client is still
 * sending and then closing resets the connection, and a reset can discard
 * the answer before the client reads it. A body declared or found larger
 * than MAX_REFUSED_BODY_DRAIN_BYTES is not read: the answer goes at once and
 * the connection is closed.
 */
export function answerAfterBody(req: IncomingMessage, answer: () => void): void {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (req.complete || declared > MAX_REFUSED_BODY_DRAIN_BYTES) {
    answer();
    if (!req.complete) req.socket.destroySoon();
    return;
  }
  let drained = 0;
  let isAnswered = false;
  const answerOnce = (): void => {
    if (isAnswered) return;
    isAnswered = true;
    answer();
  };
  req.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > MAX_REFUSED_BODY_DRAIN_BYTES) {
      answerOnce();
      req.socket.destroySoon();
    }
  });
  req.once('end', answerOnce);
  req.resume();
}

/**
 * Reads a JSON body of at most `limit` bytes, held to the hub's document
 * limits (document-limits.ts): a body past one is answered 400
 * `E_HUB_DOCUMENT_LIMIT`, naming the limit and where it was passed.
 */
export async function readJsonBody(req: IncomingMessage, limit: number): Promise<Record<string, unknown>> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit)
    throw new HttpError(413, 'E_HUB_BODY_TOO_LARGE', `the request body is larger than ${limit} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit)
      throw new HttpError(413, 'E_HUB_BODY_TOO_LARGE', `the request body is larger than ${limit} bytes`);
    chunks.push(chunk as Buffer);
  }
  if (size === 0) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
  } catch (error) {
    throw new HttpError(400, 'E_HUB_BAD_REQUEST', `the request body is not a JSON object: ${(error as Error).message}`);
  }
  try {
    checkDocumentLimits(parsed, 'the request body');
  } catch (error) {
    if (error instanceof DocumentLimitError) throw new HttpError(400, 'E_HUB_DOCUMENT_LIMIT', error.message);
    throw error;
  }
  return parsed as Record<string, unknown>;
}

/** The bearer token of a request, if it has one. */
export function bearerToken(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  if (typeof header !== 'string') return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}
