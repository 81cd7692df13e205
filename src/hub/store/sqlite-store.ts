/**
 * The hub's default store: node:sqlite (built into Node 24, no native
 * addon) in one file under the data directory, mode 0600 because it holds
 * hub token secrets. Every write is one statement or one transaction, so a
 * hub killed at any point restarts with consistent state.
 */
import { existsSync, writeFileSync } from 'node:fs';
import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
import { EdgeadmError } from '../../errors.js';
import { hubTokenState } from './hub-token-state.js';
import { STATUS_COMMIT_WINDOW_MS, STORE_READ_CACHE_MAX_ENTRIES } from '../limits.js';
import type { ClusterHold } from '../../rollout/api.js';
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
} from './store.js';

/** The schema; `IF NOT EXISTS` makes opening an existing store a no-op. */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS clusters (
  name TEXT PRIMARY KEY,
  labels TEXT NOT NULL,
  cert_serial TEXT NOT NULL,
  cert_not_after TEXT NOT NULL,
  registered_at TEXT NOT NULL,
  last_seen TEXT,
  kubernetes_version TEXT,
  node_count INTEGER
);
CREATE TABLE IF NOT EXISTS tokens (
  id TEXT PRIMARY KEY,
  secret TEXT NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT,
  usages_left INTEGER
);
CREATE TABLE IF NOT EXISTS users (
  name TEXT PRIMARY KEY,
  token_hash TEXT NOT NULL UNIQUE,
  clusters_selector TEXT NOT NULL,
  groups_json TEXT NOT NULL,
  is_admin INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT
);
CREATE TABLE IF NOT EXISTS revoked_certificates (
  serial TEXT PRIMARY KEY,
  reason TEXT NOT NULL,
  revoked_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS cluster_rollout_facts (
  name TEXT PRIMARY KEY,
  hold_json TEXT,
  properties_json TEXT
);
CREATE TABLE IF NOT EXISTS token_label_limits (
  id TEXT PRIMARY KEY,
  labels_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS rollouts (
  name TEXT PRIMARY KEY,
  record_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS rollout_revisions (
  name TEXT NOT NULL,
  revision INTEGER NOT NULL,
  record_json TEXT NOT NULL,
  PRIMARY KEY (name, revision)
);
CREATE TABLE IF NOT EXISTS rollout_reports (
  rollout TEXT NOT NULL,
  cluster TEXT NOT NULL,
  record_json TEXT NOT NULL,
  PRIMARY KEY (rollout, cluster)
);
CREATE TABLE IF NOT EXISTS rollout_pending_removals (
  rollout TEXT NOT NULL,
  cluster TEXT NOT NULL,
  record_json TEXT NOT NULL,
  PRIMARY KEY (rollout, cluster)
);
`;

/** Tokens with their label limit (kept in their own table, so that older stores need no migration). */
const SELECT_TOKENS = 'SELECT t.*, l.labels_json FROM tokens t LEFT JOIN token_label_limits l ON l.id = t.id';

/** Clusters with their hold and properties (kept in their own table, so that older stores need no migration). */
const SELECT_CLUSTERS = `SELECT c.*, f.hold_json, f.properties_json FROM clusters c
  LEFT JOIN cluster_rollout_facts f ON f.name = c.name`;

type Row = Record<string, SQLInputValue>;

function optionalString(value: SQLInputValue | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function optionalNumber(value: SQLInputValue | undefined): number | undefined {
  return typeof value === 'number' ? value : typeof value === 'bigint' ? Number(value) : undefined;
}

function clusterFromRow(row: Row): ClusterRecord {
  const cluster: ClusterRecord = {
    name: String(row.name),
    labels: JSON.parse(String(row.labels)) as Record<string, string>,
    certSerial: String(row.cert_serial),
    certNotAfter: String(row.cert_not_after),
    registeredAt: String(row.registered_at),
  };
  const lastSeen = optionalString(row.last_seen);
  if (lastSeen !== undefined) cluster.lastSeen = lastSeen;
  const version = optionalString(row.kubernetes_version);
  if (version !== undefined) cluster.kubernetesVersion = version;
  const nodeCount = optionalNumber(row.node_count);
  if (nodeCount !== undefined) cluster.nodeCount = nodeCount;
  const hold = optionalString(row.hold_json);
  if (hold !== undefined) cluster.hold = JSON.parse(hold) as ClusterHold;
  const properties = optionalString(row.properties_json);
  if (properties !== undefined) cluster.properties = JSON.parse(properties) as Record<string, string>;
  return cluster;
}

function tokenFromRow(row: Row): HubTokenRecord {
  const token: HubTokenRecord = { id: String(row.id), secret: String(row.secret), createdAt: String(row.created_at) };
  const expiresAt = optionalString(row.expires_at);
  if (expiresAt !== undefined) token.expiresAt = expiresAt;
  const usagesLeft = optionalNumber(row.usages_left);
  if (usagesLeft !== undefined) token.usagesLeft = usagesLeft;
  const labels = optionalString(row.labels_json);
  if (labels !== undefined) token.labels = JSON.parse(labels) as Record<string, string>;
  return token;
}

function userFromRow(row: Row): UserRecord {
  const user: UserRecord = {
    name: String(row.name),
    tokenHash: String(row.token_hash),
    clustersSelector: String(row.clusters_selector),
    groups: JSON.parse(String(row.groups_json)) as string[],
    isAdmin: Number(row.is_admin) === 1,
    createdAt: String(row.created_at),
  };
  const expiresAt = optionalString(row.expires_at);
  if (expiresAt !== undefined) user.expiresAt = expiresAt;
  return user;
}

/** Keeps `value` in a read cache, emptied when it would pass {@link STORE_READ_CACHE_MAX_ENTRIES}. */
function remember<T>(cache: Map<string, T>, key: string, value: T): T {
  if (cache.size >= STORE_READ_CACHE_MAX_ENTRIES) cache.clear();
  cache.set(key, value);
  return value;
}

/** A status update waiting for its commit. */
interface PendingStatus {
  name: string;
  status: ClusterStatusUpdate;
  resolve: () => void;
  reject: (error: Error) => void;
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
  /** Status updates waiting for their group commit. */
  #pendingStatus: PendingStatus[] = [];
  #statusTimer: NodeJS.Timeout | undefined;

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
    // Loaded on use, like every module with native handles (see ARCHITECTURE.md, single binary).
    const { DatabaseSync } = await import('node:sqlite');
    // Created 0600 before SQLite opens it: the WAL and shared-memory files
    // SQLite makes beside it take the database file's permissions.
    if (path !== ':memory:' && !existsSync(path)) writeFileSync(path, '', { mode: 0o600 });
    let db: DatabaseSync;
    try {
      db = new DatabaseSync(path);
      db.exec('PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 5000;');
      db.exec(SCHEMA);
    } catch (error) {
      throw new EdgeadmError(`cannot open the hub store ${path}: ${(error as Error).message}`, {
        code: 'E_HUB_STORE',
        cause: error,
      });
    }
    return new SqliteHubStore(db);
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

  async listClusters(): Promise<ClusterRecord[]> {
    return (this.#prepare(`${SELECT_CLUSTERS} ORDER BY c.name`).all() as Row[]).map(clusterFromRow);
  }

  async deleteCluster(name: string): Promise<ClusterRecord | undefined> {
    const existing = await this.getCluster(name);
    if (existing) {
      this.#transaction(() => {
        this.#prepare('DELETE FROM clusters WHERE name = ?').run(name);
        this.#prepare('DELETE FROM cluster_rollout_facts WHERE name = ?').run(name);
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
    return new Promise((resolve, reject) => {
      this.#pendingStatus.push({ name, status, resolve, reject });
      this.#statusTimer ??= setTimeout(() => this.#commitStatus(), STATUS_COMMIT_WINDOW_MS);
    });
  }

  #commitStatus(): void {
    clearTimeout(this.#statusTimer);
    this.#statusTimer = undefined;
    const batch = this.#pendingStatus;
    this.#pendingStatus = [];
    if (batch.length === 0) return;
    if (!this.#db.isOpen) {
      const closed = new EdgeadmError('the hub store is closed', { code: 'E_HUB_STORE' });
      for (const pending of batch) pending.reject(closed);
      return;
    }
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
      for (const pending of batch) pending.reject(error as Error);
      return;
    }
    for (const pending of batch) pending.resolve();
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

  #writeRollout(record: RolloutRecord): void {
    this.#prepare('INSERT OR REPLACE INTO rollouts (name, record_json) VALUES (?, ?)').run(
      record.name,
      JSON.stringify(record),
    );
  }

  async putRollout(record: RolloutRecord, revision?: RolloutRevisionRecord, keepRevisions?: number): Promise<void> {
    this.#transaction(() => {
      this.#writeRollout(record);
      if (revision === undefined) return;
      this.#prepare('INSERT OR REPLACE INTO rollout_revisions (name, revision, record_json) VALUES (?, ?, ?)').run(
        revision.name,
        revision.revision,
        JSON.stringify(revision),
      );
      if (keepRevisions !== undefined) {
        this.#prepare(
          `DELETE FROM rollout_revisions WHERE name = ? AND revision NOT IN
             (SELECT revision FROM rollout_revisions WHERE name = ? ORDER BY revision DESC LIMIT ?)`,
        ).run(revision.name, revision.name, Math.max(1, keepRevisions));
      }
    });
  }

  async putRollouts(records: readonly RolloutRecord[]): Promise<void> {
    if (records.length === 0) return;
    this.#transaction(() => {
      for (const record of records) this.#writeRollout(record);
    });
  }

  async getRollout(name: string): Promise<RolloutRecord | undefined> {
    const row = this.#prepare('SELECT record_json FROM rollouts WHERE name = ?').get(name) as Row | undefined;
    return row === undefined ? undefined : (JSON.parse(String(row.record_json)) as RolloutRecord);
  }

  async listRollouts(): Promise<RolloutRecord[]> {
    return (this.#prepare('SELECT record_json FROM rollouts ORDER BY name').all() as Row[]).map(
      (row) => JSON.parse(String(row.record_json)) as RolloutRecord,
    );
  }

  async getRolloutRevision(name: string, revision: number): Promise<RolloutRevisionRecord | undefined> {
    const row = this.#prepare('SELECT record_json FROM rollout_revisions WHERE name = ? AND revision = ?').get(
      name,
      revision,
    ) as Row | undefined;
    return row === undefined ? undefined : (JSON.parse(String(row.record_json)) as RolloutRevisionRecord);
  }

  async listRolloutRevisions(name: string): Promise<number[]> {
    return (
      this.#prepare('SELECT revision FROM rollout_revisions WHERE name = ? ORDER BY revision').all(name) as Row[]
    ).map((row) => Number(row.revision));
  }

  async deleteRollout(name: string, pendingRemovals: readonly PendingRemovalRecord[]): Promise<boolean> {
    return this.#transaction(() => {
      const result = this.#prepare('DELETE FROM rollouts WHERE name = ?').run(name);
      this.#prepare('DELETE FROM rollout_revisions WHERE name = ?').run(name);
      this.#prepare('DELETE FROM rollout_reports WHERE rollout = ?').run(name);
      this.#insertPendingRemovals(pendingRemovals);
      return Number(result.changes) === 1;
    });
  }

  async putReportedCopies(reports: readonly ReportedCopyRecord[]): Promise<void> {
    if (reports.length === 0) return;
    const insert = this.#prepare(
      'INSERT OR REPLACE INTO rollout_reports (rollout, cluster, record_json) VALUES (?, ?, ?)',
    );
    this.#transaction(() => {
      for (const report of reports) insert.run(report.rollout, report.cluster, JSON.stringify(report));
    });
  }

  async listReportedCopies(rollout: string): Promise<ReportedCopyRecord[]> {
    return (
      this.#prepare('SELECT record_json FROM rollout_reports WHERE rollout = ? ORDER BY cluster').all(rollout) as Row[]
    ).map((row) => JSON.parse(String(row.record_json)) as ReportedCopyRecord);
  }

  async deleteReportedCopy(rollout: string, cluster: string): Promise<void> {
    this.#prepare('DELETE FROM rollout_reports WHERE rollout = ? AND cluster = ?').run(rollout, cluster);
  }

  #insertPendingRemovals(removals: readonly PendingRemovalRecord[]): void {
    const insert = this.#prepare(
      'INSERT OR REPLACE INTO rollout_pending_removals (rollout, cluster, record_json) VALUES (?, ?, ?)',
    );
    for (const removal of removals) insert.run(removal.rollout, removal.cluster, JSON.stringify(removal));
  }

  async addPendingRemovals(removals: readonly PendingRemovalRecord[]): Promise<void> {
    if (removals.length === 0) return;
    this.#transaction(() => this.#insertPendingRemovals(removals));
  }

  async listPendingRemovals(): Promise<PendingRemovalRecord[]> {
    return (
      this.#prepare('SELECT record_json FROM rollout_pending_removals ORDER BY cluster, rollout').all() as Row[]
    ).map((row) => JSON.parse(String(row.record_json)) as PendingRemovalRecord);
  }

  async deletePendingRemoval(rollout: string, cluster: string): Promise<void> {
    this.#prepare('DELETE FROM rollout_pending_removals WHERE rollout = ? AND cluster = ?').run(rollout, cluster);
  }

  async close(): Promise<void> {
    if (this.#db.isOpen) this.#commitStatus();
    if (this.#db.isOpen) this.#db.close();
  }
}
