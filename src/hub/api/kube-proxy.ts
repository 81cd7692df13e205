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
import { pipeline } from 'node:stream';
import { isClusterName } from '../../kube/names.js';
import { parseApiPath } from '../../kube/api-path.js';
import { forwardBody } from '../../tunnel/forward-body.js';
import type { HubTunnel } from '../../tunnel/hub-tunnel.js';
import {
  CONTROL_PATH_PREFIX,
  encodeUpgradeRequest,
  forwardableRequestHeaderList,
  forwardableResponseHeaders,
  forwardableUpgradeHeaders,
  GROUPS_HEADER,
  identityHeaders,
  REQUEST_HEADER,
  USER_HEADER,
  UPGRADE_AUTHORITY,
  type StreamIdentity,
} from '../../tunnel/protocol.js';
import type { HubContext } from './hub-context.js';
import { authenticateUser } from '../identity/authenticate.js';
import { answerAfterBody, endSocketWithStatus, HttpError, sendStatus } from '../http/http-replies.js';
import { matchesSelector, parseLabelSelector } from '../../kube/label-selector.js';
import { HTTP_STREAM_IDLE_TIMEOUT_MS, MAX_PROXY_REQUEST_BODY_BYTES, UPGRADE_FLUSH_GRACE_MS } from '../limits.js';
import type { TLSSocket } from 'node:tls';
import {
  forwardRequest,
  forwardUpgrade,
  peerIdentityOf,
  PEER_PROXY_PREFIX,
  replicaOfConnection,
  type PeerForward,
} from '../replicas/peer-link.js';
import type { UserRecord } from '../store/store.js';

/** The path prefix of the kube proxy. */
export const KUBE_PROXY_PREFIX = '/clusters/';

/** The stable code of a refused proxy path. */
export const BAD_PROXY_PATH_CODE = 'E_HUB_PROXY_PATH';

/**
 * A request aimed at one cluster, split: either a path that may be
 * forwarded, or the reason it may not (answered 400 before anything else).
 */
export type ProxyTarget =
  | {
      cluster: string;
      /** The path (and query) on the cluster's API server, exactly as received; passed `parseApiPath`. */
      path: string;
      refusal?: undefined;
      /** Forwarded by another hub replica (peer-link.ts): only a replica may send it. */
      isForwarded?: boolean;
    }
  | {
      cluster: string;
      /** Why the path is not forwarded, for the user. */
      refusal: string;
      isForwarded?: boolean;
    };

/**
 * Splits `/clusters/NAME/rest?query`; undefined when the URL is not a proxy
 * URL. The rest must pass `parseApiPath`, and must not lie under the
 * tunnel's control prefix (`/.edgeadm/`): agents of this version tell
 * control streams apart by their missing identity, but older ones did by
 * that prefix alone, and no API server path starts with it.
 */
export function parseProxyUrl(url: string): ProxyTarget | undefined {
  if (!url.startsWith(KUBE_PROXY_PREFIX)) return undefined;
  const rest = url.slice(KUBE_PROXY_PREFIX.length);
  const end = rest.search(/[/?]/);
  const cluster = end === -1 ? rest : rest.slice(0, end);
  if (!isClusterName(cluster)) return undefined;
  let path = end === -1 ? '' : rest.slice(end);
  if (path === '' || path.startsWith('?')) path = `/${path}`;
  const checked = parseApiPath(path);
  if (!checked.ok) return { cluster, refusal: `the hub forwards API paths only: ${checked.message}` };
  const firstSegment = checked.value.path.slice(1).split('/')[0] ?? '';
  if (`/${firstSegment.toLowerCase()}/` === CONTROL_PATH_PREFIX) {
    return { cluster, refusal: `the hub does not forward paths under ${CONTROL_PATH_PREFIX}` };
  }
  return { cluster, path: checked.value.target };
}

