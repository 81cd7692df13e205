/**
 * One process of SIMULATED agents for the scale benchmark (`scale.ts`
 * forks a few of these). Each simulated agent is a cluster registered with
 * the hub: the first of each process through edgeadm's whole
 * `registerCluster` flow (discovery by token and pin, key, CSR, the hub's
 * signature); the others reuse what that discovery established (the hub's
 * address and pinned CA) and make their own key and CSR with edgeadm's
 * `createCsr` and POST it to the hub's registration endpoint, a few at a
 * time over kept-alive connections. Each is then connected by
 * edgeadm's real `runTunnelAgent` (TLS with that certificate, the reversed
 * HTTP/2 session, hello and welcome, keepalive pings, jittered backoff).
 * What is simulated: many agents share one process, and their upstream is
 * the SIMULATED API server from test/support (one per process, shared by
 * its agents through one `Upstream`), not a real edge cluster.
 *
 * Driven by IPC messages from scale.ts:
 *   { type: 'register', ... }  register (or, with existing state, reuse) this process's clusters
 *   { type: 'stop-registering' } finish the registrations under way, register no more
 *   { type: 'connect', below, intervalMs, rollouts?, hubs? }  start the agents below index `below`, one per interval;
 *                              with `hubs` (every replica's `https://host:port`), each agent is given all of them
 *   { type: 'where', since? }  which replica each agent's tunnel is up on, and since when (replicas.ts)
 *   { type: 'disconnect' | 'reconnect', indexes }  stop / start again these agents (rollout offline runs)
 *   { type: 'times' | 'reset-times' }  each cluster's copy-received, applied and ready times (rollout mode)
 *   { type: 'stop' }           drain every agent and exit
 */
import { existsSync, writeFileSync } from 'node:fs';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import type * as AgentCertificateModule from '../../src/hub/contract/agent-certificate.js';
import type * as PkiModule from '../../src/trust/pki.js';
import type * as AgentStateModule from '../../src/registration/agent-state.js';
import type * as AgentModule from '../../src/tunnel/agent-loop.js';
import type * as RegistrationModule from '../../src/registration/registration.js';
import type * as UpstreamModule from '../../src/tunnel/upstream.js';
import type * as CopyAgentModule from '../../src/rollout/copy-agent.js';
import type * as MiniApiModule from '../rollout/mini-apiserver.ts';

// The simulated API server's modules import each other as `./x.js`: the repository's hook maps those to `.ts`.
await import(new URL('../support/register-ts.js', import.meta.url).href);
const { startSimApiServer } = await import('../../test/support/sim-apiserver/index.js');
/** A module of the built CLI (lib/, what `bin/run.js` runs), typed by its source. */
const built = (path: string): Promise<unknown> => import(new URL(`../../lib/${path}`, import.meta.url).href);
const { runTunnelAgent } = (await built('tunnel/agent-loop.js')) as typeof AgentModule;
const { Upstream, readUpstreamKubeconfig } = (await built('tunnel/upstream.js')) as typeof UpstreamModule;
const { registerCluster } = (await built('registration/registration.js')) as typeof RegistrationModule;
const { readAgentState, writeAgentState } = (await built('registration/agent-state.js')) as typeof AgentStateModule;
const { createCsr } = (await built('trust/pki.js')) as typeof PkiModule;
const { AGENT_CERT_ORGANIZATION } = (await built('hub/contract/agent-certificate.js')) as typeof AgentCertificateModule;
const { CopyAgent } = (await built('rollout/copy-agent.js')) as typeof CopyAgentModule;
const { startMiniApiServer } = (await import(
  new URL('../rollout/mini-apiserver.ts', import.meta.url).href
)) as typeof MiniApiModule;

/** What scale.ts asks of this process. */
interface RegisterMessage {
  type: 'register';
  /** This process's clusters: indexes `first`, `first + stride`, … below `count`. */
  first: number;
  stride: number;
  count: number;
  /** `host:port` of the hub. */
  hub: string;
  token: string;
  pin: string;
  stateDir: string;
  concurrency: number;
}
/**
 * Rollout mode (bench/rollout): each agent also runs edgeadm's real rollout
 * agent (CopyAgent) on its tunnel, and each cluster's upstream is its own
 * part of a SMALL simulated API server (bench/rollout/mini-apiserver.ts,
 * one per process), reached with the cluster's name as its bearer token.
 */
