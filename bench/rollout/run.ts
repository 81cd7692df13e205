/**
 * Rollout benchmark: N SIMULATED clusters (default 1,000) connected to one
 * hub, `edgeadm hub serve` as its own process (bin/run.js, so `npm run
 * build` first), and one Rollout applied with the real CLI.
 *
 * What is simulated: the clusters. Each is an agent of bench/tunnel's scale
 * benchmark (registered with the hub, edgeadm's real `runTunnelAgent`, many
 * per process) running edgeadm's real rollout agent (CopyAgent) on its
 * tunnel; its API server is a SMALL SIMULATED one (mini-apiserver.ts: one
 * HTTPS server per agent process, each cluster its own store by bearer
 * token; discovery for v1 and apps/v1, server-side apply, GET, DELETE,
 * ConfigMap lists, and a Deployment whose replicas all become available
 * `--ready-after-ms` after its apply; no RBAC, no real controllers).
 *
 * 1. All online: a Rollout of a Namespace, a ConfigMap and a Deployment,
 *    customized per cluster (`${cluster.name}`, a label), one wave of 100 %,
 *    maxUnavailable 100 %, applied with `edgeadm hub rollout apply -f`.
 *    Measured: from apply until the status view (`GET /hub/v1/rollouts/NAME`,
 *    what `rollout status --json` shows) counts every cluster ready; per
 *    cluster, from the agent receiving its copy to the Deployment applied
 *    (apply latency) and to the agent first reading it back ready (ready
 *    latency), on agent-side clocks (the same machine); how long after the
 *    last cluster's ready read-back the status view said so; hub CPU seconds
 *    per cluster; hub RSS.
 * 2. 30 % offline: those agents stopped before a second Rollout is applied;
 *    when the others are ready, all of them come back at once: time until
 *    every cluster is ready.
 * 3. The delivery alternative, for `--push-sample` clusters: the hub pushing
 *    each object through the kube path (hub kube proxy, tunnel, agent's
 *    upstream), as an applier driven through the hub would: discovery,
 *    inventory read and writes, one apply per object, then read-backs every
 *    2 s until ready (the agent's own interval). The applier runs in this
 *    process, so the hub's CPU counted is only what the kube path costs it
 *    (a lower bound for pushing). Compared with the agent-side path's hub
 *    CPU per cluster, and both projected to 10,000 clusters.
 *
 *   npm run build && node bench/rollout/run.ts [--clusters 1000] [--processes 4] [--ready-after-ms 0]
 *     [--offline-percent 30] [--push-sample 200] [--port 29543] [--state-dir DIR] [--timeout-s 600]
 *     [--hub-node-options "--cpu-prof --cpu-prof-dir=DIR"] [--json]
 *     [--document-mib 10] [--only-online] [--hub-root DIR] [--hub-args "--max-queued-handshakes 0"]
 *     [--agents-nice 10] [--agents-node-options=--perf-basic-prof] [--ready-poll-ms 300000]
 *
 * `--document-mib M` adds M ConfigMaps of 1 MiB (nothing to fill) to each
 * Rollout; `--only-online` stops after step 1, whose figures then include
 * the hub's peak RSS growth from the apply on; `--hub-root DIR` runs the
 * hub of another checkout (built), for a baseline in the same run;
 * `--hub-args` adds `hub serve` flags; `--agents-nice N` runs the agent
 * processes at that niceness (the simulated side yielding the CPU to the
 * hub; 0 by default: on this machine starved agents miss their pings and
 * deadlines, which is the simulation failing, not the hub);
 * `--agents-node-options` are Node flags of the agent processes.
 * `--ready-poll-ms` is the simulated clusters' read-back interval of a ready
 * copy (300 s; the product's is 30 s): each cluster polls its own API
 * server, which a real fleet spreads over its clusters, but 10,000 clusters
 * polling here are 2,000 HTTPS requests a second on the hub's 2 cores, and
 * a poll that finds nothing changed sends the hub nothing.
 *
 * `--state-dir` keeps the hub's data and the agents' credentials, so a
 * second run reuses the registrations (as bench/tunnel/scale.ts does). At
 * 10,000 clusters run it under `ulimit -n` of the hard limit (each agent
 * holds its tunnel and two kept-alive connections to its simulated API).
 */
