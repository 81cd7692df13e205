/**
 * Tunnel benchmark (d), scale: N SIMULATED agents (default 10,000) connected
 * to one hub, `edgeadm hub serve` as its own process (bin/run.js).
 *
 * 1. Registration: every agent registers its own cluster with one hub token
 *    made through the operator API: the first of each agent process through
 *    edgeadm's whole `registerCluster` flow (token-and-pin discovery, key,
 *    CSR, the hub's signature), the others with their own key and CSR
 *    POSTed to the hub's registration endpoint (no repeated discovery), a
 *    few at a time. `--register-budget-s` bounds this phase: the benchmark
 *    then goes on with the clusters registered so far (and says so).
 * 2. Connect: all agents start at once (edgeadm's real `runTunnelAgent`:
 *    TLS with that certificate, reversed HTTP/2, hello and welcome); the
 *    time until the hub's `edgeadm_hub_connected_agents` gauge reads N, and
 *    the hub's RSS then and a little later.
 * 3. Silence (`--silence-rounds R`, default 0): R times, one agent process
 *    is frozen (SIGSTOP) at a random moment, so 1/P of the agents go silent
 *    at once without closing anything, as a site whose link drops does. The
 *    clusters list (`GET /hub/v1/clusters`, what `hub clusters list`, the web
 *    view and the metrics read) is polled every 250 ms: for each silenced
 *    cluster, the time from the freeze until it is shown Disconnected; and
 *    every cluster of the other processes shown Disconnected meanwhile (a
 *    healthy site shown down). The process is then thawed (SIGCONT) and
 *    every agent connected again before the next round.
 * 4. Reconnect storm: SIGTERM the hub (a graceful stop drains every tunnel),
 *    start it again on the same port and data directory, and time until all
 *    N are connected again (the agents redial with jittered backoff).
 *
 * The agents run in `--processes` forked processes (scale-agents.ts); the
 * simulated part is that many agents share a process and that their
 * upstream is the SIMULATED API server from test/support. Everything is on
 * loopback. The hub gets `ulimit -n` raised as far as the machine's hard
 * limit allows.
 *
 *   npm run build && node bench/tunnel/scale.ts [--agents 10000] [--processes 4] [--ramp-per-s 0] [--port 29443]
 *     [--state-dir DIR] [--register-budget-s S] [--silence-rounds 0] [--timeout-s 600] [--json]
 *
 * `--state-dir` keeps the hub's data and the agents' credentials, so a
 * second run reuses the registrations (and says so) instead of repeating them.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type * as HubProcessModule from '../support/hub-process.js';
import type { HubProcess } from '../support/hub-process.js';

const { values } = parseArgs({
  options: {
    agents: { type: 'string', default: '10000' },
    processes: { type: 'string', default: '4' },
    port: { type: 'string', default: '29443' },
    'state-dir': { type: 'string' },
    'register-concurrency': { type: 'string', default: '8' },
    'register-budget-s': { type: 'string' },
    'ramp-per-s': { type: 'string', default: '0' },
    'silence-rounds': { type: 'string', default: '0' },
    'timeout-s': { type: 'string', default: '600' },
    /** NODE_OPTIONS for the hub process only, e.g. "--cpu-prof --cpu-prof-dir=DIR". */
    'hub-node-options': { type: 'string' },
    json: { type: 'boolean' },
  },
});
const REQUESTED_AGENTS = Number(values.agents);
/** How many agents take part: all requested, or those registered within the budget. */
let AGENTS = REQUESTED_AGENTS;
const PROCESSES = Math.min(Number(values.processes), REQUESTED_AGENTS);
/** Outside the ephemeral range (32768–60999 here), so no client socket can take it while the hub restarts. */
const PORT = Number(values.port);
const TIMEOUT_MS = Number(values['timeout-s']) * 1000;
/** How often the hub's gauge is read. */
const POLL_MS = 250;
/** Wait after everyone connected before the settled RSS reading. */
const SETTLE_MS = 10_000;

