/**
 * Copies on their way to clusters: each goes into its cluster's queue and
 * leaves only if it is still the cluster's target when its turn comes; it
 * is rendered then, within the budget of copies in flight
 * (copy-renderings.ts), and its outcome is recorded on the rollout. A copy
 * for a disconnected cluster waits for its tunnel: on connect the cluster
 * gets its current copy (never an older one) and every removal it is owed.
 */
import type { Logger } from '../../log/run-log.js';
import { isOwedOnReturn } from '../../rollout/catch-up.js';
import type { Delivery, ObservedCluster } from '../../rollout/progress.js';
import { copyRevisionOf } from '../../rollout/render.js';
import type { CopyMessage } from '../../rollout/wire.js';
import { CopyBudget, copyWeight, RenderedCopies } from './copy-renderings.js';
import type { DeliveryQueues } from './delivery-queues.js';
import type { KnownClusters } from './known-clusters.js';
import { ownerOf, recordOne, type LiveRollout, type LiveRollouts } from './live-rollouts.js';
import type { OwedRemovals } from './owed-removals.js';
import type { RolloutClock } from './rollout-clock.js';
import type { DeliveryOutcome, RolloutDelivery } from './rollout-delivery.js';

/** Options of {@link CopyDelivery}. */
export interface CopyDeliveryOptions {
  rollouts: LiveRollouts;
  clusters: KnownClusters;
  removals: OwedRemovals;
  queues: DeliveryQueues;
  delivery: RolloutDelivery;
  clock: RolloutClock;
  logger: Logger;
  /** Marks a rollout for the next pass (an outcome changed it). */
  mark: (name: string) => void;
  /** The budget of copies in flight; the hub's limits by default (tests make it small). */
  budget?: CopyBudget;
  /** The rendered copies kept for sharing; the hub's limits by default. */
  renderings?: RenderedCopies;
}

/** Hands copies to the clusters' queues and records what became of them. */
export class CopyDelivery {
  readonly #options: CopyDeliveryOptions;
  readonly #budget: CopyBudget;
  readonly #renderings: RenderedCopies;

  constructor(options: CopyDeliveryOptions) {
    this.#options = options;
    this.#budget = options.budget ?? new CopyBudget();
    this.#renderings = options.renderings ?? new RenderedCopies();
  }

  /** Hands a copy to the cluster's queue (connected) or keeps it for the cluster's return. */
  deliver(live: LiveRollout, delivery: Delivery): void {
    const { clusters, queues } = this.#options;
    const name = live.record.name;
    live.unconfirmed.add(delivery.cluster);
    if (!clusters.isConnected(delivery.cluster)) return;
    queues.enqueue(delivery.cluster, async () => {
      if (this.#currentTarget(name, delivery) === undefined) return;
      const release = await this.#budget.acquire(copyWeight(live));
      try {
        await this.#send(name, delivery);
      } finally {
        release();
      }
    });
  }

  /**
   * The rollout if the copy is still the cluster's target: a newer revision
   * or a deletion since makes it moot, and a hold since means no change
   * until it is released (the step then hands the copy out again).
   */
  #currentTarget(name: string, delivery: Delivery): LiveRollout | undefined {
    const current = this.#options.rollouts.get(name);
    if (current?.record.progress.clusters[delivery.cluster]?.targetRevision !== delivery.revision) return undefined;
    return this.#options.clusters.isHeld(delivery.cluster) ? undefined : current;
  }

