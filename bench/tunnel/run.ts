/**
 * Tunnel benchmarks, each case side by side in one run:
 *
 * (a) small GETs at 64 concurrent connections, through hub + tunnel and
 *     direct to the same edge API server: throughput ratio, p50 and p99;
 *     and, as the peer, through OpenSSH reverse forwarding (`ssh -R`, the
 *     edge side dialling out to a local sshd on loopback, which listens for
 *     the clients: the same shape as the tunnel) when sshd is there and
 *     this runs as root (`--ssh off` leaves it out); and the peers a platform
 *     team would choose, built from their own Go modules (bench/tunnel/peers.ts:
 *     remotedialer, the same in Rancher's shape, Konnectivity, chisel;
 *     `--peers` picks, default all built);
 * (b) one 1 GiB stream: a pod port-forward (the WebSocket channel protocol,
 *     `v4.channel.k8s.io`, as kubectl speaks it) whose pod port is a local
 *     TCP source that sends 1 GiB; through hub + tunnel against direct;
 * (c) head-of-line: one stream's reader stalls (a followed pod log that is
 *     never read, while the edge keeps writing to it) while another stream
 *     moves 100 MiB (a pod log read whole); the moving stream's throughput
 *     with the stall against alone, and against direct.
 *
 * The hub and the agent run as real `edgeadm` processes (bin/run.js); the
 * edge API server is the SIMULATED API server from test/support, in this
 * process with the client (so both paths share that cost alike).
 *
 *   test/real/build.sh remotedialer konnectivity chisel   # once: the peers
 *   npm run build && node bench/tunnel/run.ts [--cases a,b,c] [--requests 20000] [--concurrency 64] [--mib 100] [--bulk-mib 1024] [--ssh on|off] [--peers remotedialer,rancher-proxy,konnectivity,chisel|off] [--rounds 2] [--baseline GIT-REF|DIR] [--profile DIR] [--upstream-h2]
 *
 * `--baseline` adds a second hub and agent from another build (a git ref of
 * this repository, built in a scratch directory, or a built checkout; see
 * bench/support/baseline.js) as one more path of (a) and (b), in the same
 * interleaved rounds: before and after under the same machine load. The
 * CPU time per request or MiB of each process is the figure that does not
 * depend on that load; the load average is printed with the results.
 *
 * Node 24 runs this TypeScript directly; the hook below lets the sources
 * (the simulated server's, peers.ts) import each other as `./x.js`.
 */
import type { Agent as HttpsAgent, AgentOptions as HttpsAgentOptions } from 'node:https';
import { registerHooks } from 'node:module';
import type * as PeersModule from './peers.js';

const REPO = new URL('../../', import.meta.url).href;
registerHooks({
  resolve(specifier, context, nextResolve) {
    // The repository's sources import each other as `./x.js`; Node runs the `.ts` file.
    const isOurs = specifier.endsWith('.js') && specifier.startsWith('.') && (context.parentURL ?? '').startsWith(REPO);
    if (isOurs) {
      try {
        return nextResolve(specifier, context);
      } catch {
        return nextResolve(`${specifier.slice(0, -3)}.ts`, context);
      }
    }
    return nextResolve(specifier, context);
  },
});

