/**
 * The rollout controller's core: one pure step from what is known (the
 * rollout, its recorded progress, the clusters as the hub sees them now,
 * the clock) to the next progress and the copies to deliver. The hub runs
 * it whenever something changes and stores what it returns; nothing here
 * does I/O, so every rule below is tested by feeding it states.
 *
 * The rules:
 * - Waves start in order. A wave is done when each of its clusters is
 *   ready at the current copy revision, held, or offline-pending, and no
 *   more of them than `maxUnavailable` are offline-pending; it must then
 *   stay done for `soakMs` before the next wave starts.
 * - Only status reported for the copy revision a cluster is meant to run
 *   counts: a report quoting an older revision is ignored, so a wave never
 *   advances on stale status.
 * - Within the started waves, at most `maxUnavailable` clusters are
 *   unavailable at once (being applied, progressing, failed or
 *   offline-pending); deliveries wait for room, except that one update is
 *   always allowed in flight, so offline clusters slow a wave, never stop it.
 * - A cluster that is not connected when it should receive its copy is
 *   offline-pending; it gets the current copy as soon as it is connected
 *   again (never an older one), and until then counts as unavailable.
 * - A held cluster is left alone: no delivery, not a failure, not waited for.
 * - A cluster not ready within `deadlineMs` of its delivery, or whose copy
 *   cannot be rendered, or that reports failure, has failed; more failures
 *   than `failureBudget` halt the rollout.
 * - Paused and halted rollouts deliver nothing new and start no wave until
 *   resumed (a halted one's failed clusters are then tried again);
 *   aborted ones stop for good; reports are still recorded.
 */
import { resolveClusterCount, type RolloutSpec } from './spec.js';
import { placedClusters, wavesOf, type PlaceableCluster } from './placement.js';
import { copyRevisionOf, type ClusterFacts } from './render.js';
import type { LabelSelector } from '../kube/label-selector.js';

/** Where one cluster stands. */
export type ClusterPhase = 'waiting' | 'held' | 'offline-pending' | 'applying' | 'progressing' | 'ready' | 'failed';

/** The recorded progress of one cluster. */
export interface ClusterProgress {
  /** The wave the cluster was given when that wave started. */
  wave: number;
  phase: ClusterPhase;
  /** The copy revision the cluster should run (set when it is delivered or fails to render). */
  targetRevision?: string;
  /** When the current copy was handed over for delivery (ms since epoch). */
  deliveredAt?: number;
  /** The last reason given (a failure, what is progressing). */
  message?: string;
}

/** The rollout's overall state. */
export type RolloutState = 'progressing' | 'paused' | 'halted' | 'aborted' | 'complete';

/** Everything the controller records for one rollout. */
export interface RolloutProgress {
  revision: number;
  state: RolloutState;
  /** Index of the last wave that has started. */
  currentWave: number;
  /** Since when the current wave has been done (for the soak), if it is. */
  waveDoneSince?: number;
  clusters: Record<string, ClusterProgress>;
  /** Why the rollout halted, when it did. */
  haltReason?: string;
  /** Set on a revision the hub applied to roll back a failed one (`onFailure: rollback`). */
  rollbackOf?: RollbackRecord;
}

/** Which revision a rollback undid, and why. */
export interface RollbackRecord {
  revision: number;
  reason: string;
}

/** What the hub knows of a cluster right now. */
export interface ObservedCluster extends PlaceableCluster, ClusterFacts {
  isConnected: boolean;
  /** An operator's hold (maintenance): no rollout changes it until released. */
  isHeld: boolean;
}

/** A status report from a cluster about the copy it runs. */
export interface CopyReport {
  cluster: string;
  /** The revision annotation the applied objects carry. */
  revision: string;
  readiness: 'ready' | 'progressing' | 'failed';
  message?: string;
}

/**
 * A copy to send to a cluster: its revision and the facts it is rendered
 * from, rendered only when it is sent (a step holds no copy in memory).
 */
export interface Delivery {
  cluster: string;
  revision: string;
  facts: ClusterFacts;
}

