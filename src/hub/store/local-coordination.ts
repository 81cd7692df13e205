/**
 * The coordination of a hub that is its only replica (the SQLite store): it
 * holds every tunnel it accepted, always leads, and hears only its own
 * changes (announced by its store, store-changes.ts). Nothing is written
 * anywhere: claims live in a set for `hub clusters` and `hub replicas list`.
 */
import { randomBytes } from 'node:crypto';
import type { ReplicaCoordination, ReplicaInfo, StoreChange, StoreHealth, Stop } from './coordination.js';

/** A fresh replica id: random, stable for the life of the process. */
export function newReplicaId(): string {
  return randomBytes(6).toString('hex');
}

/** {@link ReplicaCoordination} of a single replica. */
export class LocalCoordination implements ReplicaCoordination {
  readonly self: ReplicaInfo;
  readonly #claims = new Set<string>();
  readonly #watchers = new Set<(change: StoreChange) => void>();
  readonly #claimWatchers = new Set<(cluster: string, holder: string | undefined) => void>();

  constructor(self: ReplicaInfo) {
    this.self = self;
  }

  join(): Promise<void> {
    return Promise.resolve();
  }

  listReplicas(): Promise<ReplicaInfo[]> {
    return Promise.resolve([this.self]);
  }

  claimTunnel(cluster: string): Promise<void> {
    this.#claims.add(cluster);
    for (const watcher of [...this.#claimWatchers]) watcher(cluster, this.self.id);
    return Promise.resolve();
  }

  releaseTunnel(cluster: string): Promise<void> {
    if (this.#claims.delete(cluster)) for (const watcher of [...this.#claimWatchers]) watcher(cluster, undefined);
    return Promise.resolve();
  }

  tunnelHolder(cluster: string): Promise<ReplicaInfo | undefined> {
    return Promise.resolve(this.#claims.has(cluster) ? this.self : undefined);
  }

  tunnelCounts(): Promise<Map<string, number>> {
    return Promise.resolve(new Map([[this.self.id, this.#claims.size]]));
  }

  listClaims(): Promise<Map<string, string>> {
    return Promise.resolve(new Map([...this.#claims].map((cluster) => [cluster, this.self.id])));
  }

  watchClaims(onChange: (cluster: string, holder: string | undefined) => void): Stop {
    this.#claimWatchers.add(onChange);
    return () => this.#claimWatchers.delete(onChange);
  }

  /** The only replica leads every role. */
  leaderOf(_role: string): Promise<ReplicaInfo | undefined> {
    return Promise.resolve(this.self);
  }

  /** The only replica leads at once, for as long as it runs. */
  lead(_role: string, onChange: (isLeader: boolean) => void): Stop {
    onChange(true);
    return () => {};
  }

  watch(onChange: (change: StoreChange) => void): Stop {
    this.#watchers.add(onChange);
    return () => this.#watchers.delete(onChange);
  }

  /** Tells every watcher of a change this replica's store made (the sink of `announcingStore`). */
  announce(change: StoreChange): void {
    for (const watcher of [...this.#watchers]) watcher(change);
  }

  health(): StoreHealth {
    return { state: 'ok' };
  }

  close(): Promise<void> {
    this.#claims.clear();
    this.#watchers.clear();
    this.#claimWatchers.clear();
    return Promise.resolve();
  }
}
