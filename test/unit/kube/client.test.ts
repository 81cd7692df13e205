/**
 * The Kubernetes client's request deadline (src/kube/client.ts): against a
 * loopback HTTPS server that answers a byte at a time and never finishes,
 * which the connection's idle timeout never catches. Nothing here measures
 * time: each test waits for the request to settle.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient } from '../../../src/kube/client.js';
import { createCa, issueCertificate } from '../../../src/trust/pki.js';

let server: Server;
let caPem: string;
let url: string;
const sockets = new Set<Socket>();
const trickles = new Set<NodeJS.Timeout>();
/** Each request: the client port of its connection, and whom it impersonated. */
const seen: { port: number; user: string | string[] | undefined }[] = [];

beforeAll(async () => {
  const ca = await createCa({ commonName: 'test API CA' });
  const serving = await issueCertificate({ ca, commonName: 'api', ipAddresses: ['127.0.0.1'], usages: ['server'] });
  caPem = ca.certPem;
  server = createServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
    seen.push({ port: req.socket.remotePort ?? 0, user: req.headers['impersonate-user'] });
    if (req.url === '/ok') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"kind":"Status"}');
      return;
    }
    // Headers, then a space now and then, for ever: the connection is never idle, the answer never complete.
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{');
    const trickle = setInterval(() => res.write(' '), 20);
    trickles.add(trickle);
    res.on('close', () => {
      clearInterval(trickle);
      trickles.delete(trickle);
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const trickle of trickles) clearInterval(trickle);
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function client(options: { requestDeadlineMs?: number } = {}): KubeClient {
  return new KubeClient({ contextName: 'test', server: url, caPem, token: 't' }, { isKeepAlive: true, ...options });
}

describe('KubeClient deadlines', () => {
  it('fails a request whose answer never completes at its deadline, as unreachable', async () => {
    const kube = client({ requestDeadlineMs: 300 });
    try {
      await expect(kube.raw('GET', '/slow')).rejects.toMatchObject({
        code: 'E_KUBE_UNREACHABLE',
        message: expect.stringContaining('no complete answer within 300 ms'),
      });
      // The client is usable afterwards.
      await expect(kube.raw('GET', '/ok')).resolves.toMatchObject({ status: 200 });
    } finally {
      kube.close();
    }
  });

  it('fails a request that waits for a connection held by hanging ones, at its own deadline', async () => {
    const kube = client({ requestDeadlineMs: 400 });
    try {
      // The pool holds four connections: four hanging requests take them all, the fifth waits for one.
      const settled = await Promise.allSettled(Array.from({ length: 5 }, () => kube.raw('GET', '/slow')));
      expect(settled.map((outcome) => outcome.status)).toEqual(Array(5).fill('rejected'));
    } finally {
      kube.close();
    }
  });

  it('still refuses a server whose certificate its CA did not sign', async () => {
    const other = await createCa({ commonName: 'another CA' });
    const kube = new KubeClient({ contextName: 'test', server: url, caPem: other.certPem, token: 't' });
    await expect(kube.raw('GET', '/ok')).rejects.toMatchObject({ code: 'E_KUBE_UNREACHABLE' });
  });

  it('lets a client acting as another user share its connections, and only the first client close them', async () => {
    const kube = client();
    const owner = kube.impersonating({ user: 'ops', groups: ['ops-team'] });
    try {
      seen.length = 0;
      await kube.raw('GET', '/ok');
      await owner.raw('GET', '/ok');
      owner.close();
      await kube.raw('GET', '/ok');
      expect(seen.map((request) => request.user)).toEqual([undefined, 'ops', undefined]);
      expect(new Set(seen.map((request) => request.port)).size).toBe(1);
    } finally {
      kube.close();
    }
  });

  it('presents its client certificate to a server that requires one', async () => {
    const ca = await createCa({ commonName: 'mTLS CA' });
    const serving = await issueCertificate({ ca, commonName: 'api', ipAddresses: ['127.0.0.1'], usages: ['server'] });
    const user = await issueCertificate({ ca, commonName: 'alice', usages: ['client'] });
    const mtls = createServer(
      { cert: serving.certPem, key: serving.keyPem, ca: ca.certPem, requestCert: true, rejectUnauthorized: true },
      (req, res) => {
        const peer = (req.socket as TLSSocket).getPeerCertificate();
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ user: peer.subject?.CN }));
      },
    );
    mtls.listen(0, '127.0.0.1');
    await once(mtls, 'listening');
    const server = `https://127.0.0.1:${(mtls.address() as AddressInfo).port}`;
    const credentials = { contextName: 'test', server, caPem: ca.certPem };
    const kube = new KubeClient(
      { ...credentials, clientCertificatePem: user.certPem, clientKeyPem: user.keyPem },
      { isKeepAlive: true },
    );
    try {
      await expect(kube.request('GET', '/who')).resolves.toEqual({ user: 'alice' });
      await expect(new KubeClient(credentials).raw('GET', '/who')).rejects.toMatchObject({
        code: 'E_KUBE_UNREACHABLE',
      });
    } finally {
      kube.close();
      mtls.closeAllConnections();
      await new Promise<void>((resolve) => mtls.close(() => resolve()));
    }
  });

  it('lets a request override the deadline', async () => {
    const kube = client();
    try {
      await expect(kube.raw('GET', '/slow', { deadlineMs: 200 })).rejects.toMatchObject({
        code: 'E_KUBE_UNREACHABLE',
      });
    } finally {
      kube.close();
    }
  });
});
