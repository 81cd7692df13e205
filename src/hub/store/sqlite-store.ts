/**
 * The hub's default store: node:sqlite (built into Node 24, no native
 * addon) in one file under the data directory, mode 0600 because it holds
 * hub token secrets. Every write is one statement or one transaction, so a
 * hub killed at any point restarts with consistent state.
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { EdgeadmError } from '../../errors.js';
import { SqliteRolloutTables } from './sqlite-rollouts.js';
import { hubTokenState } from './hub-token-state.js';
import { STATUS_COMMIT_WINDOW_MS, STORE_LIST_PAGE_ROWS, STORE_READ_CACHE_MAX_ENTRIES } from '../limits.js';
import type { ClusterHold } from '../../rollout/api.js';
import type { ClusterHealthView } from '../../health/wire.js';
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
} from './store.js';
import {
  clusterFromRow,
  SELECT_CLUSTERS,
  SELECT_TOKENS,
  tokenFromRow,
  userFromRow,
  type Row,
  openDatabase,
} from './sqlite-schema.js';
import { GroupCommit } from './group-commit.js';

/** Keeps `value` in a read cache, emptied when it would pass {@link STORE_READ_CACHE_MAX_ENTRIES}. */
function remember<T>(cache: Map<string, T>, key: string, value: T): T {
  if (cache.size >= STORE_READ_CACHE_MAX_ENTRIES) cache.clear();
  cache.set(key, value);
  return value;
}

