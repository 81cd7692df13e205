/**
 * Tunnel benchmark (e), hub replicas: a REAL three-member etcd (Debian's
 * etcd-server, test/support/etcd-cluster.ts), three `edgeadm hub serve
 * --store etcd` replicas as their own processes (bin/run.js, one encryption
 * key file, so one CA and one identity), and N SIMULATED agents (default
 * 10,000; bench/tunnel/scale-agents.ts, several per process) each given all
 * three replica addresses. Then one replica at a time is SIGKILLed
 * (`--kills`, default 10, the replicas in turn) and started again.
 *
 * 1. Registration: each agent process registers its clusters through one
 *    replica (process i through replica i mod 3), as scale.ts does.
 * 2. Connect: every agent at once. Agent i's first choice is replica
 *    i mod 3, and its other two addresses come in an order that alternates
 *    between agents, so a dead replica's agents spread over both others.
 *    Measured: time until the replicas' `edgeadm_hub_connected_agents`
 *    gauges add up to N; RSS of each replica.
 * 3. At rest: with every tunnel open, `--rest-s` (default 60) of nothing:
 *    etcd's own counters (from its /metrics: raft proposals committed, the
 *    store's revision, i.e. write transactions, puts, deletes) before and
 *    after, per minute; each replica's CPU.
 * 4. Each kill: which agents the victim holds (each agent process reports
 *    which replica its agents' tunnels are up on), then SIGKILL. For each of
 *    those agents: when its tunnel is up again on a surviving replica (agent
 *    side), and when a request through its tunnel (`GET
 *    /clusters/NAME/version`, admin token) first succeeds through the
 *    survivor holding it: "works again" (one agent in ten is probed through
 *    the other survivor instead, forwarded over the peer link along its
 *    claim in etcd). Once the victim's lease has run out, every claim in etcd
 *    is compared with where the agents say their tunnels are. Also: agents
 *    of the survivors that lost their tunnel meanwhile (a storm would show
 *    here), etcd's counters from the kill until all work again and until the
 *    victim's lease has run out (its claims deleted by etcd), CPU per
 *    reconnect of the survivors, the agents and etcd, the survivors' RSS.
 *    Then the victim starts again (same port and data directory; a new
 *    replica id) and the registrations are counted in etcd; then, before
 *    the next kill, the time until no replica holds more than 40 % of the
 *    agents (the replicas move idle tunnels to the restarted one).
 * 5. After the last kill: every cluster counted in etcd and through
 *    `GET /hub/v1/clusters`, and every agent's cluster reached once through
 *    a replica: registrations lost = N minus what is there and works.
 *
 * What is simulated: many agents share a process (four by default) and
 * their upstream is the SIMULATED API server from test/support; everything
 * (etcd, replicas, agents) shares one machine and loopback, so a killed
 * replica's sockets are reset at once by the kernel (a machine that vanishes
 * leaves its agents to notice through their keepalive pings instead).
 *
 *   npm run build && node bench/tunnel/replicas.ts [--agents 10000] [--kills 10] [--processes 4]
 *     [--rest-s 60] [--base-port 29643] [--register-concurrency 8] [--probe-concurrency 32]
 *     [--timeout-s 900] [--kill-timeout-s 300] [--keep-state] [--json]
 */
