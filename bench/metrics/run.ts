/**
 * Metrics benchmark: one scrape of the hub's `/metrics` with N registered
 * clusters (default 10,000), the fleet's series included (issue #38).
 *
 * What is simulated: the N clusters are ROWS in the hub's store, written
 * before the hub starts (labels, last-seen times spread over three days),
 * with no agent, so every cluster is Disconnected; the scrape reads the store
 * and renders a series set per cluster either way.
 *
 * Measured:
 * 1. end to end: `edgeadm hub serve` as its own process (bin/run.js, so
 *    `npm run build` first), scraped over HTTPS with the admin's token,
 *    `--samples` scrapes one after another: p50, p99 and max, the hub's CPU
 *    time per scrape, and the size of the answer. It covers the hub's own
 *    metrics, the store read, the cluster views and the fleet's series;
 * 2. the fleet's series alone (`renderFleetMetrics`, in this process) from N
 *    views that each carry a health report (nodes and two certificates, as
 *    agents report them; the store keeps no reports yet, so step 1 renders
 *    no node or cluster certificate series): p50, p99 and max.
 *
 *   npm run build && npm run bench:metrics -- [--clusters 10000] [--samples 30] [--port 29644] [--json]
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { ClusterView } from '../../src/hub/contract/views.js';
import type * as HubProcessModule from '../support/hub-process.js';
import type * as FleetMetricsModule from '../../src/hub/metrics/fleet-metrics.js';
import type * as StoreModule from '../../src/hub/store/sqlite-store.js';

const { values } = parseArgs({
  options: {
    clusters: { type: 'string', default: '10000' },
    samples: { type: 'string', default: '30' },
    port: { type: 'string', default: '29644' },
    json: { type: 'boolean', default: false },
  },
});
const root = fileURLToPath(new URL('../..', import.meta.url));
const { startHubProcess, callHub, cpuSeconds, loadAverage } =
  (await import('../support/hub-process.js')) as typeof HubProcessModule;
const { renderFleetMetrics } = (await import('../../src/hub/metrics/fleet-metrics.js')) as typeof FleetMetricsModule;
const { SqliteHubStore } = (await import('../../src/hub/store/sqlite-store.js')) as typeof StoreModule;
const CLUSTERS = Number(values.clusters);
const SAMPLES = Number(values.samples);
const REGIONS = ['eu-west', 'eu-north', 'us-east', 'us-west', 'ap-south', 'ap-east'];
const DAY_MS = 86_400_000;

const log = (line: string): void => {
  if (!values.json) console.error(line);
};
const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
const round = (n: number): number => Math.round(n * 10) / 10;

/** p50, p99 and max (ms) of `samples` sequential runs of `run`. */
async function timed(run: () => Promise<unknown>): Promise<{ p50: number; p99: number; max: number }> {
  await run(); // warm-up, not counted
  const times: number[] = [];
  for (let i = 0; i < SAMPLES; i += 1) {
    const started = performance.now();
    await run();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return { p50: round(percentile(times, 50)), p99: round(percentile(times, 99)), max: round(times.at(-1) ?? NaN) };
}

function name(i: number): string {
  return `shop-${String(i).padStart(5, '0')}`;
}

/** 1. The fleet, as rows, before the hub starts. */
async function seed(dataDir: string, now: number): Promise<void> {
  const store = await SqliteHubStore.open(join(dataDir, 'hub.db'));
  for (let i = 0; i < CLUSTERS; i += 1) {
    await store.addCluster({
      name: name(i),
      labels: { env: i % 10 === 0 ? 'staging' : 'prod', region: REGIONS[i % REGIONS.length] as string },
      certSerial: i.toString(16).padStart(16, '0'),
      certNotAfter: new Date(now + 365 * DAY_MS).toISOString(),
      registeredAt: new Date(now - 30 * DAY_MS).toISOString(),
      lastSeen: new Date(now - ((i * 7919) % (3 * DAY_MS))).toISOString(),
    });
  }
  await store.close();
}

/** N views with a full health report each, as agents will send them. */
function reportedViews(now: number): ClusterView[] {
  return Array.from({ length: CLUSTERS }, (_, i) => ({
    name: name(i),
    labels: { env: 'prod' },
    state: i % 10 === 0 ? 'Disconnected' : 'Connected',
    lastSeen: new Date(now - (i % 600) * 1000).toISOString(),
    registeredAt: new Date(now - 30 * DAY_MS).toISOString(),
    certNotAfter: new Date(now + 365 * DAY_MS).toISOString(),
    ...(i % 50 === 0 ? { hold: { by: 'ops', since: new Date(now).toISOString(), reason: 'maintenance' } } : {}),
    health: {
      reportedAt: new Date(now).toISOString(),
      nodes: { total: 3, ready: i % 20 === 0 ? 2 : 3, notReady: i % 20 === 0 ? ['node-3'] : [] },
      certificates: [
        { kind: 'cluster-ca', subject: 'CN=kubernetes', notAfter: new Date(now + 3650 * DAY_MS).toISOString() },
        {
          kind: 'apiserver-serving',
          subject: 'CN=kube-apiserver',
          notAfter: new Date(now + (i % 400) * DAY_MS).toISOString(),
        },
      ],
    },
  }));
}

const dataDir = mkdtempSync(join(tmpdir(), 'edgeadm-bench-metrics-'));
const now = Date.now();
const seedStarted = performance.now();
await seed(dataDir, now);
log(`seeded ${CLUSTERS} clusters in ${Math.round(performance.now() - seedStarted)} ms`);

const home = join(dataDir, 'home');
mkdirSync(home);
const hub = startHubProcess({ root, port: Number(values.port), dataDir, home, timeoutMs: 120_000 });
let bytes = 0;
let endToEnd;
let cpuPerScrapeMs;
try {
  const url = await hub.listening;
  const token = /^token: (\S+)$/m.exec(readFileSync(join(dataDir, 'admin.yaml'), 'utf8'))?.[1] ?? '';
  const ca = readFileSync(join(dataDir, 'pki', 'ca.crt'), 'utf8');
  const cpuBefore = cpuSeconds(hub.pid);
  endToEnd = await timed(async () => {
    bytes = Buffer.byteLength(await callHub(`${url}/metrics`, { token, ca, timeoutMs: 60_000 }));
  });
  cpuPerScrapeMs = round(((cpuSeconds(hub.pid) - cpuBefore) * 1000) / (SAMPLES + 1));
} finally {
  hub.child.kill('SIGTERM');
  await hub.exited;
  rmSync(dataDir, { recursive: true, force: true });
}
log(
  `end to end (${CLUSTERS} clusters, ${round(bytes / 1024)} KiB): p50 ${endToEnd.p50} ms, p99 ${endToEnd.p99} ms, ` +
    `max ${endToEnd.max} ms; hub CPU ${cpuPerScrapeMs} ms per scrape (load ${loadAverage()})`,
);

const views = reportedViews(now);
let reportedBytes = 0;
const reported = await timed(async () => {
  reportedBytes = Buffer.byteLength(await renderFleetMetrics({ clusters: views, rollouts: [] }));
});
log(
  `fleet series with health reports (${round(reportedBytes / 1024)} KiB): p50 ${reported.p50} ms, p99 ${reported.p99} ms, max ${reported.max} ms`,
);

if (values.json) {
  console.log(
    JSON.stringify({
      clusters: CLUSTERS,
      samples: SAMPLES,
      endToEndMs: endToEnd,
      endToEndBytes: bytes,
      hubCpuPerScrapeMs: cpuPerScrapeMs,
      fleetSeriesWithReportsMs: reported,
      fleetSeriesWithReportsBytes: reportedBytes,
    }),
  );
}