/**
 * Splits `/hub/peer/v1/clusters/NAME/rest?query`, a request another hub
 * replica forwarded (peer-link.ts), by the same rule as {@link parseProxyUrl};
 * undefined when the URL is not one.
 */
export function parsePeerProxyUrl(url: string): ProxyTarget | undefined {
  if (!url.startsWith(`${PEER_PROXY_PREFIX}${KUBE_PROXY_PREFIX}`)) return undefined;
  const target = parseProxyUrl(url.slice(PEER_PROXY_PREFIX.length));
  return target === undefined ? undefined : { ...target, isForwarded: true };
}

/** Where an admitted request goes: a tunnel this replica holds, or the replica that holds it. */
export type Admitted = { tunnel: HubTunnel; identity: StreamIdentity } | { forward: PeerForward };

/** The cluster's tunnel on this replica, if open. */
function localTunnel(context: HubContext, cluster: string): HubTunnel | undefined {
  const tunnel = context.tunnels.get(cluster);
  return tunnel?.isOpen ? tunnel : undefined;
}

/**
 * Admits a request another replica forwarded: only a replica certificate
 * may send one, and only to the replica holding the tunnel (never forwarded
 * again). What is trusted and why: peer-link.ts.
 */
async function admitForwarded(
  context: HubContext,
  req: IncomingMessage,
  target: { cluster: string },
): Promise<Admitted> {
  const replica = replicaOfConnection(req.socket as TLSSocket, context.now());
  if (replica === undefined) {
    context.metrics.unauthorizedRequests += 1;
    throw new HttpError(403, 'E_HUB_PEER_FORBIDDEN', 'only hub replicas may use the forwarded path');
  }
  const identity = peerIdentityOf(req);
  if (typeof identity === 'string') throw new HttpError(400, 'E_HUB_PEER_BAD_REQUEST', identity);
  if ((await context.store.getCluster(target.cluster)) === undefined) {
    throw new HttpError(403, 'E_HUB_FORBIDDEN', `cluster "${target.cluster}" is not registered`);
  }
  const tunnel = localTunnel(context, target.cluster);
  if (tunnel === undefined) {
    throw new HttpError(
      503,
      'E_HUB_CLUSTER_DISCONNECTED',
      `cluster "${target.cluster}" is not connected to hub replica ${context.coordination?.self.id ?? ''}`,
    );
  }
  context.logger.debug(`kube proxy: request for ${target.cluster} forwarded by replica ${replica}`);
  return { tunnel, identity };
}

/**
 * Authenticates and authorizes a proxy request, and finds the tunnel: held
 * here, or held by another replica (then the request is forwarded to it).
 *
 * @throws {HttpError} 401 (no or bad credentials), 403 (selector does not
 * match or the cluster does not exist: the answer does not tell which), 503
 * (not connected).
 */
async function admit(context: HubContext, req: IncomingMessage, target: ProxyTarget): Promise<Admitted> {
  if (target.isForwarded) return admitForwarded(context, req, target);
  const user = await authenticateUser(context, req);
  if (user === undefined) {
    context.metrics.unauthorizedRequests += 1;
    throw new HttpError(401, 'E_HUB_UNAUTHORIZED', 'Unauthorized');
  }
  return admitUser(context, user, target);
}

/**
 * Whether a user may reach a cluster through the hub: their clusters
 * selector matches its labels. The one rule, for the kube proxy and the web
 * view alike.
 */
export function mayReachCluster(user: UserRecord, cluster: { labels: Record<string, string> }): boolean {
  return clusterReach(user)(cluster);
}

/** {@link mayReachCluster} for many clusters: the user's selector parsed once. */
export function clusterReach(user: UserRecord): (cluster: { labels: Record<string, string> }) => boolean {
  const selector = parseLabelSelector(user.clustersSelector);
  return (cluster) => matchesSelector(selector, cluster.labels);
}