/** The input of one step. */
export interface StepInput {
  spec: RolloutSpec;
  progress: RolloutProgress;
  clusters: readonly ObservedCluster[];
  /** The owner's scope (a scoped hub user's selector): the rollout never leaves it. */
  scope?: LabelSelector;
  now: number;
}

/** The output of one step. */
export interface StepOutput {
  /**
   * The next progress. A cluster's entry is a new object only when it
   * changed: an entry that did not is the input's own, so a caller can
   * write just the replaced ones.
   */
  progress: RolloutProgress;
  deliveries: Delivery[];
  /** Clusters still registered that the rollout no longer places: their copy is to be removed. */
  removals: string[];
}

/** A fresh progress record for a new revision. */
export function newProgress(revision: number, previous?: RolloutProgress): RolloutProgress {
  const state: RolloutState = previous?.state === 'paused' ? 'paused' : 'progressing';
  return { revision, state, currentWave: 0, clusters: {} };
}

/**
 * Resumes a halted rollout: its failed clusters wait for their copy again
 * (rendered afresh and delivered within `maxUnavailable`, each with a new
 * deadline), so the failure budget counts anew. What `hub rollout resume`
 * promises once the operator has fixed what failed.
 */
export function resumeHalted(progress: RolloutProgress): RolloutProgress {
  const clusters: Record<string, ClusterProgress> = {};
  for (const [name, cluster] of Object.entries(progress.clusters)) {
    clusters[name] = cluster.phase === 'failed' ? { wave: cluster.wave, phase: 'waiting' } : cluster;
  }
  const { haltReason: _reason, ...rest } = progress;
  return { ...rest, state: 'progressing', clusters };
}

/** Records a cluster's report; reports for another copy revision than its target are ignored. */
export function recordReport(progress: RolloutProgress, report: CopyReport): RolloutProgress {
  const cluster = progress.clusters[report.cluster];
  if (cluster === undefined || cluster.targetRevision !== report.revision) return progress;
  if (cluster.phase === 'failed' && report.readiness !== 'ready') return progress;
  const phase: ClusterPhase = report.readiness;
  const next: ClusterProgress = { ...cluster, phase };
  if (report.message !== undefined) next.message = report.message;
  else delete next.message;
  return { ...progress, clusters: { ...progress.clusters, [report.cluster]: next } };
}

/** Assigns newly placed clusters to waves: the planned wave, or the current one if that has passed. */
function assignWaves(input: StepInput, placed: readonly string[]): Record<string, ClusterProgress> {
  const clusters: Record<string, ClusterProgress> = {};
  const plan = wavesOf(input.spec.strategy, placed);
  plan.forEach((names, wave) => {
    for (const name of names) {
      const known = input.progress.clusters[name];
      clusters[name] = known ?? {
        wave: Math.max(wave, Math.min(input.progress.currentWave, plan.length - 1)),
        phase: 'waiting',
      };
    }
  });
  return clusters;
}

