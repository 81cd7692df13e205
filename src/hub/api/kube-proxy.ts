/**
 * The kube proxy: `https://HUB/clusters/NAME/…`. It checks that what
 * follows NAME is a path (`parseApiPath`, the one rule: a target that any
 * reader could take for another host, such as `//HOST:PORT/…` or
 * `/\HOST/…`, is answered 400 and never forwarded), authenticates the
 * user's bearer token, checks that the user's cluster selector matches
 * NAME, drops the user's credentials and any identity headers, and sends
 * the request through NAME's tunnel with the user's identity for the agent
 * to impersonate. Nothing is forwarded before all of that passed.
 *
 * Plain requests become one HTTP/2 stream each; upgrades (exec, attach,
 * port-forward) become a CONNECT stream that carries raw bytes both ways.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { forwardBody } from '../../tunnel/forward-body.js';
import {
  encodeUpgradeRequest,
  forwardableRequestHeaderList,
  forwardableResponseHeaders,
  forwardableUpgradeHeaders,
  GROUPS_HEADER,
  identityHeaders,
  REQUEST_HEADER,
  USER_HEADER,
  UPGRADE_AUTHORITY,
} from '../../tunnel/protocol.js';
import type { HubContext } from './hub-context.js';
import { answerAfterBody, endSocketWithStatus, HttpError, sendStatus } from '../http/http-replies.js';
import { MAX_PROXY_REQUEST_BODY_BYTES } from '../limits.js';
import { closeAfterFlush, relayBothWays } from '../../tunnel/relay.js';
import { UPGRADE_FLUSH_GRACE_MS } from '../../tunnel/limits.js';
import { forwardRequest, forwardUpgrade } from '../replicas/peer-link.js';
import { BAD_PROXY_PATH_CODE, type ProxyTarget } from './proxy-target.js';
import { admit } from './proxy-admission.js';

/**
 * The groups header's value for a group list, by the list itself: users
 * come from the store's cache as frozen records, so the same list arrives
 * on every request of a user and is written as JSON once. (A list that is
 * not frozen could change: it is written anew each time.)
 */
const groupsHeaders = new WeakMap<readonly string[], string>();
function groupsHeaderOf(groups: readonly string[]): string {
  if (!Object.isFrozen(groups)) return JSON.stringify(groups);
  let text = groupsHeaders.get(groups);
  if (text === undefined) {
    text = JSON.stringify(groups);
    groupsHeaders.set(groups, text);
  }
  return text;
}

/** The answer bytes' counter of the hub's metrics, one function per context. */
const fromAgentCounters = new WeakMap<HubContext, (chunk: Buffer) => void>();
function countFromAgents(context: HubContext): (chunk: Buffer) => void {
  let count = fromAgentCounters.get(context);
  if (count === undefined) {
    count = (chunk) => context.metrics.bytesFromAgents.inc(chunk.length);
    fromAgentCounters.set(context, count);
  }
  return count;
}