const { execFileSync, spawn } = await import('node:child_process');
const { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } = await import('node:fs');
const https = await import('node:https');
const net = await import('node:net');
const { tmpdir } = await import('node:os');
const { join } = await import('node:path');
const { setTimeout: sleep } = await import('node:timers/promises');
const { fileURLToPath } = await import('node:url');
const { parseArgs } = await import('node:util');
const { loadavg } = await import('node:os');
const { startSimApiServer } = await import('../../test/support/sim-apiserver/index.js');
const { prepareBaseline } = await import('../support/baseline.js');
const { connectWebSocket } = await import('../../test/support/sim-apiserver/websocket-connection.js');
const peers = (await import('./peers.js')) as typeof PeersModule;

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '64' },
    mib: { type: 'string', default: '100' },
    'bulk-mib': { type: 'string', default: '1024' },
    cases: { type: 'string', default: 'a,b,c' },
    ssh: { type: 'string', default: 'on' },
    peers: { type: 'string' },
    /** The simulated API server also speaks HTTP/2 (as kube-apiserver does): an agent that offers h2 uses it. Case (a) only. */
    'upstream-h2': { type: 'boolean' },
    rounds: { type: 'string', default: '2' },
    baseline: { type: 'string' },
    /** Write the hub's and the agent's CPU profiles (node --cpu-prof) into this directory. */
    profile: { type: 'string' },
    json: { type: 'boolean' },
  },
});
const REQUESTS = Number(values.requests);
const CONCURRENCY = Number(values.concurrency);
const MOVING_MIB = Number(values.mib);
const BULK_BYTES = Number(values['bulk-mib']) * 1024 * 1024;
const CASES = new Set(values.cases.split(','));
const ROUNDS = Number(values.rounds);
const baselineBuild = values.baseline === undefined ? undefined : prepareBaseline(values.baseline);
/** The load average (1, 5, 15 minutes), as `uptime` prints it. */
const loadAverage = (): string =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
const loadAtStart = loadAverage();
/** Bytes written into the stalled stream while the other one moves. */
const STALLED_MIB = 32;
/** Log line size: the simulated server keeps 10,000 lines per log, so 100 MiB needs long lines. */
const LINE_BYTES = 12 * 1024;
const LINE_TEXT = 'x'.repeat(LINE_BYTES - 1);
const linesFor = (mib: number): number => Math.ceil((mib * 1024 * 1024) / LINE_BYTES);
const root = fileURLToPath(new URL('../..', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'edgeadm-bench-tunnel-'));

interface Child {
  pid: number;
  output: () => string;
  kill: () => void;
}