import { fork, execFile, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type * as HubProcessModule from '../support/hub-process.js';
import type * as ApplyCopyModule from '../../src/rollout/apply-copy.js';
import type * as KubeClientModule from '../../src/kube/client.js';

const { values } = parseArgs({
  options: {
    clusters: { type: 'string', default: '1000' },
    processes: { type: 'string', default: '4' },
    port: { type: 'string', default: '29543' },
    'ready-after-ms': { type: 'string', default: '0' },
    'offline-percent': { type: 'string', default: '30' },
    'push-sample': { type: 'string', default: '200' },
    'state-dir': { type: 'string' },
    'register-concurrency': { type: 'string', default: '8' },
    'timeout-s': { type: 'string', default: '600' },
    'hub-node-options': { type: 'string' },
    'document-mib': { type: 'string', default: '0' },
    'only-online': { type: 'boolean' },
    'hub-root': { type: 'string' },
    'hub-args': { type: 'string' },
    'agents-nice': { type: 'string', default: '0' },
    'agents-node-options': { type: 'string' },
    'ready-poll-ms': { type: 'string', default: '300000' },
    json: { type: 'boolean' },
  },
});
const CLUSTERS = Number(values.clusters);
const PROCESSES = Math.min(Number(values.processes), CLUSTERS);
const PORT = Number(values.port);
const TIMEOUT_MS = Number(values['timeout-s']) * 1000;
const READY_AFTER_MS = Number(values['ready-after-ms']);
const OFFLINE_PERCENT = Number(values['offline-percent']);
const AGENTS_NICE = Number(values['agents-nice']);
const PUSH_SAMPLE = Math.min(Number(values['push-sample']), CLUSTERS);
/** MiB of ConfigMaps (1 MiB each, nothing to fill) added to each Rollout: a large document. */
const DOCUMENT_MIB = Number(values['document-mib']);
/** How often the status view is read while waiting (over one kept-alive connection). */
const POLL_MS = 100;
/** The agent's read-back interval of a copy that is not ready (COPY_POLL_NOT_READY_MS), used by the push path too. */
const PUSH_POLL_MS = 2_000;
/** Idle window over which the hub's CPU with every rollout ready is read. */
const IDLE_WINDOW_MS = 10_000;
const PROJECTED_CLUSTERS = 10_000;
/** Rollout names of this run: a reused state directory holds the earlier runs' rollouts. */
const RUN = Date.now().toString(36);
const ROLLOUT_A = `bench-a-${RUN}`;
const ROLLOUT_B = `bench-b-${RUN}`;
/** Clusters the push path works on at once. */
const PUSH_CONCURRENCY = 32;

// Node runs the .ts file itself (type stripping); tsc checks it through the type import.
const { callHub, cpuSeconds, loadAverage, rssMiB, startHubProcess } = (await import(
  new URL('../support/hub-process.ts', import.meta.url).href
)) as typeof HubProcessModule;
const root = fileURLToPath(new URL('../..', import.meta.url));
const stateDir = values['state-dir'] ?? mkdtempSync(join(tmpdir(), 'edgeadm-bench-rollout-'));
mkdirSync(join(stateDir, 'agents'), { recursive: true });
const hubDir = join(stateDir, 'hub');
const progress = (line: string): void =>
  void process.stderr.write(`[rollout ${new Date().toISOString()}] ${line} (load ${loadAverage()})\n`);

const built = (path: string): Promise<unknown> => import(new URL(`../../lib/${path}`, import.meta.url).href);
const { CopyApplier } = (await built('rollout/apply-copy.js')) as typeof ApplyCopyModule;
const { KubeClient } = (await built('kube/client.js')) as typeof KubeClientModule;

// --- hub and agents --------------------------------------------------------------------------
const isReused = existsSync(join(hubDir, 'admin.yaml'));
const hub = startHubProcess({
  // Another checkout's hub (its bin/run.js, built) for a baseline in the same run; this one's by default.
  root: values['hub-root'] ?? root,
  port: PORT,
  dataDir: hubDir,
  home: join(stateDir, 'home'),
  timeoutMs: TIMEOUT_MS,
  ...(values['hub-node-options'] === undefined ? {} : { nodeOptions: values['hub-node-options'] }),
  ...(values['hub-args'] === undefined ? {} : { args: values['hub-args'].split(/\s+/).filter(Boolean) }),
});
const hubUrl = await hub.listening;
const ca = readFileSync(join(hubDir, 'pki', 'ca.crt'), 'utf8');
const adminConfig = join(hubDir, 'admin.yaml');
const token = /^token: (\S+)$/m.exec(readFileSync(adminConfig, 'utf8'))?.[1] ?? '';
const pool = new https.Agent({ keepAlive: true, maxSockets: 1 });
const api = (path: string, options: { method?: string; body?: unknown } = {}): Promise<string> =>
  callHub(`https://127.0.0.1:${PORT}${path}`, { ...options, token, ca, pool, timeoutMs: 30_000 });
const created = JSON.parse(await api('/hub/v1/tokens', { method: 'POST', body: { ttlMs: 4 * 3600_000 } })) as {
  token: string;
  caCertHash: string;
};
progress(`hub ${hub.pid} at ${hubUrl} (${isReused ? 'reusing' : 'new'} state in ${stateDir})`);

const workers: ChildProcess[] = [];
for (let i = 0; i < PROCESSES; i += 1) {
  const child = fork(join(root, 'bench/tunnel/scale-agents.ts'), [], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    ...(values['agents-node-options'] === undefined
      ? {}
      : { execArgv: [...process.execArgv, ...values['agents-node-options'].split(/\s+/).filter(Boolean)] }),
  });
  process.once('exit', () => child.kill('SIGKILL'));
  if (child.pid !== undefined && AGENTS_NICE !== 0) setPriority(child.pid, AGENTS_NICE);
  child.on('message', (message: { type: string }) => {
    if (message.type === 'failed') {
      progress(`an agent process failed: ${JSON.stringify(message)}`);
      process.exit(1);
    }
  });
  workers.push(child);
}
const nextMessage = <T = Record<string, number>>(child: ChildProcess, type: string): Promise<T> =>
  new Promise((resolve) => {
    const on = (message: { type: string }): void => {
      if (message.type !== type) return;
      child.off('message', on);
      resolve(message as unknown as T);
    };
    child.on('message', on);
  });
