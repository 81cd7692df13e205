/**
 * The tunnel's peers in bench/tunnel/run.ts, built from their own Go modules
 * by `test/real/build.sh remotedialer konnectivity chisel` (bench/peers/):
 *
 * - remotedialer (Rancher's tunnel library, under Rancher's cluster agents and
 *   k3s's agent tunnel): bench/peers/remotedialer's driver, over wss, the
 *   server dialling through the tunnel as the k3s server dials kubelets; and
 *   the same in Rancher's shape (`rancher-proxy`): the server terminates the
 *   user's TLS, checks a bearer token and proxies each request over TLS
 *   through the tunnel with its own credential and the user impersonated,
 *   which is the work edgeadm's hub does;
 * - Konnectivity (the Kubernetes apiserver-network-proxy): proxy-server in
 *   http-connect mode on a Unix socket, as a kube-apiserver's egress selector
 *   uses it, and proxy-agent dialling the server's agent port over mTLS gRPC;
 *   the client speaks HTTP CONNECT on the socket (as kube-apiserver does);
 * - chisel (a generic reverse tunnel: SSH inside a WebSocket), `chisel server
 *   --reverse` and `chisel client R:…`, its fingerprint pinned.
 *
 * Each carries the client's TLS to the same simulated API server, end to end,
 * as `ssh -R` does in run.ts. Each start returns the processes whose CPU is the
 * "middle" of the path (hub = the side the clients reach, agent = the edge side).
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import { join } from 'node:path';
import tls from 'node:tls';
import type { Duplex } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';

/** Where test/real/build.sh leaves the peers (EDGEADM_RIG_CACHE, as the build). */
const OUT = join(process.env.EDGEADM_RIG_CACHE ?? '/var/cache/edgeadm-rig', 'out');

/** A peer's version, as its build recorded it (versions.json), or undefined when it is not built. */
export function peerVersion(set: string): string | undefined {
  const file = join(OUT, set, 'versions.json');
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version : undefined;
}

/** A running peer tunnel: where clients connect, and the two processes in the middle. */
export interface PeerTunnel {
  name: string;
  version: string;
  /** Loopback TCP port that reaches the target through the tunnel; absent for Konnectivity (a socket). */
  forwardPort?: number;
  /** An HTTPS agent for clients of this peer (Konnectivity: HTTP CONNECT on its Unix socket first). */
  agent: (options: https.AgentOptions) => https.Agent;
  hubPid: number;
  agentPid: number;
  /** The CA and bearer token clients use, where the peer terminates TLS itself (else the API server's). */
  client?: { ca: string; token: string };
  stop: () => void;
}

function run(binary: string, args: string[], tag: string): { pid: number; output: () => string; kill: () => void } {
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let printed = '';
  let isStopping = false;
  child.stdout.on('data', (c: Buffer) => (printed += c.toString()));
  child.stderr.on('data', (c: Buffer) => (printed = (printed + c.toString()).slice(-20_000)));
  child.on('exit', (code, signal) => {
    if (!isStopping) process.stderr.write(`${tag} exited (${code ?? signal}): ${printed.slice(-2000)}\n`);
  });
  const kill = (): void => {
    isStopping = true;
    child.kill('SIGTERM');
  };
  process.once('exit', kill);
  return { pid: child.pid ?? 0, output: () => printed, kill };
}

async function until<T>(what: string, check: () => T | undefined | Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 300; i += 1) {
    const value = await Promise.resolve()
      .then(check)
      .catch(() => undefined);
    if (value !== undefined) return value;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}

const canConnect = (port: number): Promise<true | undefined> =>
  new Promise((resolve) => {
    const probe = net.connect(port, '127.0.0.1', () => (probe.destroy(), resolve(true)));
    probe.on('error', () => resolve(undefined));
  });

/** A free loopback port in 20000–40000 (Konnectivity refuses ephemeral ports above 49151). */
async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const isFree = await new Promise<boolean>((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (isFree) return port;
  }
}

