/**
 * SIMULATED coordination of several hub replicas in one process, for tests
 * that run replicas without etcd: one shared store (SQLite under a shared
 * data directory) and one in-memory table of replicas, tunnel claims,
 * leaders and watchers that every replica's {@link ReplicaCoordination}
 * reads and writes. It is not etcd: there are no leases ticking, a
 * replica's lease "runs out" when the test says so ({@link InMemoryReplicaSet.expire}).
 *
 * It refuses what the real coordination refuses: a replica whose lease ran
 * out (or that closed) can no longer claim tunnels, and its campaigns end;
 * watch events arrive asynchronously, as a watch's do, to every replica.
 */
import { join } from 'node:path';
import type {
  OpenedHubStore,
  ReplicaCoordination,
  ReplicaInfo,
  StoreChange,
  StoreHealth,
  Stop,
} from '../../src/hub/store/coordination.js';
import type { ReplicaSelf } from '../../src/hub/server/hub-server.js';
import { HUB_STORE_FILE } from '../../src/hub/server/hub-server.js';
import { SqliteHubStore } from '../../src/hub/store/sqlite-store.js';
import { announcingStore } from '../../src/hub/store/store-changes.js';
import type { HubStore } from '../../src/hub/store/store.js';

interface Candidate {
  replica: string;
  onChange: (isLeader: boolean) => void;
}