await Promise.all(workers.map((w) => nextMessage(w, 'ready')));
const registrationStarted = performance.now();
const registrations = await Promise.all(
  workers.map((w, i) => {
    const answer = nextMessage(w, 'registered');
    w.send({
      type: 'register',
      first: i,
      stride: PROCESSES,
      count: CLUSTERS,
      hub: `127.0.0.1:${PORT}`,
      token: created.token,
      pin: created.caCertHash,
      stateDir,
      concurrency: Number(values['register-concurrency']),
    });
    return answer;
  }),
);
progress(
  `registration: ${registrations.reduce((a, r) => a + (r.registered ?? 0), 0)} registered, ${registrations.reduce((a, r) => a + (r.reused ?? 0), 0)} reused in ${((performance.now() - registrationStarted) / 1000).toFixed(1)} s`,
);

async function connectedAgents(): Promise<number> {
  // No token: the hub's own metrics, not the fleet's series for every cluster.
  const metrics = await callHub(`https://127.0.0.1:${PORT}/metrics`, { ca, pool, timeoutMs: 30_000 }).catch(() => '');
  return Number(/^edgeadm_hub_connected_agents (\d+)$/m.exec(metrics)?.[1] ?? NaN);
}
async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const started = performance.now();
  let lastLogged = started;
  while (performance.now() - started < TIMEOUT_MS) {
    const value = await probe();
    if (value !== undefined) return value;
    if (performance.now() - lastLogged > 5000) {
      lastLogged = performance.now();
      progress(`waiting: ${what}`);
    }
    await sleep(POLL_MS);
  }
  throw new Error(`timed out: ${what}`);
}
const connectStarted = performance.now();
for (const w of workers)
  w.send({
    type: 'connect',
    below: CLUSTERS,
    intervalMs: 0,
    rollouts: { readyAfterMs: READY_AFTER_MS, pollReadyMs: Number(values['ready-poll-ms']) },
  });