interface RolloutMode {
  readyAfterMs: number;
  /** The rollout agents' read-back interval of a ready copy (the product's 30 s when absent). */
  pollReadyMs?: number;
}
type Message =
  | RegisterMessage
  | { type: 'stop-registering' }
  | { type: 'connect'; below: number; intervalMs: number; rollouts?: RolloutMode; hubs?: string[] }
  | { type: 'where'; since?: number }
  | { type: 'disconnect'; indexes: number[] }
  | { type: 'reconnect'; indexes: number[] }
  | { type: 'times' }
  | { type: 'reset-times' }
  | { type: 'stop' };

/** Counts of what the agents' loggers said, by kind (never the messages: they could name hosts). */
const said: Record<string, number> = {};
const count = (key: string): void => void (said[key] = (said[key] ?? 0) + 1);
const logger = {
  debug: () => {},
  info: (message: string) => {
    if (message.startsWith('tunnel to')) count('up');
  },
  warn: (message: string) =>
    count(/^(E_[A-Z_]+)/.exec(message)?.[1] ?? (message.includes('closed') ? 'closed' : 'warn')),
  error: () => count('error'),
};

const send = (message: Record<string, unknown>): void => void process.send?.(message);
const sim = await startSimApiServer({ gitVersion: 'v1.30.4+sim' });
let range: RegisterMessage | undefined;
let upstream: InstanceType<typeof Upstream> | undefined;
const identities: { index: number; cluster: string; certPem: string; keyPem: string }[] = [];
const stops = new Map<number, AbortController>();
const runs = new Map<number, Promise<void>>();
let hubServer = '';
let hubCaPem = '';
let mini: MiniApiModule.MiniApiServer | undefined;
/** When each cluster's agent last received a copy (epoch ms; rollout mode). */
const copyReceived = new Map<string, number[]>();
let welcomes = 0;
/** Every hub replica's `https://host:port` (replicas.ts); empty: the one hub agents registered with. */
let hubs: string[] = [];
/** Agents whose tunnel is up: the index in `hubs` of the replica it is up on, and since when (epoch ms). */
const upOn = new Map<number, { hub: number; at: number }>();

/**
 * Agent `index`'s replica addresses: its first choice is replica `index % n`,
 * and the order of the others alternates between agents, so that the agents
 * of a replica that dies spread over all the others instead of all moving to
 * the next one in the list (what agents given the list in one order would do).
 */
function hubOrderOf(index: number): string[] {
  const n = hubs.length;
  const first = index % n;
  const others = hubs.filter((_, i) => i !== first);
  const turn = n > 1 ? Math.floor(index / n) % (n - 1) : 0;
  return [hubs[first] as string, ...others.slice(turn), ...others.slice(0, turn)];
}

/** The shared logger, also noting where agent `index`'s tunnel is up (the agent logs each tunnel up and closed). */
function trackingLogger(index: number): typeof logger {
  return {
    ...logger,
    info: (message: string) => {
      logger.info(message);
      const server = /^tunnel to (\S+) is up/.exec(message)?.[1];
      if (server !== undefined) upOn.set(index, { hub: hubs.indexOf(server), at: Date.now() });
    },
    warn: (message: string) => {
      logger.warn(message);
      if (message.startsWith('tunnel to the hub closed')) upOn.delete(index);
    },
  };
}

let isRegistering = true;
const silent = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

