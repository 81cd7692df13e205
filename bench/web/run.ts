/**
 * Web view benchmark: the hub's `/ui/` with N registered clusters (default
 * 10,000). `edgeadm hub serve` runs as its own process (bin/run.js, so
 * `npm run build` first).
 *
 * What is simulated: the N clusters are ROWS in the hub's store, written
 * before the hub starts (names, labels, versions, last-seen times spread
 * over three days), with no agent: the list API, the fleet summary and the
 * page read the store, not the tunnels, so rows are all they need. `--live`
 * more clusters are real: registered with `register-cloud --foreground`
 * (edgeadm's real agent) against the SIMULATED API server of test/support,
 * so that one can be cut off while the page is open.
 *
 * Measured:
 * 1. the clusters list API (`GET /ui/api/clusters`, signed in as the admin)
 *    for a filtered page (label selector matching about a sixth of the
 *    fleet, sorted by last seen, the second page of 50): p50, p99, max
 *    over `--samples` sequential requests; also an unfiltered first page
 *    and the fleet summary; and the same filtered page after 5 s without
 *    requests, when the view reads the store again before answering;
 * 2. the fleet view in headless chromium (Debian's, via playwright-core),
 *    signed in: from navigation start until the fleet's numbers are on
 *    screen (the first meaningful paint), median and max of `--loads`
 *    loads, and the browser's first-contentful-paint;
 * 3. a live cluster's agent killed while the clusters page shows it: from
 *    the kill until the page shows it Disconnected (no reload);
 * 4. the bundle: each file of lib/web-assets.json gzipped;
 * 5. the attention list (`GET /ui/api/attention`, issue #38) in the same
 *    run, beside the clusters list as its baseline: its first page (most
 *    severe first) and a page filtered by reason and sorted by since, p50,
 *    p99, max and the hub's CPU per request (each measure's CPU read from
 *    /proc before and after it); the operator API's `GET /hub/v1/attention`
 *    (a store read per request, as `hub clusters list --attention` asks).
 *    Every stored row is Disconnected (no agent), so every cluster is in the
 *    list: the worst case, 10,000 rows sorted per request. Each row carries
 *    a health report as the hub stores its agent's (three nodes, three
 *    certificates): 2 % with a node not Ready, about 1 % held, a fifth
 *    with an agent certificate past its renewal, a few with an API server
 *    certificate within 30 days.
 *
 *   npm run build && npm run bench:web -- [--clusters 10000] [--live 3] [--samples 300] [--loads 5]
 *     [--port 29643] [--json]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import type * as HubProcessModule from '../support/hub-process.js';
import type * as StoreModule from '../../src/hub/store/sqlite-store.js';
import type * as SimModule from '../../test/support/sim-apiserver/index.js';

const { values } = parseArgs({
  options: {
    clusters: { type: 'string', default: '10000' },
    live: { type: 'string', default: '3' },
    samples: { type: 'string', default: '300' },
    loads: { type: 'string', default: '5' },
    port: { type: 'string', default: '29643' },
    json: { type: 'boolean', default: false },
  },
});
const CLUSTERS = Number(values.clusters);
const LIVE = Math.max(1, Number(values.live));
const SAMPLES = Number(values.samples);
const LOADS = Number(values.loads);
const PORT = Number(values.port);
/** Bound of every wait (a safety net, not a measurement). */
const WAIT_MS = 120_000;
const CHROMIUM = '/usr/bin/chromium';
/** The page's document, as the functions run in the browser see it (this file is type-checked without the DOM). */
declare const document: {
  querySelector(selector: string): { textContent: string | null; getAttribute(name: string): string | null } | null;
};

const root = fileURLToPath(new URL('../..', import.meta.url));
const { startHubProcess, cpuSeconds, rssMiB, loadAverage, callHub } =
  (await import('../support/hub-process.js')) as typeof HubProcessModule;
const { SqliteHubStore } = (await import('../../src/hub/store/sqlite-store.js')) as typeof StoreModule;
const { startSimApiServer } = (await import('../../test/support/sim-apiserver/index.js')) as typeof SimModule;
const { chromium } = await import('playwright-core');

