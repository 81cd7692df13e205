/**
 * The hub's identity kept in etcd, shared by every replica: the CA (its key
 * encrypted), the TLS session-ticket key (encrypted) and the admin token
 * (encrypted). The first replica to start creates each of them with a
 * put-if-absent transaction; every other replica adopts what it finds, so
 * two replicas starting at once still end with one CA. Each replica issues
 * its own serving certificate under the shared CA, for its own names.
 *
 * Also the encryption key check: a value every replica must be able to
 * decrypt, so that a replica given the wrong key file refuses to start
 * instead of failing on the first secret it reads.
 *
 * Keys (under the prefix): identity/ca, identity/ticket-key, identity/admin,
 * encryption/check.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { EdgeadmError } from '../../errors.js';
import { HUB_ADMIN_USER } from './authenticate.js';
import { writeHubConfig } from '../contract/hub-config.js';
import type { AdminConfigTarget, HubIdentity } from './hub-identity.js';
import { HUB_CA_COMMON_NAME, hubPkiFor, type HubPki } from './hub-pki.js';
import { hashUserToken, newUserToken } from './hub-tokens.js';
import { TLS_TICKET_KEY_ROTATE_MS } from '../limits.js';
import type { TlsTicketKey } from './tls-ticket-keys.js';
import { createCa, loadCa, type CertificateAuthority } from '../../trust/pki.js';
import { wrongKeyError, type EncryptionKeys } from '../store/etcd/encryption.js';
import type { EtcdConnection, EtcdEntry } from '../store/etcd/etcd-client.js';
import { parseStoredRecord } from '../store/etcd/errors.js';
import type { EtcdHubStore } from '../store/etcd/etcd-store.js';

/** Identity keys under the prefix. */
export const IDENTITY_KEYS = {
  ca: 'identity/ca',
  ticketKey: 'identity/ticket-key',
  admin: 'identity/admin',
  encryptionCheck: 'encryption/check',
} as const;

/** The plaintext of the encryption check. */
const ENCRYPTION_CHECK_TEXT = 'edgeadm hub encryption check';
/** Size of the key Node's `ticketKeys` takes. */
const TICKET_KEY_BYTES = 48;

interface StoredCa {
  certPem: string;
  /** Encrypted. */
  keyPem: string;
  createdAt: string;
}

interface StoredTicketKey {
  caPin: string;
  createdAt: string;
  /** Encrypted, base64 inside. */
  key: string;
}

interface StoredAdmin {
  /** Encrypted. */
  token: string;
  createdAt: string;
}

/** Puts `value` at `key` unless the key exists; returns what is there afterwards. */
async function putIfAbsent(etcd: EtcdConnection, key: string, value: string): Promise<EtcdEntry & { isOurs: boolean }> {
  const response = await etcd.write(() =>
    etcd.client.if(key, 'Create', '==', 0).then(etcd.client.put(key).value(value)).commit(),
  );
  const entry = await etcd.get(key);
  if (entry === undefined)
    throw new EdgeadmError(`${key} vanished from etcd while it was made`, { code: 'E_HUB_STORE' });
  return { ...entry, isOurs: response.succeeded };
}

/**
 * Checks that `keys` open what the store holds: the check value is made by
 * the first replica, and must decrypt on every other.
 *
 * @throws {EdgeadmError} `E_HUB_ENCRYPTION_KEY_WRONG` for another key file.
 */
export async function verifyEncryptionKeys(etcd: EtcdConnection, keys: EncryptionKeys): Promise<void> {
  const key = `${etcd.prefix}${IDENTITY_KEYS.encryptionCheck}`;
  const existing = (await etcd.get(key)) ?? (await putIfAbsent(etcd, key, keys.seal(ENCRYPTION_CHECK_TEXT, key)));
  if (keys.open(existing.value, key) !== ENCRYPTION_CHECK_TEXT) throw wrongKeyError('the check value differs');
}

/** Options of {@link etcdHubIdentity}. */
export interface EtcdHubIdentityOptions {
  etcd: EtcdConnection;
  keys: EncryptionKeys;
  store: EtcdHubStore;
  /** A CA to store on the hub's first start instead of making one (PEM files). */
  caCertFile?: string;
  caKeyFile?: string;
  now?: () => Date;
}