// Node runs the .ts file itself (type stripping); tsc checks it through the type import.
const { callHub, cpuSeconds, rssMiB, startHubProcess } = (await import(
  new URL('../support/hub-process.ts', import.meta.url).href
)) as typeof HubProcessModule;
const root = fileURLToPath(new URL('../..', import.meta.url));
const stateDir = values['state-dir'] ?? mkdtempSync(join(tmpdir(), 'edgeadm-bench-scale-'));
mkdirSync(join(stateDir, 'agents'), { recursive: true });
const hubDir = join(stateDir, 'hub');
const progress = (line: string): void => void process.stderr.write(`[scale ${new Date().toISOString()}] ${line}\n`);

/** The hub process, started by the shared benchmark support. */
function startHub(): HubProcess {
  return startHubProcess({
    root,
    port: PORT,
    dataDir: hubDir,
    home: join(stateDir, 'home'),
    ...(values['hub-node-options'] === undefined ? {} : { nodeOptions: values['hub-node-options'] }),
    timeoutMs: TIMEOUT_MS,
  });
}

/**
 * The gauge is read over one kept-alive connection: a new connection per
 * reading would queue behind the agents' handshakes (and, past the hub's
 * `--max-pending-handshakes`, be closed before TLS like theirs).
 */
const pollPool = new https.Agent({ keepAlive: true, maxSockets: 1 });

function call(
  path: string,
  options: { method?: string; body?: unknown; token?: string; ca: string; pool?: https.Agent },
): Promise<string> {
  return callHub(`https://127.0.0.1:${PORT}${path}`, options);
}

/** The hub's handshake counters: refused before TLS (the bound) and resumed TLS sessions, since it started. */
async function handshakeCounters(admin: { token: string; ca: string }): Promise<{ refused: number; resumed: number }> {
  const metrics = await call('/metrics', { ca: admin.ca, pool: pollPool }).catch(() => '');
  const counter = (name: string): number => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(metrics)?.[1] ?? NaN);
  return {
    refused: counter('edgeadm_hub_handshakes_refused_total'),
    resumed: counter('edgeadm_hub_tls_sessions_resumed_total'),
  };
}

async function connectedAgents(admin: { token: string; ca: string }): Promise<number | undefined> {
  try {
    const metrics = await call('/metrics', { ca: admin.ca, pool: pollPool });
    return Number(/^edgeadm_hub_connected_agents (\d+)$/m.exec(metrics)?.[1]);
  } catch {
    return undefined;
  }
}

/** Polls the gauge until it reads AGENTS; returns ms from `since` and the gauge's course. */
async function untilAllConnected(
  admin: { token: string; ca: string },
  since: number,
): Promise<{ ms: number; course: [number, number][] }> {
  const course: [number, number][] = [];
  let lastLogged = 0;
  while (performance.now() - since < TIMEOUT_MS) {
    const connected = await connectedAgents(admin);
    const at = performance.now() - since;
    if (connected !== undefined) {
      if (course.length === 0 || course[course.length - 1]?.[1] !== connected) course.push([Math.round(at), connected]);
      if (at - lastLogged > 5000) {
        lastLogged = at;
        progress(
          `${connected} of ${AGENTS} connected after ${(at / 1000).toFixed(1)} s (hub CPU so far ${cpuSeconds(hub.pid).toFixed(1)} s; load ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')})`,
        );
      }
      if (connected >= AGENTS) return { ms: at, course };
    }
    await sleep(POLL_MS);
  }
  throw new Error(
    `not all ${AGENTS} agents connected within ${TIMEOUT_MS / 1000} s: ${JSON.stringify(course.slice(-5))}`,
  );
}

// --- hub, token, agent processes -------------------------------------------------------------
const isReused = existsSync(join(hubDir, 'admin.yaml'));
let hub = startHub();
await hub.listening;
const ca = readFileSync(join(hubDir, 'pki', 'ca.crt'), 'utf8');
const token = /^token: (\S+)$/m.exec(readFileSync(join(hubDir, 'admin.yaml'), 'utf8'))?.[1] ?? '';
const admin = { token, ca };
const created = JSON.parse(
  await call('/hub/v1/tokens', { ...admin, method: 'POST', body: { ttlMs: 4 * 3600_000 } }),
) as { token: string; caCertHash: string };
progress(`hub ${hub.pid} up (${isReused ? 'reusing' : 'new'} state in ${stateDir}); ${PROCESSES} agent processes`);

