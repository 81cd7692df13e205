/**
 * The hub's one TLS port: an HTTPS server with the admission gate in front
 * of TLS (a bound on handshakes in progress, each with its deadline),
 * Node's HTTP deadlines behind it, the session-ticket key and its rotation,
 * and the split by ALPN: a connection that asks for the tunnel protocol goes
 * to the tunnel registry, every other one to the HTTP handlers.
 *
 * It knows nothing of what the requests mean: the handlers are given.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { EdgeadmError } from '../../errors.js';
import type { Logger } from '../../log/run-log.js';
import { TUNNEL_ALPN_PROTOCOL } from '../../tunnel/limits.js';
import type { HubPki } from '../identity/hub-pki.js';
import {
  HANDSHAKE_QUEUE_WAIT_MS,
  MAX_PENDING_HANDSHAKES,
  MAX_QUEUED_HANDSHAKES,
  MAX_REFUSED_BODY_DRAIN_BYTES,
  MAX_REQUEST_HEADER_BYTES,
  SHUTDOWN_GRACE_MS,
  TLS_SESSION_LIFETIME_S,
  TLS_TICKET_KEY_CHECK_MS,
  UPGRADED_SOCKET_MAX_LISTENERS,
} from '../limits.js';
import type { HubMetrics } from '../metrics/hub-metrics.js';
import { HandshakeGate, httpServerDeadlineOptions, type HubDeadlines } from './socket-deadlines.js';
import type { HubIdentity } from '../identity/hub-identity.js';

/**
 * Admission control and the handshake deadline: past the bound a connection
 * waits its turn (TLS not started), past the queue or its wait it is closed
 * before TLS starts; a handshake not done by its deadline is closed. The
 * gate starts TLS itself: the TLS server's own `connection` listener is
 * taken over (the server still listens, so its HTTP deadlines apply as to
 * any listening server).
 */
function gateHandshakes(server: HttpsServer, options: HttpsFrontOptions): HandshakeGate {
  const { metrics, handshakes } = options;
  const gate = new HandshakeGate({
    maxPending: handshakes.maxPendingHandshakes ?? MAX_PENDING_HANDSHAKES,
    maxQueued: handshakes.maxQueuedHandshakes ?? MAX_QUEUED_HANDSHAKES,
    maxWaitMs: HANDSHAKE_QUEUE_WAIT_MS,
    handshakeMs: options.deadlines.handshakeMs,
    onRefused: () => metrics.handshakesRefused.inc(),
    onExpired: () => metrics.handshakesTimedOut.inc(),
  });
  const startTls = server.listeners('connection') as ((raw: Socket) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', (raw: Socket) => {
    gate.admit(raw, () => {
      for (const listener of startTls) listener.call(server, raw);
    });
  });
  return gate;
}

/** Options of {@link startHttpsFront}. */
export interface HttpsFrontOptions {
  host: string;
  port: number;
  /** As given on the command line, for the error when the port is taken. */
  listen: string;
  pki: HubPki;
  /** Where the TLS session-ticket key is kept (hub-identity.ts). */
  identity: Pick<HubIdentity, 'ensureTicketKey'>;
  deadlines: HubDeadlines;
  /**
   * Most TLS handshakes in progress ({@link MAX_PENDING_HANDSHAKES} by default) and most
   * connections waiting for a place ({@link MAX_QUEUED_HANDSHAKES}); past both a connection is
   * closed before TLS.
   */
  handshakes: { maxPendingHandshakes?: number | undefined; maxQueuedHandshakes?: number | undefined };
  metrics: HubMetrics;
  logger: Logger;
  onTunnel(socket: TLSSocket): void;
  onRequest(req: IncomingMessage, res: ServerResponse): void;
  onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
}

/** The listening front. */
export interface HttpsFront {
  /** The actual listening port. */
  port: number;
  /** Stops accepting and closes idle HTTP connections; open ones stay. */
  stopAccepting(): void;
  /** Closes every HTTP connection, after `afterDrain` resolved or {@link SHUTDOWN_GRACE_MS} passed. */
  closeConnections(afterDrain: Promise<void>): Promise<void>;
  /** Closes every socket at once. */
  destroyAll(): void;
}

/**
 * Bounds what is read of a request body nobody read before the answer was
 * sent (a 401 or 403 before the body, a route that takes none). Node reads
 * such a body to its end after the answer, to reach the next request on
 * the connection, however large it is and however long it takes within the
 * request deadline: anyone could make the hub read gigabytes. Past
 * {@link MAX_REFUSED_BODY_DRAIN_BYTES} the connection is closed.
 */
function boundUnreadBody(req: IncomingMessage, res: ServerResponse): void {
  // Before Node's own 'finish' listener, which would have the parser drop the rest of the body
  // unseen (and unbounded): a body resumed here is read, and counted, instead.
  res.prependOnceListener('finish', () => {
    if (req.complete) return;
    let drained = 0;
    req.on('data', (chunk: Buffer) => {
      drained += chunk.length;
      if (drained > MAX_REFUSED_BODY_DRAIN_BYTES) req.socket.destroy();
    });
    req.resume();
  });
}

/**
 * The TLS session id context of the hub's port: OpenSSL resumes a session
 * only on a server of the context it was made in. Node's default is a hash
 * of the process's command line, which differs between replicas (their
 * `--listen`, `--data-dir`, `--advertise-address`) and after any change of
 * flags, so an agent moving to another replica made a full handshake even
 * though every replica holds the same ticket key. Derived from the hub CA
 * instead: the same on every replica of one hub, another for any other hub.
 */
