/**
 * Several hub replicas over one etcd: each replica holds one lease (TTL
 * {@link REPLICA_LEASE_TTL_S}, kept alive by the etcd client) and puts
 * under it its record (`replicas/ID`), its tunnel claims (`tunnels/CLUSTER`
 * = ID) and its leadership of each role (`leaders/ROLE` = ID). A replica
 * that dies stops renewing, and etcd deletes all of them when the lease
 * expires; a replica that stops cleanly revokes it at once.
 *
 * Nothing is written while tunnels are merely alive: a claim is put when a
 * tunnel opens and deleted when it closes.
 *
 * While etcd has no quorum (the health probe fails), a leader steps down
 * (`onChange(false)`), claims stay as they are (etcd expires no lease
 * without a leader), and changes are refused by the store. When quorum
 * returns, the replica campaigns again, and if its lease was lost meanwhile
 * it takes a new one and puts its record and claims again.
 */
import type { Lease } from 'etcd3';
import type { ReplicaCoordination, ReplicaInfo, Stop, StoreChange, StoreHealth } from '../coordination.js';
import type { EtcdConnection } from './etcd-client.js';
import { type EtcdHubStore } from './etcd-store.js';
import { ETCD_KEYS, type EtcdKeyEvent } from './etcd-keyspace.js';
import { ETCD_HEALTH_PROBE_MS, REPLICA_LEASE_TTL_S } from './limits.js';

/** Coordination key families under the prefix. */
export const COORDINATION_KEYS = {
  replicas: 'replicas/',
  tunnels: 'tunnels/',
  leaders: 'leaders/',
} as const;

/** The change a stored key's event means to the hub, if any. */
export function storeChangeOf(event: EtcdKeyEvent): StoreChange | undefined {
  const { key, type } = event;
  const after = (prefix: string): string | undefined => (key.startsWith(prefix) ? key.slice(prefix.length) : undefined);
  const cluster = after(ETCD_KEYS.clusters);
  if (cluster !== undefined) {
    return type === 'delete' ? { kind: 'cluster-deleted', cluster } : { kind: 'clusters-changed', cluster };
  }
  const serial = after(ETCD_KEYS.revoked);
  if (serial !== undefined) return type === 'put' ? { kind: 'certificate-revoked', serial } : undefined;
  if (after(ETCD_KEYS.users) !== undefined || after(ETCD_KEYS.userTokens) !== undefined)
    return { kind: 'users-changed' };
  if (after(ETCD_KEYS.tokens) !== undefined) return { kind: 'tokens-changed' };
  const rollout = after(ETCD_KEYS.rollouts);
  if (rollout !== undefined) return { kind: 'rollouts-changed', rollout };
  return undefined;
}

/** Options of {@link EtcdReplicaCoordination}. */
export interface EtcdCoordinationOptions {
  store: EtcdHubStore;
  self: ReplicaInfo;
  /** Lease time to live in seconds; {@link REPLICA_LEASE_TTL_S} by default (tests make it short). */
  leaseTtlS?: number;
  /** Told when something fails in the background (a lease regrant, a campaign). */
  onWarning?: (message: string) => void;
}

/** The etcd implementation of {@link ReplicaCoordination}. */
export class EtcdReplicaCoordination implements ReplicaCoordination {
  readonly self: ReplicaInfo;
  readonly #store: EtcdHubStore;
  readonly #etcd: EtcdConnection;
  readonly #ttlS: number;
  readonly #warn: (message: string) => void;
  /** The clusters whose tunnels this replica holds (put again under a new lease). */
  readonly #claims = new Set<string>();
  /** Woken at every event that may change a campaign's outcome. */
  readonly #wakers = new Set<() => void>();
  #lease: Lease | undefined;
  #leaseId: string | undefined;
  #isClosed = false;
  #stopHealth: (() => void) | undefined;
  #stopEvents: (() => void) | undefined;
  #regranting: Promise<void> | undefined;