/** The node:sqlite implementation of {@link HubStore}. */
export class SqliteHubStore implements HubStore {
  readonly #db: DatabaseSync;
  /** Prepared once: preparing is most of the cost of a lookup, and the kube proxy looks up on every request. */
  readonly #statements = new Map<string, StatementSync>();
  /**
   * Users by token hash and clusters by name, as last read, frozen. The kube
   * proxy looks both up on every request; this process is the store's only
   * writer, and every write to a user or cluster drops what it touches here.
   * Misses are not kept (an unknown token must not fill memory).
   */
  readonly #usersByTokenHash = new Map<string, UserRecord>();
  readonly #clustersByName = new Map<string, ClusterRecord>();
  /** Status updates within {@link STATUS_COMMIT_WINDOW_MS} share one commit. */
  readonly #statusCommits = new GroupCommit<{ name: string; status: ClusterStatusUpdate }>(
    STATUS_COMMIT_WINDOW_MS,
    (batch) => this.#commitStatus(batch),
  );

  readonly #rollouts = new SqliteRolloutTables({
    prepare: (sql) => this.#prepare(sql),
    transaction: (work) => this.#transaction(work),
  });

  private constructor(db: DatabaseSync) {
    this.#db = db;
  }

  #prepare(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  /**
   * Opens (creating if needed) the store at `path`.
   *
   * @throws {EdgeadmError} `E_HUB_STORE` when the file cannot be opened.
   */
  static async open(path: string): Promise<SqliteHubStore> {
    return new SqliteHubStore(await openDatabase(path));
  }

  /** Inserts a cluster row; false when the name is taken. */
  #insertCluster(cluster: ClusterRecord): boolean {
    const result = this.#prepare(
      `INSERT OR IGNORE INTO clusters (name, labels, cert_serial, cert_not_after, registered_at, last_seen, kubernetes_version, node_count)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      cluster.name,
      JSON.stringify(cluster.labels),
      cluster.certSerial,
      cluster.certNotAfter,
      cluster.registeredAt,
      cluster.lastSeen ?? null,
      cluster.kubernetesVersion ?? null,
      cluster.nodeCount ?? null,
    );
    return Number(result.changes) === 1;
  }

  async addCluster(cluster: ClusterRecord): Promise<boolean> {
    this.#clustersByName.delete(cluster.name);
    return this.#insertCluster(cluster);
  }

  async getCluster(name: string): Promise<ClusterRecord | undefined> {
    const cached = this.#clustersByName.get(name);
    if (cached !== undefined) return cached;
    const row = this.#prepare(`${SELECT_CLUSTERS} WHERE c.name = ?`).get(name) as Row | undefined;
    if (row === undefined) return undefined;
    const cluster = clusterFromRow(row);
    Object.freeze(cluster.labels);
    if (cluster.properties !== undefined) Object.freeze(cluster.properties);
    if (cluster.hold !== undefined) Object.freeze(cluster.hold);
    return remember(this.#clustersByName, name, Object.freeze(cluster));
  }

  /**
   * Every cluster, by name, read a page at a time with a turn of the event
   * loop between pages: SQLite answers synchronously, and 10,000 rows with
   * their health reports read at once held the hub for 100 to 300 ms.
   */
  async listClusters(): Promise<ClusterRecord[]> {
    const clusters: ClusterRecord[] = [];
    const page = this.#prepare(`${SELECT_CLUSTERS} WHERE c.name > ? ORDER BY c.name LIMIT ${STORE_LIST_PAGE_ROWS}`);
    for (let after = ''; ;) {
      const rows = page.all(after) as Row[];
      for (const row of rows) clusters.push(clusterFromRow(row));
      if (rows.length < STORE_LIST_PAGE_ROWS) return clusters;
      after = String(rows[rows.length - 1]!.name);
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  async deleteCluster(name: string): Promise<ClusterRecord | undefined> {
    const existing = await this.getCluster(name);
    if (existing) {
      this.#transaction(() => {
        this.#prepare('DELETE FROM clusters WHERE name = ?').run(name);
        this.#prepare('DELETE FROM cluster_rollout_facts WHERE name = ?').run(name);
        this.#prepare('DELETE FROM cluster_health WHERE name = ?').run(name);
      });
    }
    this.#clustersByName.delete(name);
    return existing;
  }

  /** Writes one of a cluster's rollout facts (hold or properties), keeping the other. */
  #setClusterFact(name: string, column: 'hold_json' | 'properties_json', json: string | null): boolean {
    this.#clustersByName.delete(name);
    return this.#transaction(() => {
      if (this.#prepare('SELECT 1 FROM clusters WHERE name = ?').get(name) === undefined) return false;
      this.#prepare('INSERT OR IGNORE INTO cluster_rollout_facts (name) VALUES (?)').run(name);
      this.#prepare(`UPDATE cluster_rollout_facts SET ${column} = ? WHERE name = ?`).run(json, name);
      return true;
    });
  }

  async setClusterHold(name: string, hold: ClusterHold | undefined): Promise<boolean> {
    return this.#setClusterFact(name, 'hold_json', hold === undefined ? null : JSON.stringify(hold));
  }

  async setClusterProperties(name: string, properties: Record<string, string>): Promise<boolean> {
    return this.#setClusterFact(name, 'properties_json', JSON.stringify(properties));
  }

  /**
   * Status updates are group-committed: those that arrive within
   * {@link STATUS_COMMIT_WINDOW_MS} share one transaction, and the promise
   * resolves once it is committed. Every commit waits for the disk (a few
   * milliseconds, during which the event loop stands still), and a hub with
   * thousands of tunnels refreshes their `lastSeen` all the time: one commit
   * each would take more than the whole event loop.
   */
  updateClusterStatus(name: string, status: ClusterStatusUpdate): Promise<void> {
    return this.#statusCommits.add({ name, status });
  }

  /** One commit of the status updates gathered in a window; throws (refusing them all) if it fails. */
  #commitStatus(batch: readonly { name: string; status: ClusterStatusUpdate }[]): void {
    if (!this.#db.isOpen) throw new EdgeadmError('the hub store is closed', { code: 'E_HUB_STORE' });
    const update = this.#prepare(
      `UPDATE clusters SET last_seen = ?, kubernetes_version = COALESCE(?, kubernetes_version),
         node_count = COALESCE(?, node_count) WHERE name = ?`,
    );
    try {
      this.#db.exec('BEGIN');
      for (const { name, status } of batch) {
        update.run(status.lastSeen, status.kubernetesVersion ?? null, status.nodeCount ?? null, name);
        this.#clustersByName.delete(name);
      }
      this.#db.exec('COMMIT');
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec('ROLLBACK');
      throw error;
    }
  }

  async updateClusterHealth(name: string, health: ClusterHealthView): Promise<void> {
    this.#clustersByName.delete(name);
    this.#transaction(() => {
      if (this.#prepare('SELECT 1 FROM clusters WHERE name = ?').get(name) === undefined) return;
      this.#prepare('INSERT OR REPLACE INTO cluster_health (name, health_json) VALUES (?, ?)').run(
        name,
        JSON.stringify(health),
      );
    });
  }

  async updateClusterCertificate(name: string, certSerial: string, certNotAfter: string): Promise<void> {
    this.#clustersByName.delete(name);
    this.#prepare('UPDATE clusters SET cert_serial = ?, cert_not_after = ? WHERE name = ?').run(
      certSerial,
      certNotAfter,
      name,
    );
  }

  async addToken(token: HubTokenRecord): Promise<void> {
    this.#transaction(() => {
      this.#prepare('INSERT INTO tokens (id, secret, created_at, expires_at, usages_left) VALUES (?, ?, ?, ?, ?)').run(
        token.id,
        token.secret,
        token.createdAt,
        token.expiresAt ?? null,
        token.usagesLeft ?? null,
      );
      if (token.labels !== undefined) {
        this.#prepare('INSERT OR REPLACE INTO token_label_limits (id, labels_json) VALUES (?, ?)').run(
          token.id,
          JSON.stringify(token.labels),
        );
      }
    });
  }

  async getToken(id: string): Promise<HubTokenRecord | undefined> {
    const row = this.#prepare(`${SELECT_TOKENS} WHERE t.id = ?`).get(id) as Row | undefined;
    return row === undefined ? undefined : tokenFromRow(row);
  }

  async listTokens(): Promise<HubTokenRecord[]> {
    return (this.#prepare(`${SELECT_TOKENS} ORDER BY t.created_at`).all() as Row[]).map(tokenFromRow);
  }

  /**
   * Takes one use of a token, inside the caller's transaction. Synchronous
   * on purpose: an `await` here would let another request's transaction
   * start on this same connection before this one ends.
   */
  #takeTokenUse(id: string, now: Date): TokenUse {
    const row = this.#prepare('SELECT * FROM tokens WHERE id = ?').get(id) as Row | undefined;
    if (row === undefined) return 'unknown';
    const token = tokenFromRow(row);
    const state = hubTokenState(token, now);
    if (state !== 'usable') return state;
    if (token.usagesLeft !== undefined) {
      this.#prepare('UPDATE tokens SET usages_left = usages_left - 1 WHERE id = ?').run(id);
    }
    return 'used';
  }

  /** Runs `work` in one immediate transaction: committed if it returns, rolled back if it throws. */
  #transaction<T>(work: () => T): T {
    this.#db.exec('BEGIN IMMEDIATE');
    try {
      const result = work();
      this.#db.exec('COMMIT');
      return result;
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec('ROLLBACK');
      throw error;
    }
  }

  async useToken(id: string, now: Date): Promise<TokenUse> {
    return this.#transaction(() => this.#takeTokenUse(id, now));
  }

  async useTokenToAddCluster(id: string, now: Date, cluster: ClusterRecord): Promise<TokenRegistration> {
    this.#clustersByName.delete(cluster.name);
    /** Thrown to roll the token use back when the name is taken. */
    const nameTaken = Symbol('name taken');
    try {
      return this.#transaction((): TokenRegistration => {
        const use = this.#takeTokenUse(id, now);
        if (use !== 'used') return use;
        if (!this.#insertCluster(cluster)) throw nameTaken;
        return 'added';
      });
    } catch (error) {
      if (error === nameTaken) return 'exists';
      throw error;
    }
  }

  async deleteToken(id: string): Promise<boolean> {
    return this.#transaction(() => {
      this.#prepare('DELETE FROM token_label_limits WHERE id = ?').run(id);
      return this.#prepare('DELETE FROM tokens WHERE id = ?').run(id).changes > 0;
    });
  }

  async putUser(user: UserRecord): Promise<void> {
    // A user replaced under the same name may have a new token: forget every cached user.
    this.#usersByTokenHash.clear();
    this.#prepare(
      `INSERT OR REPLACE INTO users (name, token_hash, clusters_selector, groups_json, is_admin, created_at, expires_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      user.name,
      user.tokenHash,
      user.clustersSelector,
      JSON.stringify(user.groups),
      user.isAdmin ? 1 : 0,
      user.createdAt,
      user.expiresAt ?? null,
    );
  }

  async findUserByTokenHash(tokenHash: string): Promise<UserRecord | undefined> {
    const cached = this.#usersByTokenHash.get(tokenHash);
    if (cached !== undefined) return cached;
    const row = this.#prepare('SELECT * FROM users WHERE token_hash = ?').get(tokenHash) as Row | undefined;
    if (row === undefined) return undefined;
    const user = userFromRow(row);
    Object.freeze(user.groups);
    return remember(this.#usersByTokenHash, tokenHash, Object.freeze(user));
  }

  async listUsers(): Promise<UserRecord[]> {
    return (this.#prepare('SELECT * FROM users ORDER BY name').all() as Row[]).map(userFromRow);
  }

  async deleteUser(name: string): Promise<boolean> {
    this.#usersByTokenHash.clear();
    return this.#prepare('DELETE FROM users WHERE name = ?').run(name).changes > 0;
  }

  async revokeCertificate(serial: string, reason: string): Promise<void> {
    this.#prepare('INSERT OR IGNORE INTO revoked_certificates (serial, reason, revoked_at) VALUES (?, ?, ?)').run(
      serial.toLowerCase(),
      reason,
      new Date().toISOString(),
    );
  }

  /** Every revoked serial (for `hub migrate`, which copies them elsewhere). */
  async listRevokedCertificates(): Promise<{ serial: string; reason: string; revokedAt: string }[]> {
    return (this.#prepare('SELECT * FROM revoked_certificates ORDER BY serial').all() as Row[]).map((row) => ({
      serial: String(row.serial),
      reason: String(row.reason),
      revokedAt: String(row.revoked_at),
    }));
  }

  async isCertificateRevoked(serial: string): Promise<boolean> {
    return this.#prepare('SELECT 1 FROM revoked_certificates WHERE serial = ?').get(serial.toLowerCase()) !== undefined;
  }

  // Rollouts, their revisions, reports and owed removals: sqlite-rollouts.ts.

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

  async close(): Promise<void> {
    if (this.#db.isOpen) this.#statusCommits.flush();
    if (this.#db.isOpen) this.#db.close();
  }
}
