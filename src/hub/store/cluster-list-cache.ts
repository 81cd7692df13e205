/**
 * The registered clusters as the web view, the attention list and the
 * metrics read them: one store read shared
 * by every request within {@link CLUSTER_LIST_FRESH_MS}, and a stale copy
 * served (while one new read runs) up to {@link CLUSTER_LIST_STALE_MS}. A
 * page of the clusters list then costs filtering and sorting, not a full
 * read of 10,000 rows. What the cache holds is the store's part of a
 * cluster (labels, versions, last seen); whether it is connected is read
 * from the open tunnels on every request, never from here.
 */
import type { ClusterRecord, HubStore } from './store.js';
import { CLUSTER_LIST_FRESH_MS, CLUSTER_LIST_STALE_MS } from '../limits.js';

/** The cached list of registered clusters. */
export class ClusterListCache {
  readonly #store: HubStore;
  readonly #now: () => number;
  readonly #freshMs: number;
  readonly #staleMs: number;
  #clusters: ClusterRecord[] | undefined;
  #readAt = Number.NEGATIVE_INFINITY;
  #reading: Promise<ClusterRecord[]> | undefined;
  /** Bumped by {@link invalidate}: a read begun before it keeps nothing. */
  #generation = 0;

  constructor(options: { store: HubStore; now?: () => number; freshMs?: number; staleMs?: number }) {
    this.#store = options.store;
    this.#now = options.now ?? (() => performance.now());
    this.#freshMs = options.freshMs ?? CLUSTER_LIST_FRESH_MS;
    this.#staleMs = options.staleMs ?? CLUSTER_LIST_STALE_MS;
  }

  /** The clusters, at most as old as the bounds above. Do not change the records: they are shared. */
  async list(): Promise<readonly ClusterRecord[]> {
    const age = this.#now() - this.#readAt;
    if (this.#clusters !== undefined && age <= this.#freshMs) return this.#clusters;
    const reading = this.#read();
    if (this.#clusters !== undefined && age <= this.#staleMs) {
      reading.catch(() => undefined);
      return this.#clusters;
    }
    return reading;
  }

  /** Forgets the list: the next request reads the store (a cluster's hold, labels or properties changed). */
  invalidate(): void {
    this.#generation += 1;
    this.#clusters = undefined;
    this.#readAt = Number.NEGATIVE_INFINITY;
    this.#reading = undefined;
  }

  /** One read at a time; every caller in the meantime shares it. */
  #read(): Promise<ClusterRecord[]> {
    if (this.#reading === undefined) {
      const startedAt = this.#now();
      const generation = this.#generation;
      const reading = this.#store
        .listClusters()
        .then((clusters) => {
          if (generation === this.#generation) {
            this.#clusters = clusters;
            this.#readAt = startedAt;
          }
          return clusters;
        })
        .finally(() => {
          if (this.#reading === reading) this.#reading = undefined;
        });
      this.#reading = reading;
    }
    return this.#reading;
  }
}
