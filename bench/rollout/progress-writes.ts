/**
 * What a rollout controller pass costs the store at 10,000 clusters: the
 * controller's own LiveRollouts.save (src/hub/rollouts/live-rollouts.ts)
 * over the hub's real stores, SQLite and a REAL three-member etcd
 * (Debian's etcd-server, test/support/etcd-cluster.ts), this checkout's
 * build against a baseline's (`--baseline DIR`, a built checkout; before
 * issue #35 a pass wrote the whole rollout record, every cluster's
 * progress as one JSON value). Rounds alternate between the two builds so
 * that the load of a shared machine falls on both alike.
 *
 * One pass: `--changed` clusters (of `--clusters`) get a new progress
 * entry, as reports arriving between two passes do, then the rollout is
 * saved. Measured per pass: wall time and this process's CPU (the hub does
 * the same work in its own process), and for etcd the bytes put.
 *
 *   npm run build && node bench/rollout/progress-writes.ts --baseline DIR [--clusters 10000] [--changed 100]
 *     [--passes 30] [--rounds 3] [--json]
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type * as LiveRolloutsModule from '../../src/hub/rollouts/live-rollouts.js';
import type * as SqliteStoreModule from '../../src/hub/store/sqlite-store.js';
import type * as EtcdStoreModule from '../../src/hub/store/etcd/etcd-store.js';
import type * as EtcdClientModule from '../../src/hub/store/etcd/etcd-client.js';
import type * as EncryptionModule from '../../src/hub/store/etcd/encryption.js';
import type * as LogModule from '../../src/log/run-log.js';
import type * as EtcdClusterModule from '../../test/support/etcd-cluster.js';
import type { HubStore } from '../../src/hub/store/store.js';

const { values } = parseArgs({
  options: {
    baseline: { type: 'string' },
    clusters: { type: 'string', default: '10000' },
    changed: { type: 'string', default: '100' },
    passes: { type: 'string', default: '30' },
    rounds: { type: 'string', default: '3' },
    json: { type: 'boolean', default: false },
  },
});
if (values.baseline === undefined) throw new Error('--baseline DIR (a built checkout) is required');
const CLUSTERS = Number(values.clusters);
const CHANGED = Number(values.changed);
const PASSES = Number(values.passes);
const ROUNDS = Number(values.rounds);
const root = fileURLToPath(new URL('../..', import.meta.url));

await import(new URL('../support/register-ts.js', import.meta.url).href);
const { startEtcdCluster, etcdConnectionOptionsFor, freshEtcdPrefix } = (await import(
  new URL('../../test/support/etcd-cluster.ts', import.meta.url).href
)) as typeof EtcdClusterModule;

interface Build {
  label: string;
  LiveRollouts: typeof LiveRolloutsModule.LiveRollouts;
  SqliteHubStore: typeof SqliteStoreModule.SqliteHubStore;
  EtcdHubStore: typeof EtcdStoreModule.EtcdHubStore;
  EtcdConnection: typeof EtcdClientModule.EtcdConnection;
  encryptionKeysFrom: typeof EncryptionModule.encryptionKeysFrom;
  silentLogger: typeof LogModule.silentLogger;
}
async function loadBuild(label: string, dir: string): Promise<Build> {
  const lib = (path: string): Promise<unknown> => import(join(dir, 'lib', path));
  return {
    label,
    LiveRollouts: ((await lib('hub/rollouts/live-rollouts.js')) as typeof LiveRolloutsModule).LiveRollouts,
    SqliteHubStore: ((await lib('hub/store/sqlite-store.js')) as typeof SqliteStoreModule).SqliteHubStore,
    EtcdHubStore: ((await lib('hub/store/etcd/etcd-store.js')) as typeof EtcdStoreModule).EtcdHubStore,
    EtcdConnection: ((await lib('hub/store/etcd/etcd-client.js')) as typeof EtcdClientModule).EtcdConnection,
    encryptionKeysFrom: ((await lib('hub/store/etcd/encryption.js')) as typeof EncryptionModule).encryptionKeysFrom,
    silentLogger: ((await lib('log/run-log.js')) as typeof LogModule).silentLogger,
  };
}
const builds = [
  await loadBuild('this checkout', root),
  await loadBuild(`baseline ${values.baseline}`, values.baseline),
];
const etcd = await startEtcdCluster();

type LiveRollout = LiveRolloutsModule.LiveRollout;
function liveRollout(): LiveRollout {
  const clusters: Record<string, { wave: number; phase: 'applying'; targetRevision: string; deliveredAt: number }> = {};
  for (let i = 0; i < CLUSTERS; i += 1) {
    clusters[`shop-${String(i).padStart(5, '0')}`] = {
      wave: 0,
      phase: 'applying',
      targetRevision: '1-abc',
      deliveredAt: i,
    };
  }
  return {
    record: {
      name: 'web',
      owner: { user: 'admin', groups: [], clustersSelector: '' },
      revision: 1,
      progress: { revision: 1, state: 'progressing', currentWave: 0, clusters },
      statusVersion: 1,
      createdAt: '2026-11-29T00:00:00.000Z',
      updatedAt: '2026-11-29T00:00:00.000Z',
    },
    spec: {} as LiveRollout['spec'],
    documentText: '{}',
    reports: new Map(),
    unconfirmed: new Set(),
    viewKey: '',
  };
}

async function openStore(
  build: Build,
  kind: 'sqlite' | 'etcd',
): Promise<{ store: HubStore; close: () => Promise<void> }> {
  if (kind === 'sqlite') {
    const store = await build.SqliteHubStore.open(join(mkdtempSync(join(tmpdir(), 'progress-writes-')), 'hub.db'));
    return { store, close: () => store.close() };
  }
  const connection = await build.EtcdConnection.open(etcdConnectionOptionsFor(etcd, freshEtcdPrefix()));
  const store = await build.EtcdHubStore.open(connection, build.encryptionKeysFrom([Buffer.alloc(32, 7)]));
  return { store, close: () => store.close() };
}

/** One round of PASSES passes on a fresh store: ms of wall time and of CPU per pass. */
async function round(build: Build, kind: 'sqlite' | 'etcd'): Promise<{ wallMs: number; cpuMs: number }> {
  const { store, close } = await openStore(build, kind);
  const rollouts = new build.LiveRollouts(store, build.silentLogger);
  const live = liveRollout();
  rollouts.set(live);
  await rollouts.save([live]); // the first write is whole in both builds
  const names = Object.keys(live.record.progress.clusters);
  const started = performance.now();
  const cpu = process.cpuUsage();
  for (let pass = 0; pass < PASSES; pass += 1) {
    for (let i = 0; i < CHANGED; i += 1) {
      const name = names[(pass * CHANGED + i) % names.length] as string;
      live.record.progress.clusters[name] = { wave: 0, phase: 'ready', targetRevision: '1-abc' };
    }
    await rollouts.save([live]);
  }
  const used = process.cpuUsage(cpu);
  const wallMs = (performance.now() - started) / PASSES;
  const cpuMs = (used.user + used.system) / 1000 / PASSES;
  const stored = await store.getRollout('web');
  if (Object.keys(stored?.progress.clusters ?? {}).length !== CLUSTERS)
    throw new Error(`${build.label}: lost clusters`);
  await close();
  return { wallMs, cpuMs };
}

