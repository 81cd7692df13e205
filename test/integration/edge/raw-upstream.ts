/**
 * A SIMULATED upstream for the edge-proxy tests that care about exact bytes
 * — not kube-apiserver. It never parses a request target: it hands the
 * target, as received, to the test's handler and records it, the way the
 * API server's router sees the raw path (no `\` turned into `/`, no `..`
 * resolved). So a proxy that sent one path upstream and keyed its cache by
 * another is caught. `/readyz` answers 200 while the upstream is up; while
 * it is down every connection is dropped at once, so the proxy sees an
 * unreachable upstream.
 */
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { SimCertificateAuthority } from '../../support/sim-apiserver/pki.js';
import type { UpstreamConfig } from '../../../src/edge/upstream-config.js';

/** One request as the upstream received it. */
export interface RawRequest {
  method: string;
  /** The request target exactly as received. */
  target: string;
  authorization: string | undefined;
}

/** Answers one request; the test decides everything. */
export type RawHandler = (req: IncomingMessage, res: ServerResponse, target: string) => void;

/** A running raw upstream. */
export interface RawUpstream {
  readonly config: UpstreamConfig;
  /** Every request but `/readyz`, in order. */
  readonly requests: RawRequest[];
  handler: RawHandler;
  /** Drops every open connection and refuses new ones until {@link up}. */
  down(): void;
  up(): void;
  close(): Promise<void>;
}

/** Sends a JSON answer. */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** A 404 in the API server's words. */
export function sendNotFound(res: ServerResponse, target: string): void {
  sendJson(res, 404, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: `the server could not find the requested resource (${target})`,
    reason: 'NotFound',
    code: 404,
  });
}

/** Starts a raw upstream on 127.0.0.1 (default handler: 404 for everything). */
export async function startRawUpstream(): Promise<RawUpstream> {
  const ca = await SimCertificateAuthority.generate('raw-upstream-ca');
  const serving = await ca.issueServing(['127.0.0.1', 'localhost']);
  const requests: RawRequest[] = [];
  const sockets = new Set<Socket>();
  let isDown = false;
  const server: Server = createServer({ cert: serving.certPem, key: serving.keyPem });
  server.on('connection', (socket: Socket) => {
    if (isDown) {
      socket.destroy();
      return;
    }
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  const upstream: RawUpstream = {
    config: undefined as unknown as UpstreamConfig,
    requests,
    handler: (_req, res, target) => sendNotFound(res, target),
    down() {
      isDown = true;
      for (const socket of sockets) socket.destroy();
    },
    up() {
      isDown = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const target = req.url ?? '';
    if (target === '/readyz') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
      return;
    }
    requests.push({ method: req.method ?? '', target, authorization: req.headers.authorization });
    upstream.handler(req, res, target);
  });
  // Upgrades (exec, port-forward) are recorded and refused: the tests only need to know one arrived.
  server.on('upgrade', (req: IncomingMessage, socket: Socket) => {
    requests.push({ method: req.method ?? '', target: req.url ?? '', authorization: req.headers.authorization });
    socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  (upstream as { config: UpstreamConfig }).config = {
    server: new URL(`https://127.0.0.1:${port}`),
    caPem: ca.certPem,
    credentials: {},
  };
  return upstream;
}
