/**
 * The agent's requests over HTTP/2 to an API server that speaks it (issue
 * #34), as that server receives them and as the hub's streams get their
 * answers. edgeadm's real `Upstream` forwards streams from a real HTTP/2
 * connection (standing in for the hub) to a stand-in API server on loopback
 * that serves HTTP/2 and HTTP/1.1 over TLS, as kube-apiserver does; one
 * without HTTP/2 still gets HTTP/1.1.
 */
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import {
  connect as http2Connect,
  constants as h2,
  createServer as createHttp2Server,
  createSecureServer,
  type ClientHttp2Session,
  type Http2SecureServer,
  type Http2ServerRequest,
  type Http2ServerResponse,
  type ServerHttp2Session,
} from 'node:http2';
import { createServer as createHttpsServer } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../../src/log/run-log.js';
import { createCa, issueCertificate, type CertificateAndKey } from '../../../src/trust/pki.js';
import { identityHeaders } from '../../../src/tunnel/protocol.js';
import { Upstream } from '../../../src/tunnel/upstream.js';
import { type PooledSession, UpstreamH2Pool } from '../../../src/tunnel/upstream-h2.js';
import { headerLines, sendStream } from '../../support/tunnel-streams.js';

const AGENT_TOKEN = 'agent-secret-token-0123456789';
const USER = identityHeaders({ user: 'alice', groups: ['dev', 'ops'] });
/** How long the agent under test waits for an answer to start, and how often it looks. */
const ANSWER_TIMEOUT_MS = 60_000;
const ANSWER_SWEEP_MS = 1_000;
/** The stand-in API server's SETTINGS_MAX_CONCURRENT_STREAMS: few, so that watches fill a session. */
const MAX_STREAMS = 2;

/** One request as the stand-in API server saw it. */
interface Seen {
  httpVersion: string;
  method: string;
  target: string;
  rawHeaders: string[];
  /** Which of the API server's connections it came on (HTTP/2 only). */
  sessionId: number | undefined;
}

type Behaviour = (req: Http2ServerRequest, res: Http2ServerResponse) => void;

const answerOk: Behaviour = (req, res) => {
  req.resume();
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"ok":true}');
};

let caPem: string;
let serving: CertificateAndKey;
let apiServer: Http2SecureServer;
let apiPort = 0;
let hubSide: ReturnType<typeof createHttp2Server>;
let client: ClientHttp2Session;
let upstream: Upstream;
const seen: Seen[] = [];
const apiSessions = new Set<ServerHttp2Session>();
let sessionCount = 0;
const sessionIds = new WeakMap<ServerHttp2Session, number>();
let behaviour: Behaviour = answerOk;

function portOf(server: { address(): unknown }): number {
  return (server.address() as { port: number }).port;
}

function agentFor(port: number): Upstream {
  return new Upstream(
    { server: `https://127.0.0.1:${port}`, caPem, isInsecureSkipTlsVerify: false, token: AGENT_TOKEN },
    silentLogger,
    { answerTimeoutMs: ANSWER_TIMEOUT_MS, answerSweepMs: ANSWER_SWEEP_MS },
  );
}

