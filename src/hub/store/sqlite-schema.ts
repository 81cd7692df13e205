/**
 * The SQLite store's file (created 0600 before SQLite opens it, in WAL
 * mode), its schema (`IF NOT EXISTS` makes opening an existing store a
 * no-op), and how the cluster, token and user rows read back as records.
 * The rollout tables are sqlite-rollouts.ts's.
 */
import type { SQLInputValue, DatabaseSync } from 'node:sqlite';
import type { ClusterHold } from '../../rollout/api.js';
import type { ClusterHealthView } from '../../health/wire.js';
import type { ClusterRecord, HubTokenRecord, UserRecord } from './store.js';
import { existsSync, writeFileSync } from 'node:fs';
import { EdgeadmError } from '../../errors.js';

/** The schema; `IF NOT EXISTS` makes opening an existing store a no-op. */
export const SCHEMA = `
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
CREATE TABLE IF NOT EXISTS cluster_health (
  name TEXT PRIMARY KEY,
  health_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS token_label_limits (
  id TEXT PRIMARY KEY,
  labels_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS rollouts (
  name TEXT PRIMARY KEY,
  record_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS rollout_progress (
  rollout TEXT NOT NULL,
  cluster TEXT NOT NULL,
  record_json TEXT NOT NULL,
  PRIMARY KEY (rollout, cluster)
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
export const SELECT_TOKENS = 'SELECT t.*, l.labels_json FROM tokens t LEFT JOIN token_label_limits l ON l.id = t.id';

/** Clusters with their hold, properties and health (kept in their own tables, so that older stores need no migration). */
export const SELECT_CLUSTERS = `SELECT c.*, f.hold_json, f.properties_json, h.health_json FROM clusters c
  LEFT JOIN cluster_rollout_facts f ON f.name = c.name LEFT JOIN cluster_health h ON h.name = c.name`;

export type Row = Record<string, SQLInputValue>;

export function optionalString(value: SQLInputValue | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

export function optionalNumber(value: SQLInputValue | undefined): number | undefined {
  return typeof value === 'number' ? value : typeof value === 'bigint' ? Number(value) : undefined;
}

export function clusterFromRow(row: Row): ClusterRecord {
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
  const health = optionalString(row.health_json);
  if (health !== undefined) cluster.health = JSON.parse(health) as ClusterHealthView;
  return cluster;
}

export function tokenFromRow(row: Row): HubTokenRecord {
  const token: HubTokenRecord = { id: String(row.id), secret: String(row.secret), createdAt: String(row.created_at) };
  const expiresAt = optionalString(row.expires_at);
  if (expiresAt !== undefined) token.expiresAt = expiresAt;
  const usagesLeft = optionalNumber(row.usages_left);
  if (usagesLeft !== undefined) token.usagesLeft = usagesLeft;
  const labels = optionalString(row.labels_json);
  if (labels !== undefined) token.labels = JSON.parse(labels) as Record<string, string>;
  return token;
}

export function userFromRow(row: Row): UserRecord {
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

/**
 * Opens (creating if needed) the database at `path`, with the schema.
 *
 * @throws {EdgeadmError} `E_HUB_STORE` when the file cannot be opened.
 */
export async function openDatabase(path: string): Promise<DatabaseSync> {
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
  return db;
}
