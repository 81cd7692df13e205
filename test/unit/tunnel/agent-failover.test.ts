/**
 * An agent given several hub addresses (one per replica) keeps one tunnel
 * to one of them and moves to the next when it goes away, with the
 * jittered exponential backoff of backoff.ts between dials. The hubs are
 * edgeadm's real `acceptTunnel` on loopback; the agent is the real
 * `runTunnelAgent` with its clock (sleep), jitter (random) and resolver
 * injected, so no test waits for a real delay.
 */
import { once } from 'node:events';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { createServer, type Server, type TLSSocket } from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/log/run-log.js';
import { createCa, issueCertificate, type CertificateAuthority } from '../../../src/trust/pki.js';
import { runTunnelAgent, type RunTunnelAgentOptions } from '../../../src/tunnel/agent-loop.js';
import { acceptTunnel, type HubTunnel } from '../../../src/tunnel/hub-tunnel.js';
import { hubAddressesOf } from '../../../src/registration/register-request.js';
import { hubCandidates } from '../../../src/tunnel/hub-addresses.js';
import { RECONNECT_BASE_DELAY_MS, RECONNECT_MAX_DELAY_MS, TUNNEL_ALPN_PROTOCOL } from '../../../src/tunnel/limits.js';
import type { Upstream } from '../../../src/tunnel/upstream.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** An upstream that answers nothing: the hello then carries no version, which the hub accepts. */
const upstream = {
  close: () => {},
  getJson: () => Promise.reject(new Error('no API server here')),
} as unknown as Upstream;

interface FakeHub {
  server: Server;
  url: string;
  tunnels: HubTunnel[];
}

async function pki(): Promise<{
  ca: CertificateAuthority;
  serving: { certPem: string; keyPem: string };
  client: { certPem: string; keyPem: string };
}> {
  const ca = await createCa({ commonName: 'test hub CA' });
  const serving = await issueCertificate({
    ca,
    commonName: 'hub',
    ipAddresses: ['127.0.0.1'],
    dnsNames: ['hub.test'],
    usages: ['server'],
  });
  const client = await issueCertificate({ ca, commonName: 'site-1', usages: ['client'] });
  return { ca, serving, client };
}

/** A hub replica that accepts the agent; `dials` records its name at each TLS connection. */
async function startFakeHub(
  name: string,
  keys: Awaited<ReturnType<typeof pki>>,
  dials: string[],
  host = '127.0.0.1',
): Promise<FakeHub> {
  const tunnels: HubTunnel[] = [];
  const server = createServer({
    cert: keys.serving.certPem,
    key: keys.serving.keyPem,
    ca: keys.ca.certPem,
    requestCert: true,
    ALPNProtocols: [TUNNEL_ALPN_PROTOCOL],
  });
  server.on('secureConnection', (socket: TLSSocket) => {
    dials.push(name);
    acceptTunnel({ socket, authorize: async () => ({ cluster: 'site-1' }), logger: silentLogger })
      .then((tunnel) => tunnels.push(tunnel))
      .catch(() => {});
  });
  server.listen(0, host);
  await once(server, 'listening');
  cleanups.push(() => {
    for (const tunnel of tunnels) tunnel.destroy();
    server.close();
  });
  return { server, url: `https://127.0.0.1:${(server.address() as { port: number }).port}`, tunnels };
}

/** A port that takes TCP and closes it at once (a replica going down); `dials` records `name`. */
async function startDeadEnd(name: string, dials: string[]): Promise<{ server: TcpServer; url: string }> {
  const server = createTcpServer((socket) => {
    dials.push(name);
    socket.destroy();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(() => server.close());
  return { server, url: `https://127.0.0.1:${(server.address() as { port: number }).port}` };
}

/**
 * The agent's options for these tests: site-1's identity under the test CA,
 * the mute upstream, stopped by `stop`, with `rest` (addresses, clock,
 * jitter, resolver) as each test needs.
 */
function agentOptions(
  keys: Awaited<ReturnType<typeof pki>>,
  stop: AbortController,
  rest: Pick<RunTunnelAgentOptions, 'hubServer'> & Partial<RunTunnelAgentOptions>,
): RunTunnelAgentOptions {
  return {
    hubCaPem: keys.ca.certPem,
    identity: () => ({ cluster: 'site-1', certPem: keys.client.certPem, keyPem: keys.client.keyPem }),
    upstream,
    logger: silentLogger,
    signal: stop.signal,
    ...rest,
  };
}

async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 10));
}

