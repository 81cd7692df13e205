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
 *   rollouts/NAME                 RolloutRecord
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
import type { Watcher } from 'etcd3';
import { EdgeadmError } from '../../../errors.js';
import { hubTokenState } from '../hub-token-state.js';
import type { ClusterHold } from '../../../rollout/api.js';
import type {
  ClusterRecord,
  ClusterStatusUpdate,
  HubStore,
  HubTokenRecord,
  PendingRemovalRecord,
  ReportedCopyRecord,
  RolloutRecord,
  RolloutRevisionRecord,
  TokenRegistration,
  TokenUse,
  UserRecord,
} from '../store.js';
import type { EncryptionKeys } from './encryption.js';
import type { EtcdConnection, EtcdEntry } from './etcd-client.js';
import { parseStoredRecord } from './errors.js';
import {
  ETCD_CAS_MAX_ATTEMPTS,
  ETCD_LAST_SEEN_WRITE_INTERVAL_MS,
  ETCD_MAX_TXN_OPS,
  ETCD_READ_CACHE_MAX_ENTRIES,
} from './limits.js';

/** The key families under the prefix. */
export const ETCD_KEYS = {
  clusters: 'clusters/',
  tokens: 'tokens/',
  users: 'users/',
  userTokens: 'user-tokens/',
  revoked: 'revoked/',
  rollouts: 'rollouts/',
  rolloutRevisions: 'rollout-revisions/',
  rolloutReports: 'rollout-reports/',
  pendingRemovals: 'pending-removals/',
} as const;

/** A stored change of a key, as the watch reports it (key relative to the prefix). */
export interface EtcdKeyEvent {
  type: 'put' | 'delete';
  key: string;
  /** The value put (raw: decoded only by the listener that needs it); absent on a delete. */
  value?: Buffer;
}

/** Revision numbers are zero-padded in keys so that key order is number order. */
function revisionKey(revision: number): string {
  return String(revision).padStart(12, '0');
}

/** An operation of a transaction (an etcd3 builder, run by the transaction). */
type TxnOp = Parameters<ReturnType<EtcdConnection['client']['if']>['then']>[number];

/** A {@link RolloutRevisionRecord} as stored: the document sealed. */
type SealedRevisionRecord = Omit<RolloutRevisionRecord, 'document'> & { sealedDocument: string };
/** A {@link ReportedCopyRecord} as stored: the objects sealed. */
type SealedReportRecord = Omit<ReportedCopyRecord, 'objects'> & { sealedObjects: string };

/** The etcd implementation of {@link HubStore}. */
export class EtcdHubStore implements HubStore {
  readonly #etcd: EtcdConnection;
  readonly #keys: EncryptionKeys;
  readonly #clustersByName = new Map<string, ClusterRecord>();
  readonly #usersByTokenHash = new Map<string, UserRecord>();
  readonly #listeners = new Set<(event: EtcdKeyEvent) => void>();
  #watcher: Watcher | undefined;
  #isClosed = false;

  private constructor(etcd: EtcdConnection, keys: EncryptionKeys) {
    this.#etcd = etcd;
    this.#keys = keys;
  }

  /**
   * Opens the store over a connection and starts following its changes.
   *
   * @throws {StoreUnavailableError} when etcd does not answer.
   */
  static async open(etcd: EtcdConnection, keys: EncryptionKeys): Promise<EtcdHubStore> {
    const store = new EtcdHubStore(etcd, keys);
    await store.#startWatch();
    etcd.retain();
    return store;
  }

  /** The connection underneath (health, coordination). */
  get connection(): EtcdConnection {
    return this.#etcd;
  }