  constructor(options: EtcdCoordinationOptions) {
    this.#store = options.store;
    this.#etcd = options.store.connection;
    this.self = options.self;
    this.#ttlS = options.leaseTtlS ?? REPLICA_LEASE_TTL_S;
    this.#warn = options.onWarning ?? (() => undefined);
    this.#etcd.retain();
  }

  #key(relative: string): string {
    return `${this.#etcd.prefix}${relative}`;
  }

  #wakeAll(): void {
    for (const wake of [...this.#wakers]) wake();
  }

  /** Grants a lease and puts this replica's record and claims under it. */
  async #grant(): Promise<void> {
    const lease = this.#etcd.client.lease(this.#ttlS);
    lease.on('lost', () => {
      if (this.#isClosed || this.#lease !== lease) return;
      this.#warn('the replica lease in etcd was lost; taking a new one');
      this.#leaseId = undefined;
      this.#wakeAll();
      void this.#regrant();
    });
    const id = await this.#etcd.read(() => lease.grant());
    this.#lease = lease;
    this.#leaseId = id;
    await this.#etcd.read(async () => {
      await lease.put(this.#key(`${COORDINATION_KEYS.replicas}${this.self.id}`)).value(JSON.stringify(this.self));
    });
    for (const cluster of this.#claims) await this.#putClaim(cluster);
    this.#wakeAll();
  }

  /** Takes a new lease until one is granted (etcd back), one attempt per probe period. */
  #regrant(): Promise<void> {
    this.#regranting ??= (async () => {
      while (!this.#isClosed) {
        try {
          await this.#grant();
          return;
        } catch (error) {
          this.#warn(`cannot take a replica lease in etcd yet: ${(error as Error).message}`);
          await new Promise((resolve) => setTimeout(resolve, ETCD_HEALTH_PROBE_MS));
        }
      }
    })().finally(() => (this.#regranting = undefined));
    return this.#regranting;
  }

  async join(): Promise<void> {
    await this.#grant();
    this.#etcd.startProbe();
    this.#stopHealth = this.#etcd.onHealth(() => this.#wakeAll());
    this.#stopEvents = this.#store.onKeyEvent((event) => {
      if (event.key.startsWith(COORDINATION_KEYS.leaders)) this.#wakeAll();
    });
  }

  async listReplicas(): Promise<ReplicaInfo[]> {
    const entries = await this.#etcd.list(this.#key(COORDINATION_KEYS.replicas));
    return entries.map((entry) => JSON.parse(entry.value) as ReplicaInfo);
  }

  async #putClaim(cluster: string): Promise<void> {
    const lease = this.#lease;
    if (lease === undefined || this.#leaseId === undefined) return;
    await this.#etcd.write(async () => {
      await lease.put(this.#key(`${COORDINATION_KEYS.tunnels}${cluster}`)).value(this.self.id);
    });
  }

  async claimTunnel(cluster: string): Promise<void> {
    this.#claims.add(cluster);
    await this.#putClaim(cluster);
  }

  async releaseTunnel(cluster: string): Promise<void> {
    this.#claims.delete(cluster);
    const key = this.#key(`${COORDINATION_KEYS.tunnels}${cluster}`);
    // Only this replica's claim: the cluster may have reconnected to another replica since.
    await this.#etcd.write(() =>
      this.#etcd.client.if(key, 'Value', '==', this.self.id).then(this.#etcd.client.delete().key(key)).commit(),
    );
  }

  async tunnelHolder(cluster: string): Promise<ReplicaInfo | undefined> {
    const claim = await this.#etcd.get(this.#key(`${COORDINATION_KEYS.tunnels}${cluster}`));
    if (claim === undefined) return undefined;
    const replica = await this.#etcd.get(this.#key(`${COORDINATION_KEYS.replicas}${claim.value}`));
    return replica === undefined ? undefined : (JSON.parse(replica.value) as ReplicaInfo);
  }

  async tunnelCounts(): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    for (const entry of await this.#etcd.list(this.#key(COORDINATION_KEYS.tunnels))) {
      counts.set(entry.value, (counts.get(entry.value) ?? 0) + 1);
    }
    return counts;
  }

  async listClaims(): Promise<Map<string, string>> {
    const prefix = this.#key(COORDINATION_KEYS.tunnels);
    const entries = await this.#etcd.list(prefix);
    return new Map(entries.map((entry) => [entry.key.slice(prefix.length), entry.value]));
  }

  watchClaims(onChange: (cluster: string, holder: string | undefined) => void): Stop {
    return this.#store.onKeyEvent((event) => {
      if (!event.key.startsWith(COORDINATION_KEYS.tunnels)) return;
      const cluster = event.key.slice(COORDINATION_KEYS.tunnels.length);
      onChange(cluster, event.type === 'put' ? event.value?.toString('utf8') : undefined);
    });
  }

  async leaderOf(role: string): Promise<ReplicaInfo | undefined> {
    const leader = await this.#etcd.get(this.#key(`${COORDINATION_KEYS.leaders}${role}`));
    if (leader === undefined) return undefined;
    const replica = await this.#etcd.get(this.#key(`${COORDINATION_KEYS.replicas}${leader.value}`));
    return replica === undefined ? undefined : (JSON.parse(replica.value) as ReplicaInfo);
  }

  lead(role: string, onChange: (isLeader: boolean) => void): Stop {
    const key = this.#key(`${COORDINATION_KEYS.leaders}${role}`);
    let isStopped = false;
    let isLeader = false;
    const set = (next: boolean): void => {
      if (next === isLeader || isStopped) return;
      isLeader = next;
      onChange(next);
    };
    let wake: () => void = () => undefined;
    const changed = (): Promise<void> =>
      new Promise((resolve) => {
        wake = () => {
          this.#wakers.delete(wake);
          resolve();
        };
        this.#wakers.add(wake);
      });
    const campaign = async (): Promise<void> => {
      while (!isStopped && !this.#isClosed) {
        let next = changed();
        const leaseId = this.#leaseId;
        const lease = this.#lease;
        if (this.#etcd.health().state !== 'ok' || leaseId === undefined || lease === undefined) {
          // Without quorum (or without a lease) this replica cannot know it still leads.
          set(false);
        } else {
          try {
            const response = await this.#etcd.write(() =>
              this.#etcd.client.if(key, 'Create', '==', 0).then(lease.put(key).value(this.self.id)).commit(),
            );
            const holder = response.succeeded ? undefined : await this.#etcd.get(key);
            set(response.succeeded || (holder?.value === this.self.id && holder.createRevision !== '0'));
          } catch (error) {
            this.#warn(`campaign for ${role} failed: ${(error as Error).message}`);
            set(false);
            // A failed attempt (a deadline on a busy etcd) changes nothing anyone would be
            // woken by: the leader's key may already be gone, and no later event would come.
            // So the campaign tries again after a probe period, or sooner if something changes.
            next = Promise.race([next, new Promise<void>((resolve) => setTimeout(resolve, ETCD_HEALTH_PROBE_MS))]);
          }
        }
        await next;
      }
    };
    void campaign();
    return () => {
      if (isStopped) return;
      const wasLeader = isLeader;
      isStopped = true;
      wake();
      // Hand the role over at once instead of after the lease's time to live.
      if (wasLeader) {
        void this.#etcd.client
          .if(key, 'Value', '==', this.self.id)
          .then(this.#etcd.client.delete().key(key))
          .commit()
          .catch(() => undefined);
      }
    };
  }

  watch(onChange: (change: StoreChange) => void): Stop {
    return this.#store.onKeyEvent((event) => {
      const change = storeChangeOf(event);
      if (change !== undefined) onChange(change);
    });
  }

  health(): StoreHealth {
    return this.#etcd.health();
  }

  /** Revokes the lease: this replica's record, claims and leadership go at once. */
  async close(): Promise<void> {
    if (this.#isClosed) return;
    this.#isClosed = true;
    this.#stopHealth?.();
    this.#stopEvents?.();
    this.#wakeAll();
    await this.#lease?.revoke().catch(() => undefined);
    this.#etcd.release();
  }
}
