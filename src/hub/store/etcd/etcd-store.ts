/**
 * The hub's store on etcd, for several hub replicas: every record is one
 * JSON value under the key prefix (`/edgeadm/hub/` by default), read and
 * written whole. What SQLite does in one transaction is one etcd
 * transaction here, and read-modify-writes (token uses, holds, properties)
 * are compare-and-swap on the record's mod revision, retried when another
 * replica changed it first: a limited token is never used more often than
 * its usages, whichever replicas registrations reach.
 *
 * Key layout (under the prefix):
 *   clusters/NAME                 ClusterRecord (hold and properties included)
 *   tokens/ID                     HubTokenRecord, its secret encrypted
 *   users/NAME                    UserRecord
 *   user-tokens/HASH              NAME (the index findUserByTokenHash reads)
 *   revoked/SERIAL                { reason, revokedAt }
 *   rollouts/NAME                 RolloutRecord, its progress without the clusters' (the head)
 *   rollout-progress/NAME/CLUSTER ClusterProgress of one cluster (rollout-progress-rows.ts)
 *   rollout-revisions/NAME/REV    RolloutRevisionRecord, its document encrypted (REV zero-padded, so key
 *                                 order is number order)
 *   rollout-reports/NAME/CLUSTER  ReportedCopyRecord, its objects (and their status) encrypted
 *   pending-removals/NAME/CLUSTER PendingRemovalRecord
 *   identity/…, replicas/…, tunnels/…, leaders/…  (etcd-identity.ts, etcd-coordination.ts)
 *
 * Clusters by name and users by token hash (read by the kube proxy on every
 * request) are cached, and the cache follows etcd's watch of the prefix, so
 * a change made through any replica drops the entries it touches. The
 * cached entries also let a replica keep serving the kubectl sessions it
 * holds while etcd has no quorum.
 */
import { EdgeadmError } from '../../../errors.js';
import { hubTokenState } from '../hub-token-state.js';
import type { ClusterHold } from '../../../rollout/api.js';
import type { ClusterHealthView } from '../../../health/wire.js';
import type {
  ClusterRecord,
  ClusterStatusUpdate,
  HubStore,
  HubTokenRecord,
  PendingRemovalRecord,
  ReportedCopyRecord,
  RolloutRecord,
  RolloutRevisionRecord,
  RolloutWrite,
  TokenRegistration,
  TokenUse,
  UserRecord,
} from '../store.js';
import type { EncryptionKeys } from './encryption.js';
import type { EtcdConnection, EtcdEntry } from './etcd-client.js';
import { parseStoredRecord } from './errors.js';
import { ETCD_LAST_SEEN_WRITE_INTERVAL_MS, ETCD_READ_CACHE_MAX_ENTRIES } from './limits.js';
import { ETCD_KEYS, EtcdKeyspace, type EtcdKeyEvent, type TxnOp } from './etcd-keyspace.js';
import { EtcdRolloutRecords } from './etcd-rollouts.js';
import { EtcdKeyWatch } from './etcd-key-watch.js';

/** The etcd implementation of {@link HubStore}. */
export class EtcdHubStore implements HubStore {
  readonly #etcd: EtcdConnection;
  readonly #keys: EncryptionKeys;
  readonly #clustersByName = new Map<string, ClusterRecord>();
  readonly #usersByTokenHash = new Map<string, UserRecord>();
  #watch: EtcdKeyWatch | undefined;

  readonly #space: EtcdKeyspace;
  readonly #rollouts: EtcdRolloutRecords;

  private constructor(etcd: EtcdConnection, keys: EncryptionKeys) {
    this.#etcd = etcd;
    this.#keys = keys;
    this.#space = new EtcdKeyspace(etcd);
    this.#rollouts = new EtcdRolloutRecords(this.#space, keys);
  }

