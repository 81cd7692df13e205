/**
 * The node tunnel against direct and Konnectivity, on the real rig (issue #36):
 *
 *   npm run build && npm run build:binary && test/real/build.sh konnectivity
 *   EDGEADM_BIN=$PWD/dist/edgeadm-linux-x64 flock /tmp/edgeadm-real.lock npm run bench:node-tunnel
 *   options: --paths direct,node-tunnel,konnectivity-grpc[,konnectivity-http-connect]
 *            --passes 2 --copies 2 --mib 1024 --execs 100 --echoes 500 --json FILE
 *
 * As root (it starts the rig's test hosts): a real kubeadm cluster (`init
 * --enable-edge`, one edge node joined), a pod on the edge node, then per
 * pass and per path (paths.ts: the API server's egress switched between
 * them; odd passes in the order given, even passes reversed, so a drift of
 * the machine's load does not favour one path): `--copies` × `kubectl cp`
 * of `--mib` MiB of random bytes (checked by sha256 in the pod), `--execs` ×
 * `kubectl exec … -- true`, and `--echoes` round trips on one `kubectl exec
 * -i … -- cat` (measure.ts). It prints a Markdown table with the date and
 * load averages, and resets the cluster at the end.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { parseArgs } from 'node:util';
import { execa } from 'execa';
import { resetRealCluster, startRealCluster } from '../../test/support/real/main-job.js';
import { builtSet, realEdgeadm, RIG_WORKLOAD_IMAGE } from '../../test/support/real/rig.js';
import { startTestHosts, type TestHosts } from '../../test/support/test-hosts.js';
import {
  copyOnce,
  echoRoundTrips,
  percentile,
  smallExecs,
  type CopyRun,
  type CpuSpent,
  type LatencyRun,
} from './measure.js';
import { KONNECTIVITY_DIR, PATH_NAMES, usePath, type BenchCluster, type PathName } from './paths.js';

const { values } = parseArgs({
  options: {
    paths: { type: 'string', default: 'direct,node-tunnel,konnectivity-grpc' },
    passes: { type: 'string', default: '2' },
    copies: { type: 'string', default: '2' },
    mib: { type: 'string', default: '1024' },
    execs: { type: 'string', default: '100' },
    echoes: { type: 'string', default: '500' },
    json: { type: 'string' },
  },
});
const paths = values.paths.split(',').map((p) => p.trim()) as PathName[];
for (const path of paths)
  if (!PATH_NAMES.includes(path)) throw new Error(`unknown path ${path} (${PATH_NAMES.join(', ')})`);
if (paths.some((p) => p.startsWith('konnectivity')) && !existsSync(join(KONNECTIVITY_DIR, 'proxy-server'))) {
  throw new Error(`Konnectivity is not built: test/real/build.sh konnectivity (looked in ${KONNECTIVITY_DIR})`);
}
const settings = {
  passes: Number(values.passes),
  copies: Number(values.copies),
  mib: Number(values.mib),
  execs: Number(values.execs),
  echoes: Number(values.echoes),
};

interface PathResults {
  copies: CopyRun[];
  execs: LatencyRun[];
  echoes: LatencyRun[];
  load: number[];
}

const log = (line: string): void => console.error(`[${new Date().toISOString().slice(11, 19)}] ${line}`);

/** 1 GiB of random bytes (by default) in `dir`, and its sha256. */
async function payload(dir: string, mib: number): Promise<{ path: string; mib: number; sha256: string }> {
  const path = join(dir, 'payload.bin');
  const hash = createHash('sha256');
  const out = createWriteStream(path);
  for (let i = 0; i < mib; i += 1) {
    const chunk = randomBytes(1024 * 1024);
    hash.update(chunk);
    if (!out.write(chunk)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return { path, mib, sha256: hash.digest('hex') };
}

async function edgePod(bench: Omit<BenchCluster, 'pod'>): Promise<string> {
  const name = 'bench-edge';
  const manifest = join(bench.cluster.hosts.dir, `${name}.json`);
  writeFileSync(
    manifest,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'default' },
      spec: {
        nodeName: bench.edge.name,
        tolerations: [{ operator: 'Exists' }],
        automountServiceAccountToken: false,
        containers: [
          {
            name: 'main',
            image: RIG_WORKLOAD_IMAGE,
            imagePullPolicy: 'Never',
            command: ['/bin/sh', '-c', 'while :; do sleep 5; done'],
          },
        ],
      },
    }),
  );
  await bench.cluster.kubectl(['apply', '-f', manifest]);
  await bench.cluster.kubectl(['wait', '--for=condition=Ready', `pod/${name}`, '--timeout=180s']);
  return name;
}

async function measurePath(
  bench: BenchCluster,
  name: PathName,
  file: Awaited<ReturnType<typeof payload>>,
  into: PathResults,
): Promise<void> {
  log(`${name}: switching the API server`);
  const path = await usePath(bench, name);
  try {
    into.load.push(loadavg()[0]!);
    for (let i = 0; i < settings.copies; i += 1) {
      const copy = await copyOnce(bench, path, file);
      log(
        `${name}: kubectl cp ${file.mib} MiB in ${copy.seconds.toFixed(1)} s (${copy.mibPerSecond.toFixed(0)} MiB/s)`,
      );
      into.copies.push(copy);
    }
    const execs = await smallExecs(bench, path, settings.execs);
    log(`${name}: ${settings.execs} execs, p50 ${percentile(execs.ms, 50).toFixed(0)} ms`);
    into.execs.push(execs);
    const echoes = await echoRoundTrips(bench, path, {
      kubectl: join(builtSet('kubernetes').dir, 'kubectl'),
      kubeconfig: bench.cluster.kubeconfig,
      count: settings.echoes,
      warmup: 20,
    });
    log(`${name}: ${settings.echoes} echo round trips, p50 ${percentile(echoes.ms, 50).toFixed(2)} ms`);
    into.echoes.push(echoes);
    into.load.push(loadavg()[0]!);
  } finally {
    await path.stop();
  }
}