/** One controller step. */
export function stepRollout(input: StepInput): StepOutput {
  const { spec, now } = input;
  const observed = new Map(input.clusters.map((cluster) => [cluster.name, cluster]));
  const placed = placedClusters(spec.placement, input.clusters, input.scope);
  const clusters = assignWaves(input, placed);
  const waveCount = Math.max(1, wavesOf(spec.strategy, placed).length);
  const progress: RolloutProgress = { ...input.progress, clusters };
  const deliveries: Delivery[] = [];
  // Clusters that had a copy and are no longer placed (their labels or the placement changed): their objects are removed.
  const removals = Object.entries(input.progress.clusters)
    .filter(
      ([name, cluster]) => clusters[name] === undefined && cluster.targetRevision !== undefined && observed.has(name),
    )
    .map(([name]) => name);

  // Holds, connectivity and deadlines of the started waves.
  for (const [name, cluster] of Object.entries(clusters)) {
    const seen = observed.get(name) as ObservedCluster;
    if (cluster.wave > progress.currentWave) continue;
    if (seen.isHeld) {
      if (cluster.phase !== 'ready' && cluster.phase !== 'held') clusters[name] = { ...cluster, phase: 'held' };
      continue;
    }
    if (cluster.phase === 'held') clusters[name] = { ...cluster, phase: 'waiting' };
    const current = clusters[name] as ClusterProgress;
    const waitingPhase = seen.isConnected ? 'waiting' : 'offline-pending';
    if (current.phase === 'waiting' || current.phase === 'offline-pending') {
      if (current.phase !== waitingPhase) clusters[name] = { ...current, phase: waitingPhase };
    } else if (
      (current.phase === 'applying' || current.phase === 'progressing') &&
      current.deliveredAt !== undefined &&
      now - current.deliveredAt > spec.strategy.deadlineMs
    ) {
      clusters[name] = {
        ...current,
        phase: 'failed',
        message: `not ready within ${Math.round(spec.strategy.deadlineMs / 1000)} s of delivery${current.message ? `: ${current.message}` : ''}`,
      };
    }
  }

  // A finished rollout takes up clusters registered (or released) since.
  if (progress.state === 'complete' && Object.values(clusters).some((c) => c.phase !== 'ready' && c.phase !== 'held')) {
    progress.state = 'progressing';
  }

  const failed = Object.values(clusters).filter((cluster) => cluster.phase === 'failed').length;
  const budget = resolveClusterCount(spec.strategy.failureBudget, placed.length);
  if (progress.state === 'progressing' && failed > budget) {
    progress.state = 'halted';
    progress.haltReason = `${failed} clusters failed, more than the failure budget of ${budget}`;
  }

  if (progress.state === 'progressing') {
    const started = Object.entries(clusters).filter(([, cluster]) => cluster.wave <= progress.currentWave);
    const startedCount = started.length;
    const maxUnavailable = Math.max(1, resolveClusterCount(spec.strategy.maxUnavailable, startedCount));
    // Offline and failed clusters use up the allowance, but one update is always allowed in
    // flight: offline clusters slow a wave down, they never stop it.
    const stuck = started.filter(([, c]) => c.phase === 'offline-pending' || c.phase === 'failed').length;
    let inFlight = started.filter(([, c]) => c.phase === 'applying' || c.phase === 'progressing').length;
    const allowedInFlight = Math.max(1, maxUnavailable - stuck);
    for (const [name, cluster] of started) {
      if (cluster.phase !== 'waiting' || inFlight >= allowedInFlight) continue;
      const seen = observed.get(name) as ObservedCluster;
      const rendered = copyRevisionOf(spec, progress.revision, seen);
      if (!rendered.ok) {
        clusters[name] = {
          ...cluster,
          phase: 'failed',
          message: `${rendered.failure.field}: ${rendered.failure.message}`,
        };
      } else {
        deliveries.push({ cluster: name, revision: rendered.revision, facts: seen });
        const { message: _previous, ...rest } = cluster;
        clusters[name] = { ...rest, phase: 'applying', targetRevision: rendered.revision, deliveredAt: now };
      }
      inFlight += 1;
    }

    const wave = Object.values(clusters).filter((cluster) => cluster.wave === progress.currentWave);
    const offline = wave.filter((cluster) => cluster.phase === 'offline-pending').length;
    const waveMaxUnavailable = resolveClusterCount(spec.strategy.maxUnavailable, wave.length);
    const isWaveDone =
      offline <= waveMaxUnavailable &&
      wave.every(
        (cluster) => cluster.phase === 'ready' || cluster.phase === 'held' || cluster.phase === 'offline-pending',
      );
    if (!isWaveDone) delete progress.waveDoneSince;
    else {
      progress.waveDoneSince ??= now;
      if (now - progress.waveDoneSince >= spec.strategy.soakMs) {
        if (progress.currentWave + 1 < waveCount) {
          progress.currentWave += 1;
          delete progress.waveDoneSince;
        } else if (Object.values(clusters).every((cluster) => cluster.phase === 'ready' || cluster.phase === 'held')) {
          progress.state = 'complete';
        }
      }
    }
  }
  return { progress, deliveries, removals };
}
