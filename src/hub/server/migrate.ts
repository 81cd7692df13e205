/**
 * `hub migrate --to etcd`: copies a SQLite hub's whole state into etcd, so
 * that hub replicas on etcd carry on where it stopped: clusters (with holds
 * and properties), tokens, users, revocations, rollouts with every stored
 * revision, what clusters reported, the removals owed, and the identity
 * (CA, ticket key, admin token). Agents keep their certificates and their
 * pinned CA: they reconnect without registering again.
 *
 * The hub must be stopped while it runs (what it changed afterwards would
 * not be copied). A non-empty key prefix is refused unless `force` (which
 * deletes what is there first).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EdgeadmError, ValidationError } from '../../errors.js';
import { parseHubConfig } from '../contract/hub-config.js';
import { HUB_STORE_FILE, type EtcdStoreOptions } from './open-store.js';
import { SqliteHubStore } from '../store/sqlite-store.js';
import { TLS_TICKET_KEY_FILE } from '../identity/tls-ticket-keys.js';
import { loadEncryptionKeyFile } from '../store/etcd/encryption.js';
import { EtcdConnection } from '../store/etcd/etcd-client.js';
import { importIdentity, verifyEncryptionKeys, type ImportedIdentity } from '../identity/etcd-identity.js';
import { EtcdHubStore } from '../store/etcd/etcd-store.js';

/** Options of {@link migrateSqliteToEtcd}. */
export interface MigrateToEtcdOptions {
  /** The SQLite hub's `--data-dir`. */
  dataDir: string;
  etcd: EtcdStoreOptions;
  /** Delete what the key prefix holds instead of refusing. */
  force?: boolean;
}

/** What was copied. */
export interface MigrationSummary {
  clusters: number;
  tokens: number;
  users: number;
  revocations: number;
  rollouts: number;
  rolloutRevisions: number;
  reportedCopies: number;
  pendingRemovals: number;
  keyPrefix: string;
}

/** The identity files of a SQLite hub's data directory. */
function readLocalIdentity(dataDir: string): ImportedIdentity {
  const pki = join(dataDir, 'pki');
  const certPath = join(pki, 'ca.crt');
  const keyPath = join(pki, 'ca.key');
  if (!existsSync(certPath) || !existsSync(keyPath) || !existsSync(join(dataDir, HUB_STORE_FILE))) {
    throw new ValidationError(
      `${dataDir} is not the data directory of a hub (no pki/ca.crt, pki/ca.key, ${HUB_STORE_FILE})`,
      {
        code: 'E_HUB_MIGRATE_SOURCE',
        hints: ['Pass the --data-dir the SQLite hub was served with.'],
      },
    );
  }
  const identity: ImportedIdentity = {
    caCertPem: readFileSync(certPath, 'utf8'),
    caKeyPem: readFileSync(keyPath, 'utf8'),
  };
  const ticketPath = join(pki, TLS_TICKET_KEY_FILE);
  if (existsSync(ticketPath)) {
    try {
      const parsed = JSON.parse(readFileSync(ticketPath, 'utf8')) as {
        key?: string;
        createdAt?: string;
        caPin?: string;
      };
      const key = Buffer.from(String(parsed.key ?? ''), 'base64');
      const createdAt = new Date(String(parsed.createdAt ?? ''));
      // A malformed key is left behind: the replicas make a new one (agents then make one full handshake).
      if (key.length > 0 && !Number.isNaN(createdAt.getTime()) && typeof parsed.caPin === 'string') {
        identity.ticketKey = { key, createdAt, caPin: parsed.caPin };
      }
    } catch {
      // As above.
    }
  }
  const adminPath = join(dataDir, 'admin.yaml');
  if (existsSync(adminPath)) identity.adminToken = parseHubConfig(readFileSync(adminPath, 'utf8'), adminPath).token;
  return identity;
}

/**
 * Copies the SQLite hub under `dataDir` into etcd.
 *
 * @throws {EdgeadmError} `E_HUB_MIGRATE_SOURCE`, `E_HUB_MIGRATE_TARGET_NOT_EMPTY`, the store's and the key file's errors.
 */
export async function migrateSqliteToEtcd(options: MigrateToEtcdOptions): Promise<MigrationSummary> {
  const keys = loadEncryptionKeyFile(options.etcd.encryptionKeyFile);
  const identity = readLocalIdentity(options.dataDir);
  const source = await SqliteHubStore.open(join(options.dataDir, HUB_STORE_FILE));
  const connection = await EtcdConnection.open(options.etcd);
  let target: EtcdHubStore | undefined;
  try {
    const prefix = connection.prefix;
    if (!(await connection.isEmpty(prefix))) {
      if (options.force !== true) {
        throw new EdgeadmError(`etcd already holds keys under ${prefix}: refusing to mix two hubs`, {
          code: 'E_HUB_MIGRATE_TARGET_NOT_EMPTY',
          exitCode: 3,
          hints: [
            'Use another --etcd-key-prefix, or add --force to delete what is under this one first (stop every hub replica using it).',
          ],
        });
      }
      await connection.write(() => connection.client.delete().prefix(prefix).exec());
    }
    await verifyEncryptionKeys(connection, keys);
    target = await EtcdHubStore.open(connection, keys);
    await importIdentity(connection, keys, identity);

    const clusters = await source.listClusters();
    for (const cluster of clusters) await target.addCluster(cluster);
    const tokens = await source.listTokens();
    for (const token of tokens) await target.addToken(token);
    const users = await source.listUsers();
    for (const user of users) await target.putUser(user);
    const revocations = await source.listRevokedCertificates();
    await target.importRevocations(revocations);
    const rollouts = await source.listRollouts();
    let rolloutRevisions = 0;
    let reportedCopies = 0;
    for (const rollout of rollouts) {
      for (const revision of await source.listRolloutRevisions(rollout.name)) {
        const document = await source.getRolloutRevision(rollout.name, revision);
        if (document === undefined) continue;
        await target.putRollout(rollout, document);
        rolloutRevisions += 1;
      }
      await target.putRollout(rollout);
      const reports = await source.listReportedCopies(rollout.name);
      await target.putReportedCopies(reports);
      reportedCopies += reports.length;
    }
    const removals = await source.listPendingRemovals();
    await target.addPendingRemovals(removals);
    return {
      clusters: clusters.length,
      tokens: tokens.length,
      users: users.length,
      revocations: revocations.length,
      rollouts: rollouts.length,
      rolloutRevisions,
      reportedCopies,
      pendingRemovals: removals.length,
      keyPrefix: prefix,
    };
  } finally {
    await source.close();
    if (target !== undefined) await target.close();
    else connection.close();
  }
}
