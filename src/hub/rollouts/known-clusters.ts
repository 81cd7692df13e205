/**
 * What the rollout controller knows of the clusters: their records as last
 * read from the store (labels, properties, holds), which are connected now,
 * and how many times each connected (a delivery's outcome speaks only of the
 * tunnel it was sent on).
 */
import type { ObservedCluster } from '../../rollout/progress.js';
import type { ClusterRecord, HubStore } from '../store/store.js';

/** The registered clusters and their connections, as the controller sees them. */
export class KnownClusters {
  #records = new Map<string, ClusterRecord>();
  readonly #connected = new Set<string>();
  readonly #connections = new Map<string, number>();

  /** `connected`: the clusters connected when the controller starts. */
  constructor(connected: Iterable<string> = []) {
    for (const cluster of connected) this.#connected.add(cluster);
  }

  /** Reads the registered clusters again; returns what was known before. */
  async reload(store: HubStore): Promise<ReadonlyMap<string, ClusterRecord>> {
    const previous = this.#records;
    this.#records = new Map((await store.listClusters()).map((cluster) => [cluster.name, cluster]));
    return previous;
  }

  /** A cluster's tunnel was accepted. */
  connect(cluster: string): void {
    this.#connected.add(cluster);
    this.#connections.set(cluster, (this.#connections.get(cluster) ?? 0) + 1);
  }

  /** A cluster's tunnel is gone. */
  disconnect(cluster: string): void {
    this.#connected.delete(cluster);
  }

  /**
   * No tunnel took a message sent while the cluster's `connection`-th
   * tunnel was open: offline, unless it has connected again since.
   */
  lostConnection(cluster: string, connection: number | undefined): void {
    if (this.#connections.get(cluster) === connection) this.#connected.delete(cluster);
  }

  /** How many times the cluster connected: compared after a delivery by {@link lostConnection}. */
  connectionOf(cluster: string): number | undefined {
    return this.#connections.get(cluster);
  }

  isConnected(cluster: string): boolean {
    return this.#connected.has(cluster);
  }

  /** Whether an operator holds the cluster (no rollout changes it until released). */
  isHeld(cluster: string): boolean {
    return this.#records.get(cluster)?.hold !== undefined;
  }

  get(cluster: string): ClusterRecord | undefined {
    return this.#records.get(cluster);
  }

  has(cluster: string): boolean {
    return this.#records.has(cluster);
  }

  /** Every registered cluster. */
  records(): ClusterRecord[] {
    return [...this.#records.values()];
  }

  /** The clusters connected now. */
  connected(): string[] {
    return [...this.#connected];
  }

  /** The clusters as the core (rollout/progress.ts) sees them now. */
  observed(): ObservedCluster[] {
    return [...this.#records.values()].map((cluster) => ({
      name: cluster.name,
      labels: cluster.labels,
      properties: cluster.properties ?? {},
      isConnected: this.#connected.has(cluster.name),
      isHeld: cluster.hold !== undefined,
    }));
  }
}