/** A CA and, signed by it, a server certificate for 127.0.0.1 and a client certificate (openssl). */
export function makePki(dir: string): {
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
} {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const at = (name: string): string => join(dir, name);
  const openssl = (...args: string[]): void => void execFileSync('openssl', args, { stdio: 'ignore' });
  openssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', at('ca.key'));
  openssl(
    'req',
    '-x509',
    '-new',
    '-key',
    at('ca.key'),
    '-subj',
    '/CN=bench-peer-ca',
    '-days',
    '2',
    '-out',
    at('ca.crt'),
  );
  for (const [name, subject, ext] of [
    ['server', '/CN=127.0.0.1', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth'],
    ['client', '/CN=bench-agent', 'extendedKeyUsage=clientAuth'],
  ] as const) {
    writeFileSync(at(`${name}.ext`), `${ext}\n`);
    openssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', at(`${name}.key`));
    openssl('req', '-new', '-key', at(`${name}.key`), '-subj', subject, '-out', at(`${name}.csr`));
    openssl(
      'x509',
      '-req',
      '-in',
      at(`${name}.csr`),
      '-CA',
      at('ca.crt'),
      '-CAkey',
      at('ca.key'),
      '-CAcreateserial',
      '-days',
      '2',
      '-extfile',
      at(`${name}.ext`),
      '-out',
      at(`${name}.crt`),
    );
  }
  return {
    ca: at('ca.crt'),
    serverCert: at('server.crt'),
    serverKey: at('server.key'),
    clientCert: at('client.crt'),
    clientKey: at('client.key'),
  };
}

const plainAgent = (options: https.AgentOptions): https.Agent => new https.Agent(options);

/** The peers that are built, by name. */
export function builtPeers(): string[] {
  return ['remotedialer', 'rancher-proxy', 'konnectivity', 'chisel'].filter(
    (name) => peerVersion(name === 'rancher-proxy' ? 'remotedialer' : name) !== undefined,
  );
}

/** The API server behind the tunnels: its port, and for Rancher's shape its CA file and a bearer token. */
export interface Upstream {
  port: number;
  caFile: string;
  token: string;
}

export function startRemotedialer(scratch: string, upstream: Upstream): Promise<PeerTunnel> {
  return remotedialer(scratch, upstream, false);
}

export function startRancherProxy(scratch: string, upstream: Upstream): Promise<PeerTunnel> {
  return remotedialer(scratch, upstream, true);
}

async function remotedialer(scratch: string, upstream: Upstream, isRancherShape: boolean): Promise<PeerTunnel> {
  const targetPort = upstream.port;
  const pki = makePki(join(scratch, 'remotedialer-pki'));
  const userToken = isRancherShape ? randomBytes(24).toString('hex') : '';
  const binary = join(OUT, 'remotedialer', 'remotedialer-peer');
  const [tunnelPort, forwardPort] = [await freePort(), await freePort()];
  const server = run(
    binary,
    [
      'server',
      '--listen',
      `127.0.0.1:${tunnelPort}`,
      '--cert',
      pki.serverCert,
      '--key',
      pki.serverKey,
      '--forward',
      `127.0.0.1:${forwardPort}`,
      '--target',
      `127.0.0.1:${targetPort}`,
      ...(isRancherShape
        ? ['--user-token', userToken, '--upstream-token', upstream.token, '--upstream-ca', upstream.caFile]
        : []),
    ],
    'remotedialer server',
  );
  await until('the remotedialer server', () => canConnect(forwardPort));
  const client = run(
    binary,
    ['client', '--connect', `wss://127.0.0.1:${tunnelPort}/connect`, '--ca', pki.ca],
    'remotedialer client',
  );
  const tunnel: PeerTunnel = {
    name: isRancherShape ? 'rancher-proxy' : 'remotedialer',
    version: peerVersion('remotedialer') ?? '',
    forwardPort,
    agent: plainAgent,
    ...(isRancherShape ? { client: { ca: readFileSync(pki.ca, 'utf8'), token: userToken } } : {}),
    hubPid: server.pid,
    agentPid: client.pid,
    stop: () => (client.kill(), server.kill()),
  };
  await untilForwards(tunnel);
  return tunnel;
}

export async function startChisel(scratch: string, { port: targetPort }: Upstream): Promise<PeerTunnel> {
  const binary = join(OUT, 'chisel', 'chisel');
  const [serverPort, forwardPort] = [await freePort(), await freePort()];
  mkdirSync(scratch, { recursive: true });
  const keyFile = join(scratch, 'chisel.key');
  execFileSync(binary, ['server', '--keygen', keyFile], { stdio: 'ignore' });
  const server = run(
    binary,
    ['server', '--host', '127.0.0.1', '--port', String(serverPort), '--reverse', '--keyfile', keyFile],
    'chisel server',
  );
  const fingerprint = await until('the chisel server', () => /Fingerprint (\S+)/.exec(server.output())?.[1]);
  const client = run(
    binary,
    [
      'client',
      '--fingerprint',
      fingerprint,
      `http://127.0.0.1:${serverPort}`,
      `R:127.0.0.1:${forwardPort}:127.0.0.1:${targetPort}`,
    ],
    'chisel client',
  );
  const tunnel: PeerTunnel = {
    name: 'chisel',
    version: peerVersion('chisel') ?? '',
    forwardPort,
    agent: plainAgent,
    hubPid: server.pid,
    agentPid: client.pid,
    stop: () => (client.kill(), server.kill()),
  };
  await untilForwards(tunnel);
  return tunnel;
}

/**
 * An HTTPS agent whose every connection first asks the Konnectivity server, on
 * its Unix socket, for a tunnel to the target (HTTP CONNECT), then runs TLS over it.
 */
class ConnectAgent extends https.Agent {
  readonly #socketPath: string;
  readonly #target: string;

  constructor(socketPath: string, target: string, options: https.AgentOptions) {
    super(options);
    this.#socketPath = socketPath;
    this.#target = target;
  }

  override createConnection(
    options: https.RequestOptions,
    callback?: (error: Error | null, stream: Duplex) => void,
  ): undefined {
    const done = callback ?? ((): void => undefined);
    const raw = net.connect(this.#socketPath);
    const refuse = (error: Error): void => done(error, raw);
    raw.once('error', refuse);
    raw.once('connect', () => raw.write(`CONNECT ${this.#target} HTTP/1.1\r\nHost: ${this.#target}\r\n\r\n`));
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      raw.off('data', onData);
      const status = head.subarray(0, head.indexOf('\r\n')).toString();
      if (!/^HTTP\/1\.[01] 200/.test(status)) {
        raw.destroy();
        refuse(new Error(`Konnectivity refused the tunnel: ${status}`));
        return;
      }
      if (end + 4 < head.length) raw.unshift(head.subarray(end + 4));
      done(null, tls.connect({ ...(options as tls.ConnectionOptions), socket: raw }));
    };
    raw.on('data', onData);
    return undefined;
  }
}

export async function startKonnectivity(scratch: string, { port: targetPort }: Upstream): Promise<PeerTunnel> {
  const pki = makePki(join(scratch, 'konnectivity-pki'));
  const socketPath = join(scratch, 'konnectivity.sock');
  const [agentPort, adminPort, healthPort, agentAdmin, agentHealth] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const server = run(
    join(OUT, 'konnectivity', 'proxy-server'),
    [
      '--mode=http-connect',
      `--uds-name=${socketPath}`,
      '--delete-existing-uds-file',
      '--server-port=0',
      `--agent-port=${agentPort}`,
      '--agent-bind-address=127.0.0.1',
      `--admin-port=${adminPort}`,
      '--admin-bind-address=127.0.0.1',
      `--health-port=${healthPort}`,
      '--health-bind-address=127.0.0.1',
      `--cluster-cert=${pki.serverCert}`,
      `--cluster-key=${pki.serverKey}`,
      `--cluster-ca-cert=${pki.ca}`,
      '--server-count=1',
      '-v=0',
    ],
    'proxy-server',
  );
  await until('the Konnectivity server', () => canConnect(agentPort));
  const agent = run(
    join(OUT, 'konnectivity', 'proxy-agent'),
    [
      '--proxy-server-host=127.0.0.1',
      `--proxy-server-port=${agentPort}`,
      `--ca-cert=${pki.ca}`,
      `--agent-cert=${pki.clientCert}`,
      `--agent-key=${pki.clientKey}`,
      `--admin-server-port=${agentAdmin}`,
      `--health-server-port=${agentHealth}`,
      '--agent-id=bench',
      '-v=0',
    ],
    'proxy-agent',
  );
  const tunnel: PeerTunnel = {
    name: 'konnectivity',
    version: peerVersion('konnectivity') ?? '',
    agent: (options) => new ConnectAgent(socketPath, `127.0.0.1:${targetPort}`, options),
    hubPid: server.pid,
    agentPid: agent.pid,
    stop: () => (agent.kill(), server.kill()),
  };
  await untilForwards(tunnel);
  return tunnel;
}

/**
 * Waits until a request reaches the API server through the tunnel (the far side connected): any
 * answer over the API server's TLS, or, where the peer terminates TLS, the API server's 200.
 */
async function untilForwards(tunnel: PeerTunnel): Promise<void> {
  await until(`${tunnel.name} to carry a connection`, async () => {
    const agent = tunnel.agent({ rejectUnauthorized: false });
    try {
      return await new Promise<true | undefined>((resolve) => {
        const req = https.request(
          {
            host: '127.0.0.1',
            port: tunnel.forwardPort ?? 443,
            path: '/version',
            agent,
            rejectUnauthorized: false,
            timeout: 2000,
            ...(tunnel.client === undefined ? {} : { headers: { Authorization: `Bearer ${tunnel.client.token}` } }),
          },
          (res) => {
            res.resume();
            resolve(tunnel.client === undefined || res.statusCode === 200 ? true : undefined);
          },
        );
        req.on('error', () => resolve(undefined));
        req.on('timeout', () => (req.destroy(), resolve(undefined)));
        req.end();
      });
    } finally {
      agent.destroy();
    }
  });
}
