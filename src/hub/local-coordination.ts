/**
 * The coordination of a hub with one replica (on SQLite): it holds every
 * tunnel it accepted, always leads, its store is always healthy (a failing
 * SQLite write is an error of its own), and it hears its own changes only,
 * as the store wrapper {@link withLocalChanges} reports them.
 */
import { randomUUID } from 'node:crypto';
import type { ReplicaCoordination, ReplicaInfo, Stop, StoreChange, StoreHealth } from './coordination.js';
import type { HubStore } from './store.js';

/** The single-replica implementation of {@link ReplicaCoordination}. */
export class LocalReplicaCoordination implements ReplicaCoordination {
  readonly self: ReplicaInfo;
  readonly #claims = new Set<string>();
  readonly #listeners = new Set<(change: StoreChange) => void>();

  constructor(self: Partial<ReplicaInfo> = {}) {
    this.self = {
      id: self.id ?? randomUUID(),
      peerUrl: self.peerUrl ?? '',
      advertiseUrl: self.advertiseUrl ?? '',
      startedAt: self.startedAt ?? new Date().toISOString(),
    };
  }

  async join(): Promise<void> {}

  async listReplicas(): Promise<ReplicaInfo[]> {
    return [this.self];
  }

  async claimTunnel(cluster: string): Promise<void> {
    this.#claims.add(cluster);
  }

  async releaseTunnel(cluster: string): Promise<void> {
    this.#claims.delete(cluster);
  }

  async tunnelHolder(cluster: string): Promise<ReplicaInfo | undefined> {
    return this.#claims.has(cluster) ? this.self : undefined;
  }

  async tunnelCounts(): Promise<Map<string, number>> {
    return new Map([[this.self.id, this.#claims.size]]);
  }

  lead(_role: string, onChange: (isLeader: boolean) => void): Stop {
    let isStopped = false;
    // Asynchronously, as on etcd: the caller finishes setting up before it leads.
    queueMicrotask(() => {
      if (!isStopped) onChange(true);
    });
    return () => {
      isStopped = true;
    };
  }

  watch(onChange: (change: StoreChange) => void): Stop {
    this.#listeners.add(onChange);
    return () => this.#listeners.delete(onChange);
  }

  /** Reports a change made through this replica's store. */
  notify(change: StoreChange): void {
    for (const listener of this.#listeners) listener(change);
  }

  health(): StoreHealth {
    return { state: 'ok' };
  }

  async close(): Promise<void> {
    this.#listeners.clear();
    this.#claims.clear();
  }
}

/** `store`, reporting each change it makes to `notify` once it is written. */
export function withLocalChanges(store: HubStore, notify: (change: StoreChange) => void): HubStore {
  const after = <T>(result: Promise<T>, change: (value: T) => StoreChange | undefined): Promise<T> =>
    result.then((value) => {
      const made = change(value);
      if (made !== undefined) notify(made);
      return value;
    });
  const overrides: Partial<HubStore> = {
    addCluster: (cluster: Parameters<HubStore['addCluster']>[0]) =>
      after(store.addCluster(cluster), (isAdded) =>
        isAdded ? { kind: 'clusters-changed', cluster: cluster.name } : undefined,
      ),
    deleteCluster: (name: string) =>
      after(store.deleteCluster(name), (removed) =>
        removed === undefined ? undefined : { kind: 'cluster-deleted', cluster: name },
      ),
    setClusterHold: (...args: Parameters<HubStore['setClusterHold']>) =>
      after(store.setClusterHold(...args), (isSet) =>
        isSet ? { kind: 'clusters-changed', cluster: args[0] } : undefined,
      ),
    setClusterProperties: (...args: Parameters<HubStore['setClusterProperties']>) =>
      after(store.setClusterProperties(...args), (isSet) =>
        isSet ? { kind: 'clusters-changed', cluster: args[0] } : undefined,
      ),
    revokeCertificate: (serial: string, reason: string) =>
      after(store.revokeCertificate(serial, reason), () => ({
        kind: 'certificate-revoked',
        serial: serial.toLowerCase(),
      })),
    putUser: (user: Parameters<HubStore['putUser']>[0]) =>
      after(store.putUser(user), () => ({ kind: 'users-changed' })),
    addToken: (token: Parameters<HubStore['addToken']>[0]) =>
      after(store.addToken(token), () => ({ kind: 'tokens-changed' })),
    useTokenToAddCluster: (...args: Parameters<HubStore['useTokenToAddCluster']>) =>
      after(store.useTokenToAddCluster(...args), (result) =>
        result === 'added' ? { kind: 'clusters-changed', cluster: args[2].name } : undefined,
      ),
    putRollout: (...args: Parameters<HubStore['putRollout']>) =>
      after(store.putRollout(...args), () => ({ kind: 'rollouts-changed', rollout: args[0].name })),
    deleteRollout: (...args: Parameters<HubStore['deleteRollout']>) =>
      after(store.deleteRollout(...args), (existed) =>
        existed ? { kind: 'rollouts-changed', rollout: args[0] } : undefined,
      ),
  };
  // A proxy, not a prototype: the store's methods use its private fields, so they run on the store itself.
  return new Proxy(store, {
    get(target, property) {
      const override = (overrides as Record<PropertyKey, unknown>)[property];
      if (override !== undefined) return override;
      const value: unknown = Reflect.get(target, property);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