/** The median (the mean of the middle two for an even count). */
const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};
/** Round trips held back by Nagle's algorithm until a delayed ACK (about 40 ms) stand out above this. */
const SLOW_ECHO_MS = 30;
const sumCpu = (runs: Array<{ cpu: CpuSpent }>, key: keyof CpuSpent): number =>
  runs.reduce((s, r) => s + r.cpu[key], 0);

function report(results: Map<PathName, PathResults>, started: Date, loadStart: number[], loadEnd: number[]): string {
  const direct = results.get('direct');
  const directCopy = direct ? median(direct.copies.map((c) => c.seconds)) : undefined;
  const lines = [
    `${started.toISOString().slice(0, 16).replace('T', ' ')} UTC; load average at the start ${loadStart.map((l) => l.toFixed(2)).join(' ')}, at the end ${loadEnd.map((l) => l.toFixed(2)).join(' ')}; ${settings.passes} passes × ${settings.copies} copies of ${settings.mib} MiB, ${settings.execs} execs and ${settings.echoes} echo round trips per pass`,
    '',
    '| path | cp median (min–max) | MiB/s | × direct | CPU s per cp: server + agent | API server CPU s per cp | exec p50 / p99 ms | CPU ms per exec: server + agent | echo p50 / p99 ms | echoes over 30 ms | 1-min load during |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const [name, r] of results) {
    const seconds = r.copies.map((c) => c.seconds);
    const cp = median(seconds);
    const execMs = r.execs.flatMap((e) => e.ms).sort((a, b) => a - b);
    const echoMs = r.echoes.flatMap((e) => e.ms).sort((a, b) => a - b);
    const execCount = r.execs.reduce((s, e) => s + e.count, 0);
    const tunnelled = name !== 'direct';
    const perCp = (key: keyof CpuSpent): string => (sumCpu(r.copies, key) / r.copies.length).toFixed(2);
    const perExec = (key: keyof CpuSpent): string => ((1000 * sumCpu(r.execs, key)) / execCount).toFixed(1);
    lines.push(
      [
        name,
        `${cp.toFixed(1)} s (${Math.min(...seconds).toFixed(1)}–${Math.max(...seconds).toFixed(1)})`,
        (settings.mib / cp).toFixed(0),
        directCopy === undefined ? '' : (directCopy / cp).toFixed(2),
        tunnelled ? `${perCp('server')} + ${perCp('agent')}` : '–',
        perCp('apiServer'),
        `${percentile(execMs, 50).toFixed(0)} / ${percentile(execMs, 99).toFixed(0)}`,
        tunnelled ? `${perExec('server')} + ${perExec('agent')}` : '–',
        `${percentile(echoMs, 50).toFixed(2)} / ${percentile(echoMs, 99).toFixed(2)}`,
        `${echoMs.filter((ms) => ms > SLOW_ECHO_MS).length} of ${echoMs.length}`,
        `${Math.min(...r.load).toFixed(1)}–${Math.max(...r.load).toFixed(1)}`,
      ]
        .join(' | ')
        .replace(/^/, '| ')
        .concat(' |'),
    );
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const started = new Date();
  const loadStart = loadavg();
  let hosts: TestHosts | undefined;
  try {
    hosts = await startTestHosts({ count: 2, cgroups: true });
    log('init and join (kubeadm, --enable-edge)');
    const cluster = await startRealCluster({ hosts, edgeadm: realEdgeadm() });
    const kubectlProgram = join(builtSet('kubernetes').dir, 'kubectl');
    const base = {
      cluster,
      edge: cluster.edges[0]!,
      kubectl: async (args: string[]) => {
        const run = await execa(kubectlProgram, ['--kubeconfig', cluster.kubeconfig, ...args], {
          reject: false,
          timeout: 600_000,
        });
        return { exitCode: run.exitCode ?? 1, stdout: run.stdout, stderr: run.stderr };
      },
    };
    const bench: BenchCluster = { ...base, pod: await edgePod(base) };
    log(`writing ${settings.mib} MiB of random bytes`);
    const file = await payload(hosts.dir, settings.mib);
    const results = new Map<PathName, PathResults>(
      paths.map((p) => [p, { copies: [], execs: [], echoes: [], load: [] }]),
    );
    for (let pass = 1; pass <= settings.passes; pass += 1) {
      for (const name of pass % 2 === 1 ? paths : [...paths].reverse()) {
        await measurePath(bench, name, file, results.get(name)!);
      }
    }
    const table = report(results, started, loadStart, loadavg());
    console.log(table);
    if (values.json)
      writeFileSync(values.json, JSON.stringify({ started, settings, results: Object.fromEntries(results) }, null, 2));
    // Back to edgeadm's own configuration before reset, as init left it.
    await usePath(bench, 'node-tunnel');
    await hosts.run(cluster.controlPlane, 'rm -f /etc/kubernetes/edgeadm/bench-* /var/lib/edgeadm/bench-*');
    await hosts.run(bench.edge, 'rm -f /var/lib/edgeadm/bench-*');
    log('reset');
    const leftovers = await resetRealCluster(cluster);
    if (Object.values(leftovers).some((l) => l.length > 0)) log(`reset left: ${JSON.stringify(leftovers)}`);
  } finally {
    await hosts?.teardown();
  }
}

await main();