const log = (line: string): void => {
  if (!values.json) console.error(line);
};
const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
const round = (n: number): number => Math.round(n * 10) / 10;

const work = mkdtempSync(join(tmpdir(), 'edgeadm-bench-web-'));
const dataDir = join(work, 'hub');
mkdirSync(dataDir, { recursive: true, mode: 0o700 });

// 1. The fleet, as rows.
const REGIONS = ['eu-west', 'eu-north', 'us-east', 'us-west', 'ap-south', 'ap-east'];
const VERSIONS = ['v1.29.9+k3s1', 'v1.30.4+k3s1', 'v1.31.2+k3s1'];
const seedStarted = performance.now();
const store = await SqliteHubStore.open(join(dataDir, 'hub.db'));
const now = Date.now();
for (let i = 0; i < CLUSTERS; i += 1) {
  const name = `shop-${String(i).padStart(5, '0')}`;
  await store.addCluster({
    name,
    labels: {
      env: i % 10 === 0 ? 'staging' : 'prod',
      region: REGIONS[i % REGIONS.length] as string,
      size: i % 7 === 0 ? 'large' : 'small',
    },
    certSerial: i.toString(16).padStart(16, '0'),
    // Agent certificates live 30 days and are renewed with 10 left; a fifth here are overdue.
    certNotAfter: new Date(now + (5 + ((i * 7) % 25)) * 86_400_000).toISOString(),
    registeredAt: new Date(now - 30 * 86_400_000).toISOString(),
    lastSeen: new Date(now - ((i * 7919) % (3 * 86_400_000))).toISOString(),
    kubernetesVersion: VERSIONS[i % VERSIONS.length] as string,
    nodeCount: 1 + (i % 3),
  });
  if (i % 100 === 0) {
    await store.setClusterHold(name, {
      reason: 'inventory',
      by: 'bench',
      since: new Date(now - i * 1000).toISOString(),
    });
  }
  // What the hub keeps of an agent's health report (health/health-book.ts).
  const isNodeDown = i % 50 === 0;
  const inDays = (days: number): string => new Date(now + days * 86_400_000).toISOString();
  await store.updateClusterHealth(name, {
    reportedAt: new Date(now - 60_000).toISOString(),
    nodes: { total: 3, ready: isNodeDown ? 2 : 3, notReady: isNodeDown ? [`${name}-b`] : [] },
    kubernetesVersion: VERSIONS[i % VERSIONS.length] as string,
    certificates: [
      { kind: 'cluster-ca', subject: 'CN=k3s-server-ca', notAfter: inDays(3650) },
      { kind: 'apiserver-serving', subject: 'CN=k3s', notAfter: inDays((i * 13) % 365) },
      { kind: 'hub-client', subject: `CN=${name}`, notAfter: inDays(20) },
    ],
  });
}
await store.close();
log(`seeded ${CLUSTERS} clusters in ${Math.round(performance.now() - seedStarted)} ms`);