describe('tunnel agent with several hub replicas', () => {
  it('moves to the next replica when its replica goes away, after a jittered delay', async () => {
    const keys = await pki();
    const dials: string[] = [];
    const a = await startFakeHub('a', keys, dials);
    const b = await startFakeHub('b', keys, dials);
    const delays: number[] = [];
    const stop = new AbortController();
    cleanups.push(() => stop.abort());
    const run = runTunnelAgent(
      agentOptions(keys, stop, {
        hubServer: a.url,
        hubServers: [a.url, b.url],
        random: () => 0.5,
        sleep: (ms) => {
          delays.push(ms);
          return Promise.resolve();
        },
      }),
    );
    await until(() => a.tunnels.length === 1);
    // Replica a dies: it stops listening and its tunnel is gone.
    a.server.close();
    a.tunnels[0]!.destroy();
    await until(() => b.tunnels.length === 1);
    expect(dials).toEqual(['a', 'b']);
    expect(delays).toEqual([Math.floor(0.5 * RECONNECT_BASE_DELAY_MS)]);
    stop.abort();
    b.tunnels[0]!.destroy();
    await run;
  });

  it('moves to the replica the hub names when asked, not to the next one, and drains the old tunnel', async () => {
    const keys = await pki();
    const dials: string[] = [];
    const [a, b, c] = [
      await startFakeHub('a', keys, dials),
      await startFakeHub('b', keys, dials),
      await startFakeHub('c', keys, dials),
    ];
    const stop = new AbortController();
    cleanups.push(() => stop.abort());
    const run = runTunnelAgent(
      agentOptions(keys, stop, {
        hubServer: a.url,
        hubServers: [a.url, b.url, c.url],
        random: () => 0,
        sleep: () => Promise.resolve(),
      }),
    );
    await until(() => a.tunnels.length === 1);
    const first = a.tunnels[0]!;
    // The rebalancer asks only tunnels with no user stream open.
    expect(first.userStreams).toBe(0);
    await first.move(c.url);
    await first.closed;
    await until(() => c.tunnels.length === 1);
    expect(dials).toEqual(['a', 'c']);
    // A replica the agent was not given is no address of its own: it dials its next one, as after any close.
    await c.tunnels[0]!.move('https://127.0.0.9:1');
    await until(() => a.tunnels.length === 2);
    expect(dials).toEqual(['a', 'c', 'a']);
    stop.abort();
    a.tunnels[1]!.destroy();
    await run;
  });

  it('dials the replicas in turn while none answers, the delay doubling up to its bound', async () => {
    const dials: string[] = [];
    const a = await startDeadEnd('a', dials);
    const b = await startDeadEnd('b', dials);
    const keys = await pki();
    const delays: number[] = [];
    const stop = new AbortController();
    cleanups.push(() => stop.abort());
    await runTunnelAgent(
      agentOptions(keys, stop, {
        hubServer: a.url,
        hubServers: [a.url, b.url],
        random: () => 0.999,
        sleep: (ms) => {
          delays.push(ms);
          if (delays.length === 8) stop.abort();
          return Promise.resolve();
        },
      }),
    );
    expect(dials).toEqual(['a', 'b', 'a', 'b', 'a', 'b', 'a', 'b']);
    const ceilings = delays.map((_, attempt) =>
      Math.min(RECONNECT_MAX_DELAY_MS, RECONNECT_BASE_DELAY_MS * 2 ** attempt),
    );
    expect(delays).toEqual(ceilings.map((ceiling) => Math.floor(0.999 * ceiling)));
    expect(Math.max(...delays)).toBeLessThanOrEqual(RECONNECT_MAX_DELAY_MS);
  });

  it('dials every address a hub name resolves to, verifying the name', async () => {
    const keys = await pki();
    const dials: string[] = [];
    const hub = await startFakeHub('hub', keys, dials);
    const port = new URL(hub.url).port;
    const stop = new AbortController();
    cleanups.push(() => stop.abort());
    const looked: string[] = [];
    const run = runTunnelAgent(
      agentOptions(keys, stop, {
        hubServer: `https://hub.test:${port}`,
        random: () => 0,
        sleep: () => Promise.resolve(),
        // The first address has no replica listening; the second has one.
        lookup: (name) => {
          looked.push(name);
          return Promise.resolve(['127.0.0.2', '127.0.0.1']);
        },
      }),
    );
    await until(() => hub.tunnels.length === 1);
    expect(looked).toEqual(['hub.test']);
    stop.abort();
    hub.tunnels[0]!.destroy();
    await run;
  });
});

describe('hub addresses', () => {
  it('reads one or several host:port from the register-cloud argument', () => {
    expect(hubAddressesOf('hub.example.com:9443')).toEqual(['https://hub.example.com:9443']);
    expect(hubAddressesOf('10.0.0.1:9443, 10.0.0.2:9443,[fd00::3]:9443')).toEqual([
      'https://10.0.0.1:9443',
      'https://10.0.0.2:9443',
      'https://[fd00::3]:9443',
    ]);
    expect(() => hubAddressesOf('a:1,,b:2')).toThrow(/not a hub address/);
    expect(() => hubAddressesOf('user@a:1')).toThrow(/not a hub address/);
    expect(() => hubAddressesOf('a:1/path')).toThrow(/not a hub address/);
  });

  it('expands a name with several addresses, keeps IPs and single-address names as they are', async () => {
    const lookup = (name: string): Promise<string[]> =>
      Promise.resolve(name === 'many.test' ? ['10.0.0.1', '10.0.0.2', '10.0.0.1'] : ['10.0.0.9']);
    expect(
      await hubCandidates(['https://10.0.0.5:9443', 'https://many.test:9443', 'https://one.test:9443'], lookup),
    ).toEqual([
      { server: 'https://10.0.0.5:9443' },
      { server: 'https://many.test:9443', address: '10.0.0.1' },
      { server: 'https://many.test:9443', address: '10.0.0.2' },
      { server: 'https://one.test:9443' },
    ]);
    const failing = (): Promise<string[]> => Promise.reject(new Error('NXDOMAIN'));
    expect(await hubCandidates(['https://gone.test:9443'], failing)).toEqual([{ server: 'https://gone.test:9443' }]);
  });
});
