/**
 * Which clusters are connected to the hub as a whole, and through which
 * replica: the tunnels this replica holds (told by its tunnel registry) and
 * the tunnel claims of every replica (listed once, then followed through
 * the coordination's claim watch). The rollout controller, which runs on
 * one replica, reads this to know which clusters can be handed a copy now,
 * wherever their tunnels are.
 *
 * A cluster counts as connected while this replica holds its tunnel or
 * another replica claims it. This replica's own claims are not read: its
 * tunnel table is the truth about itself (a claim whose release failed
 * while etcd had no quorum must not make a closed tunnel look open).
 *
 * A new tunnel anywhere (a claim put, the agent moved to another replica
 * or reconnected to the same one) is told as a connection: the cluster is
 * owed what its last tunnel had not confirmed (the controller's catch-up).
 */
import type { Logger } from '../../log/run-log.js';
import type { ReplicaCoordination, Stop } from '../store/coordination.js';

/** What is told of clusters connecting and disconnecting, anywhere in the hub. */
export interface FleetConnectionListener {
  /** The cluster has a new tunnel (on this replica or another): it may be owed copies. */
  connected(cluster: string): void;
  disconnected(cluster: string): void;
}

/** Options of {@link FleetConnections}. */
export interface FleetConnectionsOptions {
  coordination: ReplicaCoordination;
  logger: Logger;
}

/** The clusters connected to some replica of the hub. */
export class FleetConnections {
  readonly #coordination: ReplicaCoordination;
  readonly #logger: Logger;
  /** Clusters whose tunnels this replica holds. */
  readonly #local = new Set<string>();
  /** Claims of the other replicas: cluster to replica id. */
  readonly #claims = new Map<string, string>();
  #listener: FleetConnectionListener | undefined;
  #stopWatch: Stop | undefined;

  constructor(options: FleetConnectionsOptions) {
    this.#coordination = options.coordination;
    this.#logger = options.logger;
  }

  /** Sets the one listener (the hub wires it to the rollout controller, when this replica runs it). */
  listen(listener: FleetConnectionListener): void {
    this.#listener = listener;
  }

  /**
   * Follows the claims: the watch first, then the list, and a cluster the
   * watch spoke of while the list was read keeps what the watch said (the
   * list may be older than the event).
   */
  async start(): Promise<void> {
    const touched = new Set<string>();
    let isListing = true;
    this.#stopWatch = this.#coordination.watchClaims((cluster, holder) => {
      if (isListing) touched.add(cluster);
      this.#setClaim(cluster, holder);
    });
    try {
      const claims = await this.#coordination.listClaims();
      for (const [cluster, holder] of claims) if (!touched.has(cluster)) this.#setClaim(cluster, holder);
    } catch (error) {
      // Without the list, the claims made from now on are still heard; the rest come as tunnels move.
      this.#logger.warn(`cannot list the tunnels of the other hub replicas: ${(error as Error).message}`);
    } finally {
      isListing = false;
    }
  }

  stop(): void {
    this.#stopWatch?.();
    this.#stopWatch = undefined;
  }

  /** A tunnel of this replica opened. */
  localOpened(cluster: string): void {
    this.#local.add(cluster);
    // Always a new tunnel, even if the cluster was connected here before (a reconnect replaced it).
    this.#listener?.connected(cluster);
  }

  /** A tunnel of this replica closed. */
  localClosed(cluster: string): void {
    const before = this.#holder(cluster);
    this.#local.delete(cluster);
    this.#tell(cluster, before);
  }

  /** Whether the cluster is connected to some replica. */
  isConnected(cluster: string): boolean {
    return this.#holder(cluster) !== undefined;
  }

  /** The clusters connected to some replica now. */
  connected(): string[] {
    const all = new Set(this.#local);
    for (const cluster of this.#claims.keys()) all.add(cluster);
    return [...all];
  }

  /** How many tunnels each other replica claims, by replica id. */
  claimCounts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const holder of this.#claims.values()) counts.set(holder, (counts.get(holder) ?? 0) + 1);
    return counts;
  }

  /** The replica that holds a cluster's tunnel, as this one knows it: `self` for its own. */
  #holder(cluster: string): string | undefined {
    return this.#local.has(cluster) ? 'self' : this.#claims.get(cluster);
  }

  #setClaim(cluster: string, holder: string | undefined): void {
    const before = this.#holder(cluster);
    const isOthers = holder !== undefined && holder !== this.#coordination.self.id;
    if (isOthers) this.#claims.set(cluster, holder);
    else this.#claims.delete(cluster);
    // A claim is put when a tunnel opens, and only then: a put by the replica that holds the cluster is
    // a new tunnel even when that replica held the one before (the agent reconnected to it).
    if (isOthers && this.#holder(cluster) === holder) this.#listener?.connected(cluster);
    else this.#tell(cluster, before);
  }

  #tell(cluster: string, before: string | undefined): void {
    const after = this.#holder(cluster);
    if (after === before) return;
    if (after === undefined) this.#listener?.disconnected(cluster);
    else this.#listener?.connected(cluster);
  }
}
