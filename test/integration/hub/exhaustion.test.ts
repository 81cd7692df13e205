/**
 * Resource exhaustion of the hub, tried as an attacker would, with real
 * sockets on loopback: silent TCP connections, a half-sent TLS hello, a
 * request head trickled a line at a time (slowloris), a request body
 * trickled, idle TLS connections before and between requests, an idle watch
 * and an idle exec stream, tunnel (HTTP/2) connections that stall before
 * they are accepted. Each socket must be closed BY THE HUB once its
 * deadline passes, and the hub must keep answering `/healthz` and admitting
 * agents.
 *
 * The hub under attack runs in this process with short deadlines (injected
 * options), so the suite is quick; a second hub with the default deadlines
 * is the control: its sockets, attacked the same way, are still open when
 * the first hub has closed its own, which shows that the deadline, not
 * something else, closed them. No test asserts a duration: each waits for
 * the 'close' event, bounded by {@link CLOSE_WAIT_MS} as a safety net.
 *
 * The agents are edgeadm's own (`registerCluster`, `connectTunnel`); the
 * edge cluster is the SIMULATED API server of test/support.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { performServerHandshake } from 'node:http2';
import { connect as netConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startHub, type RunningHub } from '../../../src/hub/server/hub-server.js';
import type { HubDeadlines } from '../../../src/hub/front/socket-deadlines.js';
import { silentLogger } from '../../../src/log/run-log.js';
import { connectTunnel, type AgentIdentity } from '../../../src/tunnel/agent.js';
import type { AgentState } from '../../../src/registration/agent-state.js';
import { TUNNEL_ALPN_PROTOCOL } from '../../../src/tunnel/limits.js';
import { HELLO_PATH } from '../../../src/tunnel/protocol.js';
import { registerCluster } from '../../../src/registration/registration.js';
import { readUpstreamKubeconfig, Upstream } from '../../../src/tunnel/upstream.js';
import { call, send, type HttpTarget } from '../../support/https-client.js';
import { CLOSE_WAIT_MS, SHORT_HUB_DEADLINES } from '../../support/short-hub-deadlines.js';
import { connectWebSocket, startSimApiServer, type SimApiServer } from '../../support/sim-apiserver/index.js';

/** The tunnel liveness of a third hub, to which only mute agents connect. */
const SHORT_LIVENESS: Partial<HubDeadlines> = { tunnelSilenceMs: 1000, tunnelSweepMs: 100 };
/** The attacked hub's bound on handshakes in progress, and on connections waiting for a place. */
const BOUND = 4;
const QUEUE = 3;

type Outcome = 'closed' | 'open';

/** Whether `socket` closes within `ms` (the peer, here the hub, closed it), reading and dropping what comes. */
function closure(socket: Socket, ms = CLOSE_WAIT_MS): Promise<Outcome> {
  return new Promise((resolve) => {
    if (socket.destroyed) return resolve('closed');
    const timer = setTimeout(() => resolve('open'), ms);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve('closed');
    });
    socket.on('error', () => undefined);
    socket.resume();
  });
}

function isOpen(socket: Socket): boolean {
  return !socket.destroyed && !socket.readableEnded;
}

/** Every socket a test opened: closed after each test, so that one failing test leaves no place held for the next. */
const opened = new Set<Socket>();

function rawConnect(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = netConnect(port, '127.0.0.1', () => resolve(socket));
    opened.add(socket);
    socket.once('error', reject);
  });
}

/** Sends `line()` every `everyMs` until the socket closes: a peer that is never quite silent. */
function trickle(socket: Socket, everyMs: number, line: () => string | Buffer): void {
  const timer = setInterval(() => {
    if (socket.destroyed || !socket.writable) clearInterval(timer);
    else socket.write(line());
  }, everyMs);
  socket.once('close', () => clearInterval(timer));
}

