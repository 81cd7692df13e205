/**
 * One process of SIMULATED agents for the scale benchmark (`scale.ts`
 * forks a few of these). Each simulated agent is a cluster registered
 * through edgeadm's real `registerCluster` (discovery by token and pin, its
 * own key and CSR, a client certificate signed by the hub) and connected by
 * edgeadm's real `runTunnelAgent` (TLS with that certificate, the reversed
 * HTTP/2 session, hello and welcome, keepalive pings, jittered backoff).
 * What is simulated: many agents share one process, and their upstream is
 * the SIMULATED API server from test/support (one per process, shared by
 * its agents through one `Upstream`), not a real edge cluster.
 *
 * Driven by IPC messages from scale.ts:
 *   { type: 'register', ... }  register (or, with existing state, reuse) this process's clusters
 *   { type: 'connect' }        start every agent; report connections
 *   { type: 'stop' }           drain every agent and exit
 */
import { existsSync, writeFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
import { join } from 'node:path';

const SIM_DIR = new URL('../../test/support/sim-apiserver/', import.meta.url).href;
registerHooks({
  resolve(specifier, context, nextResolve) {
    const isSim =
      specifier.endsWith('.js') &&
      ((context.parentURL ?? '').startsWith(SIM_DIR) || specifier.includes('sim-apiserver/'));
    if (isSim) {
      try {
        return nextResolve(specifier, context);
      } catch {
        return nextResolve(`${specifier.slice(0, -3)}.ts`, context);
      }
    }
    return nextResolve(specifier, context);
  },
});

const { startSimApiServer } = await import('../../test/support/sim-apiserver/index.js');
const { runTunnelAgent } = await import('../../lib/tunnel/agent.js');
const { Upstream, readUpstreamKubeconfig } = await import('../../lib/tunnel/upstream.js');
const { registerCluster } = await import('../../lib/tunnel/registration.js');
const { readAgentState } = await import('../../lib/tunnel/agent-state.js');

/** What scale.ts asks of this process. */
interface RegisterMessage {
  type: 'register';
  /** Cluster indexes [from, to). */
  from: number;
  to: number;
  /** `host:port` of the hub. */
  hub: string;
  token: string;
  pin: string;
  stateDir: string;
  concurrency: number;
}
type Message = RegisterMessage | { type: 'connect' } | { type: 'stop' };

/** Counts of what the agents' loggers said, by kind (never the messages: they could name hosts). */
const said: Record<string, number> = {};
const count = (key: string): void => void (said[key] = (said[key] ?? 0) + 1);
const logger = {
  debug: () => {},
  info: (message: string) => {
    if (message.startsWith('tunnel to')) count('up');
  },
  warn: (message: string) => count(/^(E_[A-Z_]+)/.exec(message)?.[1] ?? (message.includes('closed') ? 'closed' : 'warn')),
  error: () => count('error'),
};

const send = (message: Record<string, unknown>): void => void process.send?.(message);
const sim = await startSimApiServer({ gitVersion: 'v1.30.4+sim' });
let range: RegisterMessage | undefined;
let upstream: InstanceType<typeof Upstream> | undefined;
const identities: { cluster: string; certPem: string; keyPem: string }[] = [];
const stops: AbortController[] = [];
const runs: Promise<void>[] = [];
let welcomes = 0;

async function register(message: RegisterMessage): Promise<void> {
  range = message;
  const kubeconfig = join(message.stateDir, `sim-${message.from}.kubeconfig`);
  writeFileSync(kubeconfig, sim.kubeconfig(), { mode: 0o600 });
  upstream = new Upstream(await readUpstreamKubeconfig(kubeconfig), logger);
  const started = performance.now();
  let registered = 0;
  let next = message.from;
  await Promise.all(
    Array.from({ length: message.concurrency }, async () => {
      while (next < message.to) {
        const index = next;
        next += 1;
        const cluster = `sim-${index}`;
        const dataDir = join(message.stateDir, 'agents', cluster);
        let state;
        if (existsSync(join(dataDir, 'agent.yaml'))) state = readAgentState(dataDir);
        else {
          state = await registerCluster({
            hub: message.hub,
            token: message.token,
            caCertHashes: [message.pin],
            cluster,
            labels: { bench: 'scale' },
            kubeconfig,
            dataDir,
            discoveryTimeoutMs: 120_000,
            logger: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
          });
          registered += 1;
        }
        identities[index - message.from] = { cluster, certPem: state.certPem, keyPem: state.keyPem };
      }
    }),
  );
  send({ type: 'registered', registered, reused: message.to - message.from - registered, ms: performance.now() - started });
}

function connect(): void {
  if (range === undefined || upstream === undefined) throw new Error('register first');
  const hubServer = `https://${range.hub}`;
  const hubCaPem = readAgentState(join(range.stateDir, 'agents', `sim-${range.from}`)).hubCaPem;
  for (const identity of identities) {
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
  } else if (message.type === 'connect') {
    connect();
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