  /** Renders the copy (now, in its turn) and sends it, if it is still the target after waiting for room. */
  async #send(name: string, delivery: Delivery): Promise<void> {
    const { clusters } = this.#options;
    const { cluster, revision } = delivery;
    const current = this.#currentTarget(name, delivery);
    if (current === undefined) return;
    const connection = clusters.connectionOf(cluster);
    const rendered = this.#renderings.render(current, revision, delivery.facts);
    if (!rendered.ok || rendered.copy.revision !== revision) {
      // Not expected (the step checked the copy renders, from these facts): the cluster's copy fails, saying why.
      const why = rendered.ok
        ? `rendered as ${rendered.copy.revision}`
        : `${rendered.failure.field}: ${rendered.failure.message}`;
      this.#onCopyOutcome(name, cluster, revision, { status: 'failed', message: `copy ${revision}: ${why}` });
      return;
    }
    const message: CopyMessage = { rollout: name, owner: ownerOf(current.record.owner), copy: rendered.copy };
    const outcome = await this.#options.delivery.sendCopy(cluster, message);
    // No tunnel took it, and the cluster has not connected again since: it is offline, whether or not its
    // tunnel's end was told yet (a draining agent's tunnel refuses new streams before it closes).
    if (outcome.status === 'disconnected') clusters.lostConnection(cluster, connection);
    this.#onCopyOutcome(name, cluster, revision, outcome);
  }

  /**
   * Sends what a cluster that just connected is owed: its removals, and of
   * each rollout its current copy if it never confirmed it. Rollouts this
   * changes are added to `names` (to be stepped in this pass).
   */
  catchUp(cluster: string, observed: ReadonlyMap<string, ObservedCluster>, names: string[]): void {
    const { rollouts, removals, clock } = this.#options;
    removals.sendAllTo(cluster);
    const facts = observed.get(cluster);
    if (facts === undefined || facts.isHeld) return;
    for (const live of rollouts.all()) {
      const progress = live.record.progress.clusters[cluster];
      if (progress === undefined) continue;
      const owed = { isUnconfirmed: live.unconfirmed.has(cluster), lastReported: live.reports.get(cluster)?.revision };
      if (!isOwedOnReturn(progress, owed)) continue;
      if (live.record.progress.state === 'aborted') continue;
      const rendered = copyRevisionOf(live.spec, live.record.revision, facts);
      if (rendered.ok && rendered.revision === progress.targetRevision) {
        if (progress.phase !== 'applying') {
          // Failed or left pending while away for a copy it never ran: it gets the copy now, with a fresh deadline.
          const { message: _message, ...rest } = progress;
          live.record.progress.clusters[cluster] = { ...rest, phase: 'applying', deliveredAt: clock.now() };
          if (!names.includes(live.record.name)) names.push(live.record.name);
        }
        this.deliver(live, { cluster, revision: rendered.revision, facts });
      } else {
        // The cluster's facts changed since: it waits for a fresh copy, in its turn.
        const { targetRevision: _target, deliveredAt: _at, ...rest } = progress;
        live.record.progress.clusters[cluster] = { ...rest, phase: 'waiting' };
        live.unconfirmed.delete(cluster);
        if (!names.includes(live.record.name)) names.push(live.record.name);
      }
    }
  }

  #onCopyOutcome(name: string, cluster: string, revision: string, outcome: DeliveryOutcome): void {
    const { rollouts, clusters, logger, mark } = this.#options;
    const live = rollouts.get(name);
    if (live === undefined || live.record.progress.clusters[cluster]?.targetRevision !== revision) return;
    if (outcome.status === 'delivered') live.unconfirmed.delete(cluster);
    else if (outcome.status === 'disconnected') {
      // The copy never reached the agent (its tunnel closed or began draining first): the cluster waits for its
      // copy again, offline-pending while away, and is handed the current one when it returns, never failed by
      // a deadline for a copy it did not get.
      const progress = live.record.progress.clusters[cluster];
      const { deliveredAt: _at, message: _message, ...rest } = progress;
      live.record.progress.clusters[cluster] = {
        ...rest,
        phase: clusters.isConnected(cluster) ? 'waiting' : 'offline-pending',
      };
      live.unconfirmed.delete(cluster);
      mark(name);
    } else {
      live.unconfirmed.delete(cluster);
      recordOne(live, { cluster, revision, readiness: 'failed', message: outcome.message });
      logger.warn(`rollout ${name}: cluster ${cluster}: ${outcome.message}`);
      mark(name);
    }
  }
}