const results: Record<string, Record<string, { wallMs: number[]; cpuMs: number[] }>> = {};
for (const kind of ['sqlite', 'etcd'] as const) {
  for (let r = 0; r < ROUNDS; r += 1) {
    for (const build of builds) {
      const outcome = await round(build, kind);
      const entry = ((results[kind] ??= {})[build.label] ??= { wallMs: [], cpuMs: [] });
      entry.wallMs.push(outcome.wallMs);
      entry.cpuMs.push(outcome.cpuMs);
      if (!values.json)
        console.error(
          `${kind} ${build.label}: ${outcome.wallMs.toFixed(1)} ms/pass, CPU ${outcome.cpuMs.toFixed(1)} ms/pass`,
        );
    }
  }
}
await etcd.stop();
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const summary = Object.fromEntries(
  Object.entries(results).map(([kind, byBuild]) => [
    kind,
    Object.fromEntries(
      Object.entries(byBuild).map(([label, m]) => [
        label,
        { wallMsPerPass: median(m.wallMs), cpuMsPerPass: median(m.cpuMs) },
      ]),
    ),
  ]),
);
const load = (await import('node:fs')).readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const out = { clusters: CLUSTERS, changedPerPass: CHANGED, passes: PASSES, rounds: ROUNDS, load, summary };
writeFileSync(1, `${JSON.stringify(out, null, 2)}\n`);
