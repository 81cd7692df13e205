// edge-proxy benchmark: cached GET latency (p50/p99) and throughput through
// `edgeadm agent edge-proxy` in OFFLINE mode, against direct GETs to the
// upstream, interleaved in one run; and the proxy's steady RSS with 1,000
// cached objects. Beside it, in the same rounds, OpenYurt's yurthub (the edge
// caching proxy edgeadm competes with; ./yurthub.js) when it is built:
// the same upstream through the same relay, the same objects warmed the
// same way, the same offline load.
//
//   npm run build && node bench/edge-proxy/run.js [--objects 1000] [--requests 4000] [--seconds 3] [--rounds 3] [--concurrency 16] [--peers yurthub|off]
//
// The upstream is the SIMULATED API server of test/support (a process), not
// kube-apiserver: "direct" measures the simulation's GET path, so the
// comparison says whether the proxy's cache answers as fast as an in-memory
// API server on the same machine — not how a real control plane performs.
// The proxy reaches the upstream through a TCP relay in this script; cutting
// the relay puts the proxy offline while direct requests still reach the
// upstream. Each process (bench client, simulation, proxy) has its own
// event loop, all on the same cores.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  YURTHUB_USER_AGENT,
  createYurthubClusterObjects,
  prepareYurthubRoot,
  startYurthub,
  yurthubBuild,
} from './yurthub.js';

const { values } = parseArgs({
  options: {
    objects: { type: 'string', default: '1000' },
    requests: { type: 'string', default: '4000' },
    seconds: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '16' },
    'proxy-node-options': { type: 'string', default: '' },
    /** Run the proxy from this single binary (how it is deployed) instead of bin/run.js. */
    'proxy-bin': { type: 'string' },
    /**
     * Leave the --proxy-bin binary's and yurthub's pages in the page cache as they are (by default they
     * are dropped before each starts, as a node has them after a reboot; see pageCacheDropped).
     */
    'keep-page-cache': { type: 'boolean' },
    /** Run the proxy core alone (lib/edge, no CLI framework): what the proxy itself costs. */
    'core-only': { type: 'boolean' },
    /** Give the proxy process the environment of assets/systemd/edgeadm-edge-proxy.service (memory tuning). */
    'unit-env': { type: 'boolean' },
    /** NAME=VALUE for the proxy's environment, over the unit's (repeatable): to try a memory setting. */
    'proxy-env': { type: 'string', multiple: true, default: [] },
    /**
     * Start the proxy with its serving CA and certificate already made (as on every start after its
     * first): the PKI library is then never loaded. Without it the proxy makes them, as at its first start.
     */
    'warm-pki': { type: 'boolean' },
    /** The peer run beside the edge-proxy: yurthub (the default when test/real/build.sh built it) or off. */
    peers: { type: 'string' },
    json: { type: 'boolean' },
  },
});
const OBJECTS = Number(values.objects);
const REQUESTS = Number(values.requests);
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
const CONCURRENCY = Number(values.concurrency);
/** Safety net for a process to start; not part of any figure. */
const READY_WAIT_MS = 60_000;

const root = fileURLToPath(new URL('../..', import.meta.url));
if (!existsSync(join(root, 'lib/commands/agent/edge-proxy.js'))) throw new Error('run "npm run build" first');
const yurthub = yurthubBuild();
const PEERS = values.peers ?? (yurthub ? 'yurthub' : 'off');
if (PEERS !== 'yurthub' && PEERS !== 'off') throw new Error(`--peers must be yurthub or off, got "${PEERS}"`);
if (PEERS === 'yurthub' && !yurthub) throw new Error('yurthub is not built: run "bash test/real/build.sh yurthub"');
const isYurthubOn = PEERS === 'yurthub';
const dir = mkdtempSync(join(tmpdir(), 'edgeadm-bench-edge-proxy-'));
const children = [];

