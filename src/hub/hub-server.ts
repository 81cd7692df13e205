/**
 * `hub serve`: one TLS port for everything. A connection that asks for the
 * tunnel protocol by ALPN becomes a tunnel (the agent authenticated by its
 * client certificate); every other connection is HTTPS for the operator
 * API, discovery, registration, health, metrics and the kube proxy.
 *
 * Owns first-start setup (CA, admin credential, `admin.yaml`), the table of
 * open tunnels (the newest connection of a cluster wins), graceful
 * shutdown, and the wiring of every socket's deadlines (socket-deadlines.ts:
 * the handshake gate in front of TLS, Node's HTTP deadlines behind it).
 */
import { mkdirSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import { isIP, type Socket } from 'node:net';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import type { PeerCertificate, TLSSocket } from 'node:tls';
import { EdgeadmError } from '../errors.js';
import type { Logger } from '../log/run-log.js';
import { TUNNEL_ALPN_PROTOCOL } from '../tunnel/limits.js';
import { acceptTunnel, type HubTunnel, type TunnelVerdict } from '../tunnel/hub-tunnel.js';
import type { HubContext } from './hub-context.js';
import { isWithinValidity } from './client-certificate.js';
import type { HubPki } from './hub-pki.js';
import { isStoreUnavailable } from './etcd/errors.js';
import { answerAfterBody, endSocketWithStatus, HttpError, sendJson, sendStatus } from './http-replies.js';
import { parseProxyUrl, proxyRequest, proxyUpgrade } from './kube-proxy.js';
import {
  LAST_SEEN_REFRESH_MS,
  MAX_REQUEST_HEADER_BYTES,
  SHUTDOWN_GRACE_MS,
  MAX_PENDING_HANDSHAKES,
  TLS_SESSION_LIFETIME_S,
  TLS_TICKET_KEY_CHECK_MS,
} from './limits.js';
import { HubMetrics } from './metrics.js';
import { serveApi } from './operator-api.js';
import {
  DEFAULT_HUB_DEADLINES,
  HandshakeGate,
  httpServerDeadlineOptions,
  type HubDeadlines,
} from './socket-deadlines.js';
import { RolloutController } from './rollout-controller.js';
import { followReports, TunnelRolloutDelivery } from './rollout-tunnel.js';
import { openHubStore, type EtcdStoreOptions } from './open-store.js';
import type { HubStore } from './store.js';

export { HUB_STORE_FILE } from './open-store.js';
/** The admin's hub config under the data directory. */
export const ADMIN_CONFIG_FILE = 'admin.yaml';

/** Options of {@link startHub}. */
export interface HubServerOptions {
  /** `host:port` to listen on (`0.0.0.0:9443`, `[::]:9443`, `127.0.0.1:0`). */
  listen: string;
  dataDir: string;
  /** Host the hub is reached at, written into configs and the discovery document. Defaults to the listen host. */
  advertiseAddress?: string;
  /** A CA to adopt on first start. */
  caCertFile?: string;
  caKeyFile?: string;
  /** Keep the hub's state in etcd (several replicas) instead of SQLite under the data directory. */
  etcd?: EtcdStoreOptions;
  /** Most TLS handshakes in progress at once; {@link MAX_PENDING_HANDSHAKES} by default. */
  maxPendingHandshakes?: number;
  /** Socket deadlines other than the defaults of limits.ts (tests make them short). */
  deadlines?: Partial<HubDeadlines>;
  /** The clock expiry decisions read; the system clock by default (tests set the time instead of sleeping). */
  clock?: () => Date;
  logger: Logger;
}

/** A running hub. */
export interface RunningHub {
  /** `https://host:port` as advertised. */
  url: string;
  /** The actual listening port. */
  port: number;
  caPin: string;
  adminConfigPath: string;
  /** Whether this start created the CA and the admin credential. */
  isFirstStart: boolean;
  /** Graceful shutdown: stop accepting, drain tunnels and requests, close the store. */
  close(): Promise<void>;
}

/** Splits `host:port` / `[v6]:port`. */
export function parseListenAddress(listen: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(listen);
  const port = Number(match?.[3]);
  if (!match || port > 65_535) {
    throw new EdgeadmError(`invalid --listen ${JSON.stringify(listen)}: expected host:port`, {
      code: 'E_HUB_LISTEN_INVALID',
      exitCode: 3,
      hints: ['For example --listen 0.0.0.0:9443 or --listen [::]:9443.'],
    });
  }
  return { host: match[1] ?? (match[2] || '0.0.0.0'), port };
}

function urlHost(host: string): string {
  return isIP(host) === 6 ? `[${host}]` : host;
}

/**
 * Policy for a tunnel's client certificate: within its validity period, not
 * revoked, names a registered cluster. Checked at every connection, resumed
 * TLS sessions included: a resumption carries the certificate and the chain
 * verdict of the session's first handshake, so revocation and expiry since
 * then are only seen here.
 */
async function tunnelVerdict(store: HubStore, certificate: PeerCertificate): Promise<TunnelVerdict> {
  const cluster = String(certificate.subject?.CN ?? '');
  const serial = String(certificate.serialNumber ?? '').toLowerCase();
  if (!isWithinValidity(certificate)) {
    return { refusal: 'this certificate is expired or not yet valid' };
  }
  if (await store.isCertificateRevoked(serial)) return { refusal: 'this certificate has been revoked' };
  if ((await store.getCluster(cluster)) === undefined) {
    return { refusal: `no cluster named ${JSON.stringify(cluster)} is registered` };
  }
  return { cluster };
}

/** Starts the hub. */
export async function startHub(options: HubServerOptions): Promise<RunningHub> {
  const { logger } = options;
  const { host, port } = parseListenAddress(options.listen);
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  const adminConfigPath = join(options.dataDir, ADMIN_CONFIG_FILE);
  const advertiseHost = options.advertiseAddress ?? (host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host);
  const { store, coordination, identity } = await openHubStore({
    dataDir: options.dataDir,
    ...(options.etcd === undefined ? {} : { etcd: options.etcd }),
    ...(options.caCertFile === undefined ? {} : { caCertFile: options.caCertFile }),
    ...(options.caKeyFile === undefined ? {} : { caKeyFile: options.caKeyFile }),
    onWarning: (message) => logger.warn(message),
  });
  const pki: HubPki = await identity.ensurePki([advertiseHost, host]);

  const https = await import('node:https');
  const deadlines: HubDeadlines = { ...DEFAULT_HUB_DEADLINES, ...options.deadlines };
  const tunnels = new Map<string, HubTunnel>();
  const metrics = new HubMetrics();
  const sockets = new Set<TLSSocket>();
  const context: HubContext = {
    store,
    pki,
    metrics,
    logger,
    advertiseUrl: '',
    tunnels,
    closeTunnel: (cluster) => {
      const tunnel = tunnels.get(cluster);
      if (tunnel) {
        tunnels.delete(cluster);
        context.rollouts?.clusterDisconnected(cluster);
        tunnel.destroy();
      }
    },
    now: options.clock ?? (() => new Date()),
  };
  // Rollouts: the controller reads its state from the store and delivers over the tunnels.
  const rolloutDelivery = new TunnelRolloutDelivery({ tunnels, logger });
  const rollouts = await RolloutController.start({ store, delivery: rolloutDelivery, logger });
  context.rollouts = rollouts;
  /** Stops each open tunnel's report stream (at shutdown, before the tunnels drain). */
  const reportFollowers = new Set<() => void>();
  const reportSink = {
    report: rollouts.report.bind(rollouts),
    unsupported: (cluster: string) => rolloutDelivery.markUnsupported(cluster),
  };

  // One sweep over all tunnels instead of timers per tunnel: close the silent ones, refresh `lastSeen`.
  const lastSeenSavers = new Map<HubTunnel, { savedAt: number; save: () => Promise<void> }>();
  let sweptAt = Date.now();
  const sweep = setInterval(() => {
    const now = Date.now();
    // A sweep that ran late says the hub itself was too busy to read its sockets: judge no silence then.
    const isOnTime = now - sweptAt < 2 * deadlines.tunnelSweepMs;
    sweptAt = now;
    for (const [tunnel, saver] of lastSeenSavers) {
      if (tunnel.isSilent(now, deadlines.tunnelSilenceMs) && isOnTime) {
        logger.warn(`tunnel of cluster ${tunnel.cluster} is dead (nothing heard from its agent); closing it`);
        tunnel.destroy();
      } else if (now - saver.savedAt >= LAST_SEEN_REFRESH_MS) {
        saver.savedAt = now;
        void saver.save();
      }
    }
  }, deadlines.tunnelSweepMs);
  sweep.unref();

  const onTunnel = async (socket: TLSSocket): Promise<void> => {
    let tunnel: HubTunnel;
    try {
      tunnel = await acceptTunnel({
        socket,
        authorize: (cert) => tunnelVerdict(store, cert),
        logger,
        acceptTimeoutMs: deadlines.tunnelAcceptMs,
      });
    } catch (error) {
      metrics.tunnelsRefused += 1;
      logger.warn(`${(error as EdgeadmError).code ?? 'E_TUNNEL'}: ${(error as Error).message}`);
      return;
    }
    const { cluster } = tunnel;
    const previous = tunnels.get(cluster);
    tunnels.set(cluster, tunnel);
    metrics.connectedAgents = tunnels.size;
    if (previous) {
      logger.info(`cluster ${cluster} reconnected; closing its previous tunnel`);
      previous.destroy();
    }
    logger.info(`cluster ${cluster} connected (${tunnel.hello.kubernetesVersion ?? 'version unknown'})`);
    // Its report stream first, then what it is owed (its current copies within the controller's next pass).
    rolloutDelivery.tunnelOpened(cluster);
    const stopReports = followReports(tunnel, reportSink, logger);
    reportFollowers.add(stopReports);
    void tunnel.closed.then(() => reportFollowers.delete(stopReports));
    rollouts.clusterConnected(cluster);
    const seen = (): Promise<void> =>
      store
        .updateClusterStatus(cluster, {
          lastSeen: new Date().toISOString(),
          ...(tunnel.hello.kubernetesVersion === undefined
            ? {}
            : { kubernetesVersion: tunnel.hello.kubernetesVersion }),
          ...(tunnel.hello.nodeCount === undefined ? {} : { nodeCount: tunnel.hello.nodeCount }),
        })
        .catch(() => undefined);
    await seen();
    lastSeenSavers.set(tunnel, { savedAt: Date.now(), save: seen });
    await tunnel.closed;
    lastSeenSavers.delete(tunnel);
    if (tunnels.get(cluster) === tunnel) {
      tunnels.delete(cluster);
      rollouts.clusterDisconnected(cluster);
      logger.info(`cluster ${cluster} disconnected`);
      await seen();
    }
    metrics.connectedAgents = tunnels.size;
  };

  // Session tickets under a key kept with the hub's identity: agents resume across hub restarts (and replicas).
  const ticketKey = await identity.ensureTicketKey(pki.caPin);
  // One HTTPS server for the port: Node's HTTP server deadlines apply to it as they do to any
  // listening server (a server fed connections by hand never starts checking them).
  const server: HttpsServer = https.createServer({
    ticketKeys: ticketKey.key,
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
    void handleRequest(context, req, res);
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    // An upgraded stream (exec, attach, port-forward) leaves the HTTP server's deadlines: it gets its own.
    // Closed with an error, so that its tunnel stream is reset at once (a plain close leaves the stream
    // open on the tunnel until the drain timeout).
    (socket as TLSSocket).setTimeout(deadlines.streamIdleMs, () =>
      socket.destroy(new Error(`no byte either way for ${deadlines.streamIdleMs} ms`)),
    );
    const target = parseProxyUrl(req.url ?? '/');
    if (target === undefined) {
      endSocketWithStatus(socket, 404, 'upgrades are served under /clusters/NAME/ only');
      return;
    }
    proxyUpgrade(context, req, socket, head, target).catch((error: Error) => {
      logger.warn(`upgrade failed: ${error.message}`);
      socket.destroy();
    });
  });
  // Admission control and the handshake deadline: past the bound, a connection is closed before
  // TLS starts; a handshake not done by its deadline is closed.
  const gate = new HandshakeGate({
    maxPending: options.maxPendingHandshakes ?? MAX_PENDING_HANDSHAKES,
    handshakeMs: deadlines.handshakeMs,
    onRefused: () => (metrics.handshakesRefused += 1),
    onExpired: () => (metrics.handshakesTimedOut += 1),
  });
  server.prependListener('connection', (raw: Socket) => gate.admit(raw));
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
    if (socket.isSessionReused()) metrics.tlsSessionsResumed += 1;
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', (error) => logger.debug(`connection error: ${error.message}`));
    if (socket.alpnProtocol === TUNNEL_ALPN_PROTOCOL) void onTunnel(socket);
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
        // The key in use stays; the next check tries again. (The message names the file, never the key.)
        logger.warn(`cannot rotate the TLS session-ticket key: ${error.message}`);
      },
    );
  }, TLS_TICKET_KEY_CHECK_MS);
  rotateTicketKey.unref();

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
    server.listen(port, host, () => resolve());
  });
  const actualPort = (server.address() as { port: number }).port;
  context.advertiseUrl = `https://${urlHost(advertiseHost)}:${actualPort}`;

  const isFirstStart = await identity.ensureAdmin({
    path: adminConfigPath,
    server: context.advertiseUrl,
    caPem: pki.ca.certPem,
  });
  coordination.self.advertiseUrl = context.advertiseUrl;
  await coordination.join();
  logger.info(`hub serving on ${context.advertiseUrl}`);

  let closing: Promise<void> | undefined;
  return {
    url: context.advertiseUrl,
    port: actualPort,
    caPin: pki.caPin,
    adminConfigPath,
    isFirstStart,
    close: () => {
      closing ??= (async () => {
        logger.info('hub shutting down');
        clearInterval(rotateTicketKey);
        clearInterval(sweep);
        // The controller writes what it has not written yet and starts nothing new; the report
        // streams, which never end by themselves, are closed so that the tunnels can drain.
        await rollouts.stop();
        for (const stop of reportFollowers) stop();
        // Stops accepting and closes the idle HTTP connections.
        server.close();
        const grace = setTimeout(() => {
          for (const socket of sockets) socket.destroy();
        }, SHUTDOWN_GRACE_MS);
        await Promise.all([...tunnels.values()].map((tunnel) => tunnel.drain()));
        server.closeAllConnections();
        for (const socket of sockets) socket.destroy();
        clearTimeout(grace);
        await store.close();
        await coordination.close();
      })();
      return closing;
    },
  };
}

async function handleRequest(context: HubContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  try {
    const target = parseProxyUrl(req.url ?? '/');
    if (target !== undefined) {
      await proxyRequest(context, req, res, target);
      return;
    }
    if (!(await serveApi(context, req, res))) sendStatus(res, 404, `${req.url ?? ''} is not served by the hub`);
  } catch (error) {
    // etcd without quorum: the change is refused with the cause, and the client may retry elsewhere or later.
    if (isStoreUnavailable(error)) {
      answerAfterBody(req, () => {
        if (!res.headersSent) sendJson(res, 503, { code: error.code, message: error.message });
      });
      return;
    }
    if (error instanceof HttpError) {
      answerAfterBody(req, () => {
        if (!res.headersSent) sendJson(res, error.status, { code: error.code, message: error.message });
      });
      return;
    }
    context.logger.error(`request ${req.method} ${req.url} failed: ${(error as Error).message}`);
    if (!res.headersSent) sendJson(res, 500, { code: 'E_HUB_INTERNAL', message: 'internal error' });
  }
}
