/**
 * The tunnel agent: dials the hub outbound (one TLS connection with the
 * cluster's client certificate), then serves HTTP/2 on that socket, the
 * roles reversed, forwarding each stream to the cluster's API server.
 *
 * It answers the hub's hello, pings to detect a dead link, redials with
 * jittered exponential backoff, and on shutdown stops taking new streams
 * and lets the open ones finish (up to a bound).
 */
import type { Http2Session, IncomingHttpHeaders, ServerHttp2Session, ServerHttp2Stream } from 'node:http2';
import type { SecureContext, TLSSocket } from 'node:tls';
import { setTimeout as sleep } from 'node:timers/promises';
import { EdgeadmError } from '../errors.js';
import type { Logger } from '../log/run-log.js';
import { connectThroughProxy, type HttpProxy } from './http-proxy.js';
import {
  TUNNEL_ALPN_PROTOCOL,
  TUNNEL_CONNECT_TIMEOUT_MS,
  TUNNEL_CONNECTION_WINDOW_BYTES,
  TUNNEL_DRAIN_TIMEOUT_MS,
  TUNNEL_HELLO_REUSE_MS,
  TUNNEL_MAX_CONCURRENT_STREAMS,
  TUNNEL_MAX_FRAME_BYTES,
  TUNNEL_MAX_HEADER_LIST_BYTES,
  TUNNEL_MAX_SESSION_MEMORY_MB,
  TUNNEL_PING_INTERVAL_MS,
  TUNNEL_PING_TIMEOUT_MS,
  TUNNEL_STREAM_WINDOW_BYTES,
} from './limits.js';
import {
  controlPathOf,
  HELLO_PATH,
  MOVE_PATH,
  REFUSE_PATH,
  WELCOME_PATH,
  type AgentHello,
  type ControlRouteKey,
  type MoveRequest,
} from './protocol.js';
import type { Upstream } from './upstream.js';

/** The agent's identity towards the hub. `keyPem` is a secret. */
export interface AgentIdentity {
  cluster: string;
  certPem: string;
  keyPem: string;
}

/**
 * A control stream the agent serves for another part of edgeadm (the
 * rollout copies): the tunnel routes it by method and path, told from user
 * streams by the missing identity like its own, and knows nothing else of it.
 */
export interface AgentControlRoute extends ControlRouteKey {
  handle(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): Promise<void>;
}

/**
 * Where the agent sends the streams the far end opens: the cluster's API
 * server ({@link Upstream}) for the hub's agent, a node's own kubelet for the
 * node tunnel (src/node-tunnel/kubelet-forwarder.ts).
 */
export type TunnelUpstream = Pick<Upstream, 'forwardRequest' | 'forwardUpgrade' | 'getJson' | 'close'>;

/** How the agent's messages name the end it dials, and what they advise when it refuses. */
export interface TunnelFarEnd {
  /** `the hub`; `the control plane's node tunnel` */
  name: string;
  /** Advice with one refusal. */
  refusalHints: readonly string[];
  /** Advice when the agent stops after {@link TUNNEL_REFUSALS_BEFORE_STOP} refusals. */
  stopHints: readonly string[];
}

/** The hub, as register-cloud's agent dials it. */
export const HUB_FAR_END: TunnelFarEnd = {
  name: 'the hub',
  refusalHints: ['The cluster may have been deleted from the hub; register it again with "edgeadm register-cloud".'],
  stopHints: [
    'The cluster was deleted from the hub, or its certificate revoked or expired: this agent cannot connect again.',
    'Register the cluster again with "edgeadm register-cloud" (remove its --data-dir first); it installs a new agent.',
  ],
};

/** Options of {@link connectTunnel} and {@link runTunnelAgent}. */
export interface TunnelAgentOptions {
  /** `https://host:port` of the hub. */
  hubServer: string;
  /** The IP to connect to for `hubServer` (one of several its name resolves to); its name is still what is verified. */
  hubAddress?: string;
  /** The hub CA (pinned at registration). */
  hubCaPem: string;
  /** Read before every dial, so a renewed certificate is used at the next connection. */
  identity: () => AgentIdentity;
  upstream: TunnelUpstream;
  logger: Logger;
  /** Dial the hub through this HTTP proxy (CONNECT); TLS to the hub runs inside, pinned as ever. */
  proxy?: HttpProxy;
  /** Where the agent keeps its TLS state with the hub between dials. */
  tlsSession?: TunnelTlsSession;
  /** The last hello, reused for {@link TUNNEL_HELLO_REUSE_MS} by the next dials. */
  helloCache?: AgentHelloCache;
  /** How messages name the far end; {@link HUB_FAR_END} by default. */
  farEnd?: TunnelFarEnd;
  /** Control streams served besides the tunnel's own, once the hub has welcomed the agent. */
  controlRoutes?: readonly AgentControlRoute[];
}

