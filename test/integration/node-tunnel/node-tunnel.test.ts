/**
 * The node tunnel end to end on this machine: the real server (its Unix
 * socket speaking HTTP CONNECT as kube-apiserver's egress selector does, its
 * TLS port) and the real agent, with certificates from a CA made here the
 * way the cluster CA issues kubelet client certificates. The "kubelet" is a
 * TCP echo server: the tunnel relays bytes and never looks into them (the
 * API server's TLS to the kubelet runs end to end); the real rig lane runs
 * the real kubelet (test/real/kubeadm-node-tunnel.test.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect as connectUnix, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger, type Logger } from '../../../src/log/run-log.js';
import { runNodeTunnelAgent } from '../../../src/node-tunnel/agent.js';
import type { NodeObject } from '../../../src/node-tunnel/routing.js';
import { runNodeTunnelServer } from '../../../src/node-tunnel/server.js';
import { createCa, issueCertificate, type CertificateAuthority } from '../../../src/trust/pki.js';

/** Addresses the Nodes claim; nothing listens there: only the tunnel can reach "them". */
const EDGE1_ADDRESS = '192.0.2.71';
const EDGE2_ADDRESS = '192.0.2.72';

function node(name: string, address: string): NodeObject {
  return {
    metadata: { name, labels: { 'edgeadm.io/edge': 'true' } },
    status: { addresses: [{ type: 'InternalIP', address }], daemonEndpoints: { kubeletEndpoint: { Port: 10250 } } },
  };
}

