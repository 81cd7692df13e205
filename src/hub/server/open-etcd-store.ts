/**
 * Opens the hub's state on etcd: reads the encryption key file, connects,
 * checks the key against what the store holds (a replica with another key
 * refuses to start), and builds the store, the coordination and the shared
 * identity over one connection.
 */
import { randomUUID } from 'node:crypto';
import type { OpenedHub, OpenHubStoreOptions, EtcdStoreOptions } from './open-store.js';
import { loadEncryptionKeyFile } from '../store/etcd/encryption.js';
import { EtcdConnection } from '../store/etcd/etcd-client.js';
import { EtcdReplicaCoordination } from '../store/etcd/etcd-coordination.js';
import { etcdHubIdentity, verifyEncryptionKeys } from '../identity/etcd-identity.js';
import { EtcdHubStore } from '../store/etcd/etcd-store.js';

/** Connects to etcd with the hub's options (the key file is read first: no I/O to etcd without it). */
export async function connectEtcd(options: EtcdStoreOptions): Promise<{
  connection: EtcdConnection;
  keys: ReturnType<typeof loadEncryptionKeyFile>;
}> {
  const keys = loadEncryptionKeyFile(options.encryptionKeyFile);
  const connection = await EtcdConnection.open({
    endpoints: options.endpoints,
    ...(options.caFile === undefined ? {} : { caFile: options.caFile }),
    ...(options.certFile === undefined ? {} : { certFile: options.certFile }),
    ...(options.keyFile === undefined ? {} : { keyFile: options.keyFile }),
    ...(options.keyPrefix === undefined ? {} : { keyPrefix: options.keyPrefix }),
  });
  try {
    await verifyEncryptionKeys(connection, keys);
  } catch (error) {
    connection.close();
    throw error;
  }
  return { connection, keys };
}

/** The etcd branch of `openHubStore`. */
export async function openEtcdHubStore(options: OpenHubStoreOptions & { etcd: EtcdStoreOptions }): Promise<OpenedHub> {
  const { connection, keys } = await connectEtcd(options.etcd);
  let store: EtcdHubStore;
  try {
    store = await EtcdHubStore.open(connection, keys);
  } catch (error) {
    connection.close();
    throw error;
  }
  const coordination = new EtcdReplicaCoordination({
    store,
    self: {
      id: options.replica?.id ?? randomUUID(),
      peerUrl: options.replica?.peerUrl ?? '',
      advertiseUrl: options.replica?.advertiseUrl ?? '',
      startedAt: options.replica?.startedAt ?? new Date().toISOString(),
    },
    ...(options.onWarning === undefined ? {} : { onWarning: options.onWarning }),
  });
  const identity = etcdHubIdentity({
    etcd: connection,
    keys,
    store,
    ...(options.caCertFile === undefined ? {} : { caCertFile: options.caCertFile }),
    ...(options.caKeyFile === undefined ? {} : { caKeyFile: options.caKeyFile }),
  });
  return { store, coordination, identity };
}