  /** Calls `listener` for every change under the prefix, through any replica. */
  onKeyEvent(listener: (event: EtcdKeyEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async #startWatch(): Promise<void> {
    const prefix = this.#etcd.prefix;
    const watcher = await this.#etcd.read(() => this.#etcd.client.watch().prefix(prefix).create());
    const dispatch = (type: 'put' | 'delete', key: Buffer, value?: Buffer): void => {
      const relative = key.toString('utf8').slice(prefix.length);
      this.#forget(relative);
      const event: EtcdKeyEvent = value === undefined ? { type, key: relative } : { type, key: relative, value };
      for (const listener of this.#listeners) listener(event);
    };
    watcher.on('put', (kv) => dispatch('put', kv.key, kv.value));
    watcher.on('delete', (kv) => dispatch('delete', kv.key));
    // Reconnected, the watcher resumes from the last revision it heard, so nothing is missed and the
    // caches stay (they are what keeps kubectl sessions served while etcd has no quorum). A history
    // compacted past that revision cannot be replayed: the watcher reports an error, start over.
    watcher.on('error', () => this.#forgetAll());
    this.#watcher = watcher;
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

  #key(relative: string): string {
    return `${this.#etcd.prefix}${relative}`;
  }

  #checkOpen(): void {
    if (this.#isClosed) throw new EdgeadmError('the hub store is closed', { code: 'E_HUB_STORE' });
  }

  async #get<T>(relative: string): Promise<{ record: T; entry: EtcdEntry } | undefined> {
    this.#checkOpen();
    const entry = await this.#etcd.get(this.#key(relative));
    return entry === undefined ? undefined : { record: parseStoredRecord<T & object>(entry), entry };
  }

  async #list<T>(relative: string): Promise<T[]> {
    this.#checkOpen();
    return (await this.#etcd.list(this.#key(relative))).map((entry) => parseStoredRecord<T & object>(entry));
  }

  #put(relative: string, value: unknown): TxnOp {
    return this.#etcd.client.put(this.#key(relative)).value(JSON.stringify(value));
  }

  #delete(relative: string): TxnOp {
    return this.#etcd.client.delete().key(this.#key(relative));
  }

