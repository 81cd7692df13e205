/**
 * The agent's requests to its API server, as the API server receives them:
 * the headers the agent writes itself (Host, its credentials, the identity
 * to impersonate, each group on its own line), the group lists it keeps
 * already read, and the deadline for an answer to start. edgeadm's real
 * `Upstream` forwards streams from a real HTTP/2 connection (standing in
 * for the hub) to a stand-in API server on loopback.
 */
import { once } from 'node:events';
import { createServer as createHttp2Server, connect as http2Connect, type ClientHttp2Session } from 'node:http2';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../../src/log/run-log.js';
import { createCa, issueCertificate } from '../../../src/trust/pki.js';
import { GROUPS_HEADER, identityHeaders, USER_HEADER } from '../../../src/tunnel/protocol.js';
import { Upstream } from '../../../src/tunnel/upstream.js';
import { headerLines, sendStream } from '../../support/tunnel-streams.js';

const AGENT_TOKEN = 'agent-secret-token-0123456789';
/** How long the agent under test waits for an answer to start, and how often it looks. */
const ANSWER_TIMEOUT_MS = 60_000;
const ANSWER_SWEEP_MS = 1_000;

/** One request as the stand-in API server saw it: its raw header lines, in order. */
interface Seen {
  method: string;
  target: string;
  rawHeaders: string[];
}

/** What the stand-in API server does with a request. */
type Behaviour = (req: IncomingMessage, res: ServerResponse) => void;

const answerOk: Behaviour = (req, res) => {
  req.resume();
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"ok":true}');
};

let apiServer: HttpsServer;
let apiPort = 0;
let hubSide: ReturnType<typeof createHttp2Server>;
let client: ClientHttp2Session;
let upstream: Upstream;
const seen: Seen[] = [];
let behaviour: Behaviour = answerOk;

function portOf(server: { address(): unknown }): number {
  return (server.address() as { port: number }).port;
}

beforeAll(async () => {
  const ca = await createCa({ commonName: 'edge cluster CA' });
  const serving = await issueCertificate({
    ca,
    commonName: 'kube-apiserver',
    ipAddresses: ['127.0.0.1'],
    usages: ['server'],
  });
  apiServer = createHttpsServer({ cert: serving.certPem, key: serving.keyPem });
  apiServer.on('request', (req: IncomingMessage, res: ServerResponse) => {
    seen.push({ method: req.method ?? '', target: req.url ?? '', rawHeaders: req.rawHeaders });
    behaviour(req, res);
  });
  apiServer.listen(0, '127.0.0.1');
  await once(apiServer, 'listening');
  apiPort = portOf(apiServer);
  upstream = new Upstream(
    { server: `https://127.0.0.1:${apiPort}`, caPem: ca.certPem, isInsecureSkipTlsVerify: false, token: AGENT_TOKEN },
    silentLogger,
    { answerTimeoutMs: ANSWER_TIMEOUT_MS, answerSweepMs: ANSWER_SWEEP_MS },
  );
  hubSide = createHttp2Server();
  hubSide.on('stream', (stream, headers) => {
    stream.on('error', () => {});
    upstream.forwardRequest(stream, headers).catch(() => stream.destroy());
  });
  hubSide.listen(0, '127.0.0.1');
  await once(hubSide, 'listening');
  client = http2Connect(`http://127.0.0.1:${portOf(hubSide)}`);
  client.on('error', () => {});
});

afterAll(() => {
  client?.close();
  upstream?.close();
  apiServer?.closeAllConnections();
  for (const server of [hubSide, apiServer]) server?.close();
});

afterEach(() => {
  vi.useRealTimers();
  behaviour = answerOk;
  seen.length = 0;
});

