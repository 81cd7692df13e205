/**
 * The agent's upstream: where its credentials go. edgeadm's real `Upstream`
 * forwards streams from a real HTTP/2 connection (standing in for the hub)
 * to a stand-in API server on loopback. Beside it runs a trap: an HTTPS
 * server with a certificate from the same CA for the same address (so a
 * CA-checked agent would trust it) and a plain TCP listener, both counting
 * every connection. Whatever the path, the trap must never be dialled, and
 * the API server must receive the target exactly as sent, or nothing.
 */
import { once } from 'node:events';
import { createServer as createHttp2Server, connect as http2Connect, type ClientHttp2Session } from 'node:http2';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseApiPath } from '../../../src/kube/api-path.js';
import { silentLogger } from '../../../src/log/run-log.js';
import { createCa, issueCertificate } from '../../../src/trust/pki.js';
import {
  encodeUpgradeRequest,
  identityHeaders,
  REQUEST_HEADER,
  UPGRADE_AUTHORITY,
} from '../../../src/tunnel/protocol.js';
import { describeUpstreamFailure, Upstream } from '../../../src/tunnel/upstream.js';
import { sendStream } from '../../support/tunnel-streams.js';

const AGENT_TOKEN = 'agent-secret-token-0123456789';
const USER = identityHeaders({ user: 'alice', groups: ['dev'] });

/** One request as the stand-in API server saw it. */
interface Seen {
  method: string;
  /** The raw request target. */
  target: string;
  headers: Record<string, string | string[] | undefined>;
}

/** An answer through the tunnel stand-in. */
interface Answer {
  status: number;
  body: string;
}

let apiServer: HttpsServer;
let trapTls: HttpsServer;
let trapTcp: TcpServer;
let hubSide: ReturnType<typeof createHttp2Server>;
let client: ClientHttp2Session;
let upstream: Upstream;
let trapPort: number;
let trapTcpPort: number;
let caPem: string;
const seen: Seen[] = [];
let trapConnections = 0;
const trapBytes: Buffer[] = [];