// 2. The hub, and a few live clusters.
const home = join(work, 'home');
mkdirSync(home, { recursive: true });
const hub = startHubProcess({ root, port: PORT, dataDir, home, timeoutMs: WAIT_MS });
const url = await hub.listening;
const adminToken = /^token: (\S+)$/m.exec(readFileSync(join(dataDir, 'admin.yaml'), 'utf8'))?.[1] ?? '';
const ca = readFileSync(join(dataDir, 'pki', 'ca.crt'), 'utf8');
const caPin = JSON.parse(
  await callHub(`${url}/hub/v1/tokens`, { method: 'POST', body: { ttlMs: 600_000 }, token: adminToken, ca }),
) as { token: string; caCertHash: string };
const sim = await startSimApiServer({ gitVersion: 'v1.30.4+sim' });
const kubeconfig = join(work, 'edge.kubeconfig');
writeFileSync(kubeconfig, sim.kubeconfig(), { mode: 0o600 });
const agents = new Map<string, ChildProcess>();
for (let i = 0; i < LIVE; i += 1) {
  const name = `live-${i}`;
  const child = spawn(
    process.execPath,
    [
      join(root, 'bin/run.js'),
      'register-cloud',
      new URL(url).host,
      '--token',
      caPin.token,
      '--hub-ca-cert-hash',
      caPin.caCertHash,
      '--name',
      name,
      '--labels',
      'env=prod,region=eu-west',
      '--kubeconfig',
      kubeconfig,
      '--data-dir',
      join(work, name),
      '--foreground',
    ],
    { env: { ...process.env, EDGEADM_HOME: join(work, `${name}-home`), NO_COLOR: '1' }, stdio: 'ignore' },
  );
  process.once('exit', () => child.kill('SIGKILL'));
  agents.set(name, child);
}
const isConnected = async (name: string): Promise<boolean> => {
  try {
    const view = JSON.parse(await callHub(`${url}/hub/v1/clusters/${name}`, { token: adminToken, ca })) as {
      state: string;
    };
    return view.state === 'Connected';
  } catch {
    return false;
  }
};
for (const name of agents.keys()) {
  const deadline = Date.now() + WAIT_MS;
  while (!(await isConnected(name))) {
    if (Date.now() > deadline) throw new Error(`${name} did not connect`);
    await sleep(200);
  }
}
log(`hub up with ${CLUSTERS} stored and ${LIVE} live clusters`);

// 3. Sign in, then the list API.
const pool = new https.Agent({ keepAlive: true, maxSockets: 1 });
const origin = url;
const signIn = await new Promise<{ cookie: string }>((resolve, reject) => {
  https
    .request(
      `${url}/ui/api/session`,
      {
        method: 'POST',
        ca,
        headers: { authorization: `Bearer ${adminToken}`, origin, 'sec-fetch-site': 'same-origin' },
      },
      (res) => {
        res.resume();
        const cookie = (res.headers['set-cookie']?.[0] ?? '').split(';')[0] ?? '';
        if (res.statusCode !== 201) reject(new Error(`sign-in: HTTP ${res.statusCode}`));
        else resolve({ cookie });
      },
    )
    .on('error', reject)
    .end();
});
const timedGet = (path: string): Promise<{ ms: number; bytes: number; body: string }> =>
  new Promise((resolve, reject) => {
    const started = performance.now();
    https
      .get(`${url}${path}`, { ca, agent: pool, headers: { cookie: signIn.cookie } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString();
          if (res.statusCode !== 200) reject(new Error(`${path}: HTTP ${res.statusCode}: ${body.slice(0, 200)}`));
          else resolve({ ms: performance.now() - started, bytes: body.length, body });
        });
      })
      .on('error', reject);
  });
const measure = async (path: string, samples: number, get = timedGet) => {
  await get(path);
  const times: number[] = [];
  let last = { bytes: 0, body: '' };
  const cpuAtStart = cpuSeconds(hub.pid);
  for (let i = 0; i < samples; i += 1) {
    const answer = await get(path);
    times.push(answer.ms);
    last = answer;
  }
  const cpuMsPerRequest = round(((cpuSeconds(hub.pid) - cpuAtStart) * 1000) / samples);
  times.sort((a, b) => a - b);
  return {
    path,
    p50Ms: round(percentile(times, 50)),
    p99Ms: round(percentile(times, 99)),
    maxMs: round(times.at(-1) ?? NaN),
    cpuMsPerRequest,
    bytes: last.bytes,
    body: last.body,
  };
};
const cpuBefore = cpuSeconds(hub.pid);
const filtered = await measure(
  '/ui/api/clusters?selector=env%3Dprod%2Cregion%3Deu-west&sort=lastSeen&offset=50&limit=50',
  SAMPLES,
);
const filteredTotal = (JSON.parse(filtered.body) as { total: number }).total;
const firstPage = await measure('/ui/api/clusters?limit=50', Math.ceil(SAMPLES / 3));
const fleet = await measure('/ui/api/fleet', Math.ceil(SAMPLES / 3));
// After 5 s without a request the view's copy of the store is too old to serve: the next request reads the store.
const cold: number[] = [];
for (let i = 0; i < 3; i += 1) {
  await sleep(5_200);
  cold.push(
    (await timedGet('/ui/api/clusters?selector=env%3Dprod%2Cregion%3Deu-west&sort=lastSeen&offset=50&limit=50')).ms,
  );
}
const apiCpuPerRequest = (cpuSeconds(hub.pid) - cpuBefore) / (SAMPLES + 2 * Math.ceil(SAMPLES / 3) + 6);
log(`list API, filtered page (${filteredTotal} match): p50 ${filtered.p50Ms} ms, p99 ${filtered.p99Ms} ms`);