await until(`all ${CLUSTERS} connected`, async () => ((await connectedAgents()) >= CLUSTERS ? true : undefined));
progress(`all ${CLUSTERS} connected in ${((performance.now() - connectStarted) / 1000).toFixed(1)} s`);
await sleep(3000);

// --- the Rollout ----------------------------------------------------------------------------
interface StatusView {
  revision: number;
  state: string;
  statusVersion: number;
  counts: Record<string, number>;
  summaries: { name: string; value?: unknown }[];
  updatedAt: string;
}
function rolloutDocument(name: string): string {
  return JSON.stringify({
    apiVersion: 'edgeadm.io/v1alpha1',
    kind: 'Rollout',
    metadata: { name },
    spec: {
      placement: { clusterSelector: 'bench=scale' },
      resources: [
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bench' } },
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: `${name}-site`, namespace: 'bench', labels: { site: '${cluster.name}' } },
          data: { site: '${cluster.name}', bench: '${label:bench|none}' },
        },
        ...Array.from({ length: DOCUMENT_MIB }, (_, i) => ({
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: `${name}-blob-${i}`, namespace: 'bench' },
          data: { blob: 'x'.repeat(1024 * 1024 - 64) },
        })),
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name, namespace: 'bench', labels: { site: '${cluster.name}' } },
          spec: {
            replicas: 2,
            selector: { matchLabels: { app: name } },
            template: {
              metadata: { labels: { app: name } },
              spec: { containers: [{ name: 'web', image: 'registry.example/web:${cluster.name}' }] },
            },
          },
        },
      ],
      strategy: {
        waves: ['100%'],
        maxUnavailable: '100%',
        failureBudget: '100%',
        soakSeconds: 0,
        deadlineSeconds: 600,
      },
      status: {
        summaries: [{ name: 'total-available', reduce: 'sum', field: '.status.availableReplicas', kind: 'Deployment' }],
      },
    },
  });
}
/** Applies a Rollout with the real CLI; resolves when the CLI exits (its wall time). */
async function applyWithCli(name: string): Promise<{ startedAt: number; cliMs: number }> {
  const file = join(stateDir, `${name}.yaml`);
  writeFileSync(file, rolloutDocument(name));
  const startedAt = Date.now();
  await new Promise<void>((resolve, reject) =>
    execFile(
      process.execPath,
      [join(root, 'bin/run.js'), 'hub', 'rollout', 'apply', '-f', file, '--hub-config', adminConfig, '--json'],
      { env: { ...process.env, NO_COLOR: '1', EDGEADM_HOME: join(stateDir, 'home') } },
      (error, stdout, stderr) =>
        error ? reject(new Error(`rollout apply: ${error.message}: ${stdout}${stderr}`)) : resolve(),
    ),
  );
  return { startedAt, cliMs: Date.now() - startedAt };
}
const status = async (name: string): Promise<StatusView> =>
  JSON.parse(await api(`/hub/v1/rollouts/${encodeURIComponent(name)}`)) as StatusView;
