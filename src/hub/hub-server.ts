/**
 * `hub serve`: one TLS port for everything. A connection that asks for the
 * tunnel protocol by ALPN becomes a tunnel (the agent authenticated by its
 * client certificate); every other connection is HTTPS for the operator
 * API, discovery, registration, health, metrics and the kube proxy.
 *
 * Owns first-start setup (CA, admin credential, `admin.yaml`), the table of
 * open tunnels (the newest connection of a cluster wins), and graceful
 * shutdown.
 */
import { existsSync, mkdirSync } from 'node:fs';
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import { isIP, type Socket } from 'node:net';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import type { PeerCertificate, Server as TlsServer, TLSSocket } from 'node:tls';
import { EdgeadmError } from '../errors.js';
import type { Logger } from '../log/run-log.js';
import { TUNNEL_ALPN_PROTOCOL, TUNNEL_PING_INTERVAL_MS } from '../tunnel/limits.js';
import { acceptTunnel, type HubTunnel, type TunnelVerdict } from '../tunnel/hub-tunnel.js';
import { HUB_ADMIN_USER, type HubContext } from './hub-context.js';
import { isWithinValidity } from './client-certificate.js';
import { writeHubConfig } from './hub-config.js';
import { ensureHubPki, type HubPki } from './hub-pki.js';
import { hashUserToken, newUserToken } from './hub-tokens.js';
import { answerAfterBody, endSocketWithStatus, HttpError, sendJson, sendStatus } from './http-replies.js';
import { parseProxyUrl, proxyRequest, proxyUpgrade } from './kube-proxy.js';
import {
  LAST_SEEN_REFRESH_MS,
  MAX_REQUEST_HEADER_BYTES,
  REQUEST_HEADERS_TIMEOUT_MS,
  SHUTDOWN_GRACE_MS,
  MAX_PENDING_HANDSHAKES,
  TLS_HANDSHAKE_TIMEOUT_MS,
  TLS_SESSION_LIFETIME_S,
  TLS_TICKET_KEY_CHECK_MS,
} from './limits.js';
import { HubMetrics } from './metrics.js';
import { serveApi } from './operator-api.js';
import { SqliteHubStore } from './sqlite-store.js';
import type { HubStore } from './store.js';
import { ensureTlsTicketKey } from './tls-ticket-keys.js';