  #deletePrefix(relative: string): TxnOp {
    return this.#etcd.client.delete().prefix(this.#key(relative));
  }

  /** Runs operations in transactions of at most {@link ETCD_MAX_TXN_OPS} (etcd refuses larger ones). */
  async #commitInChunks(ops: readonly TxnOp[]): Promise<void> {
    this.#checkOpen();
    for (let i = 0; i < ops.length; i += ETCD_MAX_TXN_OPS) {
      const chunk = ops.slice(i, i + ETCD_MAX_TXN_OPS);
      await this.#etcd.write(() =>
        this.#etcd.client
          .if(this.#key(''), 'Version', '>', -1)
          .then(...chunk)
          .commit(),
      );
    }
  }

  /**
   * Compare-and-swap over the records at `relatives`: `decide` sees them
   * (undefined when absent) and returns its result and the operations to
   * commit; they are committed only if none of the records changed since
   * they were read, else everything is read again.
   */
  async #compareAndSwap<R>(
    relatives: readonly string[],
    decide: (entries: (EtcdEntry | undefined)[]) => { result: R; ops: TxnOp[] },
  ): Promise<R> {
    this.#checkOpen();
    for (let attempt = 0; attempt < ETCD_CAS_MAX_ATTEMPTS; attempt += 1) {
      const entries = await Promise.all(relatives.map((relative) => this.#etcd.get(this.#key(relative))));
      const { result, ops } = decide(entries);
      if (ops.length === 0) return result;
      // Absent: still absent (create revision 0); present: not modified since it was read.
      const compares = relatives.map((relative, index): [string, 'Create' | 'Mod', string | number] => {
        const entry = entries[index];
        return entry === undefined
          ? [this.#key(relative), 'Create', 0]
          : [this.#key(relative), 'Mod', entry.modRevision];
      });
      const [first, ...rest] = compares;
      if (first === undefined) throw new Error('compare-and-swap over no key');
      const txn = this.#etcd.client.if(first[0], first[1], '==', first[2]);
      for (const [key, target, value] of rest) txn.and(key, target, '==', value);
      const response = await this.#etcd.write(() => txn.then(...ops).commit());
      if (response.succeeded) return result;
    }
    throw new EdgeadmError(`the hub store kept changing under ${relatives.join(', ')}; try again`, {
      code: 'E_HUB_STORE_CONFLICT',
    });
  }

  // Clusters.

  async addCluster(cluster: ClusterRecord): Promise<boolean> {
    const relative = `${ETCD_KEYS.clusters}${cluster.name}`;
    this.#clustersByName.delete(cluster.name);
    return this.#compareAndSwap([relative], ([entry]) =>
      entry === undefined ? { result: true, ops: [this.#put(relative, cluster)] } : { result: false, ops: [] },
    );
  }

  async getCluster(name: string): Promise<ClusterRecord | undefined> {
    const cached = this.#clustersByName.get(name);
    if (cached !== undefined) return cached;
    const found = await this.#get<ClusterRecord>(`${ETCD_KEYS.clusters}${name}`);
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
    return this.#list<ClusterRecord>(ETCD_KEYS.clusters);
  }

  async deleteCluster(name: string): Promise<ClusterRecord | undefined> {
    const relative = `${ETCD_KEYS.clusters}${name}`;
    this.#clustersByName.delete(name);
    return this.#compareAndSwap([relative], ([entry]) =>
      entry === undefined
        ? { result: undefined, ops: [] }
        : { result: parseStoredRecord<ClusterRecord>(entry), ops: [this.#delete(relative)] },
    );
  }

  /** Read-modify-write of one cluster; false when there is no such cluster. */
  async #updateCluster(name: string, change: (cluster: ClusterRecord) => ClusterRecord | undefined): Promise<boolean> {
    const relative = `${ETCD_KEYS.clusters}${name}`;
    this.#clustersByName.delete(name);
    return this.#compareAndSwap([relative], ([entry]) => {
      if (entry === undefined) return { result: false, ops: [] };
      const next = change(parseStoredRecord<ClusterRecord>(entry));
      return { result: true, ops: next === undefined ? [] : [this.#put(relative, next)] };
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

  async updateClusterCertificate(name: string, certSerial: string, certNotAfter: string): Promise<void> {
    await this.#updateCluster(name, (cluster) => ({ ...cluster, certSerial, certNotAfter }));
  }

  // Tokens: the secret is encrypted under the token's key.

  #sealToken(token: HubTokenRecord): HubTokenRecord {
    const relative = `${ETCD_KEYS.tokens}${token.id}`;
    return { ...token, secret: this.#keys.seal(token.secret, this.#key(relative)) };
  }

  #openToken(entry: EtcdEntry): HubTokenRecord {
    const sealed = parseStoredRecord<HubTokenRecord>(entry);
    return { ...sealed, secret: this.#keys.open(sealed.secret, entry.key) };
  }

  async addToken(token: HubTokenRecord): Promise<void> {
    const relative = `${ETCD_KEYS.tokens}${token.id}`;
    const isAdded = await this.#compareAndSwap([relative], ([entry]) =>
      entry === undefined
        ? { result: true, ops: [this.#put(relative, this.#sealToken(token))] }
        : { result: false, ops: [] },
    );
    // As SQLite's primary key does.
    if (!isAdded) throw new EdgeadmError(`a hub token "${token.id}" exists already`, { code: 'E_HUB_STORE_CONFLICT' });
  }

  async getToken(id: string): Promise<HubTokenRecord | undefined> {
    this.#checkOpen();
    const entry = await this.#etcd.get(this.#key(`${ETCD_KEYS.tokens}${id}`));
    return entry === undefined ? undefined : this.#openToken(entry);
  }

  async listTokens(): Promise<HubTokenRecord[]> {
    this.#checkOpen();
    const entries = await this.#etcd.list(this.#key(ETCD_KEYS.tokens));
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
    return this.#compareAndSwap([relative], ([entry]) => {
      const { use, next } = this.#takeTokenUse(entry, now);
      return { result: use, ops: next === undefined ? [] : [this.#put(relative, next)] };
    });
  }

  async useTokenToAddCluster(id: string, now: Date, cluster: ClusterRecord): Promise<TokenRegistration> {
    const tokenKey = `${ETCD_KEYS.tokens}${id}`;
    const clusterKey = `${ETCD_KEYS.clusters}${cluster.name}`;
    this.#clustersByName.delete(cluster.name);
    // Both keys are compared: the use is taken and the cluster added together, or neither.
    return this.#compareAndSwap(
      [tokenKey, clusterKey],
      ([token, existing]): { result: TokenRegistration; ops: TxnOp[] } => {
        const { use, next } = this.#takeTokenUse(token, now);
        if (use !== 'used') return { result: use, ops: [] };
        if (existing !== undefined) return { result: 'exists', ops: [] };
        return {
          result: 'added',
          ops: [...(next === undefined ? [] : [this.#put(tokenKey, next)]), this.#put(clusterKey, cluster)],
        };
      },
    );
  }

  // Users, with the index by token hash kept in the same transaction.

  async putUser(user: UserRecord): Promise<void> {
    const relative = `${ETCD_KEYS.users}${user.name}`;
    const indexKey = `${ETCD_KEYS.userTokens}${user.tokenHash}`;
    this.#usersByTokenHash.clear();
    await this.#compareAndSwap([relative], ([entry]) => {
      const ops = [this.#put(relative, user), this.#put(indexKey, user.name)];
      if (entry !== undefined) {
        const previous = parseStoredRecord<UserRecord>(entry);
        if (previous.tokenHash !== user.tokenHash)
          ops.push(this.#delete(`${ETCD_KEYS.userTokens}${previous.tokenHash}`));
      }
      return { result: undefined, ops };
    });
  }

  async findUserByTokenHash(tokenHash: string): Promise<UserRecord | undefined> {
    const cached = this.#usersByTokenHash.get(tokenHash);
    if (cached !== undefined) return cached;
    this.#checkOpen();
    const index = await this.#etcd.get(this.#key(`${ETCD_KEYS.userTokens}${tokenHash}`));
    if (index === undefined) return undefined;
    const found = await this.#get<UserRecord>(`${ETCD_KEYS.users}${JSON.parse(index.value) as string}`);
    // The index may point at a user whose token was replaced since it was read.
    if (found === undefined || found.record.tokenHash !== tokenHash) return undefined;
    const user = found.record;
    Object.freeze(user.groups);
    if (this.#usersByTokenHash.size >= ETCD_READ_CACHE_MAX_ENTRIES) this.#usersByTokenHash.clear();
    this.#usersByTokenHash.set(tokenHash, Object.freeze(user));
    return user;
  }

  async listUsers(): Promise<UserRecord[]> {
    return this.#list<UserRecord>(ETCD_KEYS.users);
  }

  // Revocations.

  async revokeCertificate(serial: string, reason: string): Promise<void> {
    const relative = `${ETCD_KEYS.revoked}${serial.toLowerCase()}`;
    await this.#compareAndSwap([relative], ([entry]) => ({
      result: undefined,
      ops: entry === undefined ? [this.#put(relative, { reason, revokedAt: new Date().toISOString() })] : [],
    }));
  }

  /** Writes revocations as they were recorded elsewhere (`hub migrate`), keeping their dates. */
  async importRevocations(
    revocations: readonly { serial: string; reason: string; revokedAt: string }[],
  ): Promise<void> {
    await this.#commitInChunks(
      revocations.map((r) =>
        this.#put(`${ETCD_KEYS.revoked}${r.serial.toLowerCase()}`, { reason: r.reason, revokedAt: r.revokedAt }),
      ),
    );
  }

  async isCertificateRevoked(serial: string): Promise<boolean> {
    this.#checkOpen();
    return (await this.#etcd.get(this.#key(`${ETCD_KEYS.revoked}${serial.toLowerCase()}`))) !== undefined;
  }

  // Rollouts.

  /**
   * A revision as etcd holds it: the document sealed, as token secrets are
   * (a Rollout may carry Secret objects; issue #30), the rest in clear.
   */
  #sealRevision(relative: string, revision: RolloutRevisionRecord): SealedRevisionRecord {
    const { document, ...rest } = revision;
    return { ...rest, sealedDocument: this.#keys.seal(JSON.stringify(document), this.#key(relative)) };
  }

  /** A stored revision read back; one written before documents were sealed is read as it is. */
  #openRevision(stored: SealedRevisionRecord | RolloutRevisionRecord, etcdKey: string): RolloutRevisionRecord {
    if (!('sealedDocument' in stored)) return stored;
    const { sealedDocument, ...rest } = stored;
    return { ...rest, document: JSON.parse(this.#keys.open(sealedDocument, etcdKey)) as unknown };
  }

  /** A report as etcd holds it: the objects and their status sealed. */
  #sealReport(relative: string, report: ReportedCopyRecord): SealedReportRecord {
    const { objects, ...rest } = report;
    return { ...rest, sealedObjects: this.#keys.seal(JSON.stringify(objects), this.#key(relative)) };
  }

  #openReport(stored: SealedReportRecord | ReportedCopyRecord, etcdKey: string): ReportedCopyRecord {
    if (!('sealedObjects' in stored)) return stored;
    const { sealedObjects, ...rest } = stored;
    return { ...rest, objects: JSON.parse(this.#keys.open(sealedObjects, etcdKey)) as ReportedCopyRecord['objects'] };
  }

  async putRollout(record: RolloutRecord, revision?: RolloutRevisionRecord, keepRevisions?: number): Promise<void> {
    this.#checkOpen();
    const ops = [this.#put(`${ETCD_KEYS.rollouts}${record.name}`, record)];
    if (revision !== undefined) {
      const revisionsPrefix = `${ETCD_KEYS.rolloutRevisions}${revision.name}/`;
      const relative = `${revisionsPrefix}${revisionKey(revision.revision)}`;
      ops.push(this.#put(relative, this.#sealRevision(relative, revision)));
      if (keepRevisions !== undefined) {
        const stored = await this.listRolloutRevisions(revision.name);
        const all = [...new Set([...stored, revision.revision])].sort((a, b) => b - a);
        for (const old of all.slice(Math.max(1, keepRevisions))) {
          ops.push(this.#delete(`${revisionsPrefix}${revisionKey(old)}`));
        }
      }
    }
    await this.#commitInChunks(ops);
  }

  async putRollouts(records: readonly RolloutRecord[]): Promise<void> {
    await this.#commitInChunks(records.map((record) => this.#put(`${ETCD_KEYS.rollouts}${record.name}`, record)));
  }

  async getRollout(name: string): Promise<RolloutRecord | undefined> {
    return (await this.#get<RolloutRecord>(`${ETCD_KEYS.rollouts}${name}`))?.record;
  }

  async listRollouts(): Promise<RolloutRecord[]> {
    return this.#list<RolloutRecord>(ETCD_KEYS.rollouts);
  }

  async getRolloutRevision(name: string, revision: number): Promise<RolloutRevisionRecord | undefined> {
    const found = await this.#get<SealedRevisionRecord | RolloutRevisionRecord>(
      `${ETCD_KEYS.rolloutRevisions}${name}/${revisionKey(revision)}`,
    );
    return found === undefined ? undefined : this.#openRevision(found.record, found.entry.key);
  }

  async listRolloutRevisions(name: string): Promise<number[]> {
    this.#checkOpen();
    const prefix = this.#key(`${ETCD_KEYS.rolloutRevisions}${name}/`);
    return (await this.#etcd.list(prefix)).map((entry) => Number(entry.key.slice(prefix.length)));
  }

  /**
   * The rollout's record, documents and reports go in the first
   * transaction with as many removals as fit; removals past etcd's
   * transaction size follow in further transactions (a removal owed for a
   * rollout that still exists would remove a live rollout's copies, so the
   * rollout goes first).
   */
  async deleteRollout(name: string, pendingRemovals: readonly PendingRemovalRecord[]): Promise<boolean> {
    const relative = `${ETCD_KEYS.rollouts}${name}`;
    const removals = pendingRemovals.map((removal) =>
      this.#put(`${ETCD_KEYS.pendingRemovals}${removal.rollout}/${removal.cluster}`, removal),
    );
    const head = ETCD_MAX_TXN_OPS - 3;
    const existed = await this.#compareAndSwap([relative], ([entry]) => ({
      result: entry !== undefined,
      ops: [
        ...(entry === undefined ? [] : [this.#delete(relative)]),
        this.#deletePrefix(`${ETCD_KEYS.rolloutRevisions}${name}/`),
        this.#deletePrefix(`${ETCD_KEYS.rolloutReports}${name}/`),
        ...removals.slice(0, head),
      ],
    }));
    await this.#commitInChunks(removals.slice(head));
    return existed;
  }

  async putReportedCopies(reports: readonly ReportedCopyRecord[]): Promise<void> {
    await this.#commitInChunks(
      reports.map((report) => {
        const relative = `${ETCD_KEYS.rolloutReports}${report.rollout}/${report.cluster}`;
        return this.#put(relative, this.#sealReport(relative, report));
      }),
    );
  }

  async listReportedCopies(rollout: string): Promise<ReportedCopyRecord[]> {
    this.#checkOpen();
    const entries = await this.#etcd.list(this.#key(`${ETCD_KEYS.rolloutReports}${rollout}/`));
    return entries.map((entry) =>
      this.#openReport(parseStoredRecord<SealedReportRecord | ReportedCopyRecord>(entry), entry.key),
    );
  }

  async deleteReportedCopy(rollout: string, cluster: string): Promise<void> {
    await this.#commitInChunks([this.#delete(`${ETCD_KEYS.rolloutReports}${rollout}/${cluster}`)]);
  }

  async addPendingRemovals(removals: readonly PendingRemovalRecord[]): Promise<void> {
    await this.#commitInChunks(
      removals.map((removal) =>
        this.#put(`${ETCD_KEYS.pendingRemovals}${removal.rollout}/${removal.cluster}`, removal),
      ),
    );
  }

  async listPendingRemovals(): Promise<PendingRemovalRecord[]> {
    const removals = await this.#list<PendingRemovalRecord>(ETCD_KEYS.pendingRemovals);
    // As SQLite orders them: by cluster, then rollout.
    return removals.sort((a, b) =>
      a.cluster === b.cluster ? (a.rollout < b.rollout ? -1 : 1) : a.cluster < b.cluster ? -1 : 1,
    );
  }

  async deletePendingRemoval(rollout: string, cluster: string): Promise<void> {
    await this.#commitInChunks([this.#delete(`${ETCD_KEYS.pendingRemovals}${rollout}/${cluster}`)]);
  }

  /** Stops following changes and releases the connection (closed once the coordination released it too). */
  async close(): Promise<void> {
    if (this.#isClosed) return;
    this.#isClosed = true;
    await this.#watcher?.cancel().catch(() => undefined);
    this.#etcd.release();
  }
}