/** An HTTP/2 server standing in for the agent's end of the tunnel: each stream goes to `target`. */
async function serveThrough(target: Upstream): Promise<ReturnType<typeof createHttp2Server>> {
  const server = createHttp2Server();
  server.on('stream', (stream, headers) => {
    stream.on('error', () => {});
    const work =
      headers[':method'] === 'CONNECT'
        ? target.forwardUpgrade(stream, headers)
        : target.forwardRequest(stream, headers);
    work.catch(() => stream.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return server;
}

function portOf(server: { address(): unknown }): number {
  return (server.address() as { port: number }).port;
}

beforeAll(async () => {
  const ca = await createCa({ commonName: 'edge cluster CA' });
  caPem = ca.certPem;
  const serving = await issueCertificate({
    ca,
    commonName: 'kube-apiserver',
    ipAddresses: ['127.0.0.1'],
    usages: ['server'],
  });
  apiServer = createHttpsServer({ cert: serving.certPem, key: serving.keyPem });
  apiServer.on('request', (req, res) => {
    seen.push({ method: req.method ?? '', target: req.url ?? '', headers: req.headers });
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
  });
  apiServer.on('upgrade', (req, socket) => {
    seen.push({ method: req.method ?? '', target: req.url ?? '', headers: req.headers });
    socket.end('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
  });
  // The trap holds a certificate of the same CA for the same address: only the port differs.
  trapTls = createHttpsServer({ cert: serving.certPem, key: serving.keyPem });
  trapTls.on('connection', (socket) => {
    trapConnections += 1;
    socket.on('data', (chunk: Buffer) => trapBytes.push(chunk));
  });
  trapTls.on('request', (req, res) => res.end('trapped'));
  trapTcp = createTcpServer((socket) => {
    trapConnections += 1;
    socket.on('data', (chunk: Buffer) => trapBytes.push(chunk));
    socket.on('error', () => {});
  });
  for (const server of [apiServer, trapTls, trapTcp]) {
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
  }
  trapPort = portOf(trapTls);
  trapTcpPort = portOf(trapTcp);
  upstream = new Upstream(
    { server: `https://127.0.0.1:${portOf(apiServer)}`, caPem, isInsecureSkipTlsVerify: false, token: AGENT_TOKEN },
    silentLogger,
  );
  // The agent's side of the tunnel, reversed roles aside: each stream goes to the upstream.
  hubSide = await serveThrough(upstream);
  client = http2Connect(`http://127.0.0.1:${portOf(hubSide)}`);
  client.on('error', () => {});
});

afterAll(() => {
  client?.close();
  upstream?.close();
  for (const server of [hubSide, apiServer, trapTls, trapTcp]) server?.close();
});

beforeEach(() => {
  seen.length = 0;
});

function expectTrapUntouched(): void {
  expect(trapConnections).toBe(0);
  expect(Buffer.concat(trapBytes).toString('latin1')).not.toContain(AGENT_TOKEN);
}

describe('agent upstream: the agent token goes to the API server only', () => {
  it.each([
    '//127.0.0.1:PORT/steal-me',
    '/\\127.0.0.1:PORT/steal-me',
    '///127.0.0.1:PORT/steal-me',
    '/..//127.0.0.1:PORT/steal-me',
    '/.//127.0.0.1:PORT/steal-me',
    '/%2e%2e//127.0.0.1:PORT/steal-me',
  ])('refuses a plain request to %s with 400 and dials nothing', async (template) => {
    for (const port of [trapPort, trapTcpPort]) {
      const answer = await sendStream(client, {
        ':method': 'GET',
        ':path': template.replace('PORT', String(port)),
        ...USER,
      });
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.body)).toMatchObject({
        kind: 'Status',
        code: 400,
        details: { causes: [{ reason: 'E_AGENT_PROXY_PATH' }] },
      });
    }
    expect(seen).toEqual([]);
    expectTrapUntouched();
  });

  it('dials nothing for a target that is not even a path (HTTP/2 itself refuses most)', async () => {
    for (const template of ['https://127.0.0.1:PORT/steal-me', '@127.0.0.1:PORT/steal-me', '127.0.0.1:PORT']) {
      for (const port of [trapPort, trapTcpPort]) {
        const answer = await sendStream(client, {
          ':method': 'GET',
          ':path': template.replace('PORT', String(port)),
          ...USER,
        }).catch(() => ({ status: 400, body: '' }));
        expect(answer.status).toBe(400);
      }
    }
    expect(seen).toEqual([]);
    expectTrapUntouched();
  });

  it('refuses an upgrade whose path is not an API path, and writes no request head anywhere', async () => {
    const answer = await sendStream(client, {
      ':method': 'CONNECT',
      ':authority': UPGRADE_AUTHORITY,
      [REQUEST_HEADER]: encodeUpgradeRequest({
        method: 'GET',
        path: `//127.0.0.1:${trapPort}/api/v1/namespaces/default/pods/p/exec`,
        headers: [
          ['Connection', 'Upgrade'],
          ['Upgrade', 'websocket'],
        ],
      }),
      ...USER,
    });
    expect(answer.status).toBe(400);
    expect(seen).toEqual([]);
    expectTrapUntouched();
  });

  it("sends the agent's own requests (hello, access reviews) to the API server only", async () => {
    await expect(upstream.requestJson('GET', `//127.0.0.1:${trapPort}/version`)).rejects.toThrow(/API paths only/);
    await expect(upstream.getJson(`/\\127.0.0.1:${trapTcpPort}/version`)).rejects.toThrow(/API paths only/);
    expect(await upstream.getJson('/version')).toEqual({ ok: true });
    expect(seen.map((s) => s.target)).toEqual(['/version']);
    expectTrapUntouched();
  });

  it('strips identity headers the user sent (X-Remote-*, front-proxy, forwarded) before the API server', async () => {
    const answer = await sendStream(client, {
      ':method': 'GET',
      ':path': '/api/v1/namespaces',
      ...USER,
      'x-remote-user': 'system:admin',
      'x-remote-group': 'system:masters',
      'x-remote-extra-scopes': 'all',
      'x-forwarded-user': 'root',
      'x-forwarded-for': '10.9.9.9',
      'impersonate-uid': '0',
      accept: 'application/json',
    });
    expect(answer.status).toBe(200);
    expect(seen).toHaveLength(1);
    const headers = seen[0]?.headers ?? {};
    for (const name of Object.keys(headers)) {
      expect(name).not.toMatch(/^(x-remote-|x-forwarded-|impersonate-uid|edgeadm-)/);
    }
    expect(headers).toMatchObject({
      authorization: `Bearer ${AGENT_TOKEN}`,
      'impersonate-user': 'alice',
      accept: 'application/json',
    });
  });

  it('does not name the API server address or port when it cannot reach it', async () => {
    const closed = createTcpServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const port = portOf(closed);
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const unreachable = new Upstream(
      { server: `https://127.0.0.1:${port}`, caPem, isInsecureSkipTlsVerify: false, token: AGENT_TOKEN },
      silentLogger,
    );
    const side = await serveThrough(unreachable);
    const session = http2Connect(`http://127.0.0.1:${portOf(side)}`);
    try {
      const answers: Answer[] = [];
      for (const headers of [
        { ':method': 'GET', ':path': '/api/v1/namespaces', ...USER },
        {
          ':method': 'CONNECT',
          ':authority': UPGRADE_AUTHORITY,
          [REQUEST_HEADER]: encodeUpgradeRequest({ method: 'GET', path: '/api/v1/x', headers: [] }),
          ...USER,
        },
      ]) {
        answers.push(await sendStream(session, headers));
      }
      for (const answer of answers) {
        expect(answer.status).toBe(502);
        expect(answer.body).toContain('ECONNREFUSED');
        expect(answer.body).not.toContain('127.0.0.1');
        expect(answer.body).not.toContain(String(port));
      }
    } finally {
      session.close();
      side.close();
      unreachable.close();
    }
  });

  it('names the code of a TLS or network failure, never the address in its message', () => {
    const altName = Object.assign(
      new Error(
        "Hostname/IP does not match certificate's altnames: IP: 10.20.30.40 is not in the cert's list: 10.0.0.1",
      ),
      { code: 'ERR_TLS_CERT_ALTNAME_INVALID' },
    );
    expect(describeUpstreamFailure(altName)).toBe(
      'the edge agent cannot reach its API server (ERR_TLS_CERT_ALTNAME_INVALID: TLS verification failed)',
    );
    const unreachable = Object.assign(new Error('connect EHOSTUNREACH 10.20.30.40:6443'), { code: 'EHOSTUNREACH' });
    expect(describeUpstreamFailure(unreachable)).toBe(
      'the edge agent cannot reach its API server (EHOSTUNREACH: host unreachable)',
    );
    expect(describeUpstreamFailure(new Error('socket hang up at 10.20.30.40:6443'))).toBe(
      'the edge agent cannot reach its API server',
    );
  });

  it('forwards a generated path byte for byte to the API server, or refuses it; the trap never hears a thing', async () => {
    const piece = fc.constantFrom(
      '/',
      '//',
      '\\',
      '.',
      '..',
      '%2e',
      '%2F',
      '%5c',
      '%',
      '@',
      ':',
      '?',
      '#',
      'http:',
      'https://',
      `127.0.0.1:${trapPort}`,
      `127.0.0.1:${trapTcpPort}`,
      `localhost:${trapPort}`,
      '.edgeadm',
      'api',
      'v1',
      'x=1',
      '&',
    );
    const pathArbitrary = fc.array(piece, { minLength: 1, maxLength: 8 }).map((pieces) => pieces.join(''));
    let forwarded = 0;
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(pathArbitrary, async (path) => {
        seen.length = 0;
        let answer: Answer;
        try {
          answer = await sendStream(client, { ':method': 'GET', ':path': path, ...USER });
        } catch {
          return; // the HTTP/2 client itself would not send it
        }
        if (parseApiPath(path).ok) {
          forwarded += 1;
          expect(answer.status).toBe(200);
          expect(seen.map((s) => s.target)).toEqual([path]);
        } else {
          refused += 1;
          expect(answer.status).toBe(400);
          expect(seen).toEqual([]);
        }
        expect(trapConnections).toBe(0);
      }),
      { numRuns: 1000 },
    );
    expect(forwarded).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(0);
    expectTrapUntouched();
  });
});
