/**
 * Changes heard from a store that cannot watch itself. A hub on SQLite (one
 * replica) learns of its own changes by wrapping its store: every write that
 * other parts of the hub must react to (a cluster deleted, a certificate
 * revoked, users or tokens changed) is announced after it succeeded, as an
 * etcd store announces the writes it sees through its watch.
 */
import type { StoreChange } from './coordination.js';
import type { HubStore } from './store.js';

/** Where announced changes go. */
export type ChangeSink = (change: StoreChange) => void;

/**
 * `store` with each change-making write announced to `emit` once it
 * succeeded. Reads and everything else pass through unchanged.
 */
export function announcingStore(store: HubStore, emit: ChangeSink): HubStore {
  const after = async <T>(write: Promise<T>, change: (result: T) => StoreChange | undefined): Promise<T> => {
    const result = await write;
    const announced = change(result);
    if (announced !== undefined) emit(announced);
    return result;
  };
  return {
    addCluster: (cluster) =>
      after(store.addCluster(cluster), (added) =>
        added ? { kind: 'clusters-changed', cluster: cluster.name } : undefined,
      ),
    getCluster: (name) => store.getCluster(name),
    listClusters: () => store.listClusters(),
    deleteCluster: (name) =>
      after(store.deleteCluster(name), (removed) =>
        removed === undefined ? undefined : { kind: 'cluster-deleted', cluster: name },
      ),
    updateClusterStatus: (name, status) => store.updateClusterStatus(name, status),
    // Not announced: placement does not read health, and the views re-read the store within a second.
    updateClusterHealth: (name, health) => store.updateClusterHealth(name, health),
    updateClusterCertificate: (name, serial, notAfter) => store.updateClusterCertificate(name, serial, notAfter),
    setClusterHold: (name, hold) =>
      after(store.setClusterHold(name, hold), (isSet) =>
        isSet ? { kind: 'clusters-changed', cluster: name } : undefined,
      ),
    setClusterProperties: (name, properties) =>
      after(store.setClusterProperties(name, properties), (isSet) =>
        isSet ? { kind: 'clusters-changed', cluster: name } : undefined,
      ),
    addToken: (token) => after(store.addToken(token), () => ({ kind: 'tokens-changed' })),
    getToken: (id) => store.getToken(id),
    listTokens: () => store.listTokens(),
    useToken: (id, now) =>
      after(store.useToken(id, now), (use) => (use === 'used' ? { kind: 'tokens-changed' } : undefined)),
    deleteToken: (id) =>
      after(store.deleteToken(id), (isDeleted) => (isDeleted ? { kind: 'tokens-changed' } : undefined)),
    useTokenToAddCluster: (id, now, cluster) =>
      after(store.useTokenToAddCluster(id, now, cluster), (outcome) =>
        outcome === 'added' ? { kind: 'clusters-changed', cluster: cluster.name } : undefined,
      ),
    putUser: (user) => after(store.putUser(user), () => ({ kind: 'users-changed' })),
    deleteUser: (name) =>
      after(store.deleteUser(name), (isDeleted) => (isDeleted ? { kind: 'users-changed' } : undefined)),
    findUserByTokenHash: (hash) => store.findUserByTokenHash(hash),
    listUsers: () => store.listUsers(),
    revokeCertificate: (serial, reason) =>
      after(store.revokeCertificate(serial, reason), () => ({
        kind: 'certificate-revoked',
        serial: serial.toLowerCase(),
      })),
    isCertificateRevoked: (serial) => store.isCertificateRevoked(serial),
    putRollout: (record, revision, keep) =>
      after(store.putRollout(record, revision, keep), () => ({ kind: 'rollouts-changed', rollout: record.name })),
    putRollouts: (writes) => store.putRollouts(writes),
    getRollout: (name) => store.getRollout(name),
    listRollouts: () => store.listRollouts(),
    getRolloutRevision: (name, revision) => store.getRolloutRevision(name, revision),
    listRolloutRevisions: (name) => store.listRolloutRevisions(name),
    deleteRollout: (name, removals) =>
      after(store.deleteRollout(name, removals), (isDeleted) =>
        isDeleted ? { kind: 'rollouts-changed', rollout: name } : undefined,
      ),
    putReportedCopies: (reports) => store.putReportedCopies(reports),
    listReportedCopies: (rollout) => store.listReportedCopies(rollout),
    deleteReportedCopy: (rollout, cluster) => store.deleteReportedCopy(rollout, cluster),
    addPendingRemovals: (removals) => store.addPendingRemovals(removals),
    listPendingRemovals: () => store.listPendingRemovals(),
    deletePendingRemoval: (rollout, cluster) => store.deletePendingRemoval(rollout, cluster),
    close: () => store.close(),
  };
}
