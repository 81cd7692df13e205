/**
 * Opens the store `hub serve --store` names, with the coordination of its
 * replicas and the place the hub's identity (CA, ticket key, admin
 * credential) is kept: SQLite in the data directory with a single-replica
 * coordination, or etcd with leases, elections and watches, the identity
 * in the store and its secrets encrypted under the key file.
 */
import { join } from 'node:path';
import type { OpenedHubStore, ReplicaInfo } from '../store/coordination.js';
import { localHubIdentity, type HubIdentity } from '../identity/hub-identity.js';
import { LocalCoordination, newReplicaId } from '../store/local-coordination.js';
import { announcingStore } from '../store/store-changes.js';
import { SqliteHubStore } from '../store/sqlite-store.js';

/** The store file under the data directory. */
export const HUB_STORE_FILE = 'hub.db';

/** Where and how an etcd store is reached. */
export interface EtcdStoreOptions {
  /** `https://host:2379`, at least one. */
  endpoints: readonly string[];
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  /** The key file every replica is given (encryption.ts). */
  encryptionKeyFile: string;
  /** Key prefix; `/edgeadm/hub/` by default. */
  keyPrefix?: string;
}

/** Options of {@link openHubStore}. */
export interface OpenHubStoreOptions {
  dataDir: string;
  /** Absent: SQLite under the data directory. */
  etcd?: EtcdStoreOptions;
  /** A CA to adopt on the hub's first start (PEM files). */
  caCertFile?: string;
  caKeyFile?: string;
  /**
   * This replica as others see it. Fields not known yet (the URL of a port
   * chosen at listen) can be set on `coordination.self` before `join()`.
   */
  replica?: Partial<ReplicaInfo>;
  /** Told of background trouble (a lost lease, a failed campaign). */
  onWarning?: (message: string) => void;
}

/** A store, its coordination, and where the hub's identity is kept. */
export interface OpenedHub extends OpenedHubStore {
  identity: HubIdentity;
}

/**
 * Opens the hub's store.
 *
 * @throws {EdgeadmError} `E_HUB_STORE` (SQLite), `E_HUB_STORE_UNAVAILABLE`
 *   (etcd unreachable), `E_HUB_ENCRYPTION_KEY_MISSING`, `…_INVALID`, `…_WRONG`.
 */
export async function openHubStore(options: OpenHubStoreOptions): Promise<OpenedHub> {
  if (options.etcd === undefined) {
    const coordination = new LocalCoordination({
      id: options.replica?.id ?? newReplicaId(),
      peerUrl: options.replica?.peerUrl ?? '',
      advertiseUrl: options.replica?.advertiseUrl ?? '',
      startedAt: options.replica?.startedAt ?? new Date().toISOString(),
    });
    const sqlite = await SqliteHubStore.open(join(options.dataDir, HUB_STORE_FILE));
    const store = announcingStore(sqlite, (change) => coordination.announce(change));
    const identity = localHubIdentity({
      dataDir: options.dataDir,
      store,
      ...(options.caCertFile === undefined ? {} : { caCertFile: options.caCertFile }),
      ...(options.caKeyFile === undefined ? {} : { caKeyFile: options.caKeyFile }),
    });
    return { store, coordination, identity };
  }
  // Loaded on use: a hub on SQLite never loads gRPC.
  const { openEtcdHubStore } = await import('./open-etcd-store.js');
  return openEtcdHubStore({ ...options, etcd: options.etcd });
}