import { fork, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type * as HubProcessModule from '../support/hub-process.js';
import type { HubProcess } from '../support/hub-process.js';
import type * as EtcdClusterModule from '../../test/support/etcd-cluster.js';
import type * as EncryptionModule from '../../src/hub/store/etcd/encryption.js';
import type * as EtcdKeyspaceModule from '../../src/hub/store/etcd/etcd-keyspace.js';
import type * as EtcdLimitsModule from '../../src/hub/store/etcd/limits.js';
import type * as HubConfigModule from '../../src/hub/contract/hub-config.js';

const { values } = parseArgs({
  options: {
    agents: { type: 'string', default: '10000' },
    kills: { type: 'string', default: '10' },
    processes: { type: 'string', default: '4' },
    'rest-s': { type: 'string', default: '60' },
    'base-port': { type: 'string', default: '29643' },
    'register-concurrency': { type: 'string', default: '8' },
    'probe-concurrency': { type: 'string', default: '32' },
    'timeout-s': { type: 'string', default: '900' },
    'kill-timeout-s': { type: 'string', default: '300' },
    /** Keep the state directory (replica logs, agent credentials) and etcd's data after the run. */
    'keep-state': { type: 'boolean' },
    json: { type: 'boolean' },
  },
});
const AGENTS = Number(values.agents);
const KILLS = Number(values.kills);
const PROCESSES = Math.min(Number(values.processes), AGENTS);
const REPLICAS = 3;
/** Replica r listens on BASE_PORT + r: outside the ephemeral range, so no client socket takes it while r is dead. */
const BASE_PORT = Number(values['base-port']);
const REST_MS = Number(values['rest-s']) * 1000;
const PROBE_CONCURRENCY = Number(values['probe-concurrency']);
const TIMEOUT_MS = Number(values['timeout-s']) * 1000;
/** How long after a kill the benchmark waits for the victim's agents to work again before it counts them lost. */
const KILL_TIMEOUT_MS = Number(values['kill-timeout-s']) * 1000;
/** How often the agents are asked where their tunnels are, and the gauges read, while waiting. */
const POLL_MS = 200;
/** Shortest wait before a failed probe of one agent is sent again. */
const PROBE_RETRY_MS = 250;
/** Wait after everyone connected before the settled readings. */
const SETTLE_MS = 10_000;
/** Past the victim's lease (its claims deleted by etcd): this much after the time to live. */
const LEASE_MARGIN_MS = 3000;
/**
 * After a kill, one agent in this many is probed through the survivor that
 * does NOT hold its tunnel (forwarded over the peer link along the claim in
 * etcd); the others through the survivor holding it. Probing them all
 * forwarded would make the benchmark's own probes (a peer connection each)
 * the bottleneck of what it measures.
 */
const FORWARDED_PROBE_EVERY = 10;
/** Attempts of the final check of each agent (a failure is retried after a second). */
const FINAL_PROBE_ATTEMPTS = 3;

// Node runs the .ts files itself (type stripping); tsc checks them through the type imports.
const hubProcess = (await import(
  new URL('../support/hub-process.ts', import.meta.url).href
)) as typeof HubProcessModule;
const { callHub, loadAverage, startHubProcess } = hubProcess;
/** CPU seconds of a process; 0 once it is gone (a crashed replica: its crash is reported instead). */
const cpuSeconds = (pid: number): number => {
  try {
    return hubProcess.cpuSeconds(pid);
  } catch {
    return 0;
  }
};
/** RSS and peak RSS of a process in MiB; NaN once it is gone. */
const rssMiB = (pid: number): { rss: number; peak: number } => {
  try {
    return hubProcess.rssMiB(pid);
  } catch {
    return { rss: NaN, peak: NaN };
  }
};
const { startEtcdCluster, hubEtcdStoreFlags } = (await import(
  new URL('../../test/support/etcd-cluster.ts', import.meta.url).href
)) as typeof EtcdClusterModule;
/** A module of the built CLI (lib/, what `bin/run.js` runs), typed by its source. */
const built = (path: string): Promise<unknown> => import(new URL(`../../lib/${path}`, import.meta.url).href);
const { newEncryptionKeyFileText } = (await built('hub/store/etcd/encryption.js')) as typeof EncryptionModule;
const { ETCD_KEYS } = (await built('hub/store/etcd/etcd-keyspace.js')) as typeof EtcdKeyspaceModule;
const { REPLICA_LEASE_TTL_S, DEFAULT_ETCD_KEY_PREFIX } = (await built(
  'hub/store/etcd/limits.js',
)) as typeof EtcdLimitsModule;
const { parseHubConfig } = (await built('hub/contract/hub-config.js')) as typeof HubConfigModule;

const root = fileURLToPath(new URL('../..', import.meta.url));
const stateDir = mkdtempSync(join(tmpdir(), 'edgeadm-bench-replicas-'));
mkdirSync(join(stateDir, 'agents'), { recursive: true });
const progress = (line: string): void =>
  void process.stderr.write(`[replicas ${new Date().toISOString()}] ${line} (load ${loadAverage()})\n`);
// One exit listener per hub process started (startHubProcess) and per agent process.
process.setMaxListeners(KILLS + REPLICAS + PROCESSES + 10);

// --- etcd ------------------------------------------------------------------------------------
const etcd = await startEtcdCluster();
process.once('exit', () => void etcd.stop());
const etcdTls = {
  ca: readFileSync(etcd.tls.caFile),
  cert: readFileSync(etcd.tls.certFile),
  key: readFileSync(etcd.tls.keyFile),
};

/** One request to an etcd member (client TLS with the client certificate). */
function etcdCall(path: string, body?: unknown): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      `${etcd.endpoints[0]}${path}`,
      { method: body === undefined ? 'GET' : 'POST', ...etcdTls, agent: false, timeout: 30_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(Buffer.concat(chunks).toString()));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`etcd ${path}: timed out`)));
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** etcd's own counters (member 0; every member applies the same log). */
interface EtcdCounters {
  /** Raft proposals committed: every change, lease grants and revocations included. */
  proposals: number;
  /** The store's revision: one per write transaction. */
  revision: number;
  puts: number;
  deletes: number;
  txns: number;
  leasesExpired: number;
}
async function etcdCounters(): Promise<EtcdCounters> {
  const text = await etcdCall('/metrics');
  const read = (name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return {
    proposals: read('etcd_server_proposals_committed_total'),
    revision: read('etcd_debugging_mvcc_current_revision'),
    puts: read('etcd_mvcc_put_total'),
    deletes: read('etcd_mvcc_delete_total'),
    txns: read('etcd_mvcc_txn_total'),
    leasesExpired: read('etcd_debugging_server_lease_expired_total'),
  };
}
const counterDelta = (a: EtcdCounters, b: EtcdCounters): EtcdCounters => ({
  proposals: b.proposals - a.proposals,
  revision: b.revision - a.revision,
  puts: b.puts - a.puts,
  deletes: b.deletes - a.deletes,
  txns: b.txns - a.txns,
  leasesExpired: b.leasesExpired - a.leasesExpired,
});

/** Keys under the hub's prefix + `relative`, counted by etcd (the v3 JSON gateway). */
async function etcdCount(relative: string): Promise<number> {
  const key = `${DEFAULT_ETCD_KEY_PREFIX}${relative}`;
  const end = key.slice(0, -1) + String.fromCharCode(key.charCodeAt(key.length - 1) + 1);
  const b64 = (s: string): string => Buffer.from(s).toString('base64');
  const answer = JSON.parse(
    await etcdCall('/v3/kv/range', { key: b64(key), range_end: b64(end), count_only: true }),
  ) as { count?: string };
  return Number(answer.count ?? 0);
}

/** Every tunnel claim in etcd: replica id by cluster. */
async function etcdClaims(): Promise<Map<string, string>> {
  const key = `${DEFAULT_ETCD_KEY_PREFIX}tunnels/`;
  const end = key.slice(0, -1) + String.fromCharCode(key.charCodeAt(key.length - 1) + 1);
  const b64 = (text: string): string => Buffer.from(text).toString('base64');
  const text = (value: string): string => Buffer.from(value, 'base64').toString();
  const answer = JSON.parse(await etcdCall('/v3/kv/range', { key: b64(key), range_end: b64(end) })) as {
    kvs?: { key: string; value: string }[];
  };
  return new Map((answer.kvs ?? []).map((kv) => [text(kv.key).slice(key.length), text(kv.value)]));
}

/** The etcd members' process ids (found by their data directories), for their CPU time. */
function etcdPids(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (etcd.members.some((m) => cmdline.includes(`--data-dir=${m.dataDir}\0`))) pids.push(Number(entry));
    } catch {
      // the process ended meanwhile
    }
  }
  return pids;
}
const etcdPidList = etcdPids();
const etcdCpu = (): number => etcdPidList.reduce((a, pid) => a + cpuSeconds(pid), 0);