/** One CONNECT on the server's socket: the status line, and the socket if it was 200. */
function connectThrough(socketPath: string, authority: string): Promise<{ statusLine: string; socket: Socket }> {
  return new Promise((resolve, reject) => {
    const socket = connectUnix(socketPath);
    let received = '';
    socket.once('connect', () => socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`));
    const onData = (chunk: Buffer): void => {
      received += chunk.toString('latin1');
      const end = received.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onData);
      resolve({ statusLine: received.slice(0, received.indexOf('\r\n')), socket });
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.once('close', () => resolve({ statusLine: received.split('\r\n')[0] ?? '', socket }));
  });
}

function echoOnce(socket: Socket, text: string): Promise<string> {
  return new Promise((resolve) => {
    let echoed = '';
    socket.on('data', (chunk: Buffer) => {
      echoed += chunk.toString('utf8');
      if (echoed.length >= text.length) resolve(echoed);
    });
    socket.write(text);
  });
}

async function eventually<T>(check: () => Promise<T | undefined>): Promise<T> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const value = await check();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('never happened');
}

describe('the node tunnel between its server and an agent', () => {
  const dir = mkdtempSync(join(tmpdir(), 'edgeadm-node-tunnel-'));
  const socketPath = join(dir, 'egress.sock');
  const stop = new AbortController();
  let ca: CertificateAuthority;
  let kubelet: Server;
  let kubeletPort = 0;
  let tunnelPort = 0;
  let edge1Credentials = '';
  let metricsPort = 0;
  let server: Promise<void>;
  let agent: Promise<void>;

  const nodeCredentials = async (name: string, authority: CertificateAuthority): Promise<string> => {
    const issued = await issueCertificate({
      ca: authority,
      commonName: `system:node:${name}`,
      organizations: ['system:nodes'],
      usages: ['client'],
    });
    const file = join(dir, `${name}-${authority === ca ? 'cluster' : 'stranger'}.pem`);
    writeFileSync(file, issued.certPem + issued.keyPem);
    return file;
  };
  const startAgent = (
    nodeName: string,
    credentialsFile: string,
    signal: AbortSignal,
    logger: Logger = silentLogger,
    port = tunnelPort,
  ): Promise<void> =>
    runNodeTunnelAgent({
      server: `https://127.0.0.1:${port}`,
      caPem: ca.certPem,
      nodeName,
      credentialsFile,
      kubelet: { host: '127.0.0.1', port: kubeletPort },
      logger,
      signal,
    });

  beforeAll(async () => {
    ca = await createCa({ commonName: 'kubernetes' });
    const serving = await issueCertificate({
      ca,
      commonName: 'kube-apiserver',
      ipAddresses: ['127.0.0.1'],
      usages: ['server'],
    });
    edge1Credentials = await nodeCredentials('edge-1', ca);
    kubelet = createServer((socket) => socket.pipe(socket));
    await new Promise<void>((resolve) => kubelet.listen(0, '127.0.0.1', resolve));
    kubeletPort = (kubelet.address() as { port: number }).port;
    const listening = new Promise<number>((resolve) => {
      server = runNodeTunnelServer({
        socketPath,
        listen: { host: '127.0.0.1', port: 0 },
        metricsListen: { host: '127.0.0.1', port: 0 },
        tls: { caPem: ca.certPem, certPem: serving.certPem, keyPem: serving.keyPem },
        client: {
          list: () => Promise.resolve([node('edge-1', EDGE1_ADDRESS), node('edge-2', EDGE2_ADDRESS)] as never),
        },
        logger: silentLogger,
        signal: stop.signal,
        onListening: (ports) => {
          metricsPort = ports.metricsPort ?? 0;
          resolve(ports.port);
        },
      });
    });
    tunnelPort = await listening;
    agent = startAgent('edge-1', edge1Credentials, stop.signal);
    await eventually(async () => {
      const { statusLine, socket } = await connectThrough(socketPath, `${EDGE1_ADDRESS}:10250`);
      socket.destroy();
      return statusLine.includes(' 200 ') ? true : undefined;
    });
  });
  afterAll(async () => {
    stop.abort();
    await Promise.allSettled([server, agent]);
    kubelet?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("carries the API server's connection to an edge node's kubelet through the node's own tunnel", async () => {
    const { statusLine, socket } = await connectThrough(socketPath, `${EDGE1_ADDRESS}:10250`);
    expect(statusLine).toBe('HTTP/1.1 200 Connection established');
    expect(await echoOnce(socket, 'through the tunnel')).toBe('through the tunnel');
    socket.destroy();
  });

  it('answers at once that a node without a tunnel is offline, naming it', async () => {
    const { statusLine } = await connectThrough(socketPath, `${EDGE2_ADDRESS}:10250`);
    expect(statusLine).toBe('HTTP/1.1 503 node edge-2 is offline: its node tunnel agent is not connected');
  });

  it("refuses an edge node's address at any port but its kubelet's", async () => {
    const { statusLine } = await connectThrough(socketPath, `${EDGE1_ADDRESS}:22`);
    expect(statusLine).toMatch(/^HTTP\/1\.1 403 refused: edge node edge-1 is reached only at its kubelet port 10250/);
  });

  it('dials an address that is no edge node directly', async () => {
    const { statusLine, socket } = await connectThrough(socketPath, `127.0.0.1:${kubeletPort}`);
    expect(statusLine).toBe('HTTP/1.1 200 Connection established');
    expect(await echoOnce(socket, 'direct')).toBe('direct');
    socket.destroy();
  });

  it("refuses an agent whose hello names another node than its certificate, and keeps the node's own tunnel", async () => {
    const attempt = new AbortController();
    await expect(startAgent('edge-2', edge1Credentials, attempt.signal)).rejects.toMatchObject({
      code: 'E_TUNNEL_REFUSED',
      message: expect.stringContaining('this certificate is for node "edge-1", not "edge-2"'),
    });
    expect((await connectThrough(socketPath, `${EDGE2_ADDRESS}:10250`)).statusLine).toMatch(
      / 503 node edge-2 is offline/,
    );
    const { statusLine, socket } = await connectThrough(socketPath, `${EDGE1_ADDRESS}:10250`);
    socket.destroy();
    expect(statusLine).toBe('HTTP/1.1 200 Connection established');
  });

  it('gives no tunnel to a certificate from another CA', async () => {
    const stranger = await createCa({ commonName: 'stranger' });
    const file = await nodeCredentials('edge-2', stranger);
    const attempt = new AbortController();
    const warnings: string[] = [];
    const running = startAgent('edge-2', file, attempt.signal, {
      ...silentLogger,
      warn: (line) => warnings.push(line),
    });
    // Its first dial has ended, one way or the other, when the agent warns.
    await eventually(() => Promise.resolve(warnings.length > 0 ? true : undefined));
    expect(warnings[0]).toMatch(/^E_TUNNEL_(CONNECT|REFUSED): /);
    expect((await connectThrough(socketPath, `${EDGE2_ADDRESS}:10250`)).statusLine).toMatch(
      / 503 node edge-2 is offline/,
    );
    attempt.abort();
    await running.catch(() => undefined);
  });

  it('reports the connected nodes, when each was last heard from, and the bytes their connections carried', async () => {
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(metrics).toMatch(/^edgeadm_node_tunnel_connected 1$/m);
    expect(metrics).toMatch(/^edgeadm_node_tunnel_last_seen_seconds\{node="edge-1"\} \d+$/m);
    // 'through the tunnel' went to the kubelet and came back, in the first test.
    expect(metrics).toMatch(/^edgeadm_node_tunnel_bytes_total\{node="edge-1",direction="to_node"\} ([1-9]\d+)$/m);
    expect(metrics).toMatch(/^edgeadm_node_tunnel_connects_total\{outcome="offline"\} [1-9]/m);
  });

  it('refuses a head that is not a CONNECT', async () => {
    const { statusLine } = await new Promise<{ statusLine: string }>((resolve) => {
      const socket = connectUnix(socketPath);
      let received = '';
      socket.once('connect', () => socket.write('GET / HTTP/1.1\r\n\r\n'));
      socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
      socket.once('close', () => resolve({ statusLine: received.split('\r\n')[0] ?? '' }));
    });
    expect(statusLine).toBe('HTTP/1.1 400 only CONNECT host:port HTTP/1.1 is served');
  });

  /** An edge-2 agent behind a link that can go silent: bytes stop both ways and nothing closes (a cut uplink). */
  const agentBehindLink = async (): Promise<{ cut: () => void; stop: () => Promise<void> }> => {
    const pairs: Array<[Socket, Socket]> = [];
    const link = createServer((fromAgent) => {
      const toServer = connectUnix({ host: '127.0.0.1', port: tunnelPort });
      fromAgent.pipe(toServer);
      toServer.pipe(fromAgent);
      pairs.push([fromAgent, toServer]);
    });
    await new Promise<void>((resolve) => link.listen(0, '127.0.0.1', resolve));
    const linkPort = (link.address() as { port: number }).port;
    const attempt = new AbortController();
    const running = startAgent('edge-2', await nodeCredentials('edge-2', ca), attempt.signal, silentLogger, linkPort);
    await eventually(async () => {
      const { statusLine, socket } = await connectThrough(socketPath, `${EDGE2_ADDRESS}:10250`);
      socket.destroy();
      return statusLine.includes(' 200 ') ? true : undefined;
    });
    return {
      cut: () => {
        link.close();
        for (const [a, b] of pairs) {
          a.unpipe(b);
          b.unpipe(a);
          a.pause();
          b.pause();
        }
      },
      stop: async () => {
        attempt.abort();
        for (const pair of pairs) for (const socket of pair) socket.destroy();
        await running.catch(() => undefined);
      },
    };
  };

  it("answers offline within the probe deadline when a tunnel's link dies without a word", async () => {
    const edge2 = await agentBehindLink();
    try {
      edge2.cut();
      const { statusLine } = await connectThrough(socketPath, `${EDGE2_ADDRESS}:10250`);
      expect(statusLine).toBe('HTTP/1.1 503 node edge-2 is offline: its node tunnel does not answer');
      expect((await connectThrough(socketPath, `${EDGE2_ADDRESS}:10250`)).statusLine).toMatch(
        / 503 node edge-2 is offline/,
      );
    } finally {
      await edge2.stop();
    }
  });

  it('closes a tunnel whose link died, with no connection asking, and ends its open connections', async () => {
    const edge2 = await agentBehindLink();
    try {
      const open = await connectThrough(socketPath, `${EDGE2_ADDRESS}:10250`);
      expect(open.statusLine).toBe('HTTP/1.1 200 Connection established');
      const ended = new Promise<void>((resolve) => open.socket.once('close', () => resolve()));
      edge2.cut();
      // The sweep pings the quiet tunnel; unanswered, it is closed, and the relayed connection with it.
      await ended;
      const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      expect(metrics).not.toContain('node="edge-2"} ');
      expect((await connectThrough(socketPath, `${EDGE2_ADDRESS}:10250`)).statusLine).toBe(
        'HTTP/1.1 503 node edge-2 is offline: its node tunnel agent is not connected',
      );
    } finally {
      await edge2.stop();
    }
  });

  it("says so when the node's kubelet does not answer (this test stops it: keep it last)", async () => {
    await new Promise<void>((resolve) => kubelet.close(() => resolve()));
    const { statusLine } = await connectThrough(socketPath, `${EDGE1_ADDRESS}:10250`);
    expect(statusLine).toBe('HTTP/1.1 502 node edge-1 could not connect to its kubelet (502)');
  });
});
