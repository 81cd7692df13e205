/**
 * A small HTTPS test server, started inside tests, that answers
 * `GET /api/v1/namespaces/kube-public/configmaps/cluster-info` the way
 * kube-apiserver does: the ConfigMap as JSON, or a 404 Status. It is a test
 * stand-in for one endpoint, not an API server.
 *
 * What it can do that tests need:
 * - serve different data per request (omit the JWS keys, change the
 *   kubeconfig between the first and second fetch), through `data`;
 * - present a different certificate per TLS connection: connection N gets
 *   `certificates[N]` (the last one for every later connection);
 * - record each request (path, Authorization header, connection number),
 *   so tests can check that discovery sends no credentials.
 */
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { CLUSTER_INFO_NAME, CLUSTER_INFO_NAMESPACE, CLUSTER_INFO_PATH } from '../../src/trust/cluster-info.js';
import type { CertificateAndKey } from '../../src/trust/pki.js';

/** What the test server serves. */
export interface ClusterInfoTestServerOptions {
  /** Serving certificate per TLS connection, in order; the last one repeats. */
  certificates: readonly CertificateAndKey[];
  /**
   * The ConfigMap's `data` for the request with this index (0-based), or
   * undefined to answer 404 as if cluster-info did not exist.
   */
  data: (requestIndex: number) => Record<string, string> | undefined;
  /** Address to listen on; 127.0.0.1 by default (the certificates need an IP SAN for it). */
  host?: string;
}

/** One request the server saw. */
export interface RecordedRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  /** 0-based number of the TLS connection it came on. */
  connection: number;
}

/** A running test server. */
export interface ClusterInfoTestServer {
  /** `host:port`, as discovery takes it. */
  endpoint: string;
  port: number;
  requests: RecordedRequest[];
  /** TCP connections accepted so far. */
  connectionCount(): number;
  close(): Promise<void>;
}

function notFound(name: string): string {
  return JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: `configmaps "${name}" not found`,
    reason: 'NotFound',
    details: { name, kind: 'configmaps' },
    code: 404,
  });
}

/** Starts the server on an ephemeral port. */
export async function startClusterInfoTestServer(
  options: ClusterInfoTestServerOptions,
): Promise<ClusterInfoTestServer> {
  const [first] = options.certificates;
  if (!first) throw new Error('the cluster-info test server needs at least one certificate');
  const host = options.host ?? '127.0.0.1';
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  // Keyed by the client's address and port: the request sees the TLS socket,
  // the connection event the TCP socket under it.
  const connectionOf = new Map<string, number>();
  const peer = (socket: Socket): string => `${socket.remoteAddress}:${socket.remotePort}`;
  let connections = 0;
  let requestIndex = 0;

  const server: Server = createServer({ cert: first.certPem, key: first.keyPem }, (req, res) => {
    const index = requestIndex++;
    requests.push({
      method: req.method ?? '',
      path: req.url ?? '',
      authorization: req.headers.authorization,
      connection: connectionOf.get(peer(req.socket)) ?? -1,
    });
    res.setHeader('Content-Type', 'application/json');
    if (req.method !== 'GET' || req.url !== CLUSTER_INFO_PATH) {
      res.statusCode = 404;
      res.end(notFound(String(req.url)));
      return;
    }
    const data = options.data(index);
    if (data === undefined) {
      res.statusCode = 404;
      res.end(notFound(CLUSTER_INFO_NAME));
      return;
    }
    res.statusCode = 200;
    res.end(
      JSON.stringify({
        kind: 'ConfigMap',
        apiVersion: 'v1',
        metadata: {
          name: CLUSTER_INFO_NAME,
          namespace: CLUSTER_INFO_NAMESPACE,
          uid: '00000000-0000-4000-8000-000000000000',
          resourceVersion: String(100 + index),
          creationTimestamp: '2024-01-01T00:00:00Z',
        },
        data,
      }),
    );
  });

  // The TLS layer takes the current secure context when it accepts a
  // connection (its own listener runs before this one), so switching here
  // decides the certificate of the next connection.
  server.on('connection', (socket: Socket) => {
    connectionOf.set(peer(socket), connections);
    connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    const next = options.certificates[Math.min(connections, options.certificates.length - 1)] ?? first;
    server.setSecureContext({ cert: next.certPem, key: next.keyPem });
  });
  // A client that rejects our certificate is an expected outcome in tests.
  server.on('tlsClientError', () => {});

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    endpoint: `${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    requests,
    connectionCount: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
