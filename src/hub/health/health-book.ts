/**
 * What this replica knows of its clusters' health: the latest report of
 * each tunnel it holds (in memory, replaced at every line), and the store's
 * copy, written only when a report says something new (health/wire.ts
 * `isSameReport`), so a fleet that is well costs the store nothing per
 * heartbeat; and at most once per {@link HEALTH_STORE_MIN_INTERVAL_MS} per
 * cluster, the latest report winning, so an agent that changes its report
 * on every line cannot make the hub write its store at the agent's pace.
 * Other replicas and a restarted hub read the store's copy.
 */
import type { Logger } from '../../log/run-log.js';
import { isSameReport, type ClusterHealthReport, type ClusterHealthView } from '../../health/wire.js';
import { HEALTH_STORE_MIN_INTERVAL_MS } from '../limits.js';
import type { HubStore } from '../store/store.js';

/** One cluster's writes to the store. */
interface StoredHealth {
  /** What the store holds (read from it at the first report). */
  report?: ClusterHealthReport | undefined;
  writtenAt: number;
  /** A write waiting for the interval to pass. */
  timer?: NodeJS.Timeout | undefined;
}

/** The clusters' latest health reports on this replica. */
export class ClusterHealthBook {
  readonly #store: HubStore;
  readonly #logger: Logger;
  readonly #now: () => Date;
  readonly #minIntervalMs: number;
  readonly #latest = new Map<string, ClusterHealthView>();
  readonly #stored = new Map<string, StoredHealth>();

  constructor(options: { store: HubStore; logger: Logger; now?: () => Date; minIntervalMs?: number }) {
    this.#store = options.store;
    this.#logger = options.logger;
    this.#now = options.now ?? (() => new Date());
    this.#minIntervalMs = options.minIntervalMs ?? HEALTH_STORE_MIN_INTERVAL_MS;
  }

  /** The latest report of a cluster whose tunnel this replica holds. */
  get(cluster: string): ClusterHealthView | undefined {
    return this.#latest.get(cluster);
  }

  /** Takes a report read from a cluster's health stream; stores it (now or after the interval) if it says something new. */
  async take(cluster: string, report: ClusterHealthReport): Promise<void> {
    this.#latest.set(cluster, { ...report, reportedAt: this.#now().toISOString() });
    let stored = this.#stored.get(cluster);
    if (stored === undefined) {
      stored = { writtenAt: Number.NEGATIVE_INFINITY };
      this.#stored.set(cluster, stored);
      const health = (await this.#store.getCluster(cluster))?.health;
      if (health !== undefined) stored.report ??= health;
    }
    if (stored.timer !== undefined) return;
    const wait = stored.writtenAt + this.#minIntervalMs - Date.now();
    if (wait > 0) {
      stored.timer = setTimeout(() => void this.#write(cluster, stored), wait);
      stored.timer.unref();
      return;
    }
    await this.#write(cluster, stored);
  }

  /** Writes the latest report, unless the store already says the same. */
  async #write(cluster: string, stored: StoredHealth): Promise<void> {
    stored.timer = undefined;
    const latest = this.#latest.get(cluster);
    if (latest === undefined || (stored.report !== undefined && isSameReport(stored.report, latest))) return;
    stored.report = latest;
    stored.writtenAt = Date.now();
    try {
      await this.#store.updateClusterHealth(cluster, latest);
    } catch (error) {
      // Written again with the next report that differs from what was stored.
      stored.report = undefined;
      this.#logger.warn(`cluster ${cluster}: cannot store its health report: ${(error as Error).message}`);
    }
  }

  /** Forgets a cluster when its tunnel closes, storing its latest report first if a write was waiting. */
  forget(cluster: string): void {
    const stored = this.#stored.get(cluster);
    if (stored?.timer !== undefined) {
      clearTimeout(stored.timer);
      void this.#write(cluster, stored);
    }
    this.#latest.delete(cluster);
    this.#stored.delete(cluster);
  }
}
