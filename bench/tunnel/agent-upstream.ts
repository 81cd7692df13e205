/**
 * What the tunnel agent's request path would cost under three designs, as a
 * prototype measured alone (no hub, no simulated API server): the agent's CPU
 * per request, the figure bench/tunnel/run.ts compares with the peers.
 *
 * A load process plays the hub: one HTTP/2 session over TLS to the "agent"
 * process, 64 requests in flight, each a GET with the identity headers. The
 * agent process forwards them to an upstream (a small HTTPS server answering
 * every GET with a 600-byte JSON object, HTTP/1.1 and HTTP/2, in a process of
 * its own) in one of three ways:
 *
 * - `http1`: as edgeadm's agent does today (src/tunnel/upstream.ts): each
 *   stream becomes an HTTPS/1.1 request over a keep-alive pool, the answer's
 *   head becomes the stream's HEADERS frame and its body is copied;
 * - `h2`: the same, with the agent speaking HTTP/2 to the upstream (one
 *   session; kube-apiserver serves HTTP/2 over TLS);
 * - `splice`: the agent does no HTTP work: the hub opens one CONNECT stream per
 *   kept connection and writes HTTP/1.1 itself; the agent copies the stream's
 *   bytes onto a TLS connection to the upstream (authenticated by the agent's
 *   client certificate, so the agent adds nothing), and the hub parses the
 *   answers (node:http over the stream). The hub's share of that work is
 *   measured too.
 *
 *   node --import ./bench/support/register-ts.js bench/tunnel/agent-upstream.ts [--requests 20000] [--concurrency 64] [--rounds 2] [--json]
 */
import { fork } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import { parseArgs } from 'node:util';
import { makePki } from './peers.js';

const MODES = ['http1', 'h2', 'splice'] as const;
type Mode = (typeof MODES)[number];
const ANSWER = Buffer.from(
  JSON.stringify({
    kind: 'Namespace',
    apiVersion: 'v1',
    metadata: {
      name: 'default',
      uid: '6a4c1c3e-3f2b-4b8a-9d55-0c5c7e6d2f11',
      resourceVersion: '42',
      creationTimestamp: '2026-11-29T00:00:00Z',
      labels: { 'kubernetes.io/metadata.name': 'default' },
      managedFields: [
        { manager: 'kube-apiserver', operation: 'Update', apiVersion: 'v1', time: '2026-11-29T00:00:00Z' },
      ],
    },
    spec: { finalizers: ['kubernetes'] },
    status: { phase: 'Active' },
    padding: 'x'.repeat(240),
  }),
);

/** CPU time (user + system) of a process so far, in ms (10 ms ticks). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The CA, and the server certificate every process here serves with (bench/tunnel/peers.ts makes them). */
function makeServerPki(dir: string): { ca: string; cert: string; key: string } {
  const pki = makePki(dir);
  const read = (file: string): string => readFileSync(file, 'utf8');
  return { ca: read(pki.ca), cert: read(pki.serverCert), key: read(pki.serverKey) };
}

