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
 *   { type: 'connect', below, intervalMs }  start the agents below index `below`, one per interval; report
 *   { type: 'stop' }           drain every agent and exit
 */
import { existsSync, writeFileSync } from 'node:fs';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import type * as HubLimitsModule from '../../src/hub/limits.js';
import type * as PkiModule from '../../src/trust/pki.js';
import type * as AgentStateModule from '../../src/registration/agent-state.js';
import type * as AgentModule from '../../src/tunnel/agent.js';
import type * as RegistrationModule from '../../src/registration/registration.js';
import type * as UpstreamModule from '../../src/tunnel/upstream.js';

// The simulated API server's modules import each other as `./x.js`: the repository's hook maps those to `.ts`.
await import(new URL('../support/register-ts.js', import.meta.url).href);
const { startSimApiServer } = await import('../../test/support/sim-apiserver/index.js');
/** A module of the built CLI (lib/, what `bin/run.js` runs), typed by its source. */
const built = (path: string): Promise<unknown> => import(new URL(`../../lib/${path}`, import.meta.url).href);
const { runTunnelAgent } = (await built('tunnel/agent.js')) as typeof AgentModule;
const { Upstream, readUpstreamKubeconfig } = (await built('tunnel/upstream.js')) as typeof UpstreamModule;
const { registerCluster } = (await built('tunnel/registration.js')) as typeof RegistrationModule;
const { readAgentState, writeAgentState } = (await built('tunnel/agent-state.js')) as typeof AgentStateModule;
const { createCsr } = (await built('trust/pki.js')) as typeof PkiModule;
const { AGENT_CERT_ORGANIZATION } = (await built('hub/limits.js')) as typeof HubLimitsModule;

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
type Message =
  | RegisterMessage
  | { type: 'stop-registering' }
  | { type: 'connect'; below: number; intervalMs: number }
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
const stops: AbortController[] = [];
const runs: Promise<void>[] = [];
let welcomes = 0;

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
      discoveryTimeoutMs: 120_000,
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
async function connect(below: number, intervalMs: number): Promise<void> {
  if (range === undefined || upstream === undefined) throw new Error('register first');
  const hubServer = `https://${range.hub}`;
  const hubCaPem = readAgentState(join(range.stateDir, 'agents', `sim-${range.first}`)).hubCaPem;
  for (const { index, ...identity } of identities) {
    if (index >= below) continue;
    await new Promise((resolve) => (intervalMs > 0 ? setTimeout(resolve, intervalMs) : setImmediate(resolve)));
    const stop = new AbortController();
    stops.push(stop);
    runs.push(
      runTunnelAgent({
        hubServer,
        hubCaPem,
        identity: () => identity,
        upstream,
        logger,
        signal: stop.signal,
        onConnected: () => (welcomes += 1),
      }),
    );
  }
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
    void connect(message.below, message.intervalMs);
  } else if (message.type === 'stop') {
    for (const stop of stops) stop.abort();
    void Promise.all(runs).then(async () => {
      clearInterval(report);
      await sim.stop();
      process.exit(0);
    });
  }
});
send({ type: 'ready' });