/** An HTTP/2 server standing in for the agent's end of the tunnel; resolves with a client of it (the hub's side). */
async function serveThrough(target: () => Upstream): Promise<{
  server: ReturnType<typeof createHttp2Server>;
  client: ClientHttp2Session;
}> {
  const server = createHttp2Server();
  server.on('stream', (stream, headers) => {
    stream.on('error', () => {});
    target()
      .forwardRequest(stream, headers)
      .catch(() => stream.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const session = http2Connect(`http://127.0.0.1:${portOf(server)}`);
  session.on('error', () => {});
  return { server, client: session };
}

/** Opens a watch through the agent; resolves once its answer has started. */
async function openWatch(path: string): Promise<{
  next: () => Promise<string>;
  stream: ReturnType<ClientHttp2Session['request']>;
}> {
  const stream = client.request({ ':method': 'GET', ':path': path, ...USER }, { endStream: true });
  stream.on('error', () => {});
  // Read from the start, so that the stream flows (and ends) whether or not a test looks at its events.
  let unread = '';
  let wake: () => void = () => {};
  stream.on('data', (chunk: Buffer) => {
    unread += chunk.toString('utf8');
    wake();
  });
  const [headers] = (await once(stream, 'response')) as [Record<string, unknown>];
  expect(headers[':status']).toBe(200);
  return {
    stream,
    /** What arrived since the last call; waits for something when nothing did. */
    next: async () => {
      if (unread === '') await new Promise<void>((resolve) => (wake = resolve));
      const text = unread;
      unread = '';
      return text;
    },
  };
}

/** A stand-in API server's held watches: each writes an event when told, and ends when told. */
const watches: Http2ServerResponse[] = [];
const holdWatch: Behaviour = (req, res) => {
  req.resume();
  res.writeHead(200, { 'content-type': 'application/json' });
  res.write('{"type":"ADDED"}\n');
  watches.push(res);
};

beforeAll(async () => {
  const ca = await createCa({ commonName: 'edge cluster CA' });
  caPem = ca.certPem;
  serving = await issueCertificate({
    ca,
    commonName: 'kube-apiserver',
    ipAddresses: ['127.0.0.1'],
    usages: ['server'],
  });
  apiServer = createSecureServer({
    cert: serving.certPem,
    key: serving.keyPem,
    allowHTTP1: true,
    settings: { maxConcurrentStreams: MAX_STREAMS },
  });
  apiServer.on('session', (session: ServerHttp2Session) => {
    sessionCount += 1;
    sessionIds.set(session, sessionCount);
    apiSessions.add(session);
    session.on('close', () => apiSessions.delete(session));
  });
  apiServer.on('request', (req: Http2ServerRequest, res: Http2ServerResponse) => {
    seen.push({
      httpVersion: req.httpVersion,
      method: req.method,
      target: req.url,
      rawHeaders: req.rawHeaders,
      sessionId: req.stream === undefined ? undefined : sessionIds.get(req.stream.session as ServerHttp2Session),
    });
    behaviour(req, res);
  });
  apiServer.listen(0, '127.0.0.1');
  await once(apiServer, 'listening');
  apiPort = portOf(apiServer);
  upstream = agentFor(apiPort);
  ({ server: hubSide, client } = await serveThrough(() => upstream));
});

afterAll(() => {
  client?.close();
  upstream?.close();
  for (const session of apiSessions) session.destroy();
  apiServer?.close();
  hubSide?.close();
});

afterEach(() => {
  vi.useRealTimers();
  behaviour = answerOk;
  seen.length = 0;
  for (const res of watches.splice(0)) res.end();
});

describe('agent upstream over HTTP/2: what the API server receives', () => {
  it('speaks HTTP/2 (ALPN h2) with the agent token, the identity, the kept user headers, and nothing the user claims', async () => {
    const answer = await sendStream(client, {
      ':method': 'GET',
      ':path': '/api/v1/namespaces?limit=5',
      ...USER,
      accept: 'application/json',
      'user-agent': 'kubectl/v1.30',
      authorization: 'Bearer user-token-must-not-pass',
      'impersonate-user': 'system:admin',
      'impersonate-group': 'system:masters',
      'x-remote-user': 'root',
      'x-forwarded-for': '10.0.0.1',
    });
    expect(answer).toEqual({ status: 200, body: '{"ok":true}' });
    expect(seen).toHaveLength(1);
    const [request] = seen as [Seen];
    expect(request.httpVersion).toBe('2.0');
    expect(request.target).toBe('/api/v1/namespaces?limit=5');
    expect(headerLines(request.rawHeaders, ':authority')).toEqual([`127.0.0.1:${apiPort}`]);
    expect(headerLines(request.rawHeaders, 'authorization')).toEqual([`Bearer ${AGENT_TOKEN}`]);
    expect(headerLines(request.rawHeaders, 'impersonate-user')).toEqual(['alice']);
    expect(headerLines(request.rawHeaders, 'impersonate-group')).toEqual(['dev', 'ops']);
    expect(headerLines(request.rawHeaders, 'accept')).toEqual(['application/json']);
    expect(headerLines(request.rawHeaders, 'user-agent')).toEqual(['kubectl/v1.30']);
    for (const name of ['x-remote-user', 'x-forwarded-for', 'host', 'connection']) {
      expect(headerLines(request.rawHeaders, name)).toEqual([]);
    }
    expect(request.rawHeaders.some((h) => h.toLowerCase().startsWith('edgeadm-'))).toBe(false);
  });

  it("gives back the API server's status and headers, without its pseudo-headers", async () => {
    behaviour = (req, res) => {
      req.resume();
      res.writeHead(404, { 'content-type': 'application/json', 'audit-id': 'a-1' });
      res.end('{"kind":"Status","code":404}');
    };
    const stream = client.request(
      { ':method': 'GET', ':path': '/api/v1/namespaces/nope', ...USER },
      { endStream: true },
    );
    const [headers] = (await once(stream, 'response')) as [Record<string, unknown>];
    stream.resume();
    await once(stream, 'end');
    expect(headers[':status']).toBe(404);
    expect(headers['audit-id']).toBe('a-1');
    expect(headers['content-type']).toBe('application/json');
  });

  it('delivers a POST body whole', async () => {
    const body = randomBytes(3 * 1024 * 1024);
    behaviour = (req, res) => {
      const hash = createHash('sha256');
      let length = 0;
      req.on('data', (chunk: Buffer) => {
        hash.update(chunk);
        length += chunk.length;
      });
      req.on('end', () => {
        res.writeHead(201, { 'content-type': 'text/plain' });
        res.end(`${length} ${hash.digest('hex')}`);
      });
    };
    const answer = await sendStream(
      client,
      {
        ':method': 'POST',
        ':path': '/api/v1/namespaces/default/configmaps',
        ...USER,
        'content-type': 'application/json',
      },
      body,
    );
    expect(answer.status).toBe(201);
    expect(answer.body).toBe(`${body.length} ${createHash('sha256').update(body).digest('hex')}`);
    expect(seen.map((s) => [s.httpVersion, s.method])).toEqual([['2.0', 'POST']]);
  });
});

describe('agent upstream over HTTP/2: long answers and the session pool', () => {
  it('streams a watch event by event, as the API server writes them', async () => {
    behaviour = holdWatch;
    const watch = await openWatch('/api/v1/pods?watch=true');
    expect(await watch.next()).toBe('{"type":"ADDED"}\n');
    // The next event is written only after the first arrived: nothing waits for the answer's end.
    watches[0]?.write('{"type":"MODIFIED"}\n');
    expect(await watch.next()).toBe('{"type":"MODIFIED"}\n');
    watches[0]?.end();
    await once(watch.stream, 'end');
  });

  it("answers more watches at once than one session's stream limit, opening sessions, and then plain requests too", async () => {
    behaviour = holdWatch;
    const count = MAX_STREAMS * 3 + 1;
    const opened = await Promise.all(
      Array.from({ length: count }, (_, i) => openWatch(`/api/v1/namespaces/ns${i}/pods?watch=true`)),
    );
    expect(opened).toHaveLength(count);
    expect(watches).toHaveLength(count);
    expect(upstream.h2SessionCount).toBeGreaterThanOrEqual(Math.ceil(count / MAX_STREAMS));
    behaviour = answerOk;
    expect((await sendStream(client, { ':method': 'GET', ':path': '/api', ...USER })).status).toBe(200);
    for (const res of watches.splice(0)) res.end();
    await Promise.all(opened.map((w) => once(w.stream, 'end')));
  });

  it('keeps serving after the API server sends GOAWAY: an open watch finishes, later requests take a new session', async () => {
    behaviour = holdWatch;
    const watch = await openWatch('/api/v1/pods?watch=true');
    expect(await watch.next()).toBe('{"type":"ADDED"}\n');
    const [watchSeen] = seen as [Seen];
    for (const session of apiSessions) session.close(); // GOAWAY, then close once its streams end
    behaviour = answerOk;
    for (let i = 0; i < 5; i += 1) {
      expect(
        (await sendStream(client, { ':method': 'GET', ':path': `/api/v1/namespaces/n${i}`, ...USER })).status,
      ).toBe(200);
    }
    const later = seen.slice(1);
    expect(later).toHaveLength(5);
    expect(later.every((s) => s.httpVersion === '2.0' && s.sessionId !== watchSeen.sessionId)).toBe(true);
    watches[0]?.write('{"type":"DELETED"}\n');
    expect(await watch.next()).toBe('{"type":"DELETED"}\n');
    watches[0]?.end();
    await once(watch.stream, 'end');
  });

  it('sends a bodiless request once more when the API server refuses its stream unanswered', async () => {
    let refusals = 0;
    behaviour = (req, res) => {
      if (refusals === 0) {
        refusals += 1;
        req.stream.close(h2.NGHTTP2_REFUSED_STREAM);
        return;
      }
      answerOk(req, res);
    };
    const answer = await sendStream(client, { ':method': 'GET', ':path': '/api/v1/nodes', ...USER });
    expect(answer.status).toBe(200);
    expect(seen.map((s) => s.target)).toEqual(['/api/v1/nodes', '/api/v1/nodes']);
  });

  it('sends a bodiless request once more when its session dies before the answer', async () => {
    let kills = 0;
    behaviour = (req, res) => {
      if (kills === 0) {
        kills += 1;
        req.stream.session?.destroy();
        return;
      }
      answerOk(req, res);
    };
    const answer = await sendStream(client, { ':method': 'GET', ':path': '/api/v1/nodes', ...USER });
    expect(answer.status).toBe(200);
    expect(seen).toHaveLength(2);
    expect(seen[0]?.sessionId).not.toBe(seen[1]?.sessionId);
  });

  it('refuses a request with a body whose stream is refused, without sending it twice', async () => {
    behaviour = (req) => {
      req.stream.close(h2.NGHTTP2_REFUSED_STREAM);
    };
    const answer = await sendStream(
      client,
      { ':method': 'POST', ':path': '/api/v1/namespaces', ...USER },
      Buffer.from('{}'),
    );
    expect(answer.status).toBe(502);
    expect(JSON.parse(answer.body)).toMatchObject({ details: { causes: [{ reason: 'E_AGENT_UPSTREAM' }] } });
    expect(seen).toHaveLength(1);
  });

  it("cancels the API server's stream when the hub cancels its own", async () => {
    behaviour = holdWatch;
    const watch = await openWatch('/api/v1/pods?watch=true');
    const serverStream = watches[0]?.stream;
    const closed = once(serverStream as NonNullable<typeof serverStream>, 'close');
    watch.stream.close(h2.NGHTTP2_CANCEL);
    await closed;
    expect(serverStream?.destroyed).toBe(true);
    watches.length = 0;
  });
});

describe('agent upstream over HTTP/2: the deadline for an answer to start', () => {
  it('answers 502 (timed out) when the API server takes the request and never answers, once the deadline passed', async () => {
    const held: Http2ServerResponse[] = [];
    let taken: () => void = () => {};
    const isTaken = new Promise<void>((resolve) => (taken = resolve));
    behaviour = (req, res) => {
      req.resume();
      held.push(res);
      taken();
    };
    // A session is already open (earlier tests), so the request is sent at once, under fake time.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
    const answer = sendStream(client, { ':method': 'GET', ':path': '/api/v1/pods', ...USER });
    await isTaken;
    await vi.advanceTimersByTimeAsync(ANSWER_TIMEOUT_MS - ANSWER_SWEEP_MS);
    let isSettled = false;
    void answer.then(() => (isSettled = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(isSettled).toBe(false);
    await vi.advanceTimersByTimeAsync(2 * ANSWER_SWEEP_MS);
    const settled = await answer;
    expect(settled.status).toBe(502);
    expect(JSON.parse(settled.body)).toMatchObject({
      code: 502,
      message: expect.stringContaining('ETIMEDOUT'),
      details: { causes: [{ reason: 'E_AGENT_UPSTREAM' }] },
    });
    // Not sent again: the deadline is the answer.
    expect(seen).toHaveLength(1);
    for (const res of held) res.stream.destroy();
  });
});

describe('agent upstream: an API server without HTTP/2', () => {
  it('gets HTTP/1.1, as before', async () => {
    const heard: string[] = [];
    const http1Only = createHttpsServer({ cert: serving.certPem, key: serving.keyPem });
    http1Only.on('request', (req: IncomingMessage, res: ServerResponse) => {
      heard.push(req.httpVersion);
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
    http1Only.listen(0, '127.0.0.1');
    await once(http1Only, 'listening');
    const agent = agentFor(portOf(http1Only));
    const hub = await serveThrough(() => agent);
    try {
      for (let i = 0; i < 3; i += 1) {
        expect((await sendStream(hub.client, { ':method': 'GET', ':path': '/api', ...USER })).status).toBe(200);
      }
      expect(heard).toEqual(['1.1', '1.1', '1.1']);
      expect(agent.h2SessionCount).toBe(0);
    } finally {
      hub.client.close();
      agent.close();
      http1Only.closeAllConnections();
      http1Only.close();
      hub.server.close();
    }
  });
});

describe('agent upstream over HTTP/2: bounds', () => {
  it('answers 502 (timed out) when a request with a body gets no answer, by its idle timeout', async () => {
    const quick = new Upstream(
      { server: `https://127.0.0.1:${apiPort}`, caPem, isInsecureSkipTlsVerify: false, token: AGENT_TOKEN },
      silentLogger,
      { answerTimeoutMs: 300, answerSweepMs: ANSWER_SWEEP_MS },
    );
    const hub = await serveThrough(() => quick);
    const held: Http2ServerResponse[] = [];
    behaviour = (req, res) => {
      req.resume();
      held.push(res);
    };
    try {
      const answer = await sendStream(
        hub.client,
        { ':method': 'POST', ':path': '/api/v1/namespaces', ...USER },
        Buffer.from('{}'),
      );
      expect(answer.status).toBe(502);
      expect(JSON.parse(answer.body)).toMatchObject({
        message: expect.stringContaining('ETIMEDOUT'),
        details: { causes: [{ reason: 'E_AGENT_UPSTREAM' }] },
      });
      expect(seen).toHaveLength(1);
    } finally {
      for (const res of held) res.stream.destroy();
      hub.client.close();
      quick.close();
      hub.server.close();
    }
  });

  it('gives up on a session whose API server never sends its HTTP/2 settings', async () => {
    const { createServer: createTlsServer } = await import('node:tls');
    const mute = createTlsServer({ cert: serving.certPem, key: serving.keyPem, ALPNProtocols: ['h2'] }, (socket) => {
      socket.on('error', () => {});
      socket.resume(); // reads the client's preface, never answers
    });
    mute.listen(0, '127.0.0.1');
    await once(mute, 'listening');
    const { createSecureContext } = await import('node:tls');
    const pool = new UpstreamH2Pool({
      origin: { host: '127.0.0.1', port: portOf(mute), authority: `127.0.0.1:${portOf(mute)}`, servername: undefined },
      tls: () => Promise.resolve({ rejectUnauthorized: true, secureContext: createSecureContext({ ca: caPem }) }),
      logger: silentLogger,
      connectTimeoutMs: 200,
    });
    try {
      await expect(pool.acquire()).rejects.toMatchObject({ code: 'ETIMEDOUT' });
      expect(pool.sessionCount).toBe(0);
    } finally {
      pool.close();
      mute.close();
    }
  });

  it('sends a request over HTTP/1.1 rather than queue it when every session it may open is full', async () => {
    const pool = new UpstreamH2Pool({
      origin: { host: '127.0.0.1', port: apiPort, authority: `127.0.0.1:${apiPort}`, servername: undefined },
      tls: async () => {
        const { createSecureContext } = await import('node:tls');
        return { rejectUnauthorized: true, secureContext: createSecureContext({ ca: caPem }) };
      },
      logger: silentLogger,
      maxSessions: 1,
    });
    try {
      const taken = [await pool.acquire(), await pool.acquire()];
      expect(taken.every((entry) => entry !== undefined)).toBe(true);
      expect(taken[0]).toBe(taken[1]); // MAX_STREAMS (2) streams on the one session
      expect(await pool.acquire()).toBeUndefined(); // full, and no other session may be opened
      expect(pool.sessionCount).toBe(1);
      pool.release(taken[0] as PooledSession);
      expect(await pool.acquire()).toBe(taken[0]);
    } finally {
      pool.close();
    }
  });
});