// --- replicas --------------------------------------------------------------------------------
const keyFile = join(stateDir, 'hub-encryption.key');
writeFileSync(keyFile, newEncryptionKeyFileText(), { mode: 0o600 });
const portOf = (r: number): number => BASE_PORT + r;
const urlOf = (r: number): string => `https://127.0.0.1:${portOf(r)}`;

/** Replicas being killed on purpose: any other exit is a crash, recorded in `crashes`. */
const killing = new Set<number>();
const crashes: {
  replica: number;
  pid: number;
  at: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  logTail: string;
}[] = [];
let isStopping = false;

function startReplica(r: number): HubProcess {
  const hub = startHubProcess({
    root,
    port: portOf(r),
    dataDir: join(stateDir, `replica-${r}`),
    home: join(stateDir, `home-${r}`),
    timeoutMs: TIMEOUT_MS,
    args: ['--store', 'etcd', ...hubEtcdStoreFlags(etcd, { encryptionKeyFile: keyFile })],
  });
  // Each replica's whole output, kept for the crash report and for reading afterwards.
  const logPath = join(stateDir, `replica-${r}.log`);
  const log = (chunk: Buffer): void => appendFileSync(logPath, chunk);
  hub.child.stdout?.on('data', log);
  hub.child.stderr?.on('data', log);
  hub.child.once('exit', (code, signal) => {
    if (killing.has(r)) return;
    // A crash: recorded with the end of its log, and the replica started again so that the run goes on.
    const logTail = readFileSync(logPath, 'utf8').slice(-6000);
    crashes.push({ replica: r, pid: hub.pid, at: new Date().toISOString(), code, signal, logTail });
    progress(
      `replica ${r} (pid ${hub.pid}) exited by itself (code ${code}, signal ${signal}); its log ends:\n${logTail}`,
    );
    if (isStopping) return;
    replicas[r] = startReplica(r);
    pools[r]?.destroy();
    pools[r] = new https.Agent({ keepAlive: true, maxSockets: PROBE_CONCURRENCY });
  });
  return hub;
}

// The first replica makes the CA and the admin credential in etcd; the others adopt them.
const replicas: HubProcess[] = [startReplica(0)];
await replicas[0]!.listening;
replicas.push(startReplica(1), startReplica(2));
await Promise.all(replicas.map((r) => r.listening));
const adminConfig = parseHubConfig(readFileSync(join(stateDir, 'replica-0', 'admin.yaml'), 'utf8'), 'admin.yaml');
const admin = { token: adminConfig.token, ca: adminConfig.caPem };
/** Kept-alive connections per replica for the gauges and the probes (renewed when the replica restarts). */
const pools: https.Agent[] = replicas.map(() => new https.Agent({ keepAlive: true, maxSockets: PROBE_CONCURRENCY }));
const call = (r: number, path: string, options: { method?: string; body?: unknown; timeoutMs?: number } = {}) =>
  callHub(`${urlOf(r)}${path}`, { ...admin, pool: pools[r]!, ...options });
/** A replica's own metrics, asked without a token: the fleet's series are not rendered for a poll. */
const ownMetrics = (r: number): Promise<string> => callHub(`${urlOf(r)}/metrics`, { ca: admin.ca, pool: pools[r]! });
const created = JSON.parse(await call(0, '/hub/v1/tokens', { method: 'POST', body: { ttlMs: 4 * 3600_000 } })) as {
  token: string;
  caCertHash: string;
};
progress(`etcd and ${REPLICAS} replicas up (${replicas.map((r) => r.pid).join(', ')}); state in ${stateDir}`);

