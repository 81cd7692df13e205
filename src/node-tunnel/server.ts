/**
 * The node tunnel's control-plane server (`edgeadm agent node-tunnel-server`):
 * the Nodes it routes by, the live tunnels, the API server's Unix socket and
 * the nodes' TLS port, put together and run until the signal aborts.
 */
import { chmodSync, rmSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createUnixServer, type Server } from 'node:net';
import type { KubeClient } from '../kube/client.js';
import type { Logger } from '../log/run-log.js';
import { serveEgressConnection } from './egress-server.js';
import { TLS_RELOAD_INTERVAL_MS } from './limits.js';
import { NodeTunnelCounters, renderNodeTunnelMetrics } from './metrics.js';
import { NodeTable } from './node-table.js';
import { TunnelRegistry } from './tunnel-registry.js';
import { createTunnelListener, type TunnelListenerTls } from './tunnel-listener.js';

/** Options of {@link runNodeTunnelServer}. */
export interface NodeTunnelServerOptions {
  /** The Unix socket the API server's egress selector dials. */
  socketPath: string;
  /** Where the nodes' agents connect. */
  listen: { host: string; port: number };
  /** Plain HTTP `/metrics` and `/healthz`; none without. */
  metricsListen?: { host: string; port: number } | undefined;
  tls: TunnelListenerTls;
  /** Reads the TLS files again, every {@link TLS_RELOAD_INTERVAL_MS}; a change is served from the next handshake. */
  reloadTls?: () => TunnelListenerTls;
  /** {@link TLS_RELOAD_INTERVAL_MS} by default. */
  tlsReloadIntervalMs?: number;
  /** Lists Nodes (their addresses, kubelet ports and the edge label). */
  client: Pick<KubeClient, 'list'>;
  logger: Logger;
  signal: AbortSignal;
  /** Told once both listeners listen (tests). */
  onListening?: (ports: { port: number; metricsPort?: number }) => void;
}

function listen(server: Server, ...args: [string] | [number, string]): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(...(args as [number, string]), () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** Runs the server until `signal` aborts. */
export async function runNodeTunnelServer(options: NodeTunnelServerOptions): Promise<void> {
  const { logger } = options;
  const nodes = new NodeTable({ client: options.client, logger });
  const tunnels = new TunnelRegistry({ logger });
  const counters = new NodeTunnelCounters();
  await nodes.start();
  tunnels.start();
  const tunnelPort = createTunnelListener({ tls: options.tls, nodes, tunnels, logger });
  let served = options.tls;
  const reload = setInterval(() => {
    if (!options.reloadTls) return;
    try {
      const next = options.reloadTls();
      if (next.certPem === served.certPem && next.keyPem === served.keyPem && next.caPem === served.caPem) return;
      tunnelPort.setSecureContext({ ca: next.caPem, cert: next.certPem, key: next.keyPem });
      served = next;
      logger.info('node tunnel: serving the renewed certificate (or CA) from now on');
    } catch (error) {
      logger.warn(`cannot read the TLS files again (keeping the ones served): ${(error as Error).message}`);
    }
  }, options.tlsReloadIntervalMs ?? TLS_RELOAD_INTERVAL_MS);
  reload.unref();
  const egress = createUnixServer({ pauseOnConnect: false }, (socket) =>
    serveEgressConnection(socket, { nodes, tunnels, counters, logger }),
  );
  const metrics = createHttpServer((request, response) => {
    if (request.method === 'GET' && request.url === '/metrics') {
      response.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
      response.end(renderNodeTunnelMetrics(tunnels.records(), counters));
    } else if (request.method === 'GET' && request.url === '/healthz') {
      response.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
    } else {
      response.writeHead(404).end();
    }
  });
  metrics.requestTimeout = 10_000;
  // A socket left by a previous run would make listen fail (EADDRINUSE).
  rmSync(options.socketPath, { force: true });
  try {
    await listen(egress, options.socketPath);
    // The API server runs as root; nobody else may send connections through the nodes.
    chmodSync(options.socketPath, 0o600);
    await listen(tunnelPort, options.listen.port, options.listen.host);
    if (options.metricsListen) await listen(metrics, options.metricsListen.port, options.metricsListen.host);
    const portOf = (server: Server, fallback: number): number => {
      const address = server.address();
      return typeof address === 'object' && address !== null ? address.port : fallback;
    };
    const port = portOf(tunnelPort, options.listen.port);
    logger.info(
      `node tunnel: API server egress on ${options.socketPath}, node agents on ${options.listen.host}:${port}`,
    );
    options.onListening?.({
      port,
      ...(options.metricsListen ? { metricsPort: portOf(metrics, options.metricsListen.port) } : {}),
    });
    await new Promise<void>((resolve) => {
      if (options.signal.aborted) resolve();
      options.signal.addEventListener('abort', () => resolve(), { once: true });
    });
  } finally {
    clearInterval(reload);
    nodes.stop();
    tunnels.close();
    tunnelPort.close();
    egress.close();
    metrics.close();
    rmSync(options.socketPath, { force: true });
  }
}
