/**
 * The edge-proxy's two listeners: the HTTPS proxy port (client certificates
 * requested, checked by the identity rule rather than by the handshake) and
 * the optional plain-HTTP port of `/healthz` and `/metrics`; and closing
 * them with a grace period for open streams.
 *
 * `node:http`/`node:https` are loaded here when the listeners are made,
 * never at import (the single binary's startup snapshot cannot hold them).
 */
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { EdgeadmError } from '../errors.js';
import { METRICS_CONTENT_TYPE } from '../metrics/metrics-registry.js';
import { CLIENT_KEEP_ALIVE_TIMEOUT_MS, SHUTDOWN_GRACE_MS } from './limits.js';

/** A listen address. */
export interface HostPort {
  host: string;
  port: number;
}

/** What the proxy port serves with. */
export interface ProxyListenerOptions {
  certPem: string;
  keyPem: string;
  /** The CA client certificates are checked against. */
  clientCaPem: string | undefined;
  handle(req: IncomingMessage, res: ServerResponse): void;
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
}

/** The listeners once bound. */
export interface BoundListeners {
  port: number;
  metricsPort: number | undefined;
  /** Serves new TLS connections of the proxy port with another certificate (open ones keep theirs). */
  setServingCertificate(certPem: string, keyPem: string): void;
  /** Closes both, destroying connections still open after {@link SHUTDOWN_GRACE_MS}. */
  close(): Promise<void>;
}

/** What the metrics port answers for a path; `/metrics` renders `metrics()`, nothing else does I/O. */
export async function metricsPortAnswer(
  url: string | undefined,
  metrics: () => Promise<string>,
): Promise<{ status: number; contentType: string; body: string }> {
  const path = new URL(url ?? '/', 'http://edge-proxy.invalid').pathname;
  if (path === '/healthz') return { status: 200, contentType: 'text/plain', body: 'ok\n' };
  if (path === '/metrics') return { status: 200, contentType: METRICS_CONTENT_TYPE, body: await metrics() };
  return {
    status: 404,
    contentType: 'text/plain',
    body: 'not found: the edge-proxy serves /healthz and /metrics here\n',
  };
}

/**
 * Makes and binds the listeners. On a bind failure whatever was made is
 * closed and `E_EDGE_LISTEN` thrown.
 */
export async function bindListeners(
  proxy: ProxyListenerOptions,
  listen: HostPort,
  metricsListen: HostPort | undefined,
  metrics: () => Promise<string>,
): Promise<BoundListeners> {
  const https = await import('node:https');
  const server: HttpsServer = https.createServer({
    cert: proxy.certPem,
    key: proxy.keyPem,
    ca: proxy.clientCaPem,
    requestCert: true,
    rejectUnauthorized: false,
  });
  server.keepAliveTimeout = CLIENT_KEEP_ALIVE_TIMEOUT_MS;
  server.on('request', proxy.handle);
  server.on('upgrade', proxy.handleUpgrade);
  server.on('clientError', (_error, socket) => socket.destroy());
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  let metricsServer: HttpServer | undefined;
  if (metricsListen) {
    const http = await import('node:http');
    metricsServer = http.createServer((req, res) => {
      metricsPortAnswer(req.url, metrics).then(
        (answer) => res.writeHead(answer.status, { 'content-type': answer.contentType }).end(answer.body),
        () => res.writeHead(500, { 'content-type': 'text/plain' }).end('the metrics could not be rendered\n'),
      );
    });
  }

  const close = async (): Promise<void> => {
    const closing = [new Promise<void>((resolve) => server.close(() => resolve()))];
    if (metricsServer) closing.push(new Promise<void>((resolve) => metricsServer.close(() => resolve())));
    const grace = setTimeout(() => {
      for (const socket of sockets) socket.destroy();
      metricsServer?.closeAllConnections();
    }, SHUTDOWN_GRACE_MS);
    server.closeIdleConnections();
    metricsServer?.closeIdleConnections();
    await Promise.all(closing);
    clearTimeout(grace);
  };

  try {
    const port = await listenOn(server, listen, 'proxy');
    const metricsPort =
      metricsServer && metricsListen ? await listenOn(metricsServer, metricsListen, 'metrics') : undefined;
    const setServingCertificate = (certPem: string, keyPem: string): void =>
      server.setSecureContext({ cert: certPem, key: keyPem, ca: proxy.clientCaPem });
    return { port, metricsPort, setServingCertificate, close };
  } catch (error) {
    await close().catch(() => {});
    throw error;
  }
}

function listenOn(target: HttpServer | HttpsServer, address: HostPort, what: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error): void =>
      reject(
        new EdgeadmError(`edge-proxy cannot listen on ${address.host}:${address.port} (${what}): ${error.message}`, {
          code: 'E_EDGE_LISTEN',
          cause: error,
        }),
      );
    target.once('error', onError);
    target.listen(address.port, address.host, () => {
      target.off('error', onError);
      resolve((target.address() as { port: number }).port);
    });
  });
}