/** The cluster facts an agent last told the hub, and when it read them. */
export interface AgentHelloCache {
  hello?: AgentHello;
  readAt?: number;
}

/**
 * What an agent keeps of its TLS with the hub from one dial to the next, for
 * the certificate named by `certPem`: the TLS context (the CA, certificate
 * and key parsed once, not at every redial) and the last session (its ticket
 * and resumption secret, so a secret: in memory only, never logged). The
 * next dial offers the session, and the hub, if it still holds the ticket
 * key, resumes instead of a full handshake, which is most of what a
 * reconnect storm costs the hub. A renewed certificate replaces both; a
 * refusal drops the session.
 */
export interface TunnelTlsSession {
  certPem?: string;
  context?: SecureContext;
  session?: Buffer | undefined;
}

/** HTTP/2 settings both ends of the tunnel use. */
export const TUNNEL_HTTP2_SETTINGS = {
  initialWindowSize: TUNNEL_STREAM_WINDOW_BYTES,
  maxFrameSize: TUNNEL_MAX_FRAME_BYTES,
  maxHeaderListSize: TUNNEL_MAX_HEADER_LIST_BYTES,
  maxConcurrentStreams: TUNNEL_MAX_CONCURRENT_STREAMS,
};

/** One established tunnel, as the agent sees it. */
export interface AgentConnection {
  /** Resolves when the tunnel closes, for any reason. */
  closed: Promise<void>;
  /** Stops taking new streams, lets open ones finish (bounded), then closes. */
  drain(): Promise<void>;
  /** The replica address the hub asked this tunnel to move to (MOVE_PATH), if it did. */
  movedTo(): string | undefined;
}

/** Pings `session` periodically and destroys it when a ping goes unanswered. */
export function keepAlive(session: Http2Session, onDead: (why: string) => void): () => void {
  const timer = setInterval(() => {
    if (session.closed || session.destroyed) return;
    const deadline = setTimeout(() => onDead('a keepalive ping went unanswered'), TUNNEL_PING_TIMEOUT_MS);
    const sent = session.ping((error) => {
      clearTimeout(deadline);
      if (error && !session.destroyed) onDead(`keepalive ping failed: ${error.message}`);
    });
    if (!sent) clearTimeout(deadline);
  }, TUNNEL_PING_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/** What the agent tells the hub about its cluster; version and node count are best effort. */
async function helloOf(cluster: string, upstream: TunnelUpstream, logger: Logger): Promise<AgentHello> {
  const hello: AgentHello = { cluster };
  try {
    const version = (await upstream.getJson('/version')) as { gitVersion?: unknown };
    if (typeof version.gitVersion === 'string') hello.kubernetesVersion = version.gitVersion;
    const nodes = (await upstream.getJson('/api/v1/nodes')) as { items?: unknown };
    if (Array.isArray(nodes.items)) hello.nodeCount = nodes.items.length;
  } catch (error) {
    logger.debug(`cannot read the cluster version or nodes for the hub: ${(error as Error).message}`);
  }
  return hello;
}

function readBody(stream: ServerHttp2Stream, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) stream.destroy(new Error('control message too large'));
      else chunks.push(chunk);
    });
    stream.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    stream.on('error', reject);
  });
}

/**
 * Serves a control stream of another part of edgeadm, once the hub has
 * welcomed the agent (before that, nothing but the handshake is served).
 */
function serveControlRoute(options: {
  route: AgentControlRoute;
  stream: ServerHttp2Stream;
  headers: IncomingHttpHeaders;
  isWelcomed: boolean;
  logger: Logger;
}): void {
  const { route, stream } = options;
  if (!options.isWelcomed) {
    stream.respond({ ':status': 503 }, { endStream: true });
    return;
  }
  route
    .handle(stream, options.headers)
    .catch((error: Error) => options.logger.debug(`control stream ${route.path} failed: ${error.message}`));
}

