/**
 * Tunnel sessions as the hub keeps them. Liveness: the hub closes a tunnel
 * whose agent has gone silent (it pings no more), and keeps a live one.
 * TLS session resumption: an agent resumes its session after
 * a hub restart (the ticket key is kept in the hub's data directory), and a
 * resumed session gets no further than a full handshake would: a cluster
 * deleted from the hub (its certificate revoked, its tunnel closed) and a
 * certificate revoked by renewal are refused even when the agent resumes a
 * session made while they were valid. Sessions also resume on a hub started
 * with another command line, as each replica of a hub is. The hub is in this
 * process, the agent is edgeadm's `connectTunnel`, the edge cluster is the
 * SIMULATED API server.
 */
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { performServerHandshake } from 'node:http2';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHub, type RunningHub } from '../../../src/hub/server/hub-server.js';
import { TLS_TICKET_KEY_FILE } from '../../../src/hub/identity/tls-ticket-keys.js';
import { silentLogger } from '../../../src/log/run-log.js';
import type { HubDeadlines } from '../../../src/hub/front/socket-deadlines.js';
import { TUNNEL_ALPN_PROTOCOL, TUNNEL_PING_INTERVAL_MS } from '../../../src/tunnel/limits.js';
import { HELLO_PATH } from '../../../src/tunnel/protocol.js';
import type { AgentState } from '../../../src/registration/agent-state.js';
import {
  connectTunnel,
  type AgentHelloCache,
  type AgentIdentity,
  type TunnelTlsSession,
} from '../../../src/tunnel/agent.js';
import { registerCluster, renewAgentCertificate } from '../../../src/registration/registration.js';
import { readUpstreamKubeconfig, Upstream } from '../../../src/tunnel/upstream.js';
import { call } from '../../support/https-client.js';
import { startSimApiServer, type SimApiServer } from '../../support/sim-apiserver/index.js';

interface Site {
  state: AgentState;
  dataDir: string;
  identity: AgentIdentity;
  session: TunnelTlsSession;
  hello: AgentHelloCache;
}

/**
 * An agent that answers the hub's hello and welcome, then says nothing more
 * (no keepalive pings): what a hung agent or a dead link looks like to the hub.
 */
function connectMuteAgent(options: { port: number; site: Site }): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({
      host: '127.0.0.1',
      port: options.port,
      ca: options.site.state.hubCaPem,
      cert: options.site.identity.certPem,
      key: options.site.identity.keyPem,
      ALPNProtocols: [TUNNEL_ALPN_PROTOCOL],
    });
    socket.once('error', reject);
    socket.once('secureConnect', () => {
      const session = performServerHandshake(socket);
      session.on('error', () => undefined);
      session.on('stream', (stream, headers) => {
        stream.on('error', () => undefined);
        if (headers[':path'] === HELLO_PATH) {
          stream.respond({ ':status': 200 });
          stream.end(JSON.stringify({ cluster: options.site.identity.cluster }));
        } else {
          stream.resume();
          stream.respond({ ':status': 204 });
          stream.end();
          resolve(socket);
        }
      });
    });
  });
}

/**
 * The hub's liveness, shortened so that a silent agent is closed in seconds
 * rather than the default half minute: still half as long again as the real
 * agent's ping interval, so the live agent below is heard from (it pings at
 * its default interval) well before the limit would close it, and a sweep
 * that did not count its pings would close it with the mute one.
 */
const SILENCE_LIMIT_MS = 1.5 * TUNNEL_PING_INTERVAL_MS;
const SHORT_LIVENESS: Partial<HubDeadlines> = { tunnelSilenceMs: SILENCE_LIMIT_MS, tunnelSweepMs: 500 };