/** Each live replica's `edgeadm_hub_connected_agents` (undefined: it did not answer). */
async function gauges(): Promise<(number | undefined)[]> {
  return Promise.all(
    replicas.map(async (_, r) => {
      if (replicas[r]!.child.exitCode !== null || replicas[r]!.child.signalCode !== null) return undefined;
      const metrics = await ownMetrics(r).catch(() => '');
      const value = /^edgeadm_hub_connected_agents (\d+)$/m.exec(metrics)?.[1];
      return value === undefined ? undefined : Number(value);
    }),
  );
}
/** Handshake counters of replica r since it started: resumed TLS sessions, refused before TLS (the bound), timed out. */
async function handshakes(r: number): Promise<{ resumed: number; refused: number; timedOut: number }> {
  const metrics = await ownMetrics(r).catch(() => '');
  const read = (name: string): number => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(metrics)?.[1] ?? NaN);
  return {
    resumed: read('edgeadm_hub_tls_sessions_resumed_total'),
    refused: read('edgeadm_hub_handshakes_refused_total'),
    timedOut: read('edgeadm_hub_handshakes_timed_out_total'),
  };
}
async function survivorHandshakes(
  survivors: number[],
): Promise<{ resumed: number; refused: number; timedOut: number }> {
  const each = await Promise.all(survivors.map(handshakes));
  return {
    resumed: each.reduce((a, h) => a + h.resumed, 0),
    refused: each.reduce((a, h) => a + h.refused, 0),
    timedOut: each.reduce((a, h) => a + h.timedOut, 0),
  };
}
const sum = (list: (number | undefined)[]): number => list.reduce<number>((a, b) => a + (b ?? 0), 0);

// --- agent processes -------------------------------------------------------------------------
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
const nextMessage = <T>(child: ChildProcess, type: string): Promise<T> =>
  new Promise((resolve) => {
    const on = (message: { type: string }): void => {
      if (message.type !== type) return;
      child.off('message', on);
      resolve(message as unknown as T);
    };
    child.on('message', on);
  });
await Promise.all(workers.map((w) => nextMessage(w.child, 'ready')));
const agentsCpu = (): number => workers.reduce((a, w) => a + cpuSeconds(w.child.pid ?? 0), 0);

/** Where each agent's tunnel is up: replica by agent index (only tunnels up since `since`, epoch ms). */
async function where(since?: number): Promise<{ up: Map<number, { replica: number; at: number }>; down: number }> {
  const answers = await Promise.all(
    workers.map((w) => {
      const answer = nextMessage<{ up: number[]; down: number }>(w.child, 'where');
      w.child.send({ type: 'where', ...(since === undefined ? {} : { since }) });
      return answer;
    }),
  );
  const up = new Map<number, { replica: number; at: number }>();
  let down = 0;
  for (const answer of answers) {
    down += answer.down;
    for (let i = 0; i < answer.up.length; i += 3) {
      up.set(answer.up[i]!, { replica: answer.up[i + 1]!, at: answer.up[i + 2]! });
    }
  }
  return { up, down };
}

// --- 1. registration -----------------------------------------------------------------------
const registrationStarted = performance.now();
const registrations = await Promise.all(
  workers.map((w, i) => {
    const answer = nextMessage<Record<string, number>>(w.child, 'registered');
    w.child.send({
      type: 'register',
      first: i,
      stride: PROCESSES,
      count: AGENTS,
      hub: `127.0.0.1:${portOf(i % REPLICAS)}`,
      token: created.token,
      pin: created.caCertHash,
      stateDir,
      concurrency: Number(values['register-concurrency']),
    });
    return answer;
  }),
);
const registration = {
  registered: registrations.reduce((a, r) => a + (r.registered ?? 0), 0),
  seconds: (performance.now() - registrationStarted) / 1000,
  clustersInEtcd: await etcdCount(ETCD_KEYS.clusters),
};
progress(`registration: ${JSON.stringify(registration)}`);

// --- 2. connect everyone ---------------------------------------------------------------------
async function untilAllConnected(what: string, since: number): Promise<number> {
  let lastLogged = performance.now();
  while (performance.now() - since < TIMEOUT_MS) {
    const counts = await gauges();
    if (sum(counts) >= AGENTS) return performance.now() - since;
    if (performance.now() - lastLogged > 5000) {
      lastLogged = performance.now();
      progress(`${what}: ${counts.join(' + ')} of ${AGENTS} connected`);
    }
    await sleep(POLL_MS);
  }
  throw new Error(`${what}: not all ${AGENTS} agents connected within ${TIMEOUT_MS / 1000} s: ${await gauges()}`);
}
const hubsCpu = (list: number[]): number => list.reduce((a, r) => a + cpuSeconds(replicas[r]!.pid), 0);
const allReplicas = [0, 1, 2];
const cpuBeforeConnect = { hubs: hubsCpu(allReplicas), agents: agentsCpu(), etcd: etcdCpu() };
const connectStarted = performance.now();
const hubUrls = allReplicas.map(urlOf);
for (const w of workers) w.child.send({ type: 'connect', below: AGENTS, intervalMs: 0, hubs: hubUrls });
const connectMs = await untilAllConnected('connect', connectStarted);
const connectCpu = {
  hubs: hubsCpu(allReplicas) - cpuBeforeConnect.hubs,
  agents: agentsCpu() - cpuBeforeConnect.agents,
  etcd: etcdCpu() - cpuBeforeConnect.etcd,
};
progress(`all ${AGENTS} connected in ${(connectMs / 1000).toFixed(1)} s: ${(await gauges()).join(' + ')}`);
await sleep(SETTLE_MS);
const connect = {
  seconds: connectMs / 1000,
  perReplica: await gauges(),
  cpuMsPerTunnel: {
    hubs: (1000 * connectCpu.hubs) / AGENTS,
    agents: (1000 * connectCpu.agents) / AGENTS,
    etcd: (1000 * connectCpu.etcd) / AGENTS,
  },
  replicaRssMiB: replicas.map((r) => rssMiB(r.pid)),
  agentProcessesRssMiB: workers.reduce((a, w) => a + w.status.rssBytes, 0) / (1024 * 1024),
};