export function tlsSessionIdContext(caPin: string): string {
  // OpenSSL keeps at most 32 bytes of it.
  return createHash('sha256').update(`edgeadm hub TLS sessions ${caPin}`).digest('hex').slice(0, 32);
}

/** Creates the HTTPS server and listens. */
export async function startHttpsFront(options: HttpsFrontOptions): Promise<HttpsFront> {
  const { deadlines, metrics, logger, pki, identity } = options;
  const https = await import('node:https');
  const sockets = new Set<TLSSocket>();
  // Session tickets under a key kept with the hub's identity (the data directory, or etcd for
  // every replica): agents resume across hub restarts, and on another replica.
  const ticketKey = await identity.ensureTicketKey(pki.caPin);
  // One HTTPS server for the port: Node's HTTP server deadlines apply to it as they do to any
  // listening server (a server fed connections by hand never starts checking them).
  const server: HttpsServer = https.createServer({
    ticketKeys: ticketKey.key,
    sessionIdContext: tlsSessionIdContext(pki.caPin),
    // A second guard behind the gate's deadline (below), of the same length: it reports to `tlsClientError`.
    handshakeTimeout: deadlines.handshakeMs,
    sessionTimeout: TLS_SESSION_LIFETIME_S,
    cert: pki.servingCertPem,
    key: pki.servingKeyPem,
    ca: pki.ca.certPem,
    requestCert: true,
    rejectUnauthorized: false,
    ALPNProtocols: [TUNNEL_ALPN_PROTOCOL, 'http/1.1'],
    // Small HTTP/2 frames and kube answers must not wait for Nagle's algorithm.
    noDelay: true,
    maxHeaderSize: MAX_REQUEST_HEADER_BYTES,
    ...httpServerDeadlineOptions(deadlines),
  });
  // No byte either way for this long while an answer streams: closed (Node's default is never).
  server.timeout = deadlines.streamIdleMs;
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    boundUnreadBody(req, res);
    options.onRequest(req, res);
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    // An upgraded stream (exec, attach, port-forward) leaves the HTTP server's deadlines: it gets its own.
    // Closed with an error, so that its tunnel stream is reset at once (a plain close leaves the stream
    // open on the tunnel until the drain timeout).
    (socket as TLSSocket).setTimeout(deadlines.streamIdleMs, () =>
      socket.destroy(new Error(`no byte either way for ${deadlines.streamIdleMs} ms`)),
    );
    socket.setMaxListeners(UPGRADED_SOCKET_MAX_LISTENERS);
    options.onUpgrade(req, socket, head);
  });
  const gate = gateHandshakes(server, options);
  // Every failed handshake is closed, the handshake timeout included: Node reports that one to
  // `tlsClientError` listeners without closing anything (this listener replaces https' own).
  server.removeAllListeners('tlsClientError');
  server.on('tlsClientError', (error: Error, socket: TLSSocket) => {
    logger.debug(`TLS handshake failed: ${error.message}`);
    socket.destroy();
  });
  // A connection that asked for the tunnel by ALPN becomes a tunnel; every other one goes to the
  // HTTP server's own listener (the one https.createServer set).
  const serveHttp = server.listeners('secureConnection') as ((socket: TLSSocket) => void)[];
  server.removeAllListeners('secureConnection');
  server.on('secureConnection', (socket: TLSSocket) => {
    gate.secured(socket);
    if (socket.isSessionReused()) metrics.tlsSessionsResumed.inc();
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', (error) => logger.debug(`connection error: ${error.message}`));
    if (socket.alpnProtocol === TUNNEL_ALPN_PROTOCOL) options.onTunnel(socket);
    else for (const listener of serveHttp) listener.call(server, socket);
  });
  const rotateTicketKey = setInterval(() => {
    identity.ensureTicketKey(pki.caPin).then(
      (next) => {
        if (next.isNew) {
          server.setTicketKeys(next.key);
          logger.info('TLS session-ticket key rotated');
        }
      },
      (error: Error) => {
        // The key in use stays; the next check tries again. (The message names the place, never the key.)
        logger.warn(`cannot rotate the TLS session-ticket key: ${error.message}`);
      },
    );
  }, TLS_TICKET_KEY_CHECK_MS);
  rotateTicketKey.unref();

  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', (error: NodeJS.ErrnoException) =>
        reject(
          new EdgeadmError(`cannot listen on ${options.listen}: ${error.message}`, {
            code: 'E_HUB_LISTEN',
            cause: error,
            hints: ['Choose another --listen address or stop what holds the port.'],
          }),
        ),
      );
      server.listen(options.port, options.host, () => resolve());
    });
  } catch (error) {
    clearInterval(rotateTicketKey);
    throw error;
  }
  const destroyAll = (): void => {
    for (const socket of sockets) socket.destroy();
  };
  return {
    port: (server.address() as { port: number }).port,
    stopAccepting: () => {
      clearInterval(rotateTicketKey);
      server.close();
    },
    closeConnections: async (afterDrain) => {
      const grace = setTimeout(destroyAll, SHUTDOWN_GRACE_MS);
      await afterDrain;
      server.closeAllConnections();
      destroyAll();
      clearTimeout(grace);
    },
    destroyAll: () => {
      clearInterval(rotateTicketKey);
      server.close();
      server.closeAllConnections();
      destroyAll();
    },
  };
}