/** Stops taking new streams, lets open ones finish (bounded by the drain timeout), then closes. */
async function drainSession(session: ServerHttp2Session, socket: TLSSocket, closed: Promise<void>): Promise<void> {
  if (session.closed) return;
  session.close();
  const limit = sleep(TUNNEL_DRAIN_TIMEOUT_MS, undefined, { ref: false });
  await Promise.race([closed, limit]);
  session.destroy();
  socket.destroy();
}

/** Largest control message body. */
const MAX_CONTROL_BODY_BYTES = 16 * 1024;

/** The replica address of a move request, if it is one (an https URL). */
function moveTargetOf(body: string): string | undefined {
  try {
    const to = (JSON.parse(body) as Partial<MoveRequest>).to;
    return typeof to === 'string' && new URL(to).protocol === 'https:' ? to : undefined;
  } catch {
    return undefined;
  }
}

/** A dial that did not end in a tunnel: unreachable, closed, or not accepted in time. */
function connectFailure(message: string, cause?: Error): EdgeadmError {
  return new EdgeadmError(
    message,
    cause === undefined ? { code: 'E_TUNNEL_CONNECT' } : { code: 'E_TUNNEL_CONNECT', cause },
  );
}

/**
 * Dials the hub once and resolves when the hub welcomes the agent.
 *
 * @throws {EdgeadmError} `E_TUNNEL_REFUSED` when the hub refuses the agent
 * (the reason is in the message), `E_TUNNEL_CONNECT` when the hub cannot be
 * reached or the handshake does not finish.
 */