// --- 3. at rest ------------------------------------------------------------------------------
const restCounters = await etcdCounters();
const restCpu = { hubs: replicas.map((r) => cpuSeconds(r.pid)), etcd: etcdCpu() };
const restWelcomes = workers.reduce((a, w) => a + w.status.welcomes, 0);
await sleep(REST_MS);
const restDelta = counterDelta(restCounters, await etcdCounters());
const perMinute = (n: number): number => (n * 60_000) / REST_MS;
const rest = {
  seconds: REST_MS / 1000,
  etcdPerMinute: {
    proposals: perMinute(restDelta.proposals),
    writeTransactions: perMinute(restDelta.revision),
    puts: perMinute(restDelta.puts),
    deletes: perMinute(restDelta.deletes),
  },
  replicaCpuPercent: replicas.map((r, i) => (100_000 * (cpuSeconds(r.pid) - restCpu.hubs[i]!)) / REST_MS),
  etcdCpuPercent: (100_000 * (etcdCpu() - restCpu.etcd)) / REST_MS,
  reconnects: workers.reduce((a, w) => a + w.status.welcomes, 0) - restWelcomes,
  replicaRssMiB: replicas.map((r) => rssMiB(r.pid).rss),
};
progress(`at rest ${REST_MS / 1000} s: ${JSON.stringify(restDelta)}`);

// --- 4. kills --------------------------------------------------------------------------------
/** GET /clusters/NAME/version through replica r: true when the simulated API server answered. */
async function works(index: number, r: number): Promise<string> {
  try {
    const body = await call(r, `/clusters/sim-${index}/version`, { timeoutMs: 10_000 });
    return body.includes('"gitVersion"') ? 'ok' : 'unexpected body';
  } catch (error) {
    return /HTTP (\d+)/.exec((error as Error).message)?.[1] ?? 'error';
  }
}

const quantile = (sorted: number[], q: number): number =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
const summary = (list: number[]): { p50: number; p95: number; max: number } => {
  const sorted = [...list].sort((a, b) => a - b);
  return { p50: quantile(sorted, 0.5) / 1000, p95: quantile(sorted, 0.95) / 1000, max: quantile(sorted, 1) / 1000 };
};

/** Agents whose tunnel claim in etcd is missing or names another replica than the one their tunnel is up on. */
async function wrongClaims(live: number[]): Promise<number> {
  const listing = JSON.parse(await call(live[0]!, '/hub/v1/replicas')) as {
    replicas: { id: string; advertiseUrl: string }[];
  };
  const indexOfId = new Map(listing.replicas.map((r) => [r.id, hubUrls.indexOf(r.advertiseUrl)]));
  const claims = await etcdClaims();
  const { up } = await where();
  let wrong = 0;
  for (const [index, at] of up) if (indexOfId.get(claims.get(`sim-${index}`) ?? '') !== at.replica) wrong += 1;
  return wrong + (AGENTS - up.size);
}

