/**
 * What operators and the web view are shown of a rollout: its list item
 * and its status view (waves, counts, declared summaries and, on request,
 * one row per cluster), and the key whose change bumps its status version.
 * Pure: no I/O; the clusters' facts are passed in.
 */
import type { ClusterRowView, PhaseCounts, RolloutListItem, RolloutStatusView, WaveView } from '../../rollout/api.js';
import type { ClusterPhase, ClusterProgress } from '../../rollout/progress.js';
import { summarize } from '../../rollout/readiness.js';
import type { ClusterRecord } from '../store/store.js';
import type { LiveRollout } from './live-rollouts.js';
import { withClusterFacts } from './rollout-rows.js';

/** What a view reads of the clusters (KnownClusters is one). */
export interface ClusterFacts {
  get(cluster: string): ClusterRecord | undefined;
  isConnected(cluster: string): boolean;
}

const PHASES: readonly ClusterPhase[] = [
  'waiting',
  'held',
  'offline-pending',
  'applying',
  'progressing',
  'ready',
  'failed',
];

/** A count of zero for every phase. */
export function zeroCounts(): PhaseCounts {
  return Object.fromEntries(PHASES.map((phase) => [phase, 0])) as PhaseCounts;
}

/** A rollout as `hub rollout list` shows it. */
export function listItemOf(live: LiveRollout): RolloutListItem {
  const counts = zeroCounts();
  const clusters = Object.values(live.record.progress.clusters);
  for (const cluster of clusters) counts[cluster.phase] += 1;
  return {
    name: live.record.name,
    revision: live.record.revision,
    state: live.record.progress.state,
    owner: live.record.owner.user,
    clusters: clusters.length,
    counts,
    updatedAt: live.record.updatedAt,
  };
}

/** The waves of a rollout, each with its counts and state. */
function wavesOf(live: LiveRollout, waveCounts: readonly (PhaseCounts | undefined)[]): WaveView[] {
  const { progress } = live.record;
  const waves: WaveView[] = [];
  for (let index = 0; index < waveCounts.length; index += 1) {
    const waveCount = waveCounts[index] ?? zeroCounts();
    let state: WaveView['state'] = 'waiting';
    if (progress.state === 'complete' || index < progress.currentWave) state = 'done';
    else if (index === progress.currentWave) state = progress.waveDoneSince === undefined ? 'started' : 'soaking';
    waves.push({
      index,
      clusters: Object.values(waveCount).reduce((total, n) => total + n, 0),
      counts: waveCount,
      state,
    });
  }
  return waves;
}

/** The objects placed clusters last reported, for the declared summaries. */
function reportedCopies(live: LiveRollout, isPlaced: (cluster: string) => boolean) {
  return [...live.reports.values()]
    .filter((report) => isPlaced(report.cluster))
    .map((report) =>
      report.objects.map((object) => ({
        apiVersion: object.apiVersion,
        kind: object.kind,
        metadata: { name: object.name, ...(object.namespace === undefined ? {} : { namespace: object.namespace }) },
        ...(object.status === undefined ? {} : { status: object.status }),
      })),
    );
}

/** One cluster's row. */
function rowOf(cluster: string, state: ClusterProgress, clusters: ClusterFacts): ClusterRowView {
  const row: ClusterRowView = { cluster, wave: state.wave, phase: state.phase };
  if (state.targetRevision !== undefined) row.targetRevision = state.targetRevision;
  if (state.message !== undefined) row.message = state.message;
  // A cluster's last report is not its state now: a ready cluster that is offline says so.
  const isReported = state.phase === 'ready' || state.phase === 'progressing' || state.phase === 'applying';
  if (isReported && !clusters.isConnected(cluster)) {
    row.message = `not connected to the hub now; last known ${state.phase}${state.message ? `: ${state.message}` : ''}`;
  }
  return withClusterFacts(row, clusters.get(cluster), clusters.isConnected(cluster));
}

/** A rollout's status view, with one row per cluster (by name) when `withClusters`. */
export function statusViewOf(live: LiveRollout, withClusters: boolean, clusters: ClusterFacts): RolloutStatusView {
  const { record } = live;
  const { progress } = record;
  const counts = zeroCounts();
  const waveCounts: PhaseCounts[] = [];
  for (const name in progress.clusters) {
    const cluster = progress.clusters[name] as ClusterProgress;
    counts[cluster.phase] += 1;
    const perWave = (waveCounts[cluster.wave] ??= zeroCounts());
    perWave[cluster.phase] += 1;
  }
  const isPlaced = (cluster: string): boolean => Object.hasOwn(progress.clusters, cluster);
  const view: RolloutStatusView = {
    name: record.name,
    revision: record.revision,
    state: progress.state,
    ...(progress.haltReason === undefined ? {} : { haltReason: progress.haltReason }),
    ...(progress.rollbackOf === undefined ? {} : { rollbackOf: progress.rollbackOf }),
    statusVersion: record.statusVersion,
    owner: record.owner.user,
    currentWave: progress.currentWave,
    waves: wavesOf(live, waveCounts),
    counts,
    summaries: summarize(live.spec.summaries, reportedCopies(live, isPlaced)),
    updatedAt: record.updatedAt,
  };
  if (withClusters) {
    view.clusters = Object.entries(progress.clusters)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([cluster, state]) => rowOf(cluster, state, clusters));
  }
  return view;
}

/** What a rollout's rows were last made from, and the text of each. */
interface RowsMemo {
  rows: Map<string, { state: ClusterProgress; isConnected: boolean; facts: ClusterRecord | undefined; text: string }>;
  /** Bumped whenever a row's text, or which rows there are, changed. */
  version: number;
}

const rowsMemos = new WeakMap<LiveRollout, RowsMemo>();

/**
 * What a status view shows, without its version and time, as a key: a
 * change of it bumps the version. A row is made again only when its
 * cluster's progress entry (replaced on every change), connection or record
 * did, so a pass over 10,000 clusters with a few changes costs a walk, not
 * 10,000 rows and their JSON. The view itself is made when first asked for
 * at the new version (RolloutController.status).
 */
export function viewKeyOf(live: LiveRollout, clusters: ClusterFacts): string {
  const { statusVersion: _version, updatedAt: _at, ...shown } = statusViewOf(live, false, clusters);
  const memo = rowsMemos.get(live) ?? { rows: new Map(), version: 0 };
  rowsMemos.set(live, memo);
  const { progress } = live.record;
  let count = 0;
  let isChanged = false;
  for (const cluster in progress.clusters) {
    count += 1;
    const state = progress.clusters[cluster] as ClusterProgress;
    const isConnected = clusters.isConnected(cluster);
    const facts = clusters.get(cluster);
    const last = memo.rows.get(cluster);
    if (last !== undefined && last.state === state && last.isConnected === isConnected && last.facts === facts)
      continue;
    const text = JSON.stringify(rowOf(cluster, state, clusters));
    if (last?.text !== text) isChanged = true;
    memo.rows.set(cluster, { state, isConnected, facts, text });
  }
  // Rows of clusters no longer placed: only looked for when the counts do not add up.
  if (memo.rows.size !== count) {
    isChanged = true;
    for (const cluster of [...memo.rows.keys()])
      if (!Object.hasOwn(progress.clusters, cluster)) memo.rows.delete(cluster);
  }
  if (isChanged) memo.version += 1;
  return `${JSON.stringify(shown)}#${memo.version}`;
}