/** Waits until the status view counts `ready` clusters ready; the epoch ms it first said so. */
async function untilReady(
  name: string,
  ready: number,
  extra?: (view: StatusView) => boolean,
): Promise<{ at: number; view: StatusView }> {
  return until(`${name}: ${ready} ready`, async () => {
    const view = await status(name).catch(() => undefined);
    if (view === undefined || (view.counts['ready'] ?? 0) < ready || (extra !== undefined && !extra(view)))
      return undefined;
    return { at: Date.now(), view };
  });
}
interface Times {
  received?: number;
  applied?: number;
  ready?: number;
  requests: number;
}
async function agentTimes(): Promise<Record<string, Times>> {
  const parts = await Promise.all(
    workers.map((w) => {
      const answer = nextMessage<{ times: Record<string, Times> }>(w, 'times');
      w.send({ type: 'times' });
      return answer;
    }),
  );
  return Object.assign({}, ...parts.map((p) => p.times)) as Record<string, Times>;
}
async function resetTimes(): Promise<void> {
  await Promise.all(
    workers.map((w) => {
      const answer = nextMessage(w, 'times-reset');
      w.send({ type: 'reset-times' });
      return answer;
    }),
  );
}
const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
function latencies(all: Record<string, Times>, rollout: string, clusters: (c: string) => boolean, since: number) {
  const times: Record<string, Times> = {};
  for (const [key, t] of Object.entries(all)) if (key.endsWith(`/${rollout}`)) times[key.split('/')[0] as string] = t;
  const delivery: number[] = [];
  const apply: number[] = [];
  const ready: number[] = [];
  let lastReady = 0;
  for (const [cluster, t] of Object.entries(times)) {
    if (!clusters(cluster) || t.received === undefined) continue;
    delivery.push(t.received - since);
    if (t.applied !== undefined) apply.push(t.applied - t.received);
    if (t.ready !== undefined) {
      ready.push(t.ready - t.received);
      lastReady = Math.max(lastReady, t.ready);
    }
  }
  apply.sort((a, b) => a - b);
  ready.sort((a, b) => a - b);
  delivery.sort((a, b) => a - b);
  return {
    clusters: apply.length,
    deliveredAfterMs: {
      p50: percentile(delivery, 50),
      p99: percentile(delivery, 99),
      max: delivery[delivery.length - 1] ?? NaN,
    },
    applyMs: { p50: percentile(apply, 50), p99: percentile(apply, 99), max: apply[apply.length - 1] ?? NaN },
    readyMs: { p50: percentile(ready, 50), p99: percentile(ready, 99), max: ready[ready.length - 1] ?? NaN },
    lastReadyAt: lastReady,
  };
}