function startEdgeadm(runJs: string, tag: string, args: string[]): Child {
  const profile =
    values.profile === undefined
      ? []
      : ['--cpu-prof', `--cpu-prof-dir=${values.profile}`, `--cpu-prof-name=${tag}-${args[0]}.cpuprofile`];
  const child = spawn(process.execPath, [...profile, runJs, ...args], {
    env: { ...process.env, EDGEADM_HOME: join(scratch, `home-${tag}-${args[0]}`), NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let printed = '';
  child.stdout.on('data', (chunk: Buffer) => (printed += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (printed += chunk.toString()));
  // Never leave a hub or agent behind, also when the benchmark fails.
  process.once('exit', () => child.kill('SIGTERM'));
  return { pid: child.pid ?? 0, output: () => printed, kill: () => child.kill('SIGTERM') };
}

async function until<T>(what: string, check: () => T | undefined | Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 600; i += 1) {
    let value: T | undefined;
    try {
      value = await check();
    } catch {
      value = undefined;
    }
    if (value !== undefined) return value;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}

function call(options: {
  url: string;
  ca: string;
  token: string;
  method?: string;
  body?: unknown;
  agent?: HttpsAgent;
}): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
    const req = https.request(
      options.url,
      {
        method: options.method ?? 'GET',
        ca: options.ca,
        agent: options.agent ?? false,
        headers: {
          Authorization: `Bearer ${options.token}`,
          ...(payload ? { 'Content-Type': 'application/json' } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

// --- set up: edge API server, hub, agent, a user ------------------------------------------
const sim = await startSimApiServer({ gitVersion: 'v1.30.4+sim', http2: values['upstream-h2'] === true });
if (values['upstream-h2'] === true && values.cases !== 'a')
  throw new Error('--upstream-h2 measures case (a) only: --cases a');
const kubeconfig = join(scratch, 'edge.kubeconfig');
writeFileSync(kubeconfig, sim.kubeconfig(), { mode: 0o600 });
/** A hub and a connected agent of one build, and a user who may reach the edge cluster. */
interface TunnelPair {
  hub: Child;
  agent: Child;
  hubUrl: string;
  hubCa: string;
  userToken: string;
}

async function startTunnelPair(runJs: string, tag: string): Promise<TunnelPair> {
  const hubDir = join(scratch, `hub-${tag}`);
  const hub = startEdgeadm(runJs, tag, ['hub', 'serve', '--listen', '127.0.0.1:0', '--data-dir', hubDir]);
  const hubUrl = await until('the hub', () => /hub listening on (\S+)/.exec(hub.output())?.[1]);
  const pin = /hub CA pin: (\S+)/.exec(hub.output())?.[1] ?? '';
  const hubCa = readFileSync(join(hubDir, 'pki', 'ca.crt'), 'utf8');
  const adminToken = /^token: (\S+)$/m.exec(readFileSync(join(hubDir, 'admin.yaml'), 'utf8'))?.[1] ?? '';
  const hubToken = JSON.parse(
    (
      await call({
        url: `${hubUrl}/hub/v1/tokens`,
        ca: hubCa,
        token: adminToken,
        method: 'POST',
        body: { ttlMs: 600_000 },
      })
    ).body.toString(),
  ).token as string;
  const user = JSON.parse(
    (
      await call({
        url: `${hubUrl}/hub/v1/users`,
        ca: hubCa,
        token: adminToken,
        method: 'POST',
        body: { name: 'bench', clustersSelector: '', groups: ['system:masters'] },
      })
    ).body.toString(),
  ) as { token: string };
  const agent = startEdgeadm(runJs, tag, [
    'register-cloud',
    new URL(hubUrl).host,
    '--token',
    hubToken,
    '--hub-ca-cert-hash',
    pin,
    '--name',
    'bench',
    '--kubeconfig',
    kubeconfig,
    '--data-dir',
    join(scratch, `agent-${tag}`),
    '--foreground',
  ]);
  await until('the agent to connect', async () => {
    const answer = await call({ url: `${hubUrl}/hub/v1/clusters/bench`, ca: hubCa, token: adminToken });
    return answer.status === 200 && JSON.parse(answer.body.toString()).state === 'Connected' ? true : undefined;
  });
  return { hub, agent, hubUrl, hubCa, userToken: user.token };
}

const current = await startTunnelPair(join(root, 'bin/run.js'), 'current');
const { hub, agent, hubUrl, hubCa } = current;
const user = { token: current.userToken };
const base = baselineBuild === undefined ? undefined : await startTunnelPair(baselineBuild.runJs, 'baseline');

// --- the peer: OpenSSH reverse forwarding --------------------------------------------------
const SSHD = '/usr/sbin/sshd';
const isSshWanted = values.ssh !== 'off' && existsSync(SSHD) && process.getuid?.() === 0;

/** A free loopback port. */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * A private sshd on loopback (its own host key, one authorized key, no PAM)
 * and `ssh -N -R` from the "edge" to it: the sshd side listens on
 * `forwardPort` and sends each connection back over the SSH connection to
 * the simulated API server. TLS stays end to end (client to API server).
 */
async function startSshReverse(
  targetPort: number,
): Promise<{ sshdPid: number; sshPid: number; forwardPort: number; stop: () => void }> {
  const dir = join(scratch, 'ssh');
  mkdirSync(dir, { mode: 0o700 });
  mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  for (const name of ['host_key', 'client_key']) {
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, name)]);
  }
  writeFileSync(join(dir, 'authorized_keys'), readFileSync(join(dir, 'client_key.pub')), { mode: 0o600 });
  const sshdPort = await freePort();
  const forwardPort = await freePort();
  writeFileSync(
    join(dir, 'known_hosts'),
    `[127.0.0.1]:${sshdPort} ${readFileSync(join(dir, 'host_key.pub'), 'utf8').split(' ').slice(0, 2).join(' ')}\n`,
  );
  writeFileSync(
    join(dir, 'sshd_config'),
    [
      `Port ${sshdPort}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${join(dir, 'host_key')}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'UsePAM no',
      'PermitRootLogin prohibit-password',
      'AllowTcpForwarding remote',
      'StrictModes no',
      'LogLevel ERROR',
      '',
    ].join('\n'),
  );
  const sshd = spawn(SSHD, ['-D', '-e', '-f', join(dir, 'sshd_config')], { stdio: ['ignore', 'ignore', 'pipe'] });
  process.once('exit', () => sshd.kill('SIGTERM'));
  await until(
    'sshd to listen',
    () =>
      new Promise<true | undefined>((resolve) => {
        const probe = net.connect(sshdPort, '127.0.0.1', () => (probe.destroy(), resolve(true)));
        probe.on('error', () => resolve(undefined));
      }),
  );
  const ssh = spawn(
    'ssh',
    [
      '-N',
      '-o',
      'BatchMode=yes',
      '-o',
      'StrictHostKeyChecking=yes',
      '-o',
      `UserKnownHostsFile=${join(dir, 'known_hosts')}`,
      '-o',
      'ExitOnForwardFailure=yes',
      '-i',
      join(dir, 'client_key'),
      '-p',
      String(sshdPort),
      '-R',
      `127.0.0.1:${forwardPort}:127.0.0.1:${targetPort}`,
      'root@127.0.0.1',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  process.once('exit', () => ssh.kill('SIGTERM'));
  await until(
    'ssh -R to forward',
    () =>
      new Promise<true | undefined>((resolve) => {
        const probe = net.connect(forwardPort, '127.0.0.1', () => (probe.destroy(), resolve(true)));
        probe.on('error', () => resolve(undefined));
      }),
  );
  return {
    sshdPid: sshd.pid ?? 0,
    sshPid: ssh.pid ?? 0,
    forwardPort,
    stop: () => {
      ssh.kill('SIGTERM');
      sshd.kill('SIGTERM');
    },
  };
}

const sshReverse = isSshWanted ? await startSshReverse(Number(new URL(sim.url).port)) : undefined;

// --- the peers built from their Go modules ------------------------------------------------
const wantedPeers = values.peers === 'off' ? [] : (values.peers?.split(',') ?? peers.builtPeers());
const simCaFile = join(scratch, 'sim-ca.crt');
writeFileSync(simCaFile, sim.caPem);
const upstream = { port: Number(new URL(sim.url).port), caFile: simCaFile, token: sim.adminToken };
const starters: Record<string, (dir: string, upstream: PeersModule.Upstream) => Promise<PeersModule.PeerTunnel>> = {
  remotedialer: peers.startRemotedialer,
  'rancher-proxy': peers.startRancherProxy,
  konnectivity: peers.startKonnectivity,
  chisel: peers.startChisel,
};
const peerTunnels: PeersModule.PeerTunnel[] = [];
for (const name of wantedPeers) {
  const start = starters[name];
  if (start === undefined || peers.peerVersion(name === 'rancher-proxy' ? 'remotedialer' : name) === undefined) {
    throw new Error(`peer ${name}: not built (test/real/build.sh ${name}); known: ${Object.keys(starters).join(', ')}`);
  }
  peerTunnels.push(await start(join(scratch, name), upstream));
}

interface Path {
  base: string;
  ca: string;
  token: string;
  /** The client's HTTPS agent (a peer's CONNECT agent); a plain one when absent. */
  agent?: (options: HttpsAgentOptions) => HttpsAgent;
}
const paths: Record<string, Path> = {
  direct: { base: sim.url, ca: sim.caPem, token: sim.adminToken },
  tunnel: { base: `${hubUrl}/clusters/bench`, ca: hubCa, token: user.token },
  ssh: { base: `https://127.0.0.1:${sshReverse?.forwardPort ?? 0}`, ca: sim.caPem, token: sim.adminToken },
  baseline: { base: `${base?.hubUrl ?? ''}/clusters/bench`, ca: base?.hubCa ?? '', token: base?.userToken ?? '' },
  ...Object.fromEntries(
    peerTunnels.map((peer) => [
      peer.name,
      {
        // Konnectivity has no port of its own: its agent asks for the API server's address on the socket.
        base: peer.forwardPort === undefined ? sim.url : `https://127.0.0.1:${peer.forwardPort}`,
        ca: peer.client?.ca ?? sim.caPem,
        token: peer.client?.token ?? sim.adminToken,
        agent: peer.agent,
      },
    ]),
  ),
};
type PathName = string;
/** The paths case (a) compares. */
const SMALL_GET_PATHS: PathName[] = [
  'direct',
  'tunnel',
  ...(base === undefined ? [] : ['baseline']),
  ...(sshReverse === undefined ? [] : ['ssh']),
  ...peerTunnels.map((peer) => peer.name),
];
const pathOf = (name: PathName): Path => paths[name] as Path;

// --- (a) small GETs ------------------------------------------------------------------------
interface Latency {
  rps: number;
  p50: number;
  p99: number;
}

/** CPU time (user + system) a process has used so far, in ms (Linux /proc; clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** CPU time of a process and all its descendants (sshd forks per connection), in ms. */
function treeCpuMs(pid: number): number {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const ppid = Number(readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  let total = 0;
  const queue = [pid];
  while (queue.length > 0) {
    const next = queue.pop() as number;
    try {
      total += cpuMs(next);
    } catch {
      // gone meanwhile
    }
    queue.push(...(children.get(next) ?? []));
  }
  return total;
}

/** CPU of the middle of a path: the hub and agent processes, or for `ssh -R` the sshd (with its children) and ssh. */
function middleCpuMs(name: PathName): { hub: number; agent: number } {
  if (name === 'ssh' && sshReverse !== undefined) {
    return { hub: treeCpuMs(sshReverse.sshdPid), agent: cpuMs(sshReverse.sshPid) };
  }
  if (name === 'baseline' && base !== undefined) return { hub: cpuMs(base.hub.pid), agent: cpuMs(base.agent.pid) };
  if (name === 'direct') return { hub: 0, agent: 0 };
  const peer = peerTunnels.find((p) => p.name === name);
  if (peer !== undefined) return { hub: cpuMs(peer.hubPid), agent: cpuMs(peer.agentPid) };
  return { hub: cpuMs(hub.pid), agent: cpuMs(agent.pid) };
}

/** CPU per request of each process, in µs, accumulated over the measured rounds. */
const cpuPerRequest: Record<PathName, { requests: number; bench: number; hub: number; agent: number }> =
  Object.fromEntries(Object.keys(paths).map((n) => [n, { requests: 0, bench: 0, hub: 0, agent: 0 }]));

async function smallGets(name: PathName, requests: number, isMeasured = false): Promise<Latency> {
  const cpuBefore = { bench: cpuMs(process.pid), ...middleCpuMs(name) };
  const target = pathOf(name);
  const agentOptions = { keepAlive: true, maxSockets: CONCURRENCY, ca: target.ca };
  const agentPool = target.agent?.(agentOptions) ?? new https.Agent(agentOptions);
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < requests) {
        next += 1;
        const t0 = performance.now();
        const answer = await call({
          url: `${target.base}/api/v1/namespaces/default`,
          ca: target.ca,
          token: target.token,
          agent: agentPool,
        });
        if (answer.status !== 200) throw new Error(`${name}: HTTP ${answer.status}: ${answer.body.toString()}`);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  agentPool.destroy();
  if (isMeasured) {
    const cpu = cpuPerRequest[name] as { requests: number; bench: number; hub: number; agent: number };
    cpu.requests += requests;
    const middle = middleCpuMs(name);
    cpu.bench += cpuMs(process.pid) - cpuBefore.bench;
    cpu.hub += middle.hub - cpuBefore.hub;
    cpu.agent += middle.agent - cpuBefore.agent;
  }
  latencies.sort((a, b) => a - b);
  const at = (q: number): number => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  return { rps: latencies.length / seconds, p50: at(0.5), p99: at(0.99) };
}

const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

async function caseSmallGets(): Promise<Record<string, unknown>> {
  for (const name of SMALL_GET_PATHS) await smallGets(name, 1000);
  const rounds: Record<PathName, Latency[]> = Object.fromEntries(SMALL_GET_PATHS.map((n) => [n, []]));
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const name of SMALL_GET_PATHS) rounds[name]?.push(await smallGets(name, Math.round(REQUESTS / ROUNDS), true));
  }
  const small = Object.fromEntries(
    SMALL_GET_PATHS.map((n) => {
      const of = rounds[n] ?? [];
      return [n, { rps: mean(of.map((r) => r.rps)), p50: mean(of.map((r) => r.p50)), p99: mean(of.map((r) => r.p99)) }];
    }),
  ) as Record<PathName, Latency> & Record<'direct' | 'tunnel', Latency>;
  return {
    requests: REQUESTS,
    concurrency: CONCURRENCY,
    rounds: ROUNDS,
    load: { atStart: loadAtStart, atEnd: loadAverage() },
    direct: small.direct,
    tunnel: small.tunnel,
    ...(small.baseline === undefined
      ? {}
      : {
          baseline: small.baseline,
          baselineLabel: baselineBuild?.label,
          baselineRatio: small.baseline.rps / small.direct.rps,
        }),
    throughputRatio: small.tunnel.rps / small.direct.rps,
    p99DeltaMs: small.tunnel.p99 - small.direct.p99,
    ...(small.ssh === undefined
      ? {}
      : {
          sshReverse: small.ssh,
          sshThroughputRatio: small.ssh.rps / small.direct.rps,
          sshP99DeltaMs: small.ssh.p99 - small.direct.p99,
        }),
    peers: Object.fromEntries(
      peerTunnels.map((peer) => {
        const of = small[peer.name] as Latency;
        return [
          peer.name,
          {
            version: peer.version,
            ...of,
            throughputRatio: of.rps / small.direct.rps,
            p99DeltaMs: of.p99 - small.direct.p99,
          },
        ];
      }),
    ),
    cpuMicrosPerRequest: Object.fromEntries(
      SMALL_GET_PATHS.map((n) => {
        const c = cpuPerRequest[n] as { requests: number; bench: number; hub: number; agent: number };
        const per = (ms: number): number => Math.round((ms * 1000) / c.requests);
        return [n, { bench: per(c.bench), hub: per(c.hub), agent: per(c.agent) }];
      }),
    ),
  };
}

// --- (b) one 1 GiB stream ------------------------------------------------------------------
/** Size of the source's writes into the forwarded connection. */
const BULK_WRITE_BYTES = 256 * 1024;

/** The pod port's far end: every connection gets BULK_BYTES, written with backpressure, then FIN. */
async function startBulkSource(): Promise<{ port: number; close: () => void }> {
  const block = Buffer.alloc(BULK_WRITE_BYTES, 'edgeadm ');
  const server = net.createServer((socket) => {
    socket.on('error', () => socket.destroy());
    let left = BULK_BYTES;
    const write = (): void => {
      while (left > 0) {
        const size = Math.min(left, block.length);
        left -= size;
        if (!socket.write(size === block.length ? block : block.subarray(0, size))) {
          socket.once('drain', write);
          return;
        }
      }
      socket.end();
    };
    write();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, close: () => server.close() };
}

/** Reads the whole forwarded stream (data channel 0, after its 2-byte port prefix); MiB/s. */
async function bulkStream(name: PathName): Promise<number> {
  const target = pathOf(name);
  const started = performance.now();
  const socket = await connectWebSocket({
    ...(target.agent === undefined ? {} : { agent: target.agent({ ca: target.ca }) }),
    url: `${target.base}/api/v1/namespaces/default/pods/bulk/portforward?ports=80`,
    protocols: ['v4.channel.k8s.io'],
    headers: { Authorization: `Bearer ${target.token}` },
    ca: target.ca,
  });
  let received = 0;
  let isPrefixSeen = false;
  await new Promise<void>((resolve, reject) => {
    socket.on('message', (data: Buffer) => {
      if (data[0] === 1 && data.length > 3) reject(new Error(`${name}: ${data.subarray(1).toString()}`));
      if (data[0] !== 0) return;
      if (!isPrefixSeen) {
        isPrefixSeen = true;
        return;
      }
      received += data.length - 1;
    });
    socket.on('close', () => resolve());
  });
  if (received !== BULK_BYTES) throw new Error(`${name}: ${received} of ${BULK_BYTES} bytes arrived`);
  return BULK_BYTES / (1024 * 1024) / ((performance.now() - started) / 1000);
}

async function caseBulk(): Promise<Record<string, unknown>> {
  const source = await startBulkSource();
  sim.setObject({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'bulk', namespace: 'default' },
    spec: { containers: [{ name: 'c', image: 'x' }] },
  });
  sim.setPortForward('default', 'bulk', 80, { host: '127.0.0.1', port: source.port });
  // The same paths as (a): OpenSSH's `ssh -R` carries the same stream (TLS to the API server inside
  // the SSH channel), so its sshd + ssh CPU per MiB is the peer figure for the per-MiB goal.
  const names: PathName[] = SMALL_GET_PATHS;
  const rounds: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const cpu: Record<string, { bench: number; hub: number; agent: number }> = Object.fromEntries(
    names.map((n) => [n, { bench: 0, hub: 0, agent: 0 }]),
  );
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const name of names) {
      const before = { bench: cpuMs(process.pid), ...middleCpuMs(name) };
      rounds[name]?.push(await bulkStream(name));
      const after = middleCpuMs(name);
      const c = cpu[name] as { bench: number; hub: number; agent: number };
      c.bench += cpuMs(process.pid) - before.bench;
      c.hub += after.hub - before.hub;
      c.agent += after.agent - before.agent;
    }
  }
  source.close();
  const mib = (ROUNDS * BULK_BYTES) / (1024 * 1024);
  const perMiB = (c: { bench: number; hub: number; agent: number }): Record<string, number> => ({
    bench: Number((c.bench / mib).toFixed(2)),
    hub: Number((c.hub / mib).toFixed(2)),
    agent: Number((c.agent / mib).toFixed(2)),
  });
  const mibps = (name: string): number => mean(rounds[name] ?? []);
  return {
    mib: BULK_BYTES / (1024 * 1024),
    load: { atEnd: loadAverage() },
    directMiBps: mibps('direct'),
    tunnelMiBps: mibps('tunnel'),
    ...(base === undefined
      ? {}
      : { baselineMiBps: mibps('baseline'), baselineRatio: mibps('baseline') / mibps('direct') }),
    ...(sshReverse === undefined ? {} : { sshMiBps: mibps('ssh'), sshRatio: mibps('ssh') / mibps('direct') }),
    peers: Object.fromEntries(
      peerTunnels.map((peer) => [peer.name, { MiBps: mibps(peer.name), ratio: mibps(peer.name) / mibps('direct') }]),
    ),
    rounds,
    throughputRatio: mibps('tunnel') / mibps('direct'),
    cpuMsPerMiB: Object.fromEntries(
      names.map((n) => [n, perMiB(cpu[n] as { bench: number; hub: number; agent: number })]),
    ),
  };
}

// --- (c) head-of-line ----------------------------------------------------------------------
async function moveLog(name: PathName): Promise<number> {
  const target = pathOf(name);
  const started = performance.now();
  const answer = await call({
    url: `${target.base}/api/v1/namespaces/default/pods/moving/log`,
    ca: target.ca,
    token: target.token,
  });
  if (answer.status !== 200 || answer.body.length < MOVING_MIB * 1024 * 1024)
    throw new Error(`moving log: HTTP ${answer.status}, ${answer.body.length} bytes`);
  return answer.body.length / (1024 * 1024) / ((performance.now() - started) / 1000);
}

async function caseHeadOfLine(): Promise<Record<string, unknown>> {
  for (const pod of ['moving', 'stalled']) {
    sim.setObject({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: pod, namespace: 'default' },
      spec: { containers: [{ name: 'c', image: 'x' }] },
    });
  }
  for (let i = 0; i < linesFor(MOVING_MIB); i += 1) sim.appendPodLog('default', 'moving', LINE_TEXT);
  const alone = [await moveLog('tunnel'), await moveLog('tunnel')];
  const direct = [await moveLog('direct'), await moveLog('direct')];
  // The stalled stream: followed, never read, while the edge writes STALLED_MIB into it.
  const stalledReq = https.request(`${pathOf('tunnel').base}/api/v1/namespaces/default/pods/stalled/log?follow=true`, {
    ca: hubCa,
    agent: false,
    headers: { Authorization: `Bearer ${user.token}` },
  });
  let stalledHeld = 0;
  stalledReq.on('response', (res) => {
    res.pause();
    stalledHeld = 1;
  });
  stalledReq.end();
  await until('the stalled stream to open', () => (stalledHeld === 1 ? true : undefined));
  for (let i = 0; i < linesFor(STALLED_MIB); i += 1) sim.appendPodLog('default', 'stalled', LINE_TEXT);
  await sleep(1000);
  const withStall = [await moveLog('tunnel'), await moveLog('tunnel')];
  stalledReq.destroy();
  return {
    movingMiB: MOVING_MIB,
    stalledMiBWritten: STALLED_MIB,
    directMiBps: mean(direct),
    tunnelAloneMiBps: mean(alone),
    tunnelWithStallMiBps: mean(withStall),
    keptFraction: mean(withStall) / mean(alone),
    tunnelVsDirect: mean(alone) / mean(direct),
  };
}

const results: Record<string, Record<string, unknown>> = {};
if (CASES.has('a')) results.smallGets = await caseSmallGets();
if (CASES.has('b')) results.bulk = await caseBulk();
if (CASES.has('c')) results.headOfLine = await caseHeadOfLine();

const f = (x: unknown, d = 2): string => (x as number).toFixed(d);
if (values.json) process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
else {
  const lines: string[] = [];
  const s = results.smallGets as
    | (Record<string, number> &
        Record<'direct' | 'tunnel', Latency> & {
          sshReverse?: Latency;
          baseline?: Latency;
          baselineLabel?: string;
          load: { atStart: string; atEnd: string };
        })
    | undefined;
  if (s) {
    lines.push(
      `(a) small GETs, ${s.requests} requests, ${s.concurrency} connections, ${s.rounds} interleaved rounds; load average ${s.load.atStart} at the start, ${s.load.atEnd} at the end`,
      `    direct: ${f(s.direct.rps, 0)} req/s  p50 ${f(s.direct.p50)} ms  p99 ${f(s.direct.p99)} ms`,
      `    tunnel: ${f(s.tunnel.rps, 0)} req/s  p50 ${f(s.tunnel.p50)} ms  p99 ${f(s.tunnel.p99)} ms`,
      `    ratio ${f(s.throughputRatio)}; p99 delta ${f(s.p99DeltaMs)} ms`,
      ...(s.baseline === undefined
        ? []
        : [
            `    baseline ${s.baselineLabel}: ${f(s.baseline.rps, 0)} req/s  p50 ${f(s.baseline.p50)} ms  p99 ${f(s.baseline.p99)} ms; ratio ${f(s.baselineRatio)}`,
          ]),
      ...(s.sshReverse === undefined
        ? ['    ssh -R: not run (needs root and /usr/sbin/sshd; --ssh off)']
        : [
            `    ssh -R: ${f(s.sshReverse.rps, 0)} req/s  p50 ${f(s.sshReverse.p50)} ms  p99 ${f(s.sshReverse.p99)} ms; ratio ${f(s.sshThroughputRatio)}; p99 delta ${f(s.sshP99DeltaMs)} ms`,
          ]),
      ...Object.entries(
        s.peers as unknown as Record<
          string,
          Latency & { version: string; throughputRatio: number; p99DeltaMs: number }
        >,
      ).map(
        ([name, p]) =>
          `    ${name} ${p.version}: ${f(p.rps, 0)} req/s  p50 ${f(p.p50)} ms  p99 ${f(p.p99)} ms; ratio ${f(p.throughputRatio)}; p99 delta ${f(p.p99DeltaMs)} ms`,
      ),
      `    CPU µs per request (bench = client + simulated API server; hub/agent = sshd/ssh for ssh -R, server/agent of a peer): ${JSON.stringify(s.cpuMicrosPerRequest)}`,
    );
  }
  const b = results.bulk;
  if (b) {
    lines.push(
      `(b) one ${f(b.mib, 0)} MiB port-forward stream (WebSocket v4.channel.k8s.io)`,
      `    direct ${f(b.directMiBps, 0)} MiB/s; tunnel ${f(b.tunnelMiBps, 0)} MiB/s; ratio ${f(b.throughputRatio)}` +
        (b.baselineMiBps === undefined
          ? ''
          : `; baseline ${f(b.baselineMiBps, 0)} MiB/s, ratio ${f(b.baselineRatio)}`) +
        (b.sshMiBps === undefined ? '' : `; ssh -R ${f(b.sshMiBps, 0)} MiB/s, ratio ${f(b.sshRatio)}`) +
        Object.entries(b.peers as Record<string, { MiBps: number; ratio: number }>)
          .map(([name, p]) => `; ${name} ${f(p.MiBps, 0)} MiB/s, ratio ${f(p.ratio)}`)
          .join('') +
        `; load average at the end ${(b.load as { atEnd: string }).atEnd}`,
      `    CPU ms per MiB (bench = client + simulated API server + the source; hub/agent = sshd/ssh for ssh -R): ${JSON.stringify(b.cpuMsPerMiB)}`,
    );
  }
  const h = results.headOfLine;
  if (h) {
    lines.push(
      `(c) head-of-line: ${MOVING_MIB} MiB moving while another stream is stalled (${STALLED_MIB} MiB written into it)`,
      `    direct ${f(h.directMiBps, 0)} MiB/s; tunnel alone ${f(h.tunnelAloneMiBps, 0)} MiB/s; tunnel with stall ${f(h.tunnelWithStallMiBps, 0)} MiB/s`,
      `    kept ${f(h.keptFraction)} of its throughput; tunnel/direct ${f(h.tunnelVsDirect)}`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}
agent.kill();
hub.kill();
base?.agent.kill();
base?.hub.kill();
sshReverse?.stop();
for (const peer of peerTunnels) peer.stop();
await sleep(500);
// The simulated server waits for its open connections to close; a forwarder's leftover connection
// (sshd's session child holds ssh -R's) would hold the run for minutes after its results.
await Promise.race([sim.stop(), sleep(5000)]);
process.exit(0);
