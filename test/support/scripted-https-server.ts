/**
 * A scripted HTTPS server for discovery's unit tests: every request is
 * answered by a function of the tests, so one server can play kubeadm's API
 * server, k3s's (anonymous refused, `/cacerts` open) or a hostile one
 * (wrong CA bytes, oversized bodies, redirects, silence, a cut connection).
 * It is a test stand-in, not an API server: it knows nothing of Kubernetes
 * beyond what each test tells it.
 *
 * - Connection N presents `certificates[N]` (the last one for every later
 *   connection), so a test can change the certificate between discovery's
 *   unverified and verified requests.
 * - Each request is recorded with the headers discovery sends and the
 *   number of the connection it came on.
 */
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { CertificateAndKey } from '../../src/trust/pki.js';

/** How the server answers one request. */
export type ScriptedAnswer =
  | {
      status: number;
      /** The reason phrase; Node's standard one for the status when absent. */
      reason?: string;
      body?: string | Buffer;
      headers?: Record<string, string>;
    }
  /** Never answer (the request stays open until the client gives up). */
  | { hang: true }
  /** Send the head and part of a longer body, then cut the connection. */
  | { cut: true };

/** One request the server saw. */
export interface ScriptedRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  accept: string | undefined;
  userAgent: string | undefined;
  /** 0-based number of the TCP connection it came on. */
  connection: number;
}

/** A running scripted server. */
export interface ScriptedHttpsServer {
  /** `host:port`, as discovery takes it. */
  endpoint: string;
  port: number;
  requests: ScriptedRequest[];
  /** TCP connections accepted so far (also those whose TLS handshake failed). */
  connectionCount(): number;
  close(): Promise<void>;
}

/** Starts a server on 127.0.0.1 and an ephemeral port. */
export async function startScriptedHttpsServer(options: {
  certificates: readonly CertificateAndKey[];
  /** The answer to the request with this index (0-based, over all connections). */
  answer: (request: ScriptedRequest, index: number) => ScriptedAnswer;
}): Promise<ScriptedHttpsServer> {
  const [first] = options.certificates;
  if (!first) throw new Error('the scripted HTTPS server needs at least one certificate');
  const requests: ScriptedRequest[] = [];
  const sockets = new Set<Socket>();
  const connectionOf = new Map<string, number>();
  const peer = (socket: Socket): string => `${socket.remoteAddress}:${socket.remotePort}`;
  let connections = 0;

  const server: Server = createServer(
    { cert: first.certPem, key: first.keyPem },
    (req: IncomingMessage, res: ServerResponse) => {
      const request: ScriptedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        authorization: req.headers.authorization,
        accept: req.headers.accept,
        userAgent: req.headers['user-agent'],
        connection: connectionOf.get(peer(req.socket)) ?? -1,
      };
      const index = requests.push(request) - 1;
      const answer = options.answer(request, index);
      if ('hang' in answer) return;
      if ('cut' in answer) {
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '1000' });
        res.write('{"kind":"ConfigMap",', () => req.socket.destroy());
        return;
      }
      const headers = { 'Content-Type': 'application/json', ...answer.headers };
      if (answer.reason === undefined) res.writeHead(answer.status, headers);
      else res.writeHead(answer.status, answer.reason, headers);
      res.end(answer.body ?? '');
    },
  );
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
  // A client that refuses the certificate is an expected outcome in these tests.
  server.on('tlsClientError', () => {});

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `127.0.0.1:${port}`,
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
