/**
 * One pass of the rollout controller: read the clusters again if they
 * changed, catch up the clusters that just connected, step each marked
 * rollout with the pure core (rollout/progress.ts), bump the status version
 * of each whose view changed, write, owe the removals the steps decided,
 * roll back what `onFailure: rollback` asks for, and set the next wake.
 */
import { copyRevisionOf } from '../../rollout/render.js';
import { rollbackFor } from '../../rollout/rollback.js';
import { stepRollout, type ObservedCluster, type RollbackRecord } from '../../rollout/progress.js';
import type { ClusterRecord, HubStore, PendingRemovalRecord } from '../store/store.js';
import type { CopyDelivery } from './copy-delivery.js';
import type { KnownClusters } from './known-clusters.js';
import { canonicalJson, ownerOf, scopeOf, type LiveRollout, type LiveRollouts } from './live-rollouts.js';
import type { OwedRemovals } from './owed-removals.js';
import type { PassScheduler } from './pass-scheduler.js';
import type { RolloutClock } from './rollout-clock.js';
import type { RolloutRevisions } from './rollout-revisions.js';

/** Options of {@link RolloutPass}. */
export interface RolloutPassOptions {
  store: HubStore;
  rollouts: LiveRollouts;
  clusters: KnownClusters;
  removals: OwedRemovals;
  copies: CopyDelivery;
  revisions: RolloutRevisions;
  scheduler: PassScheduler;
  clock: RolloutClock;
  /** The view key of a rollout (status-views.ts), which keeps its view on it. */
  viewKeyOf: (live: LiveRollout) => string;
  /** Wakes the watchers of a rollout's status. */
  wake: (name: string) => void;
  /** Records removals as owed and sends them (with the reports dropped). */
  owe: (removals: readonly PendingRemovalRecord[]) => Promise<void>;
}

/** The controller's pass. */
export class RolloutPass {
  readonly #options: RolloutPassOptions;

  constructor(options: RolloutPassOptions) {
    this.#options = options;
  }

  /** Runs one pass over what the scheduler marked. */
  async run(): Promise<void> {
    const { store, rollouts, clusters, removals, copies, scheduler, clock } = this.#options;
    if (scheduler.takeClusterReload()) {
      const previous = await clusters.reload(store);
      refreshChangedCopies(rollouts.all(), clusters.records(), previous);
      await removals.clustersReloaded(previous);
    }
    const marks = scheduler.takeMarks();
    const names = marks.isAll ? rollouts.names() : marks.names;
    const observed = clusters.observed();
    const now = clock.now();
    // Clusters that just connected first get what they were handed while away (re-rendered: the latest)
    // and the removals they are owed; the step below then hands out what is new.
    const observedByName = new Map(observed.map((seen) => [seen.name, seen]));
    for (const cluster of marks.justConnected) copies.catchUp(cluster, observedByName, names);
    const changed: LiveRollout[] = [];
    const owed: PendingRemovalRecord[] = [];
    const rollbacks: { live: LiveRollout; rollback: RollbackRecord }[] = [];
    for (const name of names) {
      const live = rollouts.get(name);
      if (live === undefined) continue;
      const before = live.record.progress;
      owed.push(...this.#step(live, observed, now));
      const rollback = rollbackFor(live.spec, before, live.record.progress);
      if (rollback !== undefined) rollbacks.push({ live, rollback });
      changed.push(live);
    }
    for (const live of changed) this.#bumpIfShownChanged(live, now);
    await rollouts.save(changed);
    if (owed.length > 0) await this.#options.owe(owed);
    // In the same pass as the halt: the updated clusters are sent their previous copy at once.
    for (const { live, rollback } of rollbacks) await this.#options.revisions.rollBack(live, rollback);
    scheduler.wakeAt(nextWakeAt(rollouts.all()));
  }

  /** Steps one rollout with the core; returns the removals it decided. */
  #step(live: LiveRollout, observed: readonly ObservedCluster[], now: number): PendingRemovalRecord[] {
    const owed: PendingRemovalRecord[] = [];
    const name = live.record.name;
    // A step that starts the next wave hands out its copies only in the step after: step again then.
    for (let steps = 0; steps <= live.spec.strategy.waves.length; steps += 1) {
      const wave = live.record.progress.currentWave;
      const out = stepRollout({
        spec: live.spec,
        progress: live.record.progress,
        clusters: observed,
        scope: scopeOf(live.record.owner.clustersSelector),
        now,
      });
      live.record.progress = out.progress;
      for (const delivery of out.deliveries) this.#options.copies.deliver(live, delivery);
      for (const cluster of out.removals) {
        owed.push({ rollout: name, cluster, owner: ownerOf(live.record.owner) });
        live.unconfirmed.delete(cluster);
      }
      if (out.progress.currentWave === wave) break;
    }
    return owed;
  }

  /** A new status version when what the view shows changed (not only its time), and its watchers woken. */
  #bumpIfShownChanged(live: LiveRollout, now: number): void {
    const key = this.#options.viewKeyOf(live);
    if (key === live.viewKey) return;
    live.viewKey = key;
    live.record.statusVersion += 1;
    live.record.updatedAt = new Date(now).toISOString();
    // Made again when first asked for at the new version.
    delete live.view;
    this.#options.wake(live.record.name);
  }
}

/**
 * Clusters whose labels or properties changed may need another copy (a
 * `${property:…}` or a patch by selector reads them): each one whose copy
 * renders differently now, or not at all, waits for a fresh copy, which
 * the step hands out within the rollout's `maxUnavailable`.
 */
export function refreshChangedCopies(
  rollouts: readonly LiveRollout[],
  clusters: readonly ClusterRecord[],
  previous: ReadonlyMap<string, ClusterRecord>,
): void {
  const factsOf = (cluster: ClusterRecord | undefined): string =>
    canonicalJson({ labels: cluster?.labels ?? {}, properties: cluster?.properties ?? {} });
  const changed = clusters.filter(
    (cluster) => previous.has(cluster.name) && factsOf(previous.get(cluster.name)) !== factsOf(cluster),
  );
  if (changed.length === 0) return;
  for (const live of rollouts) {
    for (const cluster of changed) {
      const progress = live.record.progress.clusters[cluster.name];
      if (progress?.targetRevision === undefined) continue;
      const rendered = copyRevisionOf(live.spec, live.record.revision, {
        name: cluster.name,
        labels: cluster.labels,
        properties: cluster.properties ?? {},
      });
      if (rendered.ok && rendered.revision === progress.targetRevision) continue;
      live.record.progress.clusters[cluster.name] = { wave: progress.wave, phase: 'waiting' };
      live.unconfirmed.delete(cluster.name);
    }
  }
}

/** The earliest soak end or delivery deadline of a progressing rollout (the clock's ms), or Infinity. */
export function nextWakeAt(rollouts: readonly LiveRollout[]): number {
  let due = Number.POSITIVE_INFINITY;
  for (const live of rollouts) {
    const { progress } = live.record;
    if (progress.state !== 'progressing') continue;
    const { soakMs, deadlineMs } = live.spec.strategy;
    if (progress.waveDoneSince !== undefined) due = Math.min(due, progress.waveDoneSince + soakMs);
    for (const cluster of Object.values(progress.clusters)) {
      if ((cluster.phase === 'applying' || cluster.phase === 'progressing') && cluster.deliveredAt !== undefined) {
        due = Math.min(due, cluster.deliveredAt + deadlineMs + 1);
      }
    }
  }
  return due;
}