/**
 * Authorizes an authenticated user for a cluster and finds its tunnel: the
 * kube proxy's check, also used by the web view's live reads.
 *
 * @throws {HttpError} 403 (selector does not match or the cluster does not
 * exist: the answer does not tell which), 503 (not connected).
 */
export async function admitUser(
  context: HubContext,
  user: UserRecord,
  target: { cluster: string; path?: string },
): Promise<Admitted> {
  const cluster = await context.store.getCluster(target.cluster);
  const isAllowed = cluster !== undefined && mayReachCluster(user, cluster);
  if (!isAllowed) {
    context.logger.info(`kube proxy: user ${user.name} may not reach cluster ${target.cluster}`);
    throw new HttpError(
      403,
      'E_HUB_FORBIDDEN',
      `user "${user.name}" cannot reach cluster "${target.cluster}" through the hub`,
    );
  }
  const identity = { user: user.name, groups: user.groups };
  const tunnel = localTunnel(context, target.cluster);
  if (tunnel !== undefined) return { tunnel, identity };
  const holder = await context.coordination?.tunnelHolder(target.cluster);
  if (
    holder !== undefined &&
    holder.id !== context.coordination?.self.id &&
    context.peerCredentials !== undefined &&
    'path' in target &&
    target.path !== undefined
  ) {
    return {
      forward: {
        holder,
        credentials: context.peerCredentials,
        cluster: target.cluster,
        path: target.path,
        identity,
        idleMs: HTTP_STREAM_IDLE_TIMEOUT_MS,
      },
    };
  }
  throw new HttpError(
    503,
    'E_HUB_CLUSTER_DISCONNECTED',
    `cluster "${target.cluster}" is not connected to the hub (no hub replica holds its tunnel)`,
  );
}

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
    count = (chunk) => (context.metrics.bytesFromAgents += chunk.length);
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
  context.metrics.activeStreams += 1;
  context.metrics.streamsTotal += 1;
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
      context.metrics.bytesToAgents += chunk.length;
      if (size > MAX_PROXY_REQUEST_BODY_BYTES) {
        stream.destroy();
        sendStatus(res, 413, `the request body is larger than ${MAX_PROXY_REQUEST_BODY_BYTES} bytes`);
        req.destroy();
      }
    });
  }
  stream.on('response', (headers) => {
    context.metrics.observeLatency(Number(process.hrtime.bigint() - started) / 1e9);
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
    context.metrics.activeStreams -= 1;
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

/**
 * Closes a client socket once the tunnel stream feeding it has closed. A
 * stream that ended normally has already ended the socket (the pipeline
 * does), but its last bytes may still wait in the socket's write buffer: an
 * exec's exit status is the last frame, and destroying the socket now would
 * drop it (the client then reports exit code 1, whatever the command
 * returned). Such a socket closes by itself once flushed; it is destroyed
 * only if that takes longer than `graceMs`. A socket not ended (the stream
 * was reset) is destroyed at once.
 */
export function closeAfterFlush(socket: Duplex, graceMs: number): void {
  if (socket.destroyed) return;
  if (!socket.writableEnded) {
    socket.destroy();
    return;
  }
  const grace = setTimeout(() => socket.destroy(), graceMs);
  grace.unref();
  socket.once('close', () => clearTimeout(grace));
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
  context.metrics.activeStreams += 1;
  context.metrics.streamsTotal += 1;
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
    stream.on('data', (chunk: Buffer) => (context.metrics.bytesFromAgents += chunk.length));
    socket.on('data', (chunk: Buffer) => (context.metrics.bytesToAgents += chunk.length));
    pipeline(socket, stream, () => {});
    pipeline(stream, socket, () => {});
  });
  stream.on('error', () => socket.destroy());
  stream.on('close', () => {
    context.metrics.activeStreams -= 1;
    closeAfterFlush(socket, UPGRADE_FLUSH_GRACE_MS);
  });
  socket.on('error', () => stream.destroy());
  socket.on('close', () => {
    if (!stream.destroyed) stream.close();
  });
}