  /**
   * Opens the store over a connection and starts following its changes.
   *
   * @throws {StoreUnavailableError} when etcd does not answer.
   */
  static async open(etcd: EtcdConnection, keys: EncryptionKeys): Promise<EtcdHubStore> {
    const store = new EtcdHubStore(etcd, keys);
    store.#watch = await EtcdKeyWatch.start(etcd, {
      changed: (relative) => store.#forget(relative),
      lost: () => store.#forgetAll(),
    });
    etcd.retain();
    return store;
  }

  /** The connection underneath (health, coordination). */
  get connection(): EtcdConnection {
    return this.#etcd;
  }

  /** Calls `listener` for every change under the prefix, through any replica. */
  onKeyEvent(listener: (event: EtcdKeyEvent) => void): () => void {
    return this.#watch?.listen(listener) ?? (() => undefined);
  }

  /** Drops what the cache holds for a changed key. */
  #forget(relative: string): void {
    if (relative.startsWith(ETCD_KEYS.clusters)) this.#clustersByName.delete(relative.slice(ETCD_KEYS.clusters.length));
    // A user's token may have changed: its old hash is not known here.
    if (relative.startsWith(ETCD_KEYS.users) || relative.startsWith(ETCD_KEYS.userTokens)) {
      this.#usersByTokenHash.clear();
    }
  }

  #forgetAll(): void {
    this.#clustersByName.clear();
    this.#usersByTokenHash.clear();
  }

  // Clusters.

  async addCluster(cluster: ClusterRecord): Promise<boolean> {
    const relative = `${ETCD_KEYS.clusters}${cluster.name}`;
    this.#clustersByName.delete(cluster.name);
    return this.#space.compareAndSwap([relative], ([entry]) =>
      entry === undefined ? { result: true, ops: [this.#space.put(relative, cluster)] } : { result: false, ops: [] },
    );
  }

  async getCluster(name: string): Promise<ClusterRecord | undefined> {
    const cached = this.#clustersByName.get(name);
    if (cached !== undefined) return cached;
    const found = await this.#space.get<ClusterRecord>(`${ETCD_KEYS.clusters}${name}`);
    if (found === undefined) return undefined;
    const cluster = found.record;
    Object.freeze(cluster.labels);
    if (cluster.properties !== undefined) Object.freeze(cluster.properties);
    if (cluster.hold !== undefined) Object.freeze(cluster.hold);
    if (this.#clustersByName.size >= ETCD_READ_CACHE_MAX_ENTRIES) this.#clustersByName.clear();
    this.#clustersByName.set(name, Object.freeze(cluster));
    return cluster;
  }

  async listClusters(): Promise<ClusterRecord[]> {
    return this.#space.list<ClusterRecord>(ETCD_KEYS.clusters);
  }

  async deleteCluster(name: string): Promise<ClusterRecord | undefined> {
    const relative = `${ETCD_KEYS.clusters}${name}`;
    this.#clustersByName.delete(name);
    return this.#space.compareAndSwap([relative], ([entry]) =>
      entry === undefined
        ? { result: undefined, ops: [] }
        : { result: parseStoredRecord<ClusterRecord>(entry), ops: [this.#space.delete(relative)] },
    );
  }

  /** Read-modify-write of one cluster; false when there is no such cluster. */
  async #updateCluster(name: string, change: (cluster: ClusterRecord) => ClusterRecord | undefined): Promise<boolean> {
    const relative = `${ETCD_KEYS.clusters}${name}`;
    this.#clustersByName.delete(name);
    return this.#space.compareAndSwap([relative], ([entry]) => {
      if (entry === undefined) return { result: false, ops: [] };
      const next = change(parseStoredRecord<ClusterRecord>(entry));
      return { result: true, ops: next === undefined ? [] : [this.#space.put(relative, next)] };
    });
  }

  async setClusterHold(name: string, hold: ClusterHold | undefined): Promise<boolean> {
    return this.#updateCluster(name, (cluster) => {
      const next = { ...cluster };
      if (hold === undefined) delete next.hold;
      else next.hold = hold;
      return next;
    });
  }

  async setClusterProperties(name: string, properties: Record<string, string>): Promise<boolean> {
    return this.#updateCluster(name, (cluster) => ({ ...cluster, properties }));
  }

  /**
   * Writes only what changed: a new version or node count at once, a later
   * `lastSeen` alone at most every {@link ETCD_LAST_SEEN_WRITE_INTERVAL_MS}
   * (a connected cluster's liveness is its tunnel claim, not this field).
   */
  async updateClusterStatus(name: string, status: ClusterStatusUpdate): Promise<void> {
    const isWorthWriting = (cluster: ClusterRecord): boolean =>
      (status.kubernetesVersion !== undefined && status.kubernetesVersion !== cluster.kubernetesVersion) ||
      (status.nodeCount !== undefined && status.nodeCount !== cluster.nodeCount) ||
      cluster.lastSeen === undefined ||
      Date.parse(status.lastSeen) - Date.parse(cluster.lastSeen) >= ETCD_LAST_SEEN_WRITE_INTERVAL_MS;
    const cached = this.#clustersByName.get(name);
    if (cached !== undefined && !isWorthWriting(cached)) return;
    await this.#updateCluster(name, (cluster) => {
      if (!isWorthWriting(cluster)) return undefined;
      return {
        ...cluster,
        lastSeen: status.lastSeen,
        ...(status.kubernetesVersion === undefined ? {} : { kubernetesVersion: status.kubernetesVersion }),
        ...(status.nodeCount === undefined ? {} : { nodeCount: status.nodeCount }),
      };
    });
  }

  async updateClusterHealth(name: string, health: ClusterHealthView): Promise<void> {
    await this.#updateCluster(name, (cluster) => ({ ...cluster, health }));
  }

  async updateClusterCertificate(name: string, certSerial: string, certNotAfter: string): Promise<void> {
    await this.#updateCluster(name, (cluster) => ({ ...cluster, certSerial, certNotAfter }));
  }

  // Tokens: the secret is encrypted under the token's key.

  #sealToken(token: HubTokenRecord): HubTokenRecord {
    const relative = `${ETCD_KEYS.tokens}${token.id}`;
    return { ...token, secret: this.#keys.seal(token.secret, this.#space.key(relative)) };
  }

  #openToken(entry: EtcdEntry): HubTokenRecord {
    const sealed = parseStoredRecord<HubTokenRecord>(entry);
    return { ...sealed, secret: this.#keys.open(sealed.secret, entry.key) };
  }

  async addToken(token: HubTokenRecord): Promise<void> {
    const relative = `${ETCD_KEYS.tokens}${token.id}`;
    const isAdded = await this.#space.compareAndSwap([relative], ([entry]) =>
      entry === undefined
        ? { result: true, ops: [this.#space.put(relative, this.#sealToken(token))] }
        : { result: false, ops: [] },
    );
    // As SQLite's primary key does.
    if (!isAdded) throw new EdgeadmError(`a hub token "${token.id}" exists already`, { code: 'E_HUB_STORE_CONFLICT' });
  }

  async getToken(id: string): Promise<HubTokenRecord | undefined> {
    this.#space.checkOpen();
    const entry = await this.#etcd.get(this.#space.key(`${ETCD_KEYS.tokens}${id}`));
    return entry === undefined ? undefined : this.#openToken(entry);
  }

  async listTokens(): Promise<HubTokenRecord[]> {
    this.#space.checkOpen();
    const entries = await this.#etcd.list(this.#space.key(ETCD_KEYS.tokens));
    return entries
      .map((entry) => this.#openToken(entry))
      .sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0));
  }

  /** What one use of the token found, and the token record to write back (undefined: nothing to write). */
  #takeTokenUse(entry: EtcdEntry | undefined, now: Date): { use: TokenUse; next?: HubTokenRecord } {
    if (entry === undefined) return { use: 'unknown' };
    const sealed = parseStoredRecord<HubTokenRecord>(entry);
    const state = hubTokenState(sealed, now);
    if (state !== 'usable') return { use: state };
    if (sealed.usagesLeft === undefined) return { use: 'used' };
    // The sealed secret is written back as it was: no decryption needed to take a use.
    return { use: 'used', next: { ...sealed, usagesLeft: sealed.usagesLeft - 1 } };
  }

  async useToken(id: string, now: Date): Promise<TokenUse> {
    const relative = `${ETCD_KEYS.tokens}${id}`;
    return this.#space.compareAndSwap([relative], ([entry]) => {
      const { use, next } = this.#takeTokenUse(entry, now);
      return { result: use, ops: next === undefined ? [] : [this.#space.put(relative, next)] };
    });
  }

  async useTokenToAddCluster(id: string, now: Date, cluster: ClusterRecord): Promise<TokenRegistration> {
    const tokenKey = `${ETCD_KEYS.tokens}${id}`;
    const clusterKey = `${ETCD_KEYS.clusters}${cluster.name}`;
    this.#clustersByName.delete(cluster.name);
    // Both keys are compared: the use is taken and the cluster added together, or neither.
    return this.#space.compareAndSwap(
      [tokenKey, clusterKey],
      ([token, existing]): { result: TokenRegistration; ops: TxnOp[] } => {
        const { use, next } = this.#takeTokenUse(token, now);
        if (use !== 'used') return { result: use, ops: [] };
        if (existing !== undefined) return { result: 'exists', ops: [] };
        return {
          result: 'added',
          ops: [...(next === undefined ? [] : [this.#space.put(tokenKey, next)]), this.#space.put(clusterKey, cluster)],
        };
      },
    );
  }

  async deleteToken(id: string): Promise<boolean> {
    const relative = `${ETCD_KEYS.tokens}${id}`;
    return this.#space.compareAndSwap([relative], ([entry]) =>
      entry === undefined ? { result: false, ops: [] } : { result: true, ops: [this.#space.delete(relative)] },
    );
  }

  // Users, with the index by token hash kept in the same transaction.

  async putUser(user: UserRecord): Promise<void> {
    const relative = `${ETCD_KEYS.users}${user.name}`;
    const indexKey = `${ETCD_KEYS.userTokens}${user.tokenHash}`;
    this.#usersByTokenHash.clear();
    await this.#space.compareAndSwap([relative], ([entry]) => {
      const ops = [this.#space.put(relative, user), this.#space.put(indexKey, user.name)];
      if (entry !== undefined) {
        const previous = parseStoredRecord<UserRecord>(entry);
        if (previous.tokenHash !== user.tokenHash)
          ops.push(this.#space.delete(`${ETCD_KEYS.userTokens}${previous.tokenHash}`));
      }
      return { result: undefined, ops };
    });
  }

  async findUserByTokenHash(tokenHash: string): Promise<UserRecord | undefined> {
    const cached = this.#usersByTokenHash.get(tokenHash);
    if (cached !== undefined) return cached;
    this.#space.checkOpen();
    const index = await this.#etcd.get(this.#space.key(`${ETCD_KEYS.userTokens}${tokenHash}`));
    if (index === undefined) return undefined;
    const found = await this.#space.get<UserRecord>(`${ETCD_KEYS.users}${JSON.parse(index.value) as string}`);
    // The index may point at a user whose token was replaced since it was read.
    if (found === undefined || found.record.tokenHash !== tokenHash) return undefined;
    const user = found.record;
    Object.freeze(user.groups);
    if (this.#usersByTokenHash.size >= ETCD_READ_CACHE_MAX_ENTRIES) this.#usersByTokenHash.clear();
    this.#usersByTokenHash.set(tokenHash, Object.freeze(user));
    return user;
  }

  async listUsers(): Promise<UserRecord[]> {
    return this.#space.list<UserRecord>(ETCD_KEYS.users);
  }

  async deleteUser(name: string): Promise<boolean> {
    const relative = `${ETCD_KEYS.users}${name}`;
    this.#usersByTokenHash.clear();
    return this.#space.compareAndSwap([relative], ([entry]) => {
      if (entry === undefined) return { result: false, ops: [] };
      const { tokenHash } = parseStoredRecord<UserRecord>(entry);
      return {
        result: true,
        ops: [this.#space.delete(relative), this.#space.delete(`${ETCD_KEYS.userTokens}${tokenHash}`)],
      };
    });
  }

  // Revocations.

  async revokeCertificate(serial: string, reason: string): Promise<void> {
    const relative = `${ETCD_KEYS.revoked}${serial.toLowerCase()}`;
    await this.#space.compareAndSwap([relative], ([entry]) => ({
      result: undefined,
      ops: entry === undefined ? [this.#space.put(relative, { reason, revokedAt: new Date().toISOString() })] : [],
    }));
  }

  /** Writes revocations as they were recorded elsewhere (`hub migrate`), keeping their dates. */
  async importRevocations(
    revocations: readonly { serial: string; reason: string; revokedAt: string }[],
  ): Promise<void> {
    await this.#space.commitInChunks(
      revocations.map((r) =>
        this.#space.put(`${ETCD_KEYS.revoked}${r.serial.toLowerCase()}`, { reason: r.reason, revokedAt: r.revokedAt }),
      ),
    );
  }

  async isCertificateRevoked(serial: string): Promise<boolean> {
    this.#space.checkOpen();
    return (await this.#etcd.get(this.#space.key(`${ETCD_KEYS.revoked}${serial.toLowerCase()}`))) !== undefined;
  }

  // Rollouts, their revisions, reports and owed removals: etcd-rollouts.ts.

  putRollout(record: RolloutRecord, revision?: RolloutRevisionRecord, keepRevisions?: number): Promise<void> {
    return this.#rollouts.putRollout(record, revision, keepRevisions);
  }

  putRollouts(writes: readonly RolloutWrite[]): Promise<void> {
    return this.#rollouts.putRollouts(writes);
  }

  getRollout(name: string): Promise<RolloutRecord | undefined> {
    return this.#rollouts.getRollout(name);
  }

  listRollouts(): Promise<RolloutRecord[]> {
    return this.#rollouts.listRollouts();
  }

  getRolloutRevision(name: string, revision: number): Promise<RolloutRevisionRecord | undefined> {
    return this.#rollouts.getRolloutRevision(name, revision);
  }

  listRolloutRevisions(name: string): Promise<number[]> {
    return this.#rollouts.listRolloutRevisions(name);
  }

  deleteRollout(name: string, pendingRemovals: readonly PendingRemovalRecord[]): Promise<boolean> {
    return this.#rollouts.deleteRollout(name, pendingRemovals);
  }

  putReportedCopies(reports: readonly ReportedCopyRecord[]): Promise<void> {
    return this.#rollouts.putReportedCopies(reports);
  }

  listReportedCopies(rollout: string): Promise<ReportedCopyRecord[]> {
    return this.#rollouts.listReportedCopies(rollout);
  }

  deleteReportedCopy(rollout: string, cluster: string): Promise<void> {
    return this.#rollouts.deleteReportedCopy(rollout, cluster);
  }

  addPendingRemovals(removals: readonly PendingRemovalRecord[]): Promise<void> {
    return this.#rollouts.addPendingRemovals(removals);
  }

  listPendingRemovals(): Promise<PendingRemovalRecord[]> {
    return this.#rollouts.listPendingRemovals();
  }

  deletePendingRemoval(rollout: string, cluster: string): Promise<void> {
    return this.#rollouts.deletePendingRemoval(rollout, cluster);
  }

  /** Stops following changes and releases the connection (closed once the coordination released it too). */
  async close(): Promise<void> {
    if (this.#space.isClosed) return;
    this.#space.close();
    await this.#watch?.cancel();
    this.#etcd.release();
  }
}