// --- 1. all online ----------------------------------------------------------------------------
await resetTimes();
const agentsCpu = (): number => workers.reduce((a, w) => a + cpuSeconds(w.pid ?? 0), 0);
const cpu1 = cpuSeconds(hub.pid);
const agentsCpu1 = agentsCpu();
// The hub's peak RSS from here on: Linux resets VmHWM to the current RSS when told (proc(5), clear_refs 5).
const rssBeforeApply = rssMiB(hub.pid).rss;
writeFileSync(`/proc/${hub.pid}/clear_refs`, '5');
const apply1 = await applyWithCli(ROLLOUT_A);
const ready1 = await untilReady(ROLLOUT_A, CLUSTERS);
const cpuRollout1 = cpuSeconds(hub.pid) - cpu1;
const agentsCpuRollout1 = agentsCpu() - agentsCpu1;
const rss1 = rssMiB(hub.pid);
const load1 = loadAverage();
const lat1 = latencies(await agentTimes(), ROLLOUT_A, () => true, apply1.startedAt);
const online = {
  clusters: CLUSTERS,
  cliApplyMs: apply1.cliMs,
  allReadyAfterApplySeconds: (ready1.at - apply1.startedAt) / 1000,
  copyReceivedAfterApplyMs: lat1.deliveredAfterMs,
  agentProcessesCpuSeconds: agentsCpuRollout1,
  applyLatencyMs: lat1.applyMs,
  readyLatencyMs: lat1.readyMs,
  statusCurrentAfterLastReadyReadMs: ready1.at - lat1.lastReadyAt,
  summaries: ready1.view.summaries,
  hubCpuSeconds: cpuRollout1,
  hubCpuMsPerCluster: (cpuRollout1 * 1000) / CLUSTERS,
  hubRssMiB: rss1,
  hubRssBeforeApplyMiB: rssBeforeApply,
  hubRssPeakGrowthMiB: rss1.peak - rssBeforeApply,
  documentMiB: DOCUMENT_MIB,
  load: load1,
};
progress(`all online: ${JSON.stringify(online)}`);
if (values['only-online']) {
  // What the hub still holds once every tunnel is gone: per-connection buffers, or not.
  for (const w of workers) w.kill('SIGKILL');
  await until('every agent gone', async () => ((await connectedAgents()) === 0 ? true : undefined));
  await sleep(5_000);
  const afterAgentsGone = rssMiB(hub.pid).rss;
  progress(`hub RSS ${afterAgentsGone.toFixed(0)} MiB once every agent is gone`);
  if (values.json)
    process.stdout.write(
      `${JSON.stringify({ online: { ...online, hubRssAfterAgentsGoneMiB: afterAgentsGone } }, null, 2)}\n`,
    );
  hub.child.kill('SIGTERM');
  await Promise.race([hub.exited, sleep(15_000)]);
  process.exit(0);
}
const idleStart = cpuSeconds(hub.pid);
await sleep(IDLE_WINDOW_MS);
const idleCpuPerSecond = (cpuSeconds(hub.pid) - idleStart) / (IDLE_WINDOW_MS / 1000);

// --- 2. 30 % offline, then back at once -------------------------------------------------------
// Spread evenly: cluster i is offline when the running count of P % steps up at it.
const offlineIndexes = Array.from({ length: CLUSTERS }, (_, i) => i).filter(
  (i) => Math.floor(((i + 1) * OFFLINE_PERCENT) / 100) > Math.floor((i * OFFLINE_PERCENT) / 100),
);
const isOffline = new Set(offlineIndexes.map((i) => `sim-${i}`));
await Promise.all(
  workers.map((w) => {
    const answer = nextMessage(w, 'disconnected');
    w.send({ type: 'disconnect', indexes: offlineIndexes });
    return answer;
  }),
);
await until('offline agents gone', async () =>
  (await connectedAgents()) <= CLUSTERS - offlineIndexes.length ? true : undefined,
);
await resetTimes();
const cpu2 = cpuSeconds(hub.pid);
const apply2 = await applyWithCli(ROLLOUT_B);
const onlineCount = CLUSTERS - offlineIndexes.length;
const ready2 = await untilReady(
  ROLLOUT_B,
  onlineCount,
  (v) => (v.counts['offline-pending'] ?? 0) >= offlineIndexes.length,
);
const lat2 = latencies(await agentTimes(), ROLLOUT_B, (c) => !isOffline.has(c), apply2.startedAt);
const returnedAt = Date.now();
for (const w of workers) w.send({ type: 'reconnect', indexes: offlineIndexes });
const reconnected = until('returning agents connected', async () =>
  (await connectedAgents()) >= CLUSTERS ? Date.now() : undefined,
);
const ready2All = await untilReady(ROLLOUT_B, CLUSTERS);
const reconnectedAt = await reconnected;
const cpuRollout2 = cpuSeconds(hub.pid) - cpu2;
const load2 = loadAverage();
const lat2Returned = latencies(await agentTimes(), ROLLOUT_B, (c) => isOffline.has(c), returnedAt);
const offline = {
  offlineClusters: offlineIndexes.length,
  onlineReadyAfterApplySeconds: (ready2.at - apply2.startedAt) / 1000,
  onlineApplyLatencyMs: lat2.applyMs,
  offlinePendingShown: ready2.view.counts['offline-pending'],
  returningAllReadyAfterReturnSeconds: (ready2All.at - returnedAt) / 1000,
  returningAllConnectedAfterReturnSeconds: (reconnectedAt - returnedAt) / 1000,
  returningReadyLatencyMs: lat2Returned.readyMs,
  returningCopyReceivedAfterReturnMs: lat2Returned.deliveredAfterMs,
  hubCpuSeconds: cpuRollout2,
  hubRssMiB: rssMiB(hub.pid),
  load: load2,
};
progress(`30 % offline: ${JSON.stringify(offline)}`);

