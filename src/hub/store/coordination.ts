/**
 * What hub replicas share beyond the records of {@link HubStore}: who they
 * are, which of them holds each cluster's tunnel, which one runs the
 * controllers that must run once, and the changes other replicas made.
 *
 * One hub on SQLite has a single-replica implementation (it holds every
 * tunnel it accepted, always leads, and hears only its own changes). Hubs on
 * etcd implement it with a lease per replica: the replica's record, its
 * tunnel claims and its leadership are all attached to that lease, so they
 * vanish with the replica when it stops renewing it. Liveness of a tunnel is
 * never written: a claim is written when the tunnel opens and deleted when
 * it closes, nothing in between.
 *
 * This file is the contract between the hub (hub-server and its parts) and
 * the store implementations; it holds no behaviour.
 */
import type { HubStore } from './store.js';

/** One running hub replica, as the others see it. */
export interface ReplicaInfo {
  /** Stable for the life of the process (random at start). */
  id: string;
  /** `https://host:port` other replicas forward operator requests to (mutual TLS under the hub CA). */
  peerUrl: string;
  /** `https://host:port` agents and operators use. */
  advertiseUrl: string;
  startedAt: string;
}

/** A change another replica (or this one) made, heard through the store. */
export type StoreChange =
  | { kind: 'cluster-deleted'; cluster: string }
  | { kind: 'certificate-revoked'; serial: string }
  | { kind: 'users-changed' }
  | { kind: 'tokens-changed' }
  | { kind: 'rollouts-changed'; rollout: string }
  | { kind: 'clusters-changed'; cluster: string };

/** Whether the store can take changes right now. */
export type StoreHealth =
  | { state: 'ok' }
  /** Reads may still be answered from what the replica holds; writes are refused with `cause`. */
  | { state: 'unavailable'; cause: string; since: string };

/** A subscription or a campaign, ended by calling it. */
export type Stop = () => void;

/** The coordination of several replicas over one store. */
export interface ReplicaCoordination {
  /** This replica. */
  readonly self: ReplicaInfo;
  /** Announces this replica until {@link close}. */
  join(): Promise<void>;
  /** Every live replica, this one included. */
  listReplicas(): Promise<ReplicaInfo[]>;
  /** Records that this replica holds `cluster`'s tunnel (replacing another replica's claim). */
  claimTunnel(cluster: string): Promise<void>;
  /** Deletes this replica's claim on `cluster`, if it still is this replica's. */
  releaseTunnel(cluster: string): Promise<void>;
  /** Which live replica holds `cluster`'s tunnel, if any. */
  tunnelHolder(cluster: string): Promise<ReplicaInfo | undefined>;
  /** Number of tunnels each replica holds, by replica id. */
  tunnelCounts(): Promise<Map<string, number>>;
  /** Every tunnel claim now: cluster name to the id of the replica that holds its tunnel. */
  listClaims(): Promise<Map<string, string>>;
  /**
   * Calls `onChange` for every claim put (`holder` the replica's id) or
   * deleted (`holder` undefined, the claim released or its lease gone),
   * by any replica, this one included. With {@link listClaims} it is how
   * the leading replica knows every cluster that is connected to some replica.
   */
  watchClaims(onChange: (cluster: string, holder: string | undefined) => void): Stop;
  /** The live replica that leads `role` now, if any. */
  leaderOf(role: string): Promise<ReplicaInfo | undefined>;
  /**
   * Campaigns for the named role (`controllers`): `onChange(true)` when this
   * replica leads, `onChange(false)` when it lost the lead (its lease expired
   * or the store is unreachable). One leader per role at a time.
   */
  lead(role: string, onChange: (isLeader: boolean) => void): Stop;
  /** Calls `onChange` for every change made through any replica's store. */
  watch(onChange: (change: StoreChange) => void): Stop;
  /** Current health of the store underneath. */
  health(): StoreHealth;
  /** Withdraws this replica (its claims and leadership go with it). */
  close(): Promise<void>;
}

/** A store and its coordination, opened together from `hub serve --store`. */
export interface OpenedHubStore {
  store: HubStore;
  coordination: ReplicaCoordination;
}
