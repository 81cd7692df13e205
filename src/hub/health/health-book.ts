/**
 * What this replica knows of its clusters' health: the latest report of
 * each tunnel it holds (in memory, replaced at every line), and the store's
 * copy, written only when a report says something new (health/wire.ts
 * `isSameReport`), so a fleet that is well costs the store nothing per
 * heartbeat. Other replicas and a restarted hub read the store's copy.
 */
import type { Logger } from '../../log/run-log.js';
import { isSameReport, type ClusterHealthReport, type ClusterHealthView } from '../../health/wire.js';
import type { HubStore } from '../store/store.js';

/** The clusters' latest health reports on this replica. */
export class ClusterHealthBook {
  readonly #store: HubStore;
  readonly #logger: Logger;
  readonly #now: () => Date;
  readonly #latest = new Map<string, ClusterHealthView>();
  /** What was last written to the store, per cluster (read from it at the first report). */
  readonly #stored = new Map<string, ClusterHealthReport>();

  constructor(options: { store: HubStore; logger: Logger; now?: () => Date }) {
    this.#store = options.store;
    this.#logger = options.logger;
    this.#now = options.now ?? (() => new Date());
  }

  /** The latest report of a cluster whose tunnel this replica holds. */
  get(cluster: string): ClusterHealthView | undefined {
    return this.#latest.get(cluster);
  }

  /** Takes a report read from a cluster's health stream; resolves once stored (if it said something new). */
  async take(cluster: string, report: ClusterHealthReport): Promise<void> {
    const view: ClusterHealthView = { ...report, reportedAt: this.#now().toISOString() };
    this.#latest.set(cluster, view);
    let stored = this.#stored.get(cluster);
    if (stored === undefined) {
      stored = (await this.#store.getCluster(cluster))?.health;
      if (stored !== undefined) this.#stored.set(cluster, stored);
    }
    if (stored !== undefined && isSameReport(stored, report)) return;
    this.#stored.set(cluster, report);
    try {
      await this.#store.updateClusterHealth(cluster, view);
    } catch (error) {
      // Written again with the next report that differs from what was stored.
      this.#stored.delete(cluster);
      this.#logger.warn(`cluster ${cluster}: cannot store its health report: ${(error as Error).message}`);
    }
  }

  /** Forgets a cluster's latest report when its tunnel closes (the store's copy stays). */
  forget(cluster: string): void {
    this.#latest.delete(cluster);
    this.#stored.delete(cluster);
  }
}