// --- 3. the alternative: pushing each object through the kube path --------------------------
const sample = Array.from({ length: PUSH_SAMPLE }, (_, i) => `sim-${i}`);
const owner = { user: 'admin', groups: [] as string[] };
function pushCopy(cluster: string) {
  const revision = '1-push';
  const meta = (name: string, namespace?: string) => ({
    name,
    ...(namespace === undefined ? {} : { namespace }),
    labels: { 'edgeadm.io/rollout': 'bench-push', site: cluster },
    annotations: { 'edgeadm.io/rollout-revision': revision },
  });
  return {
    revision,
    objects: [
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: meta('bench-push-site', 'bench'), data: { site: cluster } },
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: meta('bench-push', 'bench'),
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'bench-push' } },
          template: {
            metadata: { labels: { app: 'bench-push' } },
            spec: { containers: [{ name: 'web', image: `registry.example/web:${cluster}` }] },
          },
        },
      },
    ],
  } as unknown as Parameters<InstanceType<typeof CopyApplier>['apply']>[1];
}
const clients = sample.map(
  (cluster) =>
    new KubeClient(
      { contextName: 'bench', server: `https://127.0.0.1:${PORT}/clusters/${cluster}`, caPem: ca, token },
      { isKeepAlive: true },
    ),
);
const appliers = clients.map((client) => new CopyApplier(client));
const cpu3 = cpuSeconds(hub.pid);
const push3Started = Date.now();
let polls = 0;
/**
 * At most PUSH_CONCURRENCY clusters are pushed to at once: more new TLS
 * connections at once would meet the hub's bound on pending handshakes (a
 * pushing hub would keep its connections; only the first push opens one).
 */
let nextPush = 0;
const pushOne = async (i: number): Promise<void> => {
  const cluster = sample[i] as string;
  {
    const applier = appliers[i] as InstanceType<typeof CopyApplier>;
    await applier.apply('bench-push', pushCopy(cluster), { owner });
    for (;;) {
      const report = await applier.report('bench-push', cluster);
      polls += 1;
      if (report?.readiness === 'ready') return;
      await sleep(PUSH_POLL_MS);
    }
  }
};
await Promise.all(
  Array.from({ length: PUSH_CONCURRENCY }, async () => {
    while (nextPush < sample.length) await pushOne(nextPush++);
  }),
);
const cpuPush = cpuSeconds(hub.pid) - cpu3;
const pushSeconds = (Date.now() - push3Started) / 1000;
// A steady-state read-back round (what pushing costs per cluster for every later status poll).
const cpu4 = cpuSeconds(hub.pid);
await Promise.all(
  sample.map((cluster, i) => (appliers[i] as InstanceType<typeof CopyApplier>).report('bench-push', cluster)),
);
const cpuPollRound = cpuSeconds(hub.pid) - cpu4;
for (const client of clients) client.close();
const load3 = loadAverage();
const agentMsPerCluster = (cpuRollout1 * 1000) / CLUSTERS;
const pushMsPerCluster = (cpuPush * 1000) / PUSH_SAMPLE;
const delivery = {
  sample: PUSH_SAMPLE,
  pushSeconds,
  pushPolls: polls,
  pushHubCpuMsPerCluster: pushMsPerCluster,
  pushHubCpuMsPerStatusPoll: (cpuPollRound * 1000) / PUSH_SAMPLE,
  agentSideHubCpuMsPerCluster: agentMsPerCluster,
  agentSideIdleHubCpuPerSecond: idleCpuPerSecond,
  projected10k: {
    agentSideHubCpuSeconds: (agentMsPerCluster * PROJECTED_CLUSTERS) / 1000,
    pushHubCpuSeconds: (pushMsPerCluster * PROJECTED_CLUSTERS) / 1000,
    pushStatusPollsEvery30sHubCpuPerSecond: (((cpuPollRound * 1000) / PUSH_SAMPLE) * PROJECTED_CLUSTERS) / 1000 / 30,
  },
  load: load3,
};
progress(`delivery: ${JSON.stringify(delivery)}`);