describe('hub: tunnel sessions', { timeout: 120_000 }, () => {
  const root = mkdtempSync(join(tmpdir(), 'hub-resume-'));
  const dataDir = join(root, 'hub');
  let hub: RunningHub;
  let port: number;
  let sim: SimApiServer;
  let upstream: Upstream;
  let adminToken: string;
  let kubeconfig: string;

  // A new connection each time (the one client never pools): the test counts the hub's resumed sessions.
  const api = async (options: {
    method?: string;
    path: string;
    body?: unknown;
  }): Promise<{ status: number; body: string }> => {
    const answer = await call(
      { url: `https://127.0.0.1:${port}`, caPem: readFileSync(join(dataDir, 'pki', 'ca.crt'), 'utf8') },
      { ...options, token: adminToken },
    );
    return { status: answer.status, body: answer.text };
  };
  const resumed = async (): Promise<number> =>
    Number(/^edgeadm_hub_tls_sessions_resumed_total (\d+)$/m.exec((await api({ path: '/metrics' })).body)?.[1]);
  const dial = (site: Site, identity: AgentIdentity = site.identity) =>
    connectTunnel({
      hubServer: `https://127.0.0.1:${port}`,
      hubCaPem: site.state.hubCaPem,
      identity: () => identity,
      upstream,
      logger: silentLogger,
      tlsSession: site.session,
      helloCache: site.hello,
    });

  async function register(cluster: string): Promise<Site> {
    const created = await api({ method: 'POST', path: '/hub/v1/tokens', body: { ttlMs: 600_000 } });
    const token = (JSON.parse(created.body) as { token: string }).token;
    const siteDir = join(root, cluster);
    const { state } = await registerCluster({
      hub: `127.0.0.1:${port}`,
      token,
      caCertHashes: [hub.caPin],
      cluster,
      labels: {},
      kubeconfig,
      createServiceAccount: false,
      dataDir: siteDir,
      discoveryTimeout: 30_000,
      logger: silentLogger,
    });
    return {
      state,
      dataDir: siteDir,
      identity: { cluster, certPem: state.certPem, keyPem: state.keyPem },
      session: {},
      hello: {},
    };
  }

  beforeAll(async () => {
    sim = await startSimApiServer({ gitVersion: 'v1.30.4+sim' });
    kubeconfig = join(root, 'edge.kubeconfig');
    writeFileSync(kubeconfig, sim.kubeconfig(), { mode: 0o600 });
    upstream = new Upstream(await readUpstreamKubeconfig(kubeconfig), silentLogger);
    hub = await startHub({ listen: '127.0.0.1:0', dataDir, logger: silentLogger, deadlines: SHORT_LIVENESS });
    port = hub.port;
    adminToken = /^token: (\S+)$/m.exec(readFileSync(hub.adminConfigPath, 'utf8'))?.[1] ?? '';
  });

  afterAll(async () => {
    await hub?.close();
    upstream?.close();
    await sim?.stop();
  });

  it(
    'closes the tunnel of an agent that has gone silent, and keeps a live one',
    async () => {
      const mute = await register('mute-1');
      const live = await register('live-1');
      const liveTunnel = await dial(live);
      let isLiveClosed = false;
      void liveTunnel.closed.then(() => (isLiveClosed = true));
      const muteSocket = await connectMuteAgent({ port, site: mute });
      const connected = async (): Promise<number> =>
        Number(/^edgeadm_hub_connected_agents (\d+)$/m.exec((await api({ path: '/metrics' })).body)?.[1]);
      expect(await connected()).toBe(2);
      const closed = new Promise<void>((resolve) => muteSocket.once('close', () => resolve()));
      await closed;
      // The gauge follows once the hub has recorded the disconnection.
      let count = await connected();
      for (let i = 0; i < 50 && count !== 1; i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        count = await connected();
      }
      expect(count).toBe(1);
      // The live tunnel was dialled first, so a sweep that judged it silent would have closed it no later
      // than the mute one: it is still open on both ends, and requests still cross it.
      expect(isLiveClosed).toBe(false);
      const view = JSON.parse((await api({ path: '/hub/v1/clusters/live-1' })).body) as { state?: string };
      expect(view.state).toBe('Connected');
      const through = await api({ path: '/clusters/live-1/version' });
      expect(through.status).toBe(200);
      expect(through.body).toContain('v1.30.4+sim');
      await liveTunnel.drain();
    },
    4 * SILENCE_LIMIT_MS,
  );

  it('resumes the agent session after a hub restart, with the hello it read before; the ticket key stays in the data directory, 0600', async () => {
    const site = await register('resume-1');
    const first = await dial(site);
    expect(site.session.session).toBeInstanceOf(Buffer);
    expect(await resumed()).toBe(0);
    await first.drain();
    await hub.close();
    hub = await startHub({ listen: `127.0.0.1:${port}`, dataDir, logger: silentLogger, deadlines: SHORT_LIVENESS });
    sim.clearRequests();
    const again = await dial(site);
    expect(await resumed()).toBe(1);
    // The redial reused the hello it had just read: its API server was not asked again.
    expect(sim.requests.filter((r) => r.path === '/version')).toEqual([]);
    const cluster = JSON.parse((await api({ path: '/hub/v1/clusters/resume-1' })).body) as Record<string, unknown>;
    expect(JSON.stringify(cluster)).toContain('v1.30.4+sim');
    await again.drain();
    expect(statSync(join(dataDir, 'pki', TLS_TICKET_KEY_FILE)).mode & 0o777).toBe(0o600);
  });

  it('resumes the agent session on a hub started with another command line, as another replica of the hub is', async () => {
    const site = await register('resume-2');
    const first = await dial(site);
    await first.drain();
    await hub.close();
    // Replicas differ in --listen, --data-dir and --advertise-address. TLS resumes a session only
    // within one session id context, which Node derives from the command line unless told otherwise.
    const argv = [...process.argv];
    process.argv.push('--listen', '10.0.0.2:9443', '--advertise-address', 'hub-b.example');
    try {
      hub = await startHub({ listen: `127.0.0.1:${port}`, dataDir, logger: silentLogger, deadlines: SHORT_LIVENESS });
    } finally {
      process.argv.splice(0, process.argv.length, ...argv);
    }
    const again = await dial(site);
    expect(await resumed()).toBe(1);
    await again.drain();
  });

  it('refuses a resumed session of a deleted cluster, after closing its tunnel', async () => {
    const site = await register('deleted-1');
    const open = await dial(site);
    expect(site.session.session).toBeInstanceOf(Buffer);
    expect((await api({ method: 'DELETE', path: '/hub/v1/clusters/deleted-1' })).status).toBe(200);
    await open.closed;
    const before = await resumed();
    await expect(dial(site)).rejects.toMatchObject({ code: 'E_TUNNEL_REFUSED' });
    // The refused connection was a resumption: the check did not depend on a full handshake.
    expect(await resumed()).toBe(before + 1);
    expect(site.session.session).toBeUndefined();
  });

  it('refuses a resumed session whose certificate was revoked by renewal, and accepts the renewed one', async () => {
    const site = await register('renewed-1');
    const open = await dial(site);
    await open.drain();
    const renewed = await renewAgentCertificate(site.dataDir, site.state, silentLogger);
    const before = await resumed();
    const held = { ...site.session };
    await expect(dial(site)).rejects.toThrow(/revoked/);
    expect(await resumed()).toBe(before + 1);
    // The renewed certificate never offers the old certificate's session.
    site.session = held;
    const fresh = await dial(site, { cluster: 'renewed-1', certPem: renewed.certPem, keyPem: renewed.keyPem });
    expect(await resumed()).toBe(before + 1);
    await fresh.drain();
  });
});
