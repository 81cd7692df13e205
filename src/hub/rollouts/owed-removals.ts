/**
 * Removals owed to clusters: a rollout was deleted, or its new revision
 * left a cluster. Each is stored before it is sent and forgotten once the
 * agent took it, so a cluster that is offline gets it when it returns, also
 * across hub restarts; a held cluster gets it once released.
 */
import type { Logger } from '../../log/run-log.js';
import type { HubStore, PendingRemovalRecord } from '../store/store.js';
import type { DeliveryQueues } from './delivery-queues.js';
import type { KnownClusters } from './known-clusters.js';
import type { RolloutDelivery } from './rollout-delivery.js';

/** Options of {@link OwedRemovals}. */
export interface OwedRemovalsOptions {
  store: HubStore;
  delivery: RolloutDelivery;
  queues: DeliveryQueues;
  clusters: KnownClusters;
  logger: Logger;
}

/** The removals owed, by cluster, then rollout. */
export class OwedRemovals {
  readonly #options: OwedRemovalsOptions;
  readonly #byCluster = new Map<string, Map<string, PendingRemovalRecord>>();

  constructor(options: OwedRemovalsOptions) {
    this.#options = options;
  }

  /** Loads the removals the store holds as owed. */
  async load(): Promise<void> {
    for (const removal of await this.#options.store.listPendingRemovals()) this.remember(removal);
  }

  /** Keeps a removal (already stored) as owed. */
  remember(removal: PendingRemovalRecord): void {
    const byRollout = this.#byCluster.get(removal.cluster) ?? new Map<string, PendingRemovalRecord>();
    byRollout.set(removal.rollout, removal);
    this.#byCluster.set(removal.cluster, byRollout);
  }

  /** The removal of `rollout` owed to `cluster`, if any. */
  get(cluster: string, rollout: string): PendingRemovalRecord | undefined {
    return this.#byCluster.get(cluster)?.get(rollout);
  }

  /** Forgets a removal (the agent took it, or its cluster is gone), in memory and in the store. */
  async forget(removal: PendingRemovalRecord): Promise<void> {
    const byRollout = this.#byCluster.get(removal.cluster);
    if (byRollout?.get(removal.rollout) !== removal) return;
    byRollout.delete(removal.rollout);
    if (byRollout.size === 0) this.#byCluster.delete(removal.cluster);
    await this.#options.store.deletePendingRemoval(removal.rollout, removal.cluster);
  }

  /**
   * Records removals as owed (store first); for each, `forgetReport` drops
   * the cluster's report of the rollout, then it is sent if the cluster is
   * connected.
   */
  async owe(
    removals: readonly PendingRemovalRecord[],
    forgetReport: (removal: PendingRemovalRecord) => Promise<void>,
  ): Promise<void> {
    if (removals.length === 0) return;
    await this.#options.store.addPendingRemovals(removals);
    for (const removal of removals) {
      this.remember(removal);
      await forgetReport(removal);
      if (this.#options.clusters.isConnected(removal.cluster)) void this.send(removal);
    }
  }

  /** Sends every removal owed to `cluster` (it just connected). */
  sendAllTo(cluster: string): void {
    for (const removal of this.#byCluster.get(cluster)?.values() ?? []) void this.send(removal);
  }

  /**
   * After the clusters were read again: a deleted cluster is owed nothing
   * (its certificate is revoked, its agent never returns), and a released
   * one that is connected now gets what its hold kept back.
   */
  async clustersReloaded(previous: ReadonlyMap<string, { hold?: unknown }>): Promise<void> {
    const { clusters } = this.#options;
    for (const [cluster, owed] of this.#byCluster) {
      if (clusters.has(cluster)) continue;
      for (const removal of [...owed.values()]) await this.forget(removal);
    }
    for (const [cluster, owed] of this.#byCluster) {
      const isReleased = previous.get(cluster)?.hold !== undefined && !clusters.isHeld(cluster);
      if (isReleased && clusters.isConnected(cluster)) for (const removal of owed.values()) void this.send(removal);
    }
  }

  /** Sends one owed removal in the cluster's queue; true when the agent took it (and it is forgotten). */
  send(removal: PendingRemovalRecord): Promise<boolean> {
    const { queues, delivery, clusters, logger } = this.#options;
    return new Promise((resolve) => {
      queues.enqueue(removal.cluster, async () => {
        let isTaken = false;
        try {
          // Still owed? (A report or an earlier send may have settled it.)
          const owed = this.get(removal.cluster, removal.rollout);
          if (owed === undefined) {
            isTaken = true;
            return;
          }
          // A held cluster is not changed by any rollout, a removal included: it stays owed until the release.
          if (clusters.isHeld(removal.cluster)) return;
          const outcome = await delivery.sendRemove(owed.cluster, { rollout: owed.rollout, owner: owed.owner });
          if (outcome.status === 'failed') {
            logger.warn(`rollout ${removal.rollout}: removing it from ${removal.cluster}: ${outcome.message}`);
          }
          if (outcome.status !== 'delivered') return;
          isTaken = true;
          await this.forget(owed);
        } finally {
          resolve(isTaken);
        }
      });
    });
  }
}