/** POSTs one cluster's CSR to the hub's registration endpoint; the signed certificate. */
function postRegistration(options: {
  hub: string;
  caPem: string;
  pool: HttpsAgent;
  token: string;
  cluster: string;
  csrPem: string;
}): Promise<string> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ name: options.cluster, labels: { bench: 'scale' }, csr: options.csrPem });
    const req = httpsRequest(
      `https://${options.hub}/hub/v1/register`,
      {
        method: 'POST',
        agent: options.pool,
        ca: options.caPem,
        headers: { Authorization: `Bearer ${options.token}`, 'Content-Type': 'application/json' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          if (res.statusCode !== 201) reject(new Error(`register ${options.cluster}: HTTP ${res.statusCode}: ${text}`));
          else resolve((JSON.parse(text) as { certPem: string }).certPem);
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function register(message: RegisterMessage): Promise<void> {
  range = message;
  const kubeconfig = join(message.stateDir, `sim-${message.first}.kubeconfig`);
  writeFileSync(kubeconfig, sim.kubeconfig(), { mode: 0o600 });
  upstream = new Upstream(await readUpstreamKubeconfig(kubeconfig), logger);
  const started = performance.now();
  const indexes: number[] = [];
  for (let i = message.first; i < message.count; i += message.stride) indexes.push(i);
  const dataDirOf = (index: number): string => join(message.stateDir, 'agents', `sim-${index}`);
  let registered = 0;
  // The first cluster: the whole register-cloud flow, discovery included.
  const head = indexes[0] as number;
  let hubState: AgentStateModule.AgentState;
  if (existsSync(join(dataDirOf(head), 'agent.yaml'))) hubState = readAgentState(dataDirOf(head));
  else {
    const registration = await registerCluster({
      hub: message.hub,
      token: message.token,
      caCertHashes: [message.pin],
      cluster: `sim-${head}`,
      labels: { bench: 'scale' },
      kubeconfig,
      createServiceAccount: false,
      dataDir: dataDirOf(head),
      discoveryTimeout: 120_000,
      logger: silent,
    });
    hubState = registration.state;
    registered += 1;
  }
  identities.push({ index: head, cluster: `sim-${head}`, certPem: hubState.certPem, keyPem: hubState.keyPem });
  const pool = new HttpsAgent({ keepAlive: true, maxSockets: message.concurrency });
  let next = 1;
  await Promise.all(
    Array.from({ length: message.concurrency }, async () => {
      while (next < indexes.length && isRegistering) {
        const index = indexes[next] as number;
        next += 1;
        const cluster = `sim-${index}`;
        const dataDir = dataDirOf(index);
        let state;
        if (existsSync(join(dataDir, 'agent.yaml'))) state = readAgentState(dataDir);
        else {
          const csr = await createCsr({ commonName: cluster, organizations: [AGENT_CERT_ORGANIZATION] });
          const certPem = await postRegistration({
            hub: message.hub,
            caPem: hubState.hubCaPem,
            pool,
            token: message.token,
            cluster,
            csrPem: csr.csrPem,
          });
          state = { ...hubState, cluster, kubeconfig, certPem, keyPem: csr.keyPem };
          writeAgentState(dataDir, state);
          registered += 1;
        }
        identities.push({ index, cluster, certPem: state.certPem, keyPem: state.keyPem });
      }
    }),
  );
  pool.destroy();
  identities.sort((a, b) => a.index - b.index);
  // Registered without a gap: indexes[0 .. done) (registrations run a few at a time, in order).
  let done = 0;
  while (done < identities.length && identities[done]?.index === indexes[done]) done += 1;
  send({
    type: 'registered',
    registered,
    reused: identities.length - registered,
    done,
    ms: performance.now() - started,
  });
}

/**
 * Starts the agents one per turn of the event loop. Started in one go, a
 * process would build thousands of TLS contexts back to back before its
 * first dial left, and the first agents' connect timeouts would expire
 * before they could be handled: an artefact of many agents sharing a
 * process, which real agents (one per cluster) do not have.
 */
let pollReadyMs: number | undefined;

async function connect(below: number, intervalMs: number, rollouts?: RolloutMode, replicas?: string[]): Promise<void> {
  if (range === undefined || upstream === undefined) throw new Error('register first');
  hubServer = `https://${range.hub}`;
  hubs = replicas ?? [];
  hubCaPem = readAgentState(join(range.stateDir, 'agents', `sim-${range.first}`)).hubCaPem;
  if (rollouts !== undefined) mini = await startMini(rollouts.readyAfterMs);
  pollReadyMs = rollouts?.pollReadyMs;
  for (const { index, ...identity } of identities) {
    if (index >= below) continue;
    await new Promise((resolve) => (intervalMs > 0 ? setTimeout(resolve, intervalMs) : setImmediate(resolve)));
    startAgent(index, identity);
  }
}

/** Starts one agent (again): the tunnel agent, and in rollout mode a CopyAgent on the cluster's simulated API. */
function startAgent(index: number, identity: { cluster: string; certPem: string; keyPem: string }): void {
  const stop = new AbortController();
  stops.set(index, stop);
  let clusterUpstream = upstream as InstanceType<typeof Upstream>;
  let copyAgent: InstanceType<typeof CopyAgent> | undefined;
  if (mini !== undefined) {
    const credentials = {
      server: mini.url,
      caPem: mini.caPem,
      token: identity.cluster,
      isInsecureSkipTlsVerify: false,
    };
    clusterUpstream = new Upstream(credentials, logger);
    copyAgent = new CopyAgent({
      cluster: identity.cluster,
      credentials: { contextName: 'bench', server: mini.url, caPem: mini.caPem, token: identity.cluster },
      logger,
      ...(pollReadyMs === undefined ? {} : { pollReadyMs }),
    });
  }
  const received = copyReceived;
  const controlRoutes = copyAgent?.controlRoutes().map((route) =>
    route.path.endsWith('/apply')
      ? {
          ...route,
          handle: (stream: Parameters<typeof route.handle>[0], headers: Parameters<typeof route.handle>[1]) => {
            received.set(identity.cluster, [...(received.get(identity.cluster) ?? []), Date.now()]);
            return route.handle(stream, headers);
          },
        }
      : route,
  );
  const order = hubs.length === 0 ? [hubServer] : hubOrderOf(index);
  runs.set(
    index,
    runTunnelAgent({
      hubServer: order[0] as string,
      hubServers: order,
      hubCaPem,
      identity: () => identity,
      upstream: clusterUpstream,
      logger: hubs.length === 0 ? logger : trackingLogger(index),
      signal: stop.signal,
      onConnected: () => (welcomes += 1),
      ...(controlRoutes === undefined ? {} : { controlRoutes }),
    }).finally(() => copyAgent?.close()),
  );
}

/** A self-signed certificate for 127.0.0.1 (openssl), for the small simulated API server. */
async function startMini(readyAfterMs: number): Promise<MiniApiModule.MiniApiServer> {
  const { execFileSync } = await import('node:child_process');
  const { mkdtempSync, readFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const dir = mkdtempSync(join(tmpdir(), 'edgeadm-bench-mini-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
    ],
    { stdio: 'ignore' },
  );
  const certPem = readFileSync(join(dir, 'cert.pem'), 'utf8');
  return startMiniApiServer({
    certPem,
    keyPem: readFileSync(join(dir, 'key.pem'), 'utf8'),
    caPem: certPem,
    readyAfterMs,
  });
}

const report = setInterval(() => {
  send({ type: 'status', welcomes, said, rssBytes: process.memoryUsage.rss() });
}, 500);

process.on('message', (message: Message) => {
  if (message.type === 'register') {
    register(message).catch((error: Error) => send({ type: 'failed', message: error.message }));
  } else if (message.type === 'stop-registering') {
    isRegistering = false;
  } else if (message.type === 'connect') {
    void connect(message.below, message.intervalMs, message.rollouts, message.hubs);
  } else if (message.type === 'where') {
    // Flat [index, replica, since] triples: a few hundred KiB at 10,000 agents instead of objects.
    const up: number[] = [];
    for (const [index, { hub, at }] of upOn) if (at >= (message.since ?? 0)) up.push(index, hub, at);
    send({ type: 'where', up, down: stops.size - upOn.size });
  } else if (message.type === 'disconnect') {
    const ending = message.indexes.filter((i) => stops.has(i));
    for (const index of ending) stops.get(index)?.abort();
    void Promise.all(ending.map((i) => runs.get(i))).then(() => {
      for (const index of ending) {
        stops.delete(index);
        runs.delete(index);
      }
      send({ type: 'disconnected', count: ending.length });
    });
  } else if (message.type === 'reconnect') {
    for (const index of message.indexes) {
      const identity = identities.find((i) => i.index === index);
      if (identity !== undefined && !stops.has(index))
        startAgent(index, { cluster: identity.cluster, certPem: identity.certPem, keyPem: identity.keyPem });
    }
  } else if (message.type === 'times') {
    // Per cluster and Deployment (the rollout's name): the last copy arrival before its apply.
    const times: Record<string, { received?: number; applied?: number; ready?: number; requests: number }> = {};
    for (const [key, t] of mini?.times ?? []) {
      const cluster = key.split('/')[0] as string;
      const arrivals = copyReceived.get(cluster) ?? [];
      const applied = t.deploymentAppliedAt;
      const received = arrivals.filter((at) => applied === undefined || at <= applied).pop();
      times[key] = {
        ...(received === undefined ? {} : { received }),
        ...(applied === undefined ? {} : { applied }),
        ...(t.firstReadyReadAt === undefined ? {} : { ready: t.firstReadyReadAt }),
        requests: t.requests,
      };
    }
    send({ type: 'times', times });
  } else if (message.type === 'reset-times') {
    copyReceived.clear();
    mini?.times.clear();
    send({ type: 'times-reset' });
  } else if (message.type === 'stop') {
    for (const stop of stops.values()) stop.abort();
    void Promise.all(runs.values()).then(async () => {
      clearInterval(report);
      await mini?.stop();
      await sim.stop();
      process.exit(0);
    });
  }
});
send({ type: 'ready' });