/** The store file under the data directory. */
export const HUB_STORE_FILE = 'hub.db';
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
  /** Most TLS handshakes in progress at once; {@link MAX_PENDING_HANDSHAKES} by default. */
  maxPendingHandshakes?: number;
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
  const isFirstStart = !existsSync(adminConfigPath);
  const advertiseHost = options.advertiseAddress ?? (host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host);
  const pki: HubPki = await ensureHubPki({
    dataDir: options.dataDir,
    names: [advertiseHost, host],
    ...(options.caCertFile === undefined ? {} : { caCertFile: options.caCertFile }),
    ...(options.caKeyFile === undefined ? {} : { caKeyFile: options.caKeyFile }),
  });
  const store = await SqliteHubStore.open(join(options.dataDir, HUB_STORE_FILE));

  const tls = await import('node:tls');
  const http = await import('node:http');
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
        tunnel.destroy();
      }
    },
    now: options.clock ?? (() => new Date()),
  };

  const httpServer: HttpServer = http.createServer({
    maxHeaderSize: MAX_REQUEST_HEADER_BYTES,
    headersTimeout: REQUEST_HEADERS_TIMEOUT_MS,
    // Watches and logs -f stream for as long as the user wants.
    requestTimeout: 0,
  });
  httpServer.on('request', (req: IncomingMessage, res: ServerResponse) => {
    void handleRequest(context, req, res);
  });
  httpServer.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
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

  // One sweep over all tunnels instead of timers per tunnel: close the silent ones, refresh `lastSeen`.
  const lastSeenSavers = new Map<HubTunnel, { savedAt: number; save: () => Promise<void> }>();
  let sweptAt = Date.now();
  const sweep = setInterval(() => {
    const now = Date.now();
    // A sweep that ran late says the hub itself was too busy to read its sockets: judge no silence then.
    const isOnTime = now - sweptAt < 2 * TUNNEL_PING_INTERVAL_MS;
    sweptAt = now;
    for (const [tunnel, saver] of lastSeenSavers) {
      if (tunnel.isSilent(now) && isOnTime) {
        logger.warn(`tunnel of cluster ${tunnel.cluster} is dead (nothing heard from its agent); closing it`);
        tunnel.destroy();
      } else if (now - saver.savedAt >= LAST_SEEN_REFRESH_MS) {
        saver.savedAt = now;
        void saver.save();
      }
    }
  }, TUNNEL_PING_INTERVAL_MS);
  sweep.unref();

  const onTunnel = async (socket: TLSSocket): Promise<void> => {
    let tunnel: HubTunnel;
    try {
      tunnel = await acceptTunnel({ socket, authorize: (cert) => tunnelVerdict(store, cert), logger });
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
      logger.info(`cluster ${cluster} disconnected`);
      await seen();
    }
    metrics.connectedAgents = tunnels.size;
  };

  // Session tickets under a key kept in the data directory: agents resume across hub restarts.
  const pkiDir = join(options.dataDir, 'pki');
  const ticketKey = ensureTlsTicketKey({ pkiDir, caPin: pki.caPin });
  const tlsServer: TlsServer = tls.createServer({
    ticketKeys: ticketKey.key,
    // Shorter than the agents' connect timeout: a stalled handshake frees its place under the bound.
    handshakeTimeout: TLS_HANDSHAKE_TIMEOUT_MS,
    sessionTimeout: TLS_SESSION_LIFETIME_S,
    cert: pki.servingCertPem,
    key: pki.servingKeyPem,
    ca: pki.ca.certPem,
    requestCert: true,
    rejectUnauthorized: false,
    ALPNProtocols: [TUNNEL_ALPN_PROTOCOL, 'http/1.1'],
    // Small HTTP/2 frames and kube answers must not wait for Nagle's algorithm.
    noDelay: true,
  });
  // Admission control: past the bound, a connection is closed before TLS starts.
  const maxPending = options.maxPendingHandshakes ?? MAX_PENDING_HANDSHAKES;
  const pending = new Map<string, () => void>();
  tlsServer.prependListener('connection', (raw: Socket) => {
    if (pending.size >= maxPending) {
      metrics.handshakesRefused += 1;
      raw.destroy();
      return;
    }
    const key = `${raw.remoteAddress}:${raw.remotePort}`;
    const done = (): void => {
      if (pending.get(key) === done) pending.delete(key);
    };
    pending.set(key, done);
    raw.once('close', done);
  });
  const rotateTicketKey = setInterval(() => {
    try {
      const next = ensureTlsTicketKey({ pkiDir, caPin: pki.caPin });
      if (next.isNew) {
        tlsServer.setTicketKeys(next.key);
        logger.info('TLS session-ticket key rotated');
      }
    } catch (error) {
      // The key in use stays; the next check tries again. (The message names the file, never the key.)
      logger.warn(`cannot rotate the TLS session-ticket key: ${(error as Error).message}`);
    }
  }, TLS_TICKET_KEY_CHECK_MS);
  rotateTicketKey.unref();
  tlsServer.on('secureConnection', (socket: TLSSocket) => {
    pending.get(`${socket.remoteAddress}:${socket.remotePort}`)?.();
    if (socket.isSessionReused()) metrics.tlsSessionsResumed += 1;
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', (error) => logger.debug(`connection error: ${error.message}`));
    if (socket.alpnProtocol === TUNNEL_ALPN_PROTOCOL) void onTunnel(socket);
    else httpServer.emit('connection', socket);
  });
  tlsServer.on('tlsClientError', (error) => logger.debug(`TLS handshake failed: ${error.message}`));

  await new Promise<void>((resolve, reject) => {
    tlsServer.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new EdgeadmError(`cannot listen on ${options.listen}: ${error.message}`, {
          code: 'E_HUB_LISTEN',
          cause: error,
          hints: ['Choose another --listen address or stop what holds the port.'],
        }),
      ),
    );
    tlsServer.listen(port, host, () => resolve());
  });
  const actualPort = (tlsServer.address() as { port: number }).port;
  context.advertiseUrl = `https://${urlHost(advertiseHost)}:${actualPort}`;

  if (isFirstStart) {
    const token = newUserToken();
    await store.putUser({
      name: HUB_ADMIN_USER,
      tokenHash: hashUserToken(token),
      clustersSelector: '',
      groups: [],
      isAdmin: true,
      createdAt: new Date().toISOString(),
    });
    writeHubConfig(adminConfigPath, {
      server: context.advertiseUrl,
      caPem: pki.ca.certPem,
      user: HUB_ADMIN_USER,
      token,
    });
  }
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
        tlsServer.close();
        const grace = setTimeout(() => {
          for (const socket of sockets) socket.destroy();
        }, SHUTDOWN_GRACE_MS);
        httpServer.closeIdleConnections();
        await Promise.all([...tunnels.values()].map((tunnel) => tunnel.drain()));
        httpServer.closeAllConnections();
        for (const socket of sockets) socket.destroy();
        clearTimeout(grace);
        await store.close();
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