/** The identity of hubs on etcd. */
export function etcdHubIdentity(options: EtcdHubIdentityOptions): HubIdentity {
  const { etcd, keys } = options;
  const now = options.now ?? (() => new Date());
  const keyOf = (relative: string): string => `${etcd.prefix}${relative}`;
  let lastTicketKey: Buffer | undefined;

  const loadStoredCa = async (entry: EtcdEntry): Promise<CertificateAuthority> => {
    const stored = parseStoredRecord<StoredCa>(entry);
    return loadCa({ certPem: stored.certPem, keyPem: keys.open(stored.keyPem, entry.key) });
  };

  return {
    async ensurePki(names): Promise<HubPki> {
      const key = keyOf(IDENTITY_KEYS.ca);
      const existing = await etcd.get(key);
      if (existing !== undefined) return hubPkiFor(await loadStoredCa(existing), names, false);
      const ca =
        options.caCertFile !== undefined && options.caKeyFile !== undefined
          ? await loadCa({
              certPem: readFileSync(options.caCertFile, 'utf8'),
              keyPem: readFileSync(options.caKeyFile, 'utf8'),
            })
          : await createCa({ commonName: HUB_CA_COMMON_NAME });
      const stored: StoredCa = {
        certPem: ca.certPem,
        keyPem: keys.seal(ca.keyPem, key),
        createdAt: now().toISOString(),
      };
      // Two replicas starting at once: one CA wins, the other adopts it.
      const result = await putIfAbsent(etcd, key, JSON.stringify(stored));
      return result.isOurs ? hubPkiFor(ca, names, true) : hubPkiFor(await loadStoredCa(result), names, false);
    },

    async ensureTicketKey(caPin): Promise<TlsTicketKey> {
      const key = keyOf(IDENTITY_KEYS.ticketKey);
      for (;;) {
        const entry = await etcd.get(key);
        const at = now();
        if (entry !== undefined) {
          const stored = parseStoredRecord<StoredTicketKey>(entry);
          const createdAt = new Date(stored.createdAt);
          const ageMs = at.getTime() - createdAt.getTime();
          // As on SQLite: a key of another CA, due for rotation, or dated in the future is replaced.
          if (stored.caPin === caPin && ageMs >= 0 && ageMs < TLS_TICKET_KEY_ROTATE_MS) {
            const ticketKey = Buffer.from(keys.open(stored.key, key), 'base64');
            if (ticketKey.length === TICKET_KEY_BYTES) {
              const isNew = lastTicketKey === undefined || !lastTicketKey.equals(ticketKey);
              lastTicketKey = ticketKey;
              return { key: ticketKey, createdAt, isNew };
            }
          }
        }
        const fresh = randomBytes(TICKET_KEY_BYTES);
        const stored: StoredTicketKey = {
          caPin,
          createdAt: at.toISOString(),
          key: keys.seal(fresh.toString('base64'), key),
        };
        // Replaced only if nobody replaced it since it was read; else the loop adopts theirs.
        const compare =
          entry === undefined
            ? etcd.client.if(key, 'Create', '==', 0)
            : etcd.client.if(key, 'Mod', '==', entry.modRevision);
        const response = await etcd.write(() =>
          compare.then(etcd.client.put(key).value(JSON.stringify(stored))).commit(),
        );
        if (response.succeeded) {
          lastTicketKey = fresh;
          return { key: fresh, createdAt: at, isNew: true };
        }
      }
    },

    async ensureAdmin(target: AdminConfigTarget): Promise<boolean> {
      const key = keyOf(IDENTITY_KEYS.admin);
      let entry = await etcd.get(key);
      let isOurs = false;
      if (entry === undefined) {
        const token = newUserToken();
        const stored: StoredAdmin = { token: keys.seal(token, key), createdAt: now().toISOString() };
        const result = await putIfAbsent(etcd, key, JSON.stringify(stored));
        entry = result;
        isOurs = result.isOurs;
      }
      const stored = parseStoredRecord<StoredAdmin>(entry);
      const token = keys.open(stored.token, key);
      const tokenHash = hashUserToken(token);
      // Also repairs a first start that stopped between the two writes.
      if ((await options.store.findUserByTokenHash(tokenHash)) === undefined) {
        await options.store.putUser({
          name: HUB_ADMIN_USER,
          tokenHash,
          clustersSelector: '',
          groups: [],
          isAdmin: true,
          createdAt: stored.createdAt,
        });
      }
      // Every replica gives its operator an admin.yaml that names it.
      if (!existsSync(target.path)) {
        writeHubConfig(target.path, { server: target.server, caPem: target.caPem, user: HUB_ADMIN_USER, token });
      }
      return isOurs;
    },
  };
}

/** A hub's identity as a SQLite hub keeps it (`hub migrate` moves it into etcd). */
export interface ImportedIdentity {
  caCertPem: string;
  caKeyPem: string;
  ticketKey?: { key: Buffer; createdAt: Date; caPin: string };
  /** The admin's token, from the data directory's admin.yaml. */
  adminToken?: string;
}

/** Writes an identity into an empty store (`hub migrate`), its secrets encrypted. */
export async function importIdentity(
  etcd: EtcdConnection,
  keys: EncryptionKeys,
  identity: ImportedIdentity,
): Promise<void> {
  const keyOf = (relative: string): string => `${etcd.prefix}${relative}`;
  const at = new Date().toISOString();
  const ca: StoredCa = {
    certPem: identity.caCertPem,
    keyPem: keys.seal(identity.caKeyPem, keyOf(IDENTITY_KEYS.ca)),
    createdAt: at,
  };
  await putIfAbsent(etcd, keyOf(IDENTITY_KEYS.ca), JSON.stringify(ca));
  if (identity.ticketKey !== undefined) {
    const ticket: StoredTicketKey = {
      caPin: identity.ticketKey.caPin,
      createdAt: identity.ticketKey.createdAt.toISOString(),
      key: keys.seal(identity.ticketKey.key.toString('base64'), keyOf(IDENTITY_KEYS.ticketKey)),
    };
    await putIfAbsent(etcd, keyOf(IDENTITY_KEYS.ticketKey), JSON.stringify(ticket));
  }
  if (identity.adminToken !== undefined) {
    const admin: StoredAdmin = { token: keys.seal(identity.adminToken, keyOf(IDENTITY_KEYS.admin)), createdAt: at };
    await putIfAbsent(etcd, keyOf(IDENTITY_KEYS.admin), JSON.stringify(admin));
  }
}