interface KillResult {
  victim: number;
  affected: number;
  /** The victim's own gauge just before the kill (the agents' view, `affected`, should agree). */
  victimGauge: number | undefined;
  /** Agents of the survivors whose tunnels came up again in the window (a storm shows here). */
  collateral: number;
  tunnelUpAgainS: { p50: number; p95: number; max: number };
  worksAgainS: { p50: number; p95: number; max: number };
  /** The sample probed through the survivor not holding the tunnel. */
  forwardedWorksAgainS: { p50: number; p95: number; max: number };
  /** Agents whose claim in etcd (after the victim's lease ran out) does not name the replica their tunnel is up on. */
  claimsWrong: number;
  allWorkAfterS: number;
  probeFailures: Record<string, number>;
  /** The survivors' TLS handshakes from the kill until all work: resumed sessions, refused by the bound, timed out. */
  survivorHandshakes: { resumed: number; refused: number; timedOut: number };
  etcdUntilAllWork: EtcdCounters;
  etcdUntilLeaseGone: EtcdCounters;
  etcdWritesPerReconnect: number;
  cpuMsPerReconnect: { survivors: number; agents: number; etcd: number };
  survivorsRssMiB: number[];
  restartS: number;
  clustersInEtcd: number;
  claimsInEtcd: number;
  notWorking: number;
  /** From the restarted victim listening until no replica holds more than REBALANCED_SHARE of the agents (NaN: not within the wait). */
  rebalancedAfterS: number;
  /** The agents each replica holds at the end of that wait. */
  sharesAfter: number[];
}
/** The issue's bound on one replica's part of the agents after rebalancing. */
const REBALANCED_SHARE = 0.4;
/** No tunnel moved for this long: the rebalancing is over (twice the replicas' interval). */
const REBALANCE_QUIET_MS = 10_000;
/** Tunnels every live replica asked to move, since each started. */
async function movedTotal(): Promise<number> {
  const each = await Promise.all(
    allReplicas.map(async (r) => {
      const metrics = await ownMetrics(r).catch(() => '');
      return Number(/^edgeadm_hub_tunnels_moved_total (\d+)$/m.exec(metrics)?.[1] ?? 0);
    }),
  );
  return each.reduce((a, b) => a + b, 0);
}
/** The agents each replica holds, by the agents' own account. */
async function sharesNow(): Promise<number[]> {
  const { up } = await where();
  return allReplicas.map((r) => [...up.values()].filter((at) => at.replica === r).length);
}
/** How long a restarted replica is given to take its share before the next kill. */
const REBALANCE_WAIT_MS = 180_000;
/** After a restart: until every replica holds at most REBALANCED_SHARE of the agents, by the agents' own account. */
async function untilRebalanced(k: number): Promise<{ rebalancedAfterS: number; sharesAfter: number[] }> {
  const started = performance.now();
  let shares: number[] = [];
  let lastLogged = started;
  while (performance.now() - started < REBALANCE_WAIT_MS) {
    shares = await sharesNow();
    if (Math.max(...shares) <= REBALANCED_SHARE * AGENTS) {
      const rebalancedAfterS = (performance.now() - started) / 1000;
      // The next kill waits for the moves to end: an agent moving away from the next victim as it dies would be
      // counted as the victim's and never as up again.
      let moved = await movedTotal();
      for (;;) {
        await sleep(REBALANCE_QUIET_MS);
        const now = await movedTotal();
        if (now === moved) break;
        moved = now;
      }
      return { rebalancedAfterS, sharesAfter: await sharesNow() };
    }
    if (performance.now() - lastLogged > 5000) {
      lastLogged = performance.now();
      progress(`kill ${k + 1}: rebalancing, agents per replica ${shares.join(' / ')}`);
    }
    await sleep(1000);
  }
  return { rebalancedAfterS: NaN, sharesAfter: shares };
}
const f = (x: number, d = 1): string => x.toFixed(d);
/** One kill in one line, as printed after each kill (so a run cut short still has them) and at the end. */
function killLine(k: KillResult, i: number): string {
  return (
    `kill ${i + 1}: replica ${k.victim}, ${k.affected} agents: tunnels up p50 ${f(k.tunnelUpAgainS.p50)} s, max ${f(k.tunnelUpAgainS.max)} s; ` +
    `work again p50 ${f(k.worksAgainS.p50)} s (forwarded sample p50 ${f(k.forwardedWorksAgainS.p50)} s), all after ${f(k.allWorkAfterS)} s; collateral ${k.collateral}; claims wrong ${k.claimsWrong}; ` +
    `survivors' handshakes ${k.survivorHandshakes.resumed} resumed, ${k.survivorHandshakes.refused} refused, ${k.survivorHandshakes.timedOut} timed out; ` +
    `etcd ${f(k.etcdWritesPerReconnect, 2)} writes/reconnect; CPU ms/reconnect survivors ${f(k.cpuMsPerReconnect.survivors, 2)}, agents ${f(k.cpuMsPerReconnect.agents, 2)}, etcd ${f(k.cpuMsPerReconnect.etcd, 2)}; ` +
    `survivors RSS ${k.survivorsRssMiB.map((m) => f(m, 0)).join(' / ')} MiB; restart ${f(k.restartS)} s; ${k.clustersInEtcd} clusters in etcd; ` +
    `rebalanced (each ≤ ${REBALANCED_SHARE * 100} %) ${f(k.rebalancedAfterS)} s after the restart: ${k.sharesAfter.join(' / ')}`
  );
}
const kills: KillResult[] = [];
for (let k = 0; k < KILLS; k += 1) {
  const victim = k % REPLICAS;
  const survivors = allReplicas.filter((r) => r !== victim);
  const before = await where();
  const affected = [...before.up].filter(([, at]) => at.replica === victim).map(([index]) => index);
  const victimGauge = (await gauges())[victim];
  const counters0 = await etcdCounters();
  const cpu0 = { survivors: hubsCpu(survivors), agents: agentsCpu(), etcd: etcdCpu() };
  const handshakes0 = await survivorHandshakes(survivors);
  const killedAtEpoch = Date.now();
  const killedAt = performance.now();
  killing.add(victim);
  replicas[victim]!.child.kill('SIGKILL');
  await replicas[victim]!.exited;
  killing.delete(victim);

  const pending = new Set(affected);
  const upAgain = new Map<number, number>();
  const worked: number[] = [];
  const workedForwarded: number[] = [];
  const lastProbe = new Map<number, number>();
  const probeFailures: Record<string, number> = {};
  const inFlight = new Set<number>();
  let collateral = 0;
  let lastLogged = killedAt;
  /** Where each moved agent's tunnel is up now (the latest report). */
  const holder = new Map<number, number>();
  /** Moved agents up again and not yet shown to work, in the order to probe them. */
  const queue: number[] = [];
  const queued = new Set<number>();
  // A probe starts whenever one ends (the probes, not the poll, set the pace).
  let isProbing = true;
  const pump = (): void => {
    while (isProbing && inFlight.size < PROBE_CONCURRENCY && queue.length > 0) {
      const index = queue.shift()!;
      queued.delete(index);
      const wait = PROBE_RETRY_MS - (performance.now() - (lastProbe.get(index) ?? 0));
      if (wait > 0) {
        setTimeout(() => {
          if (pending.has(index) && !queued.has(index) && !inFlight.has(index)) {
            queue.push(index);
            queued.add(index);
            pump();
          }
        }, wait);
        continue;
      }
      // Through the survivor holding the tunnel, or (a sample) through the other one: forwarded.
      const at = holder.get(index)!;
      const isForwarded = index % FORWARDED_PROBE_EVERY === 0;
      const through = isForwarded ? (survivors.find((r) => r !== at) ?? at) : at;
      inFlight.add(index);
      lastProbe.set(index, performance.now());
      void works(index, through).then((answer) => {
        inFlight.delete(index);
        if (answer === 'ok' && pending.delete(index)) {
          worked.push(performance.now() - killedAt);
          if (isForwarded) workedForwarded.push(performance.now() - killedAt);
        } else if (answer !== 'ok') {
          probeFailures[answer] = (probeFailures[answer] ?? 0) + 1;
          if (!queued.has(index)) {
            queue.push(index);
            queued.add(index);
          }
        }
        pump();
      });
    }
  };
  while (pending.size > 0 && performance.now() - killedAt < KILL_TIMEOUT_MS) {
    const now = await where(killedAtEpoch);
    collateral = [...now.up.keys()].filter((index) => before.up.get(index)?.replica !== victim).length;
    for (const [index, at] of now.up) {
      if (!pending.has(index) && !upAgain.has(index)) continue;
      if (!upAgain.has(index)) upAgain.set(index, at.at - killedAtEpoch);
      holder.set(index, at.replica);
      if (pending.has(index) && !queued.has(index) && !inFlight.has(index)) {
        queue.push(index);
        queued.add(index);
      }
    }
    pump();
    if (performance.now() - lastLogged > 5000) {
      lastLogged = performance.now();
      progress(`kill ${k + 1}: ${affected.length - pending.size} of ${affected.length} work again`);
    }
    await sleep(POLL_MS);
  }
  const allWorkMs = performance.now() - killedAt;
  isProbing = false;
  const counters1 = await etcdCounters();
  const cpu1 = { survivors: hubsCpu(survivors), agents: agentsCpu(), etcd: etcdCpu() };
  const handshakes1 = await survivorHandshakes(survivors);
  const survivorsRssMiB = survivors.map((r) => rssMiB(replicas[r]!.pid).rss);
  // The victim's lease runs out: etcd deletes its record and whatever claims still name it.
  const leaseGone = killedAt + REPLICA_LEASE_TTL_S * 1000 + LEASE_MARGIN_MS;
  if (performance.now() < leaseGone) await sleep(leaseGone - performance.now());
  const counters2 = await etcdCounters();
  const untilLeaseGone = counterDelta(counters0, counters2);
  const claimsWrong = await wrongClaims(survivors);
  const perReconnect = (n: number): number => (affected.length === 0 ? NaN : (1000 * n) / affected.length);

  const restartStarted = performance.now();
  replicas[victim] = startReplica(victim);
  pools[victim]!.destroy();
  pools[victim] = new https.Agent({ keepAlive: true, maxSockets: PROBE_CONCURRENCY });
  await replicas[victim]!.listening;
  const restartS = (performance.now() - restartStarted) / 1000;
  await untilAllConnected(`after kill ${k + 1}`, performance.now());
  const rebalance = await untilRebalanced(k);
  const result: KillResult = {
    victim,
    affected: affected.length,
    victimGauge,
    collateral,
    claimsWrong,
    tunnelUpAgainS: summary([...upAgain.values()]),
    worksAgainS: summary(worked),
    forwardedWorksAgainS: summary(workedForwarded),
    allWorkAfterS: pending.size === 0 ? allWorkMs / 1000 : NaN,
    probeFailures,
    survivorHandshakes: {
      resumed: handshakes1.resumed - handshakes0.resumed,
      refused: handshakes1.refused - handshakes0.refused,
      timedOut: handshakes1.timedOut - handshakes0.timedOut,
    },
    etcdUntilAllWork: counterDelta(counters0, counters1),
    etcdUntilLeaseGone: untilLeaseGone,
    etcdWritesPerReconnect: affected.length === 0 ? NaN : untilLeaseGone.revision / affected.length,
    cpuMsPerReconnect: {
      survivors: perReconnect(cpu1.survivors - cpu0.survivors),
      agents: perReconnect(cpu1.agents - cpu0.agents),
      etcd: perReconnect(cpu1.etcd - cpu0.etcd),
    },
    survivorsRssMiB,
    restartS,
    clustersInEtcd: await etcdCount(ETCD_KEYS.clusters),
    claimsInEtcd: await etcdCount('tunnels/'),
    notWorking: pending.size,
    ...rebalance,
  };
  kills.push(result);
  progress(killLine(result, k));
}