function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/**
 * The environment of assets/systemd/edgeadm-edge-proxy.service, read as
 * systemd reads it (edgeadm's environmentOf; a unit test pins what it gives).
 * Until 2026-11-24 this script matched only unquoted lines, and so measured
 * "unit env" without the quoted NODE_OPTIONS line.
 */
async function unitEnvironment() {
  const { environmentOf } = await import(join(root, 'lib/hosts/service-manager.js'));
  return environmentOf(readFileSync(join(root, 'assets/systemd/edgeadm-edge-proxy.service'), 'utf8'));
}

function startProcess(args, isReady, nodeOptions = [], executable = process.execPath, extraEnv = {}) {
  const child = spawn(executable, executable === process.execPath ? [...nodeOptions, ...args] : args, {
    cwd: root,
    env: { ...process.env, EDGEADM_HOME: join(dir, 'home'), NO_COLOR: '1', ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  children.push({ child, name: args.slice(0, 3).join(' '), output: () => output });
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + READY_WAIT_MS;
    const poll = () => {
      if (isReady(output)) resolve(child);
      else if (child.exitCode !== null || Date.now() > deadline) reject(new Error(`process did not start: ${output}`));
      else setTimeout(poll, 50);
    };
    poll();
  });
}

/** The steady RSS split: private memory (heap, buffers) and mapped files (the node binary's own pages). */
function rssSplitMiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)[1]);
  return { anon: Number((kib('RssAnon') / 1024).toFixed(1)), file: Number((kib('RssFile') / 1024).toFixed(1)) };
}

/**
 * CPU time (user + system) a process has used, in ms: less noisy than wall
 * time on a shared machine, since time spent waiting for a core is not in it.
 * Kernel ticks (USER_HZ, 100 on Linux), so 10 ms granular: compare it over
 * thousands of requests.
 */
function cpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/**
 * Drops a file's clean pages from the page cache (GNU dd: `iflag=nocache count=0` advises the kernel
 * to drop the whole file), so that a process started from it faults its pages in from disk, as on a
 * node after a reboot. Why it matters: the pages of the executable a process touched count in its RSS
 * ("file"), and how many the kernel maps per fault depends on how the pages came into the cache. The
 * single binary fresh from `npm run build:binary` showed 61-62 MiB of file pages where the same
 * binary, copied or read from disk, showed 46 MiB (2026-11-24, kernel 6.18): every "single binary"
 * figure before that date carries that artifact. Pages another process maps stay; returns whether
 * dd succeeded.
 */
function dropFromPageCache(file) {
  const dropped = spawnSync('dd', [`if=${file}`, 'iflag=nocache', 'count=0', 'status=none']);
  return dropped.status === 0;
}

function rssMiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)[1]) / 1024;
}

let retries = 0;
/** Whether the --proxy-bin binary was dropped from the page cache before the proxy started (see dropFromPageCache). */
let pageCacheDropped;

/**
 * One GET. A kept-alive connection the server closes just as it is reused
 * fails before any answer ("socket hang up"); like any HTTP client, retry
 * such an idempotent GET once, and count it.
 */
async function get(target, path, agent, keepBody = false) {
  try {
    return await getOnce(target, path, agent, keepBody);
  } catch (error) {
    if (error.code !== 'ECONNRESET') throw error;
    retries++;
    return getOnce(target, path, agent, keepBody);
  }
}

