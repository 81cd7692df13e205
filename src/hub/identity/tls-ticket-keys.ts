/**
 * The hub's TLS session-ticket key, kept in `<data-dir>/pki` so that a
 * restarted hub can still resume the sessions it issued before: an agent's
 * reconnect then costs a resumption (no certificate signature, no chain
 * verification) instead of a full handshake, which is what a reconnect storm
 * of thousands of agents is made of.
 *
 * Security: whoever holds this key can decrypt tickets and mint sessions
 * that claim any client certificate, so it is as secret as the CA key beside
 * it: written 0600 and atomically, never logged, replaced when it is older
 * than {@link TLS_TICKET_KEY_ROTATE_MS}, when the file is readable by others
 * than its owner, or when the CA it was made under has changed. Resumption
 * does not skip authorization: the hub checks every tunnel's certificate
 * (revocation, its cluster, its validity period) at each connection,
 * resumed or not (`hub-server.ts`). Resumed TLS 1.3 sessions still run an
 * ECDHE exchange (OpenSSL's `psk_dhe_ke`), so a leaked key does not reveal
 * recorded traffic.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { writeSecretFileAtomic } from '../../trust/secret-file.js';
import { TLS_TICKET_KEY_ROTATE_MS } from '../limits.js';

/** The key file under `<data-dir>/pki`. */
export const TLS_TICKET_KEY_FILE = 'tls-ticket-keys.json';
/** Size of the key Node's `ticketKeys` takes: name, HMAC secret and AES key. */
const TICKET_KEY_BYTES = 48;

/** A loaded ticket key. `key` is a secret. */
export interface TlsTicketKey {
  key: Buffer;
  createdAt: Date;
  /** Whether this call made a new key (none yet, too old, exposed, another CA). */
  isNew: boolean;
}

/** Options of {@link ensureTlsTicketKey}. */
export interface TlsTicketKeyOptions {
  /** `<data-dir>/pki`. */
  pkiDir: string;
  /** The hub CA's pin: a key made under another CA is never used. */
  caPin: string;
  now?: Date;
  /** Replace the key once it is this old; {@link TLS_TICKET_KEY_ROTATE_MS} by default. */
  rotateAfterMs?: number;
}

interface KeyFile {
  createdAt: string;
  caPin: string;
  key: string;
}

function readKeyFile(path: string, caPin: string): { key: Buffer; createdAt: Date } | undefined {
  if (!existsSync(path)) return undefined;
  // A key others could read may have been copied: it no longer protects anything.
  if ((statSync(path).mode & 0o077) !== 0) return undefined;
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as Partial<KeyFile>;
    const key = Buffer.from(String(parsed.key ?? ''), 'base64');
    const createdAt = new Date(String(parsed.createdAt ?? ''));
    if (parsed.caPin !== caPin || key.length !== TICKET_KEY_BYTES || Number.isNaN(createdAt.getTime())) {
      return undefined;
    }
    return { key, createdAt };
  } catch {
    return undefined;
  }
}

/**
 * Loads the ticket key, or makes and stores a new one when there is none
 * usable (missing, malformed, exposed, made under another CA, or due for
 * rotation, or dated in the future).
 */
export function ensureTlsTicketKey(options: TlsTicketKeyOptions): TlsTicketKey {
  const path = join(options.pkiDir, TLS_TICKET_KEY_FILE);
  const now = options.now ?? new Date();
  const rotateAfterMs = options.rotateAfterMs ?? TLS_TICKET_KEY_ROTATE_MS;
  const existing = readKeyFile(path, options.caPin);
  const ageMs = existing === undefined ? -1 : now.getTime() - existing.createdAt.getTime();
  // A key dated in the future (the clock was set back since) has an unknown age: replace it too.
  if (existing !== undefined && ageMs >= 0 && ageMs < rotateAfterMs) {
    return { ...existing, isNew: false };
  }
  const key = randomBytes(TICKET_KEY_BYTES);
  const file: KeyFile = { createdAt: now.toISOString(), caPin: options.caPin, key: key.toString('base64') };
  writeSecretFileAtomic(path, `${JSON.stringify(file)}\n`);
  return { key, createdAt: now, isNew: true };
}