describe('agent upstream: the request head the API server receives', () => {
  it('carries one Host (the API server), the kept user headers, the agent token and every group on its own line', async () => {
    const answer = await sendStream(client, {
      ':method': 'GET',
      ':path': '/api/v1/namespaces?limit=5',
      ...identityHeaders({ user: 'alice', groups: ['dev', 'ops', 'system:authenticated'] }),
      accept: 'application/json',
      'user-agent': 'kubectl/v1.30',
      authorization: 'Bearer user-token-must-not-pass',
      'impersonate-user': 'system:admin',
      'x-remote-user': 'root',
    });
    expect(answer.status).toBe(200);
    expect(seen).toHaveLength(1);
    const [request] = seen as [Seen];
    expect(request.target).toBe('/api/v1/namespaces?limit=5');
    expect(headerLines(request.rawHeaders, 'host')).toEqual([`127.0.0.1:${apiPort}`]);
    expect(headerLines(request.rawHeaders, 'authorization')).toEqual([`Bearer ${AGENT_TOKEN}`]);
    expect(headerLines(request.rawHeaders, 'impersonate-user')).toEqual(['alice']);
    expect(headerLines(request.rawHeaders, 'impersonate-group')).toEqual(['dev', 'ops', 'system:authenticated']);
    expect(headerLines(request.rawHeaders, 'accept')).toEqual(['application/json']);
    expect(headerLines(request.rawHeaders, 'user-agent')).toEqual(['kubectl/v1.30']);
    expect(headerLines(request.rawHeaders, 'x-remote-user')).toEqual([]);
    expect(request.rawHeaders.some((h) => h.toLowerCase().startsWith('edgeadm-'))).toBe(false);
  });

  it('never lets a group list read before vouch for a user or another list', async () => {
    const groups = JSON.stringify(['dev']);
    const ok = await sendStream(client, {
      ':method': 'GET',
      ':path': '/api',
      [USER_HEADER]: 'alice',
      [GROUPS_HEADER]: groups,
    });
    expect(ok.status).toBe(200);
    // The same (kept) list with a user name that would split a request head: refused, as ever.
    const badUser = await sendStream(client, {
      ':method': 'GET',
      ':path': '/api',
      [USER_HEADER]: 'al\u0001ice',
      [GROUPS_HEADER]: groups,
    });
    expect(badUser.status).toBe(400);
    // A list that fails the checks is refused every time it comes (never kept).
    const badGroups = JSON.stringify(['dev', 'o\u0007ps']);
    for (let i = 0; i < 2; i += 1) {
      const refused = await sendStream(client, {
        ':method': 'GET',
        ':path': '/api',
        [USER_HEADER]: 'bob',
        [GROUPS_HEADER]: badGroups,
      });
      expect(refused.status).toBe(400);
    }
    // Another list is read as itself.
    const other = await sendStream(client, {
      ':method': 'GET',
      ':path': '/api',
      [USER_HEADER]: 'bob',
      [GROUPS_HEADER]: JSON.stringify(['ops']),
    });
    expect(other.status).toBe(200);
    expect(seen.map((s) => headerLines(s.rawHeaders, 'impersonate-group'))).toEqual([['dev'], ['ops']]);
    expect(seen.map((s) => headerLines(s.rawHeaders, 'impersonate-user'))).toEqual([['alice'], ['bob']]);
  });
});

describe('agent upstream: the deadline for an answer to start', () => {
  it('answers 502 (timed out) when the API server takes the request and never answers, once the deadline passed', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
    const held: ServerResponse[] = [];
    let taken: () => void = () => {};
    const isTaken = new Promise<void>((resolve) => (taken = resolve));
    behaviour = (req, res) => {
      req.resume();
      held.push(res);
      taken();
    };
    const answer = sendStream(client, {
      ':method': 'GET',
      ':path': '/api/v1/pods',
      ...identityHeaders({ user: 'alice', groups: [] }),
    });
    await isTaken;
    // Not a moment before the deadline...
    await vi.advanceTimersByTimeAsync(ANSWER_TIMEOUT_MS - ANSWER_SWEEP_MS);
    let isSettled = false;
    void answer.then(() => (isSettled = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(isSettled).toBe(false);
    // ...and by the first sweep after it.
    await vi.advanceTimersByTimeAsync(2 * ANSWER_SWEEP_MS);
    const settled = await answer;
    expect(settled.status).toBe(502);
    expect(JSON.parse(settled.body)).toMatchObject({ code: 502, message: expect.stringContaining('ETIMEDOUT') });
    for (const res of held) res.destroy();
  });

  it('does not cut an answer that started in time, however long its body then takes (watch, logs -f)', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
    let finish: () => void = () => {};
    behaviour = (req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first line\n');
      finish = () => res.end('last line\n');
    };
    const stream = client.request(
      { ':method': 'GET', ':path': '/api/v1/pods?watch=true', ...identityHeaders({ user: 'alice', groups: [] }) },
      { endStream: true },
    );
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    const [headers] = (await once(stream, 'response')) as [Record<string, unknown>];
    expect(headers[':status']).toBe(200);
    await vi.advanceTimersByTimeAsync(10 * ANSWER_TIMEOUT_MS);
    finish();
    await once(stream, 'end');
    expect(Buffer.concat(chunks).toString('utf8')).toBe('first line\nlast line\n');
  });
});