function getOnce(target, path, agent, keepBody) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = request(`${target.url}${path}`, {
      agent,
      ca: target.ca,
      headers: { authorization: `Bearer ${target.token}`, accept: 'application/json', ...target.headers },
    });
    req.on('response', (res) => {
      let size = 0;
      const chunks = [];
      // A failure's body is kept too: it says why (a Status object).
      const isKept = keepBody || res.statusCode !== 200;
      res.on('data', (chunk) => {
        size += chunk.length;
        if (isKept) chunks.push(chunk);
      });
      res.on('end', () =>
        resolve({
          status: res.statusCode,
          ms: performance.now() - started,
          size,
          cached: res.headers['x-edgeadm-edge-proxy'],
          body: isKept ? Buffer.concat(chunks).toString('utf8') : undefined,
        }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

function call(target, method, path, body) {
  return new Promise((resolve, reject) => {
    const req = request(`${target.url}${path}`, {
      method,
      ca: target.ca,
      headers: {
        authorization: `Bearer ${target.token}`,
        'content-type': 'application/json',
        accept: 'application/json',
      },
    });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const objectPath = (i) => `/api/v1/namespaces/bench/configmaps/cm-${String(i).padStart(5, '0')}`;

try {
  // 1. The simulated upstream, as a process.
  const simPort = await freePort();
  const simProcess = await startProcess(
    ['test/support/sim-apiserver/main.ts', '--listen', `127.0.0.1:${simPort}`, '--data-dir', join(dir, 'sim')],
    () => existsSync(join(dir, 'sim', 'ready')),
  );
  const simCa = readFileSync(join(dir, 'sim', 'ca.crt'), 'utf8');
  const token = readFileSync(join(dir, 'sim', 'admin-token'), 'utf8').trim();
  const direct = { url: `https://127.0.0.1:${simPort}`, ca: simCa, token };
  await call(direct, 'POST', '/api/v1/namespaces', {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: 'bench' },
  });
  for (let i = 0; i < OBJECTS; i++) {
    const status = await call(direct, 'POST', '/api/v1/namespaces/bench/configmaps', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: `cm-${String(i).padStart(5, '0')}`,
        namespace: 'bench',
        labels: { app: 'bench', index: String(i) },
      },
      data: { 'config.yaml': `setting: value-${i}\n`.repeat(8) },
    });
    if (status !== 201) throw new Error(`creating object ${i}: HTTP ${status}`);
  }
  if (isYurthubOn) await createYurthubClusterObjects((method, path, body) => call(direct, method, path, body));

  // 2. A TCP relay between the proxies and the upstream: closing it is their outage.
  const relaySockets = new Set();
  const relay = createServer((socket) => {
    const upstream = connect(simPort, '127.0.0.1');
    relaySockets.add(socket).add(upstream);
    socket.pipe(upstream).pipe(socket);
    const drop = () => {
      socket.destroy();
      upstream.destroy();
    };
    socket.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  });
  await new Promise((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const relayPort = relay.address().port;
  const upstreamKubeconfig = readFileSync(join(dir, 'sim', 'admin.kubeconfig'), 'utf8').replaceAll(
    `127.0.0.1:${simPort}`,
    `127.0.0.1:${relayPort}`,
  );
  writeFileSync(join(dir, 'up.yaml'), upstreamKubeconfig, { mode: 0o600 });

  // 3. The edge-proxy, as a process through the CLI.
  const proxyPort = await freePort();
  const metricsPort = await freePort();
  const proxyArgs = [
    'agent',
    'edge-proxy',
    '--kubeconfig',
    join(dir, 'up.yaml'),
    '--listen',
    `127.0.0.1:${proxyPort}`,
    '--metrics-listen',
    `127.0.0.1:${metricsPort}`,
    '--cache-dir',
    join(dir, 'cache'),
    '--health-interval',
    '1s',
  ];
  if (values['warm-pki']) {
    const { ensureServingCertificate } = await import(join(root, 'lib/edge/serving-cert.js'));
    await ensureServingCertificate({ dir: join(dir, 'cache', 'pki'), host: '127.0.0.1' });
  }
  const nodeOptions = values['proxy-node-options'].split(' ').filter(Boolean);
  const isServing = (output) => output.includes('edge-proxy serving');
  const proxyEnv = {
    ...(values['unit-env'] ? await unitEnvironment() : {}),
    ...Object.fromEntries(
      values['proxy-env'].map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
    ),
  };
  let proxyProcess;
  if (values['proxy-bin']) {
    pageCacheDropped = values['keep-page-cache'] ? false : dropFromPageCache(values['proxy-bin']);
    proxyProcess = await startProcess(proxyArgs, isServing, [], values['proxy-bin'], proxyEnv);
  } else if (values['core-only']) {
    const core = [
      `const { startEdgeProxy } = await import(${JSON.stringify(join(root, 'lib/edge/edge-proxy.js'))});`,
      `const { readUpstreamConfig } = await import(${JSON.stringify(join(root, 'lib/edge/upstream-config.js'))});`,
      `const proxy = await startEdgeProxy({ upstream: await readUpstreamConfig(${JSON.stringify(join(dir, 'up.yaml'))}),`,
      `  listen: { host: '127.0.0.1', port: ${proxyPort} }, metricsListen: { host: '127.0.0.1', port: ${metricsPort} },`,
      `  cacheDir: ${JSON.stringify(join(dir, 'cache'))}, cacheMaxBytes: 256 * 1024 * 1024, cacheMaxEntries: 10000,`,
      `  clientCerts: new Map(), healthIntervalMs: 1000 });`,
      `console.error('edge-proxy serving ' + proxy.url);`,
      `process.once('SIGTERM', () => void proxy.close());`,
    ].join('\n');
    proxyProcess = await startProcess(
      ['--input-type=module', '-e', core],
      isServing,
      nodeOptions,
      process.execPath,
      proxyEnv,
    );
  } else {
    proxyProcess = await startProcess(['bin/run.js', ...proxyArgs], isServing, nodeOptions, process.execPath, proxyEnv);
  }
  const proxy = {
    url: `https://127.0.0.1:${proxyPort}`,
    ca: readFileSync(join(dir, 'cache', 'pki', 'ca.crt'), 'utf8'),
    token,
  };
  const rssStart = rssMiB(proxyProcess.pid);

  // 3b. yurthub, as a process, through the same relay (./yurthub.js: its files, arguments and requests).
  let hub;
  if (isYurthubOn) {
    const hubRoot = join(dir, 'yurthub');
    const hubServerAddr = `127.0.0.1:${relayPort}`;
    const { ca: hubCa } = prepareYurthubRoot({ rootDir: hubRoot, serverAddr: hubServerAddr, simDir: join(dir, 'sim') });
    const ports = { serve: await freePort(), proxy: await freePort(), secure: await freePort() };
    // As for --proxy-bin: a binary fresh from its build maps more file pages than one read from disk.
    const isDropped = values['keep-page-cache'] ? false : dropFromPageCache(yurthub.binary);
    const started = await startYurthub({
      binary: yurthub.binary,
      rootDir: hubRoot,
      serverAddr: hubServerAddr,
      ports,
      waitMs: READY_WAIT_MS,
      track: (entry) => children.push(entry),
    });
    hub = {
      ...started,
      target: { url: started.url, ca: hubCa, token, headers: { 'user-agent': YURTHUB_USER_AGENT } },
      rssStart: rssMiB(started.child.pid),
      pageCacheDropped: isDropped,
    };
  }
  /** The cases in the order of the first round: each answering process and what its figures are called. */
  const cases = ['proxy', ...(hub ? ['yurthub'] : []), 'direct'];
  const targets = { proxy, yurthub: hub?.target, direct };
  const pids = { proxy: proxyProcess.pid, yurthub: hub?.child.pid, direct: simProcess.pid };
  /** The cases rotated by `n`: each takes each place in turn, so no case always goes first. */
  const rotated = (n) => cases.map((_, i) => cases[(i + n) % cases.length]);

  // 4. Warm the caches online: every object, and the whole list, through each proxy.
  const warmAgent = new Agent({ keepAlive: true, maxSockets: 8 });
  let listed;
  for (const which of cases.filter((c) => c !== 'direct')) {
    for (let i = 0; i < OBJECTS; i++) {
      const answer = await get(targets[which], objectPath(i), warmAgent);
      if (answer.status !== 200) throw new Error(`warming ${objectPath(i)} through ${which}: HTTP ${answer.status}`);
    }
    const list = await get(targets[which], '/api/v1/namespaces/bench/configmaps', warmAgent);
    if (list.status !== 200) throw new Error(`warming the list through ${which}: HTTP ${list.status}`);
    if (which === 'proxy') listed = list;
  }
  warmAgent.destroy();
  const rssWarm = rssMiB(proxyProcess.pid);
  if (hub) hub.rssWarm = rssMiB(hub.child.pid);

  // 5. Cut the relay: the proxies go offline, the upstream stays up for direct requests.
  relay.close();
  for (const socket of relaySockets) socket.destroy();
  const cutAt = Date.now();
  const metrics = async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const offlineDeadline = cutAt + READY_WAIT_MS;
  while (!/^edgeadm_edge_proxy_online 0$/m.test(await metrics())) {
    if (Date.now() > offlineDeadline) throw new Error('the proxy did not go offline');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  if (hub) {
    // yurthub's own verdict (its lease heartbeat, every 10 s by default): before it, GETs still try the upstream.
    while (!(await hub.isOffline())) {
      if (Date.now() > offlineDeadline) throw new Error('yurthub did not go offline');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    hub.offlineAfterSeconds = Number(((Date.now() - cutAt) / 1000).toFixed(1));
    // Every object from yurthub's cache, once, before any figure: the object itself, not just a 200.
    const checkAgent = new Agent({ keepAlive: true, maxSockets: 1 });
    hub.objectsServedOffline = 0;
    for (let i = 0; i < OBJECTS; i++) {
      const answer = await get(hub.target, objectPath(i), checkAgent, true);
      let object;
      try {
        object = answer.status === 200 ? JSON.parse(answer.body) : undefined;
      } catch {
        object = undefined;
      }
      if (object?.kind === 'ConfigMap' && object.metadata?.name === `cm-${String(i).padStart(5, '0')}`)
        hub.objectsServedOffline++;
    }
    checkAgent.destroy();
    if (hub.objectsServedOffline === 0) throw new Error('yurthub served no object from its cache while offline');
  }

  // 6. Latency: one request in flight, the cases alternating request by request.
  // A proxy that fails a GET offline: edgeadm's is a bug (the run stops); the peer's is counted, by
  // reason. yurthub v1.5.0 answers 500 "specified key is under accessing" to a GET of an object
  // another GET is reading from its disk cache at that moment (pkg/yurthub/storage/disk/storage.go
  // Get: a per-key try-lock), which concurrent clients of one object meet under the offline load.
  let yurthubFailures = 0;
  const yurthubFailureReasons = {};
  const countYurthubFailure = (answer) => {
    yurthubFailures++;
    let message;
    try {
      message = JSON.parse(answer.body).message ?? '';
    } catch {
      message = (answer.body ?? '').slice(0, 80);
    }
    const reason = `HTTP ${answer.status} ${message}`.trim();
    yurthubFailureReasons[reason] = (yurthubFailureReasons[reason] ?? 0) + 1;
  };
  const agents = Object.fromEntries(cases.map((c) => [c, new Agent({ keepAlive: true, maxSockets: CONCURRENCY })]));
  const latencies = Object.fromEntries(cases.map((c) => [c, []]));
  // CPU of the answering process per request: a proxy offline, the simulation for direct GETs.
  const cpuBefore = Object.fromEntries(cases.map((c) => [c, cpuMs(pids[c])]));
  for (let n = 0; n < REQUESTS; n++) {
    const path = objectPath(n % OBJECTS);
    for (const which of rotated(n)) {
      const answer = await get(targets[which], path, agents[which]);
      if (which === 'yurthub' && answer.status !== 200) {
        countYurthubFailure(answer);
        continue;
      }
      if (answer.status !== 200) throw new Error(`${which} GET ${path}: HTTP ${answer.status}`);
      if (which === 'proxy' && !answer.cached)
        throw new Error('the proxy answered without its cache header while offline');
      latencies[which].push(answer.ms);
    }
  }

  const cpuPerRequestMs = Object.fromEntries(cases.map((c) => [c, (cpuMs(pids[c]) - cpuBefore[c]) / REQUESTS]));

  // 7. Throughput: CONCURRENCY requests in flight for SECONDS, the cases rotating round by round.
  const throughput = Object.fromEntries(cases.map((c) => [c, []]));
  const rssSamples = { proxy: [], yurthub: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const which of rotated(round)) {
      let done = 0;
      const until = performance.now() + SECONDS * 1000;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async (_, worker) => {
          for (let n = worker; performance.now() < until; n += CONCURRENCY) {
            const answer = await get(targets[which], objectPath(n % OBJECTS), agents[which]);
            if (which === 'yurthub' && answer.status !== 200) countYurthubFailure(answer);
            else if (answer.status !== 200) throw new Error(`${which}: HTTP ${answer.status}`);
            else done++;
          }
        }),
      );
      throughput[which].push(done / SECONDS);
      if (which !== 'direct') rssSamples[which].push(rssMiB(pids[which]));
    }
  }
  const rssSteady = rssMiB(proxyProcess.pid);
  const rssSteadySplit = rssSplitMiB(proxyProcess.pid);
  const cacheMetrics = await metrics();

  const summary = (which) => {
    const sorted = [...latencies[which]].sort((a, b) => a - b);
    const rates = throughput[which];
    return {
      p50Ms: Number(percentile(sorted, 50).toFixed(3)),
      p99Ms: Number(percentile(sorted, 99).toFixed(3)),
      cpuPerRequestMs: Number(cpuPerRequestMs[which].toFixed(3)),
      requestsPerSecond: Math.round(rates.reduce((a, b) => a + b, 0) / rates.length),
      requestsPerSecondByRound: rates.map(Math.round),
    };
  };
  const result = {
    objects: OBJECTS,
    listBytes: listed.size,
    latencyRequestsPerCase: REQUESTS,
    concurrency: CONCURRENCY,
    secondsPerRound: SECONDS,
    rounds: ROUNDS,
    peers: PEERS,
    offlineViaEdgeProxy: summary('proxy'),
    offlineViaYurthub: hub
      ? { ...summary('yurthub'), failedRequests: yurthubFailures, failedRequestsByReason: yurthubFailureReasons }
      : null,
    directToUpstream: summary('direct'),
    proxyRssMiB: {
      atStart: Number(rssStart.toFixed(1)),
      afterCaching: Number(rssWarm.toFixed(1)),
      duringOfflineLoad: rssSamples.proxy.map((v) => Number(v.toFixed(1))),
      steadyAfterLoad: Number(rssSteady.toFixed(1)),
      steadyAnon: rssSteadySplit.anon,
      steadyFile: rssSteadySplit.file,
    },
    // The yurthub process alone, as it is deployed (one Go binary; no node runtime to count).
    yurthubRssMiB: hub
      ? {
          atStart: Number(hub.rssStart.toFixed(1)),
          afterCaching: Number(hub.rssWarm.toFixed(1)),
          duringOfflineLoad: rssSamples.yurthub.map((v) => Number(v.toFixed(1))),
          steadyAfterLoad: Number(rssMiB(hub.child.pid).toFixed(1)),
          steadyAnon: rssSplitMiB(hub.child.pid).anon,
          steadyFile: rssSplitMiB(hub.child.pid).file,
        }
      : null,
    yurthub: hub
      ? {
          version: yurthub.version,
          binary: yurthub.binary,
          userAgent: YURTHUB_USER_AGENT,
          pageCacheDropped: hub.pageCacheDropped,
          offlineAfterSeconds: hub.offlineAfterSeconds,
          objectsServedOfflineFromCache: hub.objectsServedOffline,
        }
      : null,
    cacheEntries: Number(/^edgeadm_edge_proxy_cache_entries (\d+)$/m.exec(cacheMetrics)[1]),
    cacheBytes: Number(/^edgeadm_edge_proxy_cache_bytes (\d+)$/m.exec(cacheMetrics)[1]),
    connectionResetRetries: retries,
    proxyEntry: values['proxy-bin']
      ? `single binary ${values['proxy-bin']} (${pageCacheDropped ? 'dropped from the page cache before the start' : 'pages left in the page cache'})`
      : values['core-only']
        ? 'proxy core only (lib/edge)'
        : 'bin/run.js (CLI)',
    proxyNodeOptions: values['proxy-node-options'],
    servingCertificate: values['warm-pki'] ? 'made before the start' : 'made by the proxy at start',
    proxyEnvironment: proxyEnv,
    loadAverage: (await import('node:os')).loadavg().map((v) => Number(v.toFixed(2))),
    node: process.version,
    cpus: (await import('node:os')).cpus().length,
  };
  for (const agent of Object.values(agents)) agent.destroy();
  if (values.json) console.log(JSON.stringify(result, null, 2));
  else {
    const row = (name, s) =>
      `${name.padEnd(30)} p50 ${String(s.p50Ms).padStart(7)} ms   p99 ${String(s.p99Ms).padStart(7)} ms   cpu/req ${String(Math.round(s.cpuPerRequestMs * 1000)).padStart(5)} µs   ${String(s.requestsPerSecond).padStart(6)} req/s (${s.requestsPerSecondByRound.join(', ')})`;
    const tuning = [result.proxyNodeOptions, ...Object.entries(proxyEnv).map(([k, v]) => `${k}=${v}`)].filter(Boolean);
    console.log(
      `edge-proxy entry: ${result.proxyEntry}${tuning.length > 0 ? ` with ${tuning.join(' ')}` : ''}; serving certificate ${result.servingCertificate}; connection-reset retries: ${retries}; load average ${result.loadAverage.join(' ')}`,
    );
    console.log(
      `edge-proxy benchmark: ${OBJECTS} objects, ${REQUESTS} GETs per case for latency, ${CONCURRENCY} in flight x ${SECONDS}s x ${ROUNDS} rounds for throughput`,
    );
    if (result.yurthub)
      console.log(
        `yurthub ${result.yurthub.version} (${result.yurthub.binary}, ${result.yurthub.pageCacheDropped ? 'dropped from the page cache before the start' : 'pages left in the page cache'}): offline ${result.yurthub.offlineAfterSeconds}s after the cut, ` +
          `${result.yurthub.objectsServedOfflineFromCache}/${OBJECTS} objects served from its cache, ${result.offlineViaYurthub.failedRequests} failed GETs under load` +
          Object.entries(result.offlineViaYurthub.failedRequestsByReason)
            .map(([reason, count]) => ` (${count}: ${reason})`)
            .join(''),
      );
    else console.log('peers: off');
    console.log(row('edge-proxy offline (cache)', result.offlineViaEdgeProxy));
    if (result.offlineViaYurthub) console.log(row('yurthub offline (cache)', result.offlineViaYurthub));
    console.log(row('direct to upstream (sim)', result.directToUpstream));
    const rssLine = (name, rss, after) =>
      `${name} RSS: ${rss.atStart} MiB at start, ${rss.afterCaching} MiB after caching ${OBJECTS} objects + the list, ` +
      `${rss.duringOfflineLoad.join('/')} MiB under offline load, ${rss.steadyAfterLoad} MiB after (anon ${rss.steadyAnon} + file ${rss.steadyFile}${after})`;
    console.log(
      rssLine('edge-proxy', result.proxyRssMiB, `; cache: ${result.cacheEntries} entries, ${result.cacheBytes} bytes`),
    );
    if (result.yurthubRssMiB) console.log(rssLine('yurthub', result.yurthubRssMiB, ''));
  }
} catch (error) {
  // Say which process failed: a crashed proxy shows up here, not as a client error.
  for (const { child, name, output } of children) {
    console.error(`--- ${name} (exit ${child.exitCode}, signal ${child.signalCode}):\n${output().slice(-4000)}`);
  }
  throw error;
} finally {
  for (const { child } of children) child.kill('SIGTERM');
  await new Promise((resolve) => setTimeout(resolve, 500));
  rmSync(dir, { recursive: true, force: true });
}