// 3b. The attention list, beside the list just measured.
const attentionFirst = await measure('/ui/api/attention?limit=50', SAMPLES);
const attentionTotal = (JSON.parse(attentionFirst.body) as { total: number }).total;
const attentionFiltered = await measure(
  '/ui/api/attention?reason=certificate-expiring&sort=since&offset=50&limit=50',
  Math.ceil(SAMPLES / 3),
);
const attentionFilteredTotal = (JSON.parse(attentionFiltered.body) as { total: number }).total;
const operatorGet = (path: string): Promise<{ ms: number; bytes: number; body: string }> => {
  const started = performance.now();
  return callHub(`${url}${path}`, { token: adminToken, ca }).then((body) => ({
    ms: performance.now() - started,
    bytes: body.length,
    body,
  }));
};
const attentionOperator = await measure('/hub/v1/attention?limit=50', Math.ceil(SAMPLES / 10), operatorGet);
log(
  `attention API, first page (${attentionTotal} need attention): p50 ${attentionFirst.p50Ms} ms, p99 ${attentionFirst.p99Ms} ms`,
);

// 4. The fleet view in chromium, signed in.
const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1280, height: 860 } });
const [cookieName, cookieValue] = signIn.cookie.split('=') as [string, string];
await context.addCookies([
  {
    name: cookieName,
    value: cookieValue,
    domain: '127.0.0.1',
    path: '/ui',
    secure: true,
    httpOnly: true,
    sameSite: 'Strict',
  },
]);
const paints: number[] = [];
const contentful: number[] = [];
for (let i = 0; i < LOADS; i += 1) {
  const page = await context.newPage();
  await page.goto(`${url}/ui/#/fleet`, { waitUntil: 'commit' });
  await page.waitForFunction(() => document.querySelector('[data-testid="total"]')?.textContent !== undefined, null, {
    timeout: WAIT_MS,
    polling: 'raf',
  });
  paints.push(await page.evaluate(() => performance.now()));
  contentful.push(
    await page.evaluate(() => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? NaN),
  );
  await page.close();
}
paints.sort((a, b) => a - b);
log(`fleet view: meaningful paint median ${round(percentile(paints, 50))} ms`);

// 5. A cluster cut off while the page shows it.
const delays: number[] = [];
const page = await context.newPage();
for (const [name, child] of agents) {
  await page.goto(`${url}/ui/#/clusters?q=${name}`);
  const cell = `tr[data-cluster="${name}"] [data-state]`;
  await page.waitForFunction((s) => document.querySelector(s)?.getAttribute('data-state') === 'Connected', cell, {
    timeout: WAIT_MS,
  });
  const killedAt = Date.now();
  child.kill('SIGKILL');
  await page.waitForFunction((s) => document.querySelector(s)?.getAttribute('data-state') === 'Disconnected', cell, {
    timeout: WAIT_MS,
    polling: 'raf',
  });
  delays.push(Date.now() - killedAt);
}
delays.sort((a, b) => a - b);
await browser.close();

// 6. The bundle.
const pack = JSON.parse(readFileSync(join(root, 'lib', 'web-assets.json'), 'utf8')) as {
  files: Record<string, { body: string }>;
};
const bundle = Object.entries(pack.files).map(([path, file]) => {
  const bytes = Buffer.from(file.body, 'base64');
  return { path, bytes: bytes.length, gzipBytes: gzipSync(bytes, { level: 9 }).length };
});