const role = process.argv[2];
if (role === '--upstream' || role === '--agent') {
  const pki = JSON.parse(process.env.BENCH_PKI ?? '{}') as { ca: string; cert: string; key: string };
  if (role === '--upstream') {
    const server = http2.createSecureServer(
      { ...pki, allowHTTP1: true, settings: { maxConcurrentStreams: 250 } },
      (req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': ANSWER.length });
        res.end(ANSWER);
      },
    );
    server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as { port: number }).port }));
  } else {
    const upstreamPort = Number(process.env.BENCH_UPSTREAM_PORT);
    const mode = process.env.BENCH_MODE as Mode;
    const origin = `https://127.0.0.1:${upstreamPort}`;
    const pool = new https.Agent({ keepAlive: true, maxSockets: 128, ca: pki.ca });
    let session: http2.ClientHttp2Session | undefined;
    const h2 = (): http2.ClientHttp2Session => {
      if (session === undefined || session.closed || session.destroyed) {
        session = http2.connect(origin, { ca: pki.ca });
        session.on('error', () => (session = undefined));
      }
      return session;
    };
    const server = http2.createSecureServer({ ...pki, settings: { maxConcurrentStreams: 1000 } });
    server.on('stream', (stream, headers) => {
      if (headers[':method'] === 'CONNECT') {
        const socket = tls.connect({ host: '127.0.0.1', port: upstreamPort, ca: pki.ca, ALPNProtocols: ['http/1.1'] });
        socket.once('secureConnect', () => stream.respond({ ':status': 200 }));
        socket.on('error', () => stream.destroy());
        stream.on('error', () => socket.destroy());
        stream.pipe(socket).pipe(stream);
        return;
      }
      const outgoing: Record<string, string> = {
        accept: String(headers.accept ?? 'application/json'),
        authorization: 'Bearer agent-credential',
        'impersonate-user': String(headers['x-user'] ?? ''),
        'impersonate-group': String(headers['x-group'] ?? ''),
      };
      const path = String(headers[':path']);
      if (mode === 'h2') {
        const req = h2().request({ ':method': 'GET', ':path': path, ...outgoing });
        req.on('response', (answer) => {
          stream.respond({
            ':status': answer[':status'],
            'content-type': answer['content-type'] ?? 'application/json',
          });
          req.pipe(stream);
        });
        req.on('error', () => stream.destroy());
        req.end();
        return;
      }
      const req = https.request(`${origin}${path}`, { agent: pool, headers: outgoing }, (res) => {
        stream.respond({ ':status': res.statusCode ?? 502, 'content-type': res.headers['content-type'] ?? '' });
        res.pipe(stream);
      });
      req.on('error', () => stream.destroy());
      req.end();
    });
    server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as { port: number }).port }));
  }
} else {
  const { values } = parseArgs({
    options: {
      requests: { type: 'string', default: '20000' },
      concurrency: { type: 'string', default: '64' },
      rounds: { type: 'string', default: '2' },
      json: { type: 'boolean' },
    },
  });
  const REQUESTS = Number(values.requests);
  const CONCURRENCY = Number(values.concurrency);
  const ROUNDS = Number(values.rounds);
  const pki = makeServerPki(join(mkdtempSync(join(tmpdir(), 'edgeadm-bench-agent-upstream-')), 'pki'));
  const start = (
    args: string[],
    env: Record<string, string>,
  ): Promise<{ pid: number; port: number; kill: () => void }> =>
    new Promise((resolve) => {
      const child = fork(new URL(import.meta.url).pathname, args, {
        env: { ...process.env, ...env, BENCH_PKI: JSON.stringify(pki) },
      });
      process.once('exit', () => child.kill());
      child.once('message', (m: { port: number }) =>
        resolve({ pid: child.pid ?? 0, port: m.port, kill: () => child.kill() }),
      );
    });
  const upstream = await start(['--upstream'], {});
  const agents = Object.fromEntries(
    await Promise.all(
      MODES.map(
        async (mode) =>
          [mode, await start(['--agent'], { BENCH_MODE: mode, BENCH_UPSTREAM_PORT: String(upstream.port) })] as const,
      ),
    ),
  ) as Record<Mode, { pid: number; port: number; kill: () => void }>;

  /** The hub's side: one HTTP/2 session; for `splice` a keep-alive pool whose sockets are CONNECT streams. */
  async function load(mode: Mode, requests: number): Promise<{ agentMs: number; hubMs: number; seconds: number }> {
    const session = http2.connect(`https://127.0.0.1:${agents[mode].port}`, { ca: pki.ca });
    const pool = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    pool.createConnection = ((_options: unknown, done: (error: Error | null, socket: Duplex) => void) => {
      const stream = session.request({ ':method': 'CONNECT', ':authority': `127.0.0.1:${upstream.port}` });
      // node:http's pool treats its sockets as TCP sockets; a stream has no keep-alive or Nagle to set.
      Object.assign(stream, {
        setKeepAlive: () => stream,
        setNoDelay: () => stream,
        ref: () => stream,
        unref: () => stream,
      });
      stream.once('response', () => done(null, stream));
      stream.once('error', (error) => done(error, stream));
      return undefined;
    }) as unknown as typeof pool.createConnection;
    const one = (): Promise<void> =>
      new Promise((resolve, reject) => {
        const headers = { accept: 'application/json', 'x-user': 'bench', 'x-group': 'system:masters' };
        if (mode === 'splice') {
          const req = http.request(
            { host: '127.0.0.1', port: upstream.port, path: '/api/v1/namespaces/default', agent: pool, headers },
            (res) => {
              res.resume();
              res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${res.statusCode}`))));
            },
          );
          req.on('error', reject);
          req.end();
          return;
        }
        const stream = session.request({ ':path': '/api/v1/namespaces/default', ...headers });
        stream.on('response', (h) => {
          if (h[':status'] !== 200) reject(new Error(`HTTP ${h[':status']}`));
        });
        stream.resume();
        stream.on('end', resolve);
        stream.on('error', reject);
        stream.end();
      });
    const before = { agent: cpuMs(agents[mode].pid), hub: cpuMs(process.pid) };
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < requests) {
          next += 1;
          await one();
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const result = { agentMs: cpuMs(agents[mode].pid) - before.agent, hubMs: cpuMs(process.pid) - before.hub, seconds };
    pool.destroy();
    session.close();
    return result;
  }

  for (const mode of MODES) await load(mode, 2000);
  const totals = Object.fromEntries(MODES.map((m) => [m, { agentMs: 0, hubMs: 0, seconds: 0, requests: 0 }]));
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const mode of MODES) {
      const r = await load(mode, Math.round(REQUESTS / ROUNDS));
      const t = totals[mode] as { agentMs: number; hubMs: number; seconds: number; requests: number };
      t.agentMs += r.agentMs;
      t.hubMs += r.hubMs;
      t.seconds += r.seconds;
      t.requests += Math.round(REQUESTS / ROUNDS);
    }
  }
  const results = Object.fromEntries(
    MODES.map((m) => {
      const t = totals[m] as { agentMs: number; hubMs: number; seconds: number; requests: number };
      return [
        m,
        {
          agentMicrosPerRequest: Math.round((t.agentMs * 1000) / t.requests),
          hubMicrosPerRequest: Math.round((t.hubMs * 1000) / t.requests),
          requestsPerSecond: Math.round(t.requests / t.seconds),
        },
      ];
    }),
  );
  const load1 = loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
  if (values.json)
    process.stdout.write(
      `${JSON.stringify({ requests: REQUESTS, concurrency: CONCURRENCY, load: load1, results }, null, 2)}\n`,
    );
  else {
    process.stdout.write(
      `agent request path, ${REQUESTS} GETs, ${CONCURRENCY} in flight, ${ROUNDS} interleaved rounds; load average ${load1}\n` +
        MODES.map((m) => {
          const r = results[m] as {
            agentMicrosPerRequest: number;
            hubMicrosPerRequest: number;
            requestsPerSecond: number;
          };
          return `  ${m.padEnd(7)} agent ${r.agentMicrosPerRequest} µs/request; load side (the hub's part) ${r.hubMicrosPerRequest} µs; ${r.requestsPerSecond} req/s`;
        }).join('\n') +
        '\n',
    );
  }
  for (const a of Object.values(agents)) a.kill();
  upstream.kill();
}