// --- 5. every registration, once more ---------------------------------------------------------
const listStarted = performance.now();
const listed = await call(0, '/hub/v1/clusters', { timeoutMs: 120_000 })
  .then((text) => (JSON.parse(text) as { clusters: { name: string; connected?: boolean }[] }).clusters)
  .catch((error: Error) => error);
const listS = (performance.now() - listStarted) / 1000;
const finalFailures: number[] = [];
const holders = (await where()).up;
const forwarded = [...Array(AGENTS).keys()].filter((i) => holders.get(i)?.replica !== i % REPLICAS).length;
const cpuBeforeFinal = hubsCpu(allReplicas);
const finalStarted = performance.now();
{
  let next = 0;
  await Promise.all(
    Array.from({ length: PROBE_CONCURRENCY }, async () => {
      while (next < AGENTS) {
        const index = next;
        next += 1;
        let answer = '';
        for (let attempt = 0; attempt < FINAL_PROBE_ATTEMPTS && answer !== 'ok'; attempt += 1) {
          if (attempt > 0) await sleep(1000);
          answer = await works(index, (index + attempt) % REPLICAS);
        }
        if (answer !== 'ok') finalFailures.push(index);
      }
    }),
  );
}
const finalCpu = hubsCpu(allReplicas) - cpuBeforeFinal;
const finalSeconds = (performance.now() - finalStarted) / 1000;
const final = {
  /** Every agent's cluster reached once through replica index mod 3 (`forwarded` of them to the holder): the replicas' CPU per request. */
  probeSeconds: finalSeconds,
  forwarded,
  replicasCpuMsPerRequest: (1000 * finalCpu) / AGENTS,
  clustersInEtcd: await etcdCount(ETCD_KEYS.clusters),
  claimsInEtcd: await etcdCount('tunnels/'),
  claimsWrong: await wrongClaims(allReplicas),
  listedThroughApi: listed instanceof Error ? listed.message : listed.filter((c) => c.name.startsWith('sim-')).length,
  listSeconds: listS,
  notWorking: finalFailures.length,
  perReplica: await gauges(),
  replicaRssMiB: replicas.map((r) => rssMiB(r.pid)),
};
const lost = AGENTS - Math.min(final.clustersInEtcd, AGENTS - final.notWorking);