/** Serves one plain proxied request. */
export async function proxyRequest(
  context: HubContext,
  req: IncomingMessage,
  res: ServerResponse,
  target: ProxyTarget,
): Promise<void> {
  if (target.refusal !== undefined) {
    answerAfterBody(req, () => sendStatus(res, 400, target.refusal, BAD_PROXY_PATH_CODE));
    return;
  }
  let admitted;
  try {
    admitted = await admit(context, req, target);
  } catch (error) {
    const failure = error as HttpError;
    sendStatus(res, failure.status ?? 500, failure.message, error instanceof HttpError ? failure.code : undefined);
    req.resume();
    return;
  }
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > MAX_PROXY_REQUEST_BODY_BYTES) {
    answerAfterBody(req, () =>
      sendStatus(res, 413, `the request body is larger than ${MAX_PROXY_REQUEST_BODY_BYTES} bytes`),
    );
    return;
  }
  if ('forward' in admitted) {
    await forwardRequest(admitted.forward, req, res);
    return;
  }
  const started = process.hrtime.bigint();
  const { tunnel, identity } = admitted;
  context.metrics.activeStreams.inc();
  context.metrics.streamsTotal.inc();
  // A request without content-length or transfer-encoding has no body (RFC 9112 §6.3): its
  // stream ends with its HEADERS frame, which saves a frame and a write per request.
  const hasBody = req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;
  // One flat header list, which node:http2 takes as it is (an object it copies first).
  const headers = forwardableRequestHeaderList(req.headers, [':method', req.method ?? 'GET', ':path', target.path]);
  headers.push(USER_HEADER, identity.user, GROUPS_HEADER, groupsHeaderOf(identity.groups));
  const stream = tunnel.request(headers, { endStream: !hasBody });
  if (hasBody) {
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      context.metrics.bytesToAgents.inc(chunk.length);
      if (size > MAX_PROXY_REQUEST_BODY_BYTES) {
        stream.destroy();
        sendStatus(res, 413, `the request body is larger than ${MAX_PROXY_REQUEST_BODY_BYTES} bytes`);
        req.destroy();
      }
    });
  }
  stream.on('response', (headers) => {
    context.metrics.requestDuration.observe(Number(process.hrtime.bigint() - started) / 1e9);
    const status = Number(headers[':status'] ?? 502);
    res.writeHead(status, forwardableResponseHeaders(headers));
    // An answer of unknown length (watch, logs -f) may wait long for its first bytes: its head
    // goes out now. One of known length goes out with its body, in one write.
    if (headers['content-length'] === undefined) res.flushHeaders();
    // Not pipeline: same backpressure, without pipeline's per-call
    // AbortController (its abort builds a DOMException per request, a
    // measurable share of the hub's CPU); nor pipe (forward-body.ts says
    // why). Errors are handled beside it.
    forwardBody(stream, res, { isEndAfterWrites: false, onChunk: countFromAgents(context) });
  });
  stream.on('error', (error) => {
    context.logger.debug(`kube proxy stream to ${target.cluster} failed: ${error.message}`);
    sendStatus(res, 502, `the tunnel to cluster "${target.cluster}" failed: ${error.message}`);
  });
  stream.on('close', () => {
    context.metrics.activeStreams.dec();
    if (!res.writableEnded) res.destroy();
  });
  res.on('close', () => {
    // Only a user who went away early cancels the stream; after a complete
    // answer the stream ends by itself (resetting it would throw away the
    // agent's last writes).
    if (!res.writableFinished && !stream.destroyed) stream.close();
  });
  req.on('error', () => stream.destroy());
  if (hasBody) req.pipe(stream);
  else req.resume();
}

/** Serves one upgrade (exec, attach, port-forward). */
export async function proxyUpgrade(
  context: HubContext,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  target: ProxyTarget,
): Promise<void> {
  if (target.refusal !== undefined) {
    endSocketWithStatus(socket, 400, target.refusal, BAD_PROXY_PATH_CODE);
    return;
  }
  let admitted;
  try {
    admitted = await admit(context, req, target);
  } catch (error) {
    const failure = error as HttpError;
    endSocketWithStatus(
      socket,
      failure.status ?? 500,
      failure.message,
      error instanceof HttpError ? failure.code : undefined,
    );
    return;
  }
  const pairs: [string, string][] = [];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    pairs.push([req.rawHeaders[i] as string, req.rawHeaders[i + 1] as string]);
  }
  const headers = forwardableUpgradeHeaders(pairs);
  if ('forward' in admitted) {
    await forwardUpgrade(admitted.forward, req, socket, head, headers);
    return;
  }
  const { tunnel, identity } = admitted;
  context.metrics.activeStreams.inc();
  context.metrics.streamsTotal.inc();
  const stream = tunnel.request({
    ':method': 'CONNECT',
    ':authority': UPGRADE_AUTHORITY,
    [REQUEST_HEADER]: encodeUpgradeRequest({ method: req.method ?? 'GET', path: target.path, headers }),
    ...identityHeaders(identity),
  });
  stream.on('response', (responseHeaders) => {
    if (Number(responseHeaders[':status']) !== 200) {
      endSocketWithStatus(
        socket,
        502,
        `the agent of cluster "${target.cluster}" could not open the upgraded connection`,
      );
      stream.close();
      return;
    }
    if (head.length > 0) stream.write(head);
    stream.on('data', (chunk: Buffer) => context.metrics.bytesFromAgents.inc(chunk.length));
    socket.on('data', (chunk: Buffer) => context.metrics.bytesToAgents.inc(chunk.length));
    relayBothWays(socket, stream);
  });
  stream.on('error', () => socket.destroy());
  stream.on('close', () => {
    context.metrics.activeStreams.dec();
    closeAfterFlush(socket, UPGRADE_FLUSH_GRACE_MS);
  });
  socket.on('error', () => stream.destroy());
  socket.on('close', () => {
    if (!stream.destroyed) stream.close();
  });
}