const memory = rssMiB(hub.pid);
const result = {
  clusters: CLUSTERS,
  liveClusters: LIVE,
  listApi: {
    filteredPage: { ...filtered, body: undefined, matching: filteredTotal },
    firstPage: { ...firstPage, body: undefined },
    fleetSummary: { ...fleet, body: undefined },
    afterIdleMs: cold.map(round),
    hubCpuMsPerRequest: round(apiCpuPerRequest * 1000),
  },
  attentionApi: {
    firstPage: { ...attentionFirst, body: undefined, matching: attentionTotal },
    filteredPage: { ...attentionFiltered, body: undefined, matching: attentionFilteredTotal },
    operatorApiFirstPage: { ...attentionOperator, body: undefined },
  },
  fleetView: {
    meaningfulPaintMedianMs: round(percentile(paints, 50)),
    meaningfulPaintMaxMs: round(paints.at(-1) ?? NaN),
    firstContentfulPaintMedianMs: round(
      percentile(
        [...contentful].sort((a, b) => a - b),
        50,
      ),
    ),
    loads: LOADS,
  },
  disconnectToScreen: { medianMs: percentile(delays, 50), maxMs: delays.at(-1), samples: delays.length },
  bundle: { files: bundle, gzipBytesTotal: bundle.reduce((sum, file) => sum + file.gzipBytes, 0) },
  hubRssMiB: memory.rss,
  loadAverage: loadAverage(),
};
hub.child.kill('SIGTERM');
await hub.exited;
await sim.stop();
pool.destroy();
if (values.json) console.log(JSON.stringify(result, null, 2));
else {
  console.log(`web view, ${CLUSTERS} clusters (+${LIVE} live), load ${result.loadAverage}`);
  console.log(
    `  list API, filtered page (${filteredTotal} match, page 2 by last seen): p50 ${filtered.p50Ms} ms, p99 ${filtered.p99Ms} ms, max ${filtered.maxMs} ms (${SAMPLES} requests)`,
  );
  console.log(`  list API, filtered page after 5 s idle (a store read): ${result.listApi.afterIdleMs.join(', ')} ms`);
  console.log(`  list API, first page unfiltered: p50 ${firstPage.p50Ms} ms, p99 ${firstPage.p99Ms} ms`);
  console.log(`  fleet summary: p50 ${fleet.p50Ms} ms, p99 ${fleet.p99Ms} ms`);
  console.log(`  hub CPU per API request: ${result.listApi.hubCpuMsPerRequest} ms; hub RSS ${memory.rss} MiB`);
  const line = (name: string, m: { p50Ms: number; p99Ms: number; maxMs: number; cpuMsPerRequest: number }) =>
    `  ${name}: p50 ${m.p50Ms} ms, p99 ${m.p99Ms} ms, max ${m.maxMs} ms; hub CPU ${m.cpuMsPerRequest} ms/request`;
  console.log(line(`baseline: list API, filtered page (${SAMPLES} requests)`, filtered));
  console.log(
    line(`attention API, first page, ${attentionTotal} need attention (${SAMPLES} requests)`, attentionFirst),
  );
  console.log(
    line(
      `attention API, reason=certificate-expiring by since, page 2 (${attentionFilteredTotal} match)`,
      attentionFiltered,
    ),
  );
  console.log(line('operator API GET /hub/v1/attention, first page (the shared store read)', attentionOperator));
  console.log(
    `  fleet view meaningful paint: median ${result.fleetView.meaningfulPaintMedianMs} ms, max ${result.fleetView.meaningfulPaintMaxMs} ms (FCP ${result.fleetView.firstContentfulPaintMedianMs} ms)`,
  );
  console.log(
    `  disconnect → on screen: median ${result.disconnectToScreen.medianMs} ms, max ${result.disconnectToScreen.maxMs} ms (${delays.length} clusters)`,
  );
  console.log(
    `  bundle: ${result.bundle.gzipBytesTotal} B gzipped (${bundle.map((f) => `${f.path} ${f.gzipBytes}`).join(', ')})`,
  );
}
process.exit(0);