function sumCounts(list: Record<string, number>[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const counts of list) for (const [k, v] of Object.entries(counts)) out[k] = (out[k] ?? 0) + v;
  return out;
}
const results = {
  agents: AGENTS,
  processes: PROCESSES,
  replicas: REPLICAS,
  kills: KILLS,
  registration,
  connect,
  rest,
  killResults: kills,
  final,
  registrationsLost: lost,
  crashes,
  agentLog: sumCounts(workers.map((w) => w.status.said)),
  load: readFileSync('/proc/loadavg', 'utf8').trim(),
};

for (const w of workers) w.child.send({ type: 'stop' });
await Promise.race([Promise.all(workers.map((w) => new Promise((r) => w.child.once('exit', r)))), sleep(30_000)]);
isStopping = true;
for (const r of allReplicas) killing.add(r);
for (const r of replicas) r.child.kill('SIGTERM');
await Promise.race([Promise.all(replicas.map((r) => r.exited)), sleep(30_000)]);
await etcd.stop();
if (values['keep-state'] === true) progress(`state kept in ${stateDir} and ${etcd.dir}`);
else for (const dir of [stateDir, etcd.dir]) rmSync(dir, { recursive: true, force: true });

if (values.json) process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
else {
  const worst = Math.max(...kills.map((k) => k.allWorkAfterS));
  process.stdout.write(
    [
      `(e) ${AGENTS} simulated agents in ${PROCESSES} processes, ${REPLICAS} hub replicas on a 3-member etcd, ${KILLS} replica kills`,
      `registration: ${registration.registered} in ${f(registration.seconds)} s`,
      `connect: all in ${f(connect.seconds)} s (${connect.perReplica.join(' + ')}); CPU ms per tunnel replicas ${f(connect.cpuMsPerTunnel.hubs, 2)}, agents ${f(connect.cpuMsPerTunnel.agents, 2)}, etcd ${f(connect.cpuMsPerTunnel.etcd, 2)}; replica RSS ${connect.replicaRssMiB.map((m) => f(m.rss, 0)).join(' / ')} MiB`,
      `at rest ${rest.seconds} s: etcd per minute ${rest.etcdPerMinute.proposals} proposals, ${rest.etcdPerMinute.writeTransactions} write transactions; replica CPU ${rest.replicaCpuPercent.map((p) => f(p)).join(' / ')} %`,
      ...kills.map(killLine),
      `worst kill: all agents work again after ${f(worst)} s (goal ≤ 30 s)`,
      `final: every agent's cluster reached once in ${f(final.probeSeconds)} s (replicas' CPU ${f(final.replicasCpuMsPerRequest, 2)} ms per request, ${final.forwarded} forwarded); ${final.clustersInEtcd} clusters in etcd (claims wrong: ${final.claimsWrong}), ${String(final.listedThroughApi)} listed through the API (${f(final.listSeconds)} s), ${final.notWorking} not working; registrations lost: ${lost} (goal 0)`,
      `replica RSS at the end: ${final.replicaRssMiB.map((m) => `${f(m.rss, 0)} (peak ${f(m.peak, 0)})`).join(' / ')} MiB`,
      `agent log: ${JSON.stringify(results.agentLog)}`,
      `replica crashes (exits not caused by the benchmark): ${crashes.length}${crashes.map((c) => `\n  replica ${c.replica} at ${c.at} (code ${c.code}, signal ${c.signal}); log ends:\n${c.logTail}`).join('')}`,
      `load: ${results.load}`,
      '',
    ].join('\n'),
  );
}
process.exit(0);