describe('hub: resource exhaustion', { timeout: 120_000 }, () => {
  const root = mkdtempSync(join(tmpdir(), 'hub-exhaustion-'));
  let hub: RunningHub;
  let control: RunningHub;
  let lively: RunningHub;
  let caPem: string;
  /** The CA of each hub, by port. */
  const caOf = new Map<number, string>();
  let adminToken: string;
  let sim: SimApiServer;
  let upstream: Upstream;
  let kubeconfig: string;

  const tlsOpen = (port: number, alpn = ['http/1.1']): Promise<TLSSocket> =>
    new Promise((resolve, reject) => {
      const socket = tlsConnect({ host: '127.0.0.1', port, ca: caOf.get(port), ALPNProtocols: alpn }, () =>
        resolve(socket),
      );
      opened.add(socket);
      socket.once('error', reject);
    });
  const hubAt = (port: number): HttpTarget => ({ url: `https://127.0.0.1:${port}`, caPem: caOf.get(port)! });
  const healthz = async (port: number): Promise<number> => (await call(hubAt(port), { path: '/healthz' })).status;
  const api = async (path: string, body: unknown, target: RunningHub = hub): Promise<string> => {
    const token = /^token: (\S+)$/m.exec(readFileSync(target.adminConfigPath, 'utf8'))?.[1] ?? '';
    return (await call(hubAt(target.port), { method: 'POST', path, token, body })).text;
  };
  const register = async (
    cluster: string,
    target: RunningHub = hub,
  ): Promise<{ state: AgentState; identity: AgentIdentity }> => {
    const { token } = JSON.parse(await api('/hub/v1/tokens', { ttlMs: 600_000 }, target)) as { token: string };
    const { state } = await registerCluster({
      hub: `127.0.0.1:${target.port}`,
      token,
      caCertHashes: [target.caPin],
      cluster,
      labels: {},
      kubeconfig,
      createServiceAccount: false,
      dataDir: join(root, `${cluster}-${target.port}`),
      discoveryTimeout: 30_000,
      logger: silentLogger,
    });
    return { state, identity: { cluster, certPem: state.certPem, keyPem: state.keyPem } };
  };
  const metric = async (name: string): Promise<number> => {
    const { text } = await call({ url: `https://127.0.0.1:${hub.port}`, caPem }, { path: '/metrics' });
    return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1]);
  };
  /** A TLS connection to the tunnel protocol with a registered agent's certificate, HTTP/2 not yet set up. */
  const tunnelOpen = (identity: AgentIdentity, state: AgentState, port = hub.port): Promise<TLSSocket> =>
    new Promise((resolve, reject) => {
      const socket = tlsConnect(
        {
          host: '127.0.0.1',
          port,
          ca: state.hubCaPem,
          cert: identity.certPem,
          key: identity.keyPem,
          ALPNProtocols: [TUNNEL_ALPN_PROTOCOL],
        },
        () => resolve(socket),
      );
      opened.add(socket);
      socket.once('error', reject);
    });

  beforeAll(async () => {
    sim = await startSimApiServer({ gitVersion: 'v1.30.4+sim' });
    kubeconfig = join(root, 'edge.kubeconfig');
    writeFileSync(kubeconfig, sim.kubeconfig(), { mode: 0o600 });
    upstream = new Upstream(await readUpstreamKubeconfig(kubeconfig), silentLogger);
    hub = await startHub({
      listen: '127.0.0.1:0',
      dataDir: join(root, 'hub'),
      logger: silentLogger,
      maxPendingHandshakes: BOUND,
      maxQueuedHandshakes: QUEUE,
      deadlines: SHORT_HUB_DEADLINES,
    });
    // The control: the default deadlines (10 s handshake, 30 s head, 15 s keep-alive), a bound as large.
    control = await startHub({
      listen: '127.0.0.1:0',
      dataDir: join(root, 'control'),
      logger: silentLogger,
      maxPendingHandshakes: BOUND,
      maxQueuedHandshakes: QUEUE,
    });
    lively = await startHub({
      listen: '127.0.0.1:0',
      dataDir: join(root, 'lively'),
      logger: silentLogger,
      deadlines: SHORT_LIVENESS,
    });
    caOf.set(lively.port, readFileSync(join(root, 'lively', 'pki', 'ca.crt'), 'utf8'));
    caPem = readFileSync(join(root, 'hub', 'pki', 'ca.crt'), 'utf8');
    caOf.set(hub.port, caPem);
    caOf.set(control.port, readFileSync(join(root, 'control', 'pki', 'ca.crt'), 'utf8'));
    adminToken = /^token: (\S+)$/m.exec(readFileSync(hub.adminConfigPath, 'utf8'))?.[1] ?? '';
  });

  afterEach(() => {
    for (const socket of opened) socket.destroy();
    opened.clear();
  });

  afterAll(async () => {
    await hub?.close();
    await control?.close();
    await lively?.close();
    upstream?.close();
    await sim?.stop();
  });

  it('(a) closes silent TCP connections that fill the handshake bound and its queue; then answers /healthz and admits an agent', async () => {
    const site = await register('silent-a');
    const timedOutBefore = await metric('edgeadm_hub_handshakes_timed_out_total');
    const refusedBefore = await metric('edgeadm_hub_handshakes_refused_total');
    // The attack: as many connections as the places and the queue, and more, none of which ever says a word.
    const silent = await Promise.all(Array.from({ length: BOUND + QUEUE + 2 }, () => rawConnect(hub.port)));
    const controlSilent = await rawConnect(control.port);
    // While they hold every place and turn, a real client is refused before TLS.
    await expect(healthz(hub.port)).rejects.toThrow();
    expect(await Promise.all(silent.map((socket) => closure(socket)))).toEqual(silent.map(() => 'closed'));
    // The hub with the default (10 s) deadline still holds its own: the deadline closed them, nothing else.
    expect(isOpen(controlSilent)).toBe(true);
    controlSilent.destroy();
    // Those in a place and those waiting for one are closed by the deadline; the rest (and the client) were refused.
    expect(await metric('edgeadm_hub_handshakes_timed_out_total')).toBe(timedOutBefore + BOUND + QUEUE);
    expect(await metric('edgeadm_hub_handshakes_refused_total')).toBe(refusedBefore + 3);
    // The places are free again: the hub answers, and an agent connects.
    expect(await healthz(hub.port)).toBe(200);
    const tunnel = await connectTunnel({
      hubServer: `https://127.0.0.1:${hub.port}`,
      hubCaPem: site.state.hubCaPem,
      identity: () => site.identity,
      upstream,
      logger: silentLogger,
    });
    await tunnel.drain();
  });

  it('(e) closes a connection whose TLS hello stops half-way, even one that trickles a byte at a time', async () => {
    const timedOutBefore = await metric('edgeadm_hub_handshakes_timed_out_total');
    const hello = async (port: number): Promise<Socket> => {
      const socket = await rawConnect(port);
      // A TLS record header announcing a 512-byte handshake message, and the start of a ClientHello.
      socket.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]));
      // One more byte of it every 200 ms: Node's own handshake timer, an idle one, never fires.
      trickle(socket, 200, () => Buffer.from([0x00]));
      return socket;
    };
    const stalled = await hello(hub.port);
    const controlStalled = await hello(control.port);
    expect(await closure(stalled)).toBe('closed');
    expect(isOpen(controlStalled)).toBe(true);
    controlStalled.destroy();
    expect(await metric('edgeadm_hub_handshakes_timed_out_total')).toBe(timedOutBefore + 1);
    expect(await healthz(hub.port)).toBe(200);
  });

  it('(b) closes a connection that trickles its request head a line at a time (slowloris)', async () => {
    const slowloris = async (port: number): Promise<TLSSocket> => {
      const socket = await tlsOpen(port);
      socket.write('GET /healthz HTTP/1.1\r\nHost: hub\r\n');
      // One header line every 100 ms: the connection is never idle, its head never complete.
      let line = 0;
      trickle(socket, 100, () => `X-Line-${(line += 1)}: a\r\n`);
      return socket;
    };
    const attacker = await slowloris(hub.port);
    const controlAttacker = await slowloris(control.port);
    let answer = '';
    attacker.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    expect(await closure(attacker)).toBe('closed');
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(isOpen(controlAttacker)).toBe(true);
    controlAttacker.destroy();
  });

  it('(b) closes a request whose body trickles past the whole-request deadline, while a watch begun before it streams on until it is idle too long', async () => {
    const site = await register('watch-b');
    const tunnel = await connectTunnel({
      hubServer: `https://127.0.0.1:${hub.port}`,
      hubCaPem: site.state.hubCaPem,
      identity: () => site.identity,
      upstream,
      logger: silentLogger,
    });
    const user = JSON.parse(
      await api('/hub/v1/users', { name: 'watcher', clustersSelector: '', groups: ['system:masters'] }),
    ) as { token: string };
    // A watch: its request is complete at once, its answer streams for as long as the user wants.
    const answer = await send(
      { url: `https://127.0.0.1:${hub.port}`, caPem },
      {
        path: '/clusters/watch-b/api/v1/namespaces/default/pods?watch=1',
        token: user.token,
        onSocket: (socket) => opened.add(socket),
      },
    ).response;
    const watch = { socket: answer.socket, status: answer.statusCode ?? 0 };
    expect(watch.status).toBe(200);
    // A body of 100,000 bytes, announced and then sent one byte every 100 ms: it would take hours.
    const slowBody = await tlsOpen(hub.port);
    slowBody.write(
      `POST /hub/v1/tokens HTTP/1.1\r\nHost: hub\r\nAuthorization: Bearer ${adminToken}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n',
    );
    trickle(slowBody, 100, () => ' ');
    expect(await closure(slowBody)).toBe('closed');
    expect(isOpen(watch.socket)).toBe(true);
    // Nothing happens in the watched namespace: once the stream has carried no byte for its deadline, it is closed.
    expect(await closure(watch.socket)).toBe('closed');
    await tunnel.drain();
  });

  it('(b) closes an upgraded stream (exec) that carries no byte either way for its deadline', async () => {
    const site = await register('exec-b');
    sim.setObject({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web-0', namespace: 'default' },
      spec: { containers: [{ name: 'web', image: 'nginx' }] },
    });
    const tunnel = await connectTunnel({
      hubServer: `https://127.0.0.1:${hub.port}`,
      hubCaPem: site.state.hubCaPem,
      identity: () => site.identity,
      upstream,
      logger: silentLogger,
    });
    const user = JSON.parse(
      await api('/hub/v1/users', { name: 'execer', clustersSelector: '', groups: ['system:masters'] }),
    ) as { token: string };
    // `cat` with its stdin open and nothing typed: a shell left idle.
    const exec = await connectWebSocket({
      url: `https://127.0.0.1:${hub.port}/clusters/exec-b/api/v1/namespaces/default/pods/web-0/exec?command=cat&stdin=true&stdout=true`,
      protocols: ['v5.channel.k8s.io', 'v4.channel.k8s.io'],
      headers: { Authorization: `Bearer ${user.token}` },
      ca: caPem,
    });
    const closeCode = await new Promise<number | 'open'>((resolve) => {
      const timer = setTimeout(() => resolve('open'), CLOSE_WAIT_MS);
      exec.once('close', (code: number) => {
        clearTimeout(timer);
        resolve(code);
      });
    });
    // 1006: the connection closed under the WebSocket without a close frame, as the hub closes it.
    expect(closeCode).toBe(1006);
    await tunnel.drain();
  });

  it('(c) closes a TLS connection that sends no request, and an idle keep-alive one after its answer', async () => {
    const idle = await tlsOpen(hub.port);
    const controlIdle = await tlsOpen(control.port);
    expect(await closure(idle)).toBe('closed');
    expect(isOpen(controlIdle)).toBe(true);

    const keptAlive = async (port: number): Promise<{ socket: TLSSocket; answer: Promise<string> }> => {
      const socket = await tlsOpen(port);
      const answer = new Promise<string>((resolve) => {
        let text = '';
        socket.on('data', (chunk: Buffer) => {
          text += chunk.toString();
          if (text.includes('\r\n\r\n')) resolve(text);
        });
      });
      socket.write('GET /healthz HTTP/1.1\r\nHost: hub\r\n\r\n');
      return { socket, answer };
    };
    const client = await keptAlive(hub.port);
    const controlClient = await keptAlive(control.port);
    // Answered, and kept alive (the hub says so), then left idle.
    expect(await client.answer).toMatch(/^HTTP\/1\.1 200 [^]*Connection: keep-alive/i);
    expect(await controlClient.answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(await closure(client.socket)).toBe('closed');
    expect(isOpen(controlClient.socket)).toBe(true);
    controlClient.socket.destroy();
    controlIdle.destroy();
  });

  it('(d) closes a tunnel (HTTP/2) connection that stalls before it is accepted: no HTTP/2, no hello, no welcome answered', async () => {
    const site = await register('stalled-d');
    // TLS with the tunnel protocol and a valid agent certificate, then nothing: no HTTP/2 preface.
    const mute = await tunnelOpen(site.identity, site.state);
    // HTTP/2 set up, the hub's hello request never answered.
    const noHello = await tunnelOpen(site.identity, site.state);
    const noHelloSession = performServerHandshake(noHello);
    noHelloSession.on('error', () => undefined);
    noHelloSession.on('stream', (stream) => stream.on('error', () => undefined));
    // The hello answered, the welcome never: before, this peer kept its socket for good.
    const noWelcome = await tunnelOpen(site.identity, site.state);
    const noWelcomeSession = performServerHandshake(noWelcome);
    noWelcomeSession.on('error', () => undefined);
    noWelcomeSession.on('stream', (stream, headers) => {
      stream.on('error', () => undefined);
      if (headers[':path'] === HELLO_PATH) {
        stream.respond({ ':status': 200 });
        stream.end(JSON.stringify({ cluster: site.identity.cluster }));
      }
    });
    const outcomes = await Promise.all([closure(mute), closure(noHello), closure(noWelcome)]);
    expect(outcomes).toEqual(['closed', 'closed', 'closed']);
    // Operators get no HTTP/2 session of their own: the hub offers only the tunnel and HTTP/1.1.
    await expect(tlsOpen(hub.port, ['h2'])).rejects.toThrow();
  });
  it('(d) closes an accepted tunnel (HTTP/2) whose agent then says nothing, no ping either', async () => {
    /** An agent that answers the hub's hello and welcome, then is mute: a hung agent or a dead link. */
    const muteAgent = async (target: RunningHub): Promise<TLSSocket> => {
      const site = await register('mute-d', target);
      const socket = await tunnelOpen(site.identity, site.state, target.port);
      const session = performServerHandshake(socket);
      session.on('error', () => undefined);
      await new Promise<void>((resolve) => {
        session.on('stream', (stream, headers) => {
          stream.on('error', () => undefined);
          stream.resume();
          stream.respond({ ':status': headers[':path'] === HELLO_PATH ? 200 : 204 });
          if (headers[':path'] === HELLO_PATH) stream.end(JSON.stringify({ cluster: site.identity.cluster }));
          else {
            stream.end();
            resolve();
          }
        });
      });
      return socket;
    };
    const mute = await muteAgent(lively);
    const controlMute = await muteAgent(control);
    expect(await closure(mute)).toBe('closed');
    // The control hub (30 s of silence allowed) still holds its own.
    expect(isOpen(controlMute)).toBe(true);
  });
});