/** The shared state of several replicas. */
export class InMemoryReplicaSet {
  readonly #replicas = new Map<string, ReplicaInfo>();
  /** Replicas whose lease ran out or that closed: refused from then on. */
  readonly #gone = new Set<string>();
  readonly #claims = new Map<string, string>();
  readonly #campaigns = new Map<string, Candidate[]>();
  readonly #leaders = new Map<string, string>();
  readonly #watchers = new Set<{ replica: string; onChange: (change: StoreChange) => void }>();
  readonly #claimWatchers = new Set<{
    replica: string;
    onChange: (cluster: string, holder: string | undefined) => void;
  }>();
  #store: HubStore | undefined;
  #sqlite: SqliteHubStore | undefined;
  /** Every change announced, in order (tests read it). */
  readonly changes: StoreChange[] = [];

  constructor(readonly dataDir: string) {}

  /** Opens (once) the shared store. */
  async #sharedStore(): Promise<HubStore> {
    if (this.#store === undefined) {
      this.#sqlite = await SqliteHubStore.open(join(this.dataDir, HUB_STORE_FILE));
      this.#store = announcingStore(this.#sqlite, (change) => this.#announce(change));
    }
    const store = this.#store;
    // Each replica closes its view at shutdown; the shared store stays open for the others.
    return { ...store, close: () => Promise.resolve() };
  }

  /** The opener a hub replica is started with (`startHub({ openStore })`). */
  opener(): (self: ReplicaSelf) => Promise<OpenedHubStore> {
    return async (self) => ({ store: await this.#sharedStore(), coordination: new InMemoryCoordination(this, self) });
  }

  /** The replica ids that lead `role` now. */
  leaderOf(role: string): string | undefined {
    return this.#leaders.get(role);
  }

  /** Which replica holds a cluster's tunnel. */
  holderOf(cluster: string): string | undefined {
    return this.#claims.get(cluster);
  }

  /** As the lease of a replica running out (it was killed): its record, claims and leads go. */
  expire(replica: string): void {
    this.#leave(replica);
  }

  /** Closes the shared store (after every replica stopped). */
  async close(): Promise<void> {
    await this.#sqlite?.close();
  }

  // ------------------------------------------------------------ used by InMemoryCoordination

  isLive(replica: string): boolean {
    return this.#replicas.has(replica) && !this.#gone.has(replica);
  }

  join(self: ReplicaInfo): void {
    if (this.#gone.has(self.id)) throw new Error(`replica ${self.id} has left; its lease is gone`);
    this.#replicas.set(self.id, self);
  }

  listReplicas(): ReplicaInfo[] {
    return [...this.#replicas.values()];
  }

  claim(replica: string, cluster: string): void {
    if (!this.isLive(replica)) throw new Error(`replica ${replica} has no lease: it cannot claim tunnels`);
    this.#claims.set(cluster, replica);
    this.#announceClaim(cluster, replica);
  }

  release(replica: string, cluster: string): void {
    if (this.#claims.get(cluster) !== replica) return;
    this.#claims.delete(cluster);
    this.#announceClaim(cluster, undefined);
  }

  claims(): Map<string, string> {
    return new Map(this.#claims);
  }

  leader(role: string): ReplicaInfo | undefined {
    const id = this.#leaders.get(role);
    return id === undefined ? undefined : this.#replicas.get(id);
  }

  watchClaims(replica: string, onChange: (cluster: string, holder: string | undefined) => void): Stop {
    const watcher = { replica, onChange };
    this.#claimWatchers.add(watcher);
    return () => this.#claimWatchers.delete(watcher);
  }

  /** A claim's change reaches every live replica after the write, as a watch's event does. */
  #announceClaim(cluster: string, holder: string | undefined): void {
    setImmediate(() => {
      for (const watcher of [...this.#claimWatchers])
        if (this.isLive(watcher.replica)) watcher.onChange(cluster, holder);
    });
  }

  holder(cluster: string): ReplicaInfo | undefined {
    const id = this.#claims.get(cluster);
    return id === undefined ? undefined : this.#replicas.get(id);
  }

  counts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const id of this.#claims.values()) counts.set(id, (counts.get(id) ?? 0) + 1);
    return counts;
  }

  campaign(role: string, candidate: Candidate): Stop {
    if (!this.isLive(candidate.replica)) return () => {};
    const candidates = this.#campaigns.get(role) ?? [];
    candidates.push(candidate);
    this.#campaigns.set(role, candidates);
    if (!this.#leaders.has(role)) this.#elect(role);
    return () => this.#withdraw(role, candidate);
  }

  watch(replica: string, onChange: (change: StoreChange) => void): Stop {
    const watcher = { replica, onChange };
    this.#watchers.add(watcher);
    return () => this.#watchers.delete(watcher);
  }

  leave(replica: string): void {
    this.#leave(replica);
  }

  #announce(change: StoreChange): void {
    this.changes.push(change);
    // A watch delivers after the write, to every live replica (the writer included).
    setImmediate(() => {
      for (const watcher of [...this.#watchers]) if (this.isLive(watcher.replica)) watcher.onChange(change);
    });
  }

  #elect(role: string): void {
    const next = (this.#campaigns.get(role) ?? []).find((c) => this.isLive(c.replica));
    if (next === undefined) {
      this.#leaders.delete(role);
      return;
    }
    this.#leaders.set(role, next.replica);
    next.onChange(true);
  }

  #withdraw(role: string, candidate: Candidate): void {
    const candidates = (this.#campaigns.get(role) ?? []).filter((c) => c !== candidate);
    this.#campaigns.set(role, candidates);
    if (this.#leaders.get(role) === candidate.replica) {
      this.#leaders.delete(role);
      candidate.onChange(false);
      this.#elect(role);
    }
  }

  #leave(replica: string): void {
    this.#gone.add(replica);
    this.#replicas.delete(replica);
    for (const [cluster, holder] of [...this.#claims]) {
      if (holder !== replica) continue;
      this.#claims.delete(cluster);
      this.#announceClaim(cluster, undefined);
    }
    for (const watcher of [...this.#watchers]) if (watcher.replica === replica) this.#watchers.delete(watcher);
    for (const watcher of [...this.#claimWatchers]) {
      if (watcher.replica === replica) this.#claimWatchers.delete(watcher);
    }
    for (const [role, candidates] of this.#campaigns) {
      const mine = candidates.filter((c) => c.replica === replica);
      this.#campaigns.set(
        role,
        candidates.filter((c) => c.replica !== replica),
      );
      if (this.#leaders.get(role) === replica) {
        this.#leaders.delete(role);
        for (const candidate of mine) candidate.onChange(false);
        this.#elect(role);
      }
    }
  }
}

/** One replica's view of an {@link InMemoryReplicaSet}. */
export class InMemoryCoordination implements ReplicaCoordination {
  readonly self: ReplicaInfo;
  readonly #set: InMemoryReplicaSet;

  constructor(set: InMemoryReplicaSet, self: ReplicaInfo) {
    this.#set = set;
    this.self = self;
  }

  join(): Promise<void> {
    this.#set.join(this.self);
    return Promise.resolve();
  }

  listReplicas(): Promise<ReplicaInfo[]> {
    return Promise.resolve(this.#set.listReplicas());
  }

  async claimTunnel(cluster: string): Promise<void> {
    await Promise.resolve();
    this.#set.claim(this.self.id, cluster);
  }

  releaseTunnel(cluster: string): Promise<void> {
    this.#set.release(this.self.id, cluster);
    return Promise.resolve();
  }

  tunnelHolder(cluster: string): Promise<ReplicaInfo | undefined> {
    return Promise.resolve(this.#set.holder(cluster));
  }

  tunnelCounts(): Promise<Map<string, number>> {
    return Promise.resolve(this.#set.counts());
  }

  listClaims(): Promise<Map<string, string>> {
    return Promise.resolve(this.#set.claims());
  }

  watchClaims(onChange: (cluster: string, holder: string | undefined) => void): Stop {
    return this.#set.watchClaims(this.self.id, onChange);
  }

  leaderOf(role: string): Promise<ReplicaInfo | undefined> {
    return Promise.resolve(this.#set.leader(role));
  }

  lead(role: string, onChange: (isLeader: boolean) => void): Stop {
    return this.#set.campaign(role, { replica: this.self.id, onChange });
  }

  watch(onChange: (change: StoreChange) => void): Stop {
    return this.#set.watch(this.self.id, onChange);
  }

  health(): StoreHealth {
    return { state: 'ok' };
  }

  close(): Promise<void> {
    this.#set.leave(this.self.id);
    return Promise.resolve();
  }
}