export async function connectTunnel(options: TunnelAgentOptions): Promise<AgentConnection> {
  const [{ connect, createSecureContext }, http2] = await Promise.all([import('node:tls'), import('node:http2')]);
  const identity = options.identity();
  const farEnd = options.farEnd ?? HUB_FAR_END;
  const hub = new URL(options.hubServer);
  const host = hub.hostname.replace(/^\[|\]$/g, '');
  const port = Number(hub.port || 443);
  const kept: TunnelTlsSession = options.tlsSession ?? {};
  if (kept.certPem !== identity.certPem || kept.context === undefined) {
    kept.certPem = identity.certPem;
    kept.context = createSecureContext({ ca: options.hubCaPem, cert: identity.certPem, key: identity.keyPem });
    kept.session = undefined;
  }
  const tlsOptions = {
    host: options.hubAddress ?? host,
    port,
    servername: /^[\d.:[\]]+$/.test(hub.hostname) ? undefined : hub.hostname,
    secureContext: kept.context,
    ALPNProtocols: [TUNNEL_ALPN_PROTOCOL],
    rejectUnauthorized: true,
    session: kept.session,
  };
  // Through a proxy, the TLS handshake (CA, client certificate) runs inside the CONNECT tunnel: end to end.
  const socket: TLSSocket =
    options.proxy === undefined
      ? connect(tlsOptions)
      : connect({
          ...tlsOptions,
          socket: await connectThroughProxy(options.proxy, { host: options.hubAddress ?? host, port }),
        });
  socket.setNoDelay(true);
  socket.setKeepAlive(true, TUNNEL_PING_INTERVAL_MS);
  socket.on('session', (session: Buffer) => {
    if (kept.certPem === identity.certPem) kept.session = session;
  });

  return new Promise<AgentConnection>((resolve, reject) => {
    let isSettled = false;
    let isWelcomed = false;
    let session: ServerHttp2Session | undefined;
    let stopKeepAlive = (): void => {};
    let drainActive = async (): Promise<void> => {};
    let movedTo: string | undefined;
    let resolveClosed = (): void => {};
    const closed = new Promise<void>((r) => (resolveClosed = r));
    const fail = (error: EdgeadmError): void => {
      if (isSettled) return;
      isSettled = true;
      clearTimeout(timer);
      session?.destroy();
      socket.destroy();
      reject(error);
    };
    const timer = setTimeout(
      () => fail(connectFailure(`${farEnd.name} did not accept the tunnel in time`)),
      TUNNEL_CONNECT_TIMEOUT_MS,
    );
    socket.once('error', (error) => fail(connectFailure(`cannot connect to ${farEnd.name}: ${error.message}`, error)));
    socket.once('close', () => {
      fail(connectFailure(`${farEnd.name} closed the connection`));
      stopKeepAlive();
      resolveClosed();
    });
    socket.once('secureConnect', () => {
      if (socket.alpnProtocol !== TUNNEL_ALPN_PROTOCOL) {
        fail(connectFailure(`${farEnd.name} does not speak ${TUNNEL_ALPN_PROTOCOL}`));
        return;
      }
      const serverSession = http2.performServerHandshake(socket, {
        settings: TUNNEL_HTTP2_SETTINGS,
        maxSessionMemory: TUNNEL_MAX_SESSION_MEMORY_MB,
      });
      session = serverSession;
      serverSession.on('error', (error) => options.logger.debug(`tunnel session error: ${error.message}`));
      serverSession.on('connect', () => serverSession.setLocalWindowSize(TUNNEL_CONNECTION_WINDOW_BYTES));
      serverSession.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
        stream.on('error', (error) => options.logger.debug(`tunnel stream error: ${error.message}`));
        // Told apart by the missing identity, which no user stream lacks; a user's /.edgeadm/… is an API path.
        const routes = options.controlRoutes ?? [];
        const path = controlPathOf(headers, routes);
        const route = routes.find((r) => r.path === path);
        if (route !== undefined) {
          serveControlRoute({ route, stream, headers, isWelcomed, logger: options.logger });
          return;
        }
        if (path !== undefined) {
          // The hub may give up on a control stream (its hello timeout) while the agent still asks
          // its API server for the hello: answering it then throws, and must not end the agent.
          handleControl(stream, path).catch((error: Error) =>
            options.logger.debug(`control stream ${path} failed: ${error.message}`),
          );
          return;
        }
        const work =
          headers[':method'] === 'CONNECT'
            ? options.upstream.forwardUpgrade(stream, headers)
            : options.upstream.forwardRequest(stream, headers);
        work.catch((error: Error) => {
          options.logger.debug(`forwarding failed: ${error.message}`);
          stream.destroy();
        });
      });
      serverSession.on('close', () => {
        stopKeepAlive();
        resolveClosed();
      });
    });

    const handleControl = async (stream: ServerHttp2Stream, path: string): Promise<void> => {
      if (path === HELLO_PATH) {
        const cache = options.helloCache;
        const isFresh =
          cache?.hello?.cluster === identity.cluster && Date.now() - (cache.readAt ?? 0) < TUNNEL_HELLO_REUSE_MS;
        const hello =
          isFresh && cache?.hello !== undefined
            ? cache.hello
            : await helloOf(identity.cluster, options.upstream, options.logger);
        if (cache !== undefined && !isFresh && hello.kubernetesVersion !== undefined) {
          cache.hello = hello;
          cache.readAt = Date.now();
        }
        stream.respond({ ':status': 200, 'content-type': 'application/json' });
        stream.end(JSON.stringify(hello));
        return;
      }
      const body = await readBody(stream, MAX_CONTROL_BODY_BYTES).catch(() => '');
      stream.respond({ ':status': 204 });
      stream.end();
      if (path === WELCOME_PATH && session !== undefined && !isSettled) {
        isSettled = true;
        isWelcomed = true;
        clearTimeout(timer);
        const active = session;
        stopKeepAlive = keepAlive(active, (why) => {
          options.logger.warn(`tunnel to ${farEnd.name} is dead (${why}); reconnecting`);
          active.destroy();
          socket.destroy();
        });
        drainActive = () => drainSession(active, socket, closed);
        resolve({ closed, drain: () => drainActive(), movedTo: () => movedTo });
      } else if (path === MOVE_PATH && isWelcomed) {
        movedTo = moveTargetOf(body);
        if (movedTo === undefined) return;
        options.logger.info(`${farEnd.name} asked this tunnel to move to ${movedTo}; moving`);
        await drainActive();
      } else if (path === REFUSE_PATH) {
        kept.session = undefined;
        let reason = 'no reason given';
        try {
          reason = String((JSON.parse(body) as { reason?: unknown }).reason ?? reason);
        } catch {
          // keep the default
        }
        fail(
          new EdgeadmError(`${farEnd.name} refused the tunnel: ${reason}`, {
            code: 'E_TUNNEL_REFUSED',
            hints: [...farEnd.refusalHints],
          }),
        );
      }
    };
  });
}