interface WorkerStatus {
  welcomes: number;
  said: Record<string, number>;
  rssBytes: number;
}
const workers: { child: ChildProcess; status: WorkerStatus }[] = [];
for (let i = 0; i < PROCESSES; i += 1) {
  const child = fork(join(root, 'bench/tunnel/scale-agents.ts'), [], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  process.once('exit', () => child.kill('SIGKILL'));
  const worker = { child, status: { welcomes: 0, said: {}, rssBytes: 0 } as WorkerStatus };
  child.on('message', (message: { type: string } & WorkerStatus) => {
    if (message.type === 'status') worker.status = message;
    if (message.type === 'failed') {
      progress(`an agent process failed: ${JSON.stringify(message)}`);
      process.exit(1);
    }
  });
  workers.push(worker);
}
const nextMessage = (child: ChildProcess, type: string): Promise<Record<string, number>> =>
  new Promise((resolve) => {
    const on = (message: { type: string }): void => {
      if (message.type !== type) return;
      child.off('message', on);
      resolve(message as unknown as Record<string, number>);
    };
    child.on('message', on);
  });
await Promise.all(workers.map((w) => nextMessage(w.child, 'ready')));

// --- 1. registration -----------------------------------------------------------------------
const registrationStarted = performance.now();
const budget =
  values['register-budget-s'] === undefined
    ? undefined
    : setTimeout(
        () => {
          progress('registration budget spent: finishing the registrations under way');
          for (const w of workers) w.child.send({ type: 'stop-registering' });
        },
        Number(values['register-budget-s']) * 1000,
      );
const registrations = await Promise.all(
  workers.map((w, i) => {
    const answer = nextMessage(w.child, 'registered');
    w.child.send({
      type: 'register',
      first: i,
      stride: PROCESSES,
      count: REQUESTED_AGENTS,
      hub: `127.0.0.1:${PORT}`,
      token: created.token,
      pin: created.caCertHash,
      stateDir,
      concurrency: Number(values['register-concurrency']),
    });
    return answer;
  }),
);
clearTimeout(budget);
// Clusters 0 .. AGENTS-1 are all registered: worker i holds i, i + P, …, and has done a gapless prefix of them.
AGENTS = Math.min(
  ...registrations.map((r, i) => {
    const total = Math.ceil((REQUESTED_AGENTS - i) / PROCESSES);
    return (r.done ?? 0) >= total ? REQUESTED_AGENTS : i + (r.done ?? 0) * PROCESSES;
  }),
);
const registration = {
  registered: registrations.reduce((a, r) => a + (r.registered ?? 0), 0),
  reused: registrations.reduce((a, r) => a + (r.reused ?? 0), 0),
  seconds: (performance.now() - registrationStarted) / 1000,
  agentsTakingPart: AGENTS,
};
progress(`registration: ${JSON.stringify(registration)}`);
const hubAfterRegistration = rssMiB(hub.pid);

// --- 2. connect everyone ---------------------------------------------------------------------
const agentsCpu = (): number => workers.reduce((a, w) => a + cpuSeconds(w.child.pid ?? 0), 0);
const cpuBeforeConnect = { hub: cpuSeconds(hub.pid), agents: agentsCpu() };
const connectStarted = performance.now();
// --ramp-per-s R: the agents start at R per second in all (0: all at once).
const RAMP_PER_S = Number(values['ramp-per-s']);
const intervalMs = RAMP_PER_S > 0 ? (1000 * PROCESSES) / RAMP_PER_S : 0;
for (const w of workers) w.child.send({ type: 'connect', below: AGENTS, intervalMs });
const connect = await untilAllConnected(admin, connectStarted);
const hubConnected = rssMiB(hub.pid);
const connectCpu = { hub: cpuSeconds(hub.pid) - cpuBeforeConnect.hub, agents: agentsCpu() - cpuBeforeConnect.agents };
const connectHandshakes = await handshakeCounters(admin);
await sleep(SETTLE_MS);
const hubSettled = rssMiB(hub.pid);
const agentsRssMiB = workers.reduce((a, w) => a + w.status.rssBytes, 0) / (1024 * 1024);
const saidBeforeRestart = workers.map((w) => w.status.said);
progress(`all ${AGENTS} connected in ${(connect.ms / 1000).toFixed(1)} s; hub RSS ${hubSettled.rss.toFixed(0)} MiB`);

// --- 3. silence: an agent process frozen, its clusters shown Disconnected -------------------------
/** Every cluster's state as the clusters list shows it, or undefined when the hub did not answer. */
async function clusterStates(): Promise<Map<string, string> | undefined> {
  try {
    const body = JSON.parse(await call('/hub/v1/clusters', { ...admin, pool: pollPool })) as {
      clusters: { name: string; state: string }[];
    };
    return new Map(body.clusters.map((c) => [c.name, c.state]));
  } catch {
    return undefined;
  }
}

const silenceRounds: {
  silenced: number;
  detectedSeconds: { p50: number; p99: number; max: number };
  undetectedAfterTimeout: number;
  othersShownDisconnected: number;
}[] = [];
for (let round = 0; round < Number(values['silence-rounds']); round += 1) {
  const index = round % PROCESSES;
  const worker = workers[index]!;
  const silenced = new Set<string>();
  for (let i = index; i < AGENTS; i += PROCESSES) silenced.add(`sim-${i}`);
  // A random moment within a heartbeat, so the freeze falls anywhere between two pings.
  await sleep(Math.random() * 10_000);
  worker.child.kill('SIGSTOP');
  const frozenAt = performance.now();
  const detected = new Map<string, number>();
  const othersDown = new Set<string>();
  while (detected.size < silenced.size && performance.now() - frozenAt < 60_000) {
    const states = await clusterStates();
    const at = performance.now() - frozenAt;
    for (const [name, state] of states ?? []) {
      if (state !== 'Disconnected') continue;
      if (silenced.has(name)) {
        if (!detected.has(name)) detected.set(name, at);
      } else othersDown.add(name);
    }
    await sleep(250);
  }
  worker.child.kill('SIGCONT');
  const times = [...detected.values()].sort((a, b) => a - b);
  const quantile = (q: number): number =>
    (times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? NaN) / 1000;
  silenceRounds.push({
    silenced: silenced.size,
    detectedSeconds: { p50: quantile(0.5), p99: quantile(0.99), max: (times[times.length - 1] ?? NaN) / 1000 },
    undetectedAfterTimeout: silenced.size - detected.size,
    othersShownDisconnected: othersDown.size,
  });
  progress(`silence round ${round + 1}: ${JSON.stringify(silenceRounds[round])}`);
  await untilAllConnected(admin, performance.now());
}

// --- 4. restart the hub: the reconnect storm ---------------------------------------------------
const welcomesBefore = workers.reduce((a, w) => a + w.status.welcomes, 0);
const stopped = performance.now();
hub.child.kill('SIGTERM');
await hub.exited;
const shutdownMs = performance.now() - stopped;
hub = startHub();
await hub.listening;
const listeningMs = performance.now() - stopped;
const cpuBeforeStorm = { hub: cpuSeconds(hub.pid), agents: agentsCpu() };
const storm = await untilAllConnected(admin, stopped);
const hubAfterStorm = rssMiB(hub.pid);
const stormCpu = { hub: cpuSeconds(hub.pid) - cpuBeforeStorm.hub, agents: agentsCpu() - cpuBeforeStorm.agents };
const stormHandshakes = await handshakeCounters(admin);
await sleep(1000);
const welcomesAfter = workers.reduce((a, w) => a + w.status.welcomes, 0);
progress(`all ${AGENTS} reconnected ${(storm.ms / 1000).toFixed(1)} s after the stop`);

const results = {
  agentsRequested: REQUESTED_AGENTS,
  rampPerSecond: RAMP_PER_S,
  agents: AGENTS,
  processes: PROCESSES,
  registration,
  connect: {
    seconds: connect.ms / 1000,
    hubRssMiB: {
      afterRegistration: hubAfterRegistration.rss,
      allConnected: hubConnected.rss,
      settled: hubSettled.rss,
      peak: hubSettled.peak,
    },
    agentProcessesRssMiB: agentsRssMiB,
    cpuSeconds: connectCpu,
    handshakes: connectHandshakes,
    course: connect.course,
  },
  reconnectStorm: {
    shutdownSeconds: shutdownMs / 1000,
    hubListeningAfterSeconds: listeningMs / 1000,
    allReconnectedAfterStopSeconds: storm.ms / 1000,
    allReconnectedAfterListeningSeconds: (storm.ms - listeningMs) / 1000,
    welcomes: welcomesAfter - welcomesBefore,
    hubRssMiB: { allReconnected: hubAfterStorm.rss, peak: hubAfterStorm.peak },
    cpuSecondsAfterListening: stormCpu,
    handshakes: stormHandshakes,
    course: storm.course,
  },
  silence: silenceRounds,
  agentLog: { beforeRestart: sumCounts(saidBeforeRestart), total: sumCounts(workers.map((w) => w.status.said)) },
  load: readFileSync('/proc/loadavg', 'utf8').trim(),
};

function sumCounts(list: Record<string, number>[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const counts of list) for (const [k, v] of Object.entries(counts)) out[k] = (out[k] ?? 0) + v;
  return out;
}

if (values.json) process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
else {
  const f = (x: number, d = 1): string => x.toFixed(d);
  const c = results.connect;
  const s = results.reconnectStorm;
  process.stdout.write(
    [
      `(d) ${AGENTS} simulated agents in ${PROCESSES} processes, one hub process; start ${RAMP_PER_S > 0 ? `ramped at ${RAMP_PER_S}/s` : 'all at once'}`,
      `    registration: ${registration.registered} registered, ${registration.reused} reused, ${f(registration.seconds)} s`,
      `    connect all: ${f(c.seconds)} s (CPU: hub ${f(c.cpuSeconds.hub)} s, agent processes ${f(c.cpuSeconds.agents)} s; closed before TLS ${c.handshakes.refused}); hub RSS ${f(c.hubRssMiB.allConnected, 0)} MiB when all connected, ${f(c.hubRssMiB.settled, 0)} MiB settled, peak ${f(c.hubRssMiB.peak, 0)} MiB; agent processes ${f(c.agentProcessesRssMiB, 0)} MiB`,
      `    restart: graceful stop ${f(s.shutdownSeconds)} s, listening again after ${f(s.hubListeningAfterSeconds)} s; all reconnected ${f(s.allReconnectedAfterStopSeconds)} s after the stop (${f(s.allReconnectedAfterListeningSeconds)} s after listening; CPU: hub ${f(s.cpuSecondsAfterListening.hub)} s, agent processes ${f(s.cpuSecondsAfterListening.agents)} s; closed before TLS ${s.handshakes.refused}, TLS sessions resumed ${s.handshakes.resumed}); hub RSS ${f(s.hubRssMiB.allReconnected, 0)} MiB, peak ${f(s.hubRssMiB.peak, 0)} MiB`,
      ...results.silence.map(
        (r, i) =>
          `    silence ${i + 1}: ${r.silenced} agents frozen; shown Disconnected after p50 ${f(r.detectedSeconds.p50)} s, p99 ${f(r.detectedSeconds.p99)} s, max ${f(r.detectedSeconds.max)} s; ${r.undetectedAfterTimeout} never; others shown Disconnected ${r.othersShownDisconnected}`,
      ),
      `    agent log counts: ${JSON.stringify(results.agentLog.total)}; load ${results.load}`,
      '',
    ].join('\n'),
  );
}

for (const w of workers) w.child.send({ type: 'stop' });
await Promise.race([Promise.all(workers.map((w) => new Promise((r) => w.child.once('exit', r)))), sleep(30_000)]);
hub.child.kill('SIGTERM');
await Promise.race([hub.exited, sleep(15_000)]);
process.exit(0);