const results = {
  simulated:
    'clusters: bench/tunnel agents with the real CopyAgent, each on a small simulated API (bench/rollout/mini-apiserver.ts)',
  clusters: CLUSTERS,
  processes: PROCESSES,
  readyAfterMs: READY_AFTER_MS,
  online,
  offline,
  delivery,
  hubRssMiB: rssMiB(hub.pid),
};
if (values.json) process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
else {
  const f = (x: number, d = 1): string => x.toFixed(d);
  process.stdout.write(
    [
      `${CLUSTERS} SIMULATED clusters (real tunnel agent + CopyAgent, small simulated API, Deployment ready ${READY_AFTER_MS} ms after apply), ${PROCESSES} agent processes, one hub process`,
      `  all online: apply (CLI ${apply1.cliMs} ms) -> all ready in status ${f(online.allReadyAfterApplySeconds, 2)} s; copy received p50 ${online.copyReceivedAfterApplyMs.p50} ms p99 ${online.copyReceivedAfterApplyMs.p99} ms after apply; apply latency p50 ${online.applyLatencyMs.p50} ms p99 ${online.applyLatencyMs.p99} ms; ready latency p50 ${online.readyLatencyMs.p50} ms p99 ${online.readyLatencyMs.p99} ms; status current ${online.statusCurrentAfterLastReadyReadMs} ms after the last ready read-back; hub CPU ${f(cpuRollout1, 2)} s (${f(online.hubCpuMsPerCluster, 2)} ms/cluster); hub RSS ${f(rss1.rss, 0)} MiB (peak ${f(rss1.peak, 0)}); agent processes CPU ${f(agentsCpuRollout1, 1)} s; load ${load1}`,
      `  ${offlineIndexes.length} offline: online ready ${f(offline.onlineReadyAfterApplySeconds, 2)} s after apply (offline-pending shown ${offline.offlinePendingShown}); returning all ready ${f(offline.returningAllReadyAfterReturnSeconds, 2)} s after they came back (all connected after ${f(offline.returningAllConnectedAfterReturnSeconds, 2)} s); load ${load2}`,
      `  delivery (sample ${PUSH_SAMPLE}): push through kube path ${f(pushMsPerCluster, 2)} ms hub CPU/cluster (+${f(delivery.pushHubCpuMsPerStatusPoll, 2)} ms per status poll) vs agent-side ${f(agentMsPerCluster, 2)} ms/cluster; idle hub CPU with all ready ${f(idleCpuPerSecond, 3)} s/s; load ${load3}`,
      '',
    ].join('\n'),
  );
}
for (const w of workers) w.send({ type: 'stop' });
await Promise.race([Promise.all(workers.map((w) => new Promise((r) => w.once('exit', r)))), sleep(30_000)]);
hub.child.kill('SIGTERM');
await Promise.race([hub.exited, sleep(15_000)]);
process.exit(0);
