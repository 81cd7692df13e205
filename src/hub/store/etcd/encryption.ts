/**
 * Encryption at rest of the secrets the hub keeps in etcd (hub token
 * secrets, the CA key, the TLS ticket key, the admin token), as
 * kube-apiserver's EncryptionConfiguration does for Secrets: AES-256-GCM
 * under a key file every replica is given, the key's id in each value's
 * envelope so that keys can be rotated (the file's first key encrypts, every
 * key in it decrypts).
 *
 * Key file: one base64 key of 32 bytes per line (`openssl rand -base64 32`,
 * or `edgeadm hub encryption-key create`), `#` comments allowed. A key's id
 * is a hash of it, so a file needs no names and a wrong key is recognised.
 *
 * Envelope: `edgeadm:enc:aesgcm:v1:<key id>:<base64 of nonce | ciphertext | tag>`.
 * The etcd key the value is stored under is the GCM associated data: a value
 * copied under another key does not decrypt. An envelope is opened only when
 * it is exactly what {@link EncryptionKeys.seal} writes (the base64 in its
 * one canonical form): Node's base64 decoder skips characters it does not
 * know and ignores padding and trailing bits, so a value with characters
 * added, removed or changed there would otherwise open as if untouched.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { EdgeadmError, ValidationError } from '../../../errors.js';

/** The envelope's prefix: a value that lacks it was not encrypted by edgeadm. */
export const ENVELOPE_PREFIX = 'edgeadm:enc:aesgcm:v1:';
const KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
/** Base64 as `Buffer.toString('base64')` writes it: the standard alphabet, padded to a multiple of 4. */
const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
/** A UTF-16 code unit that is half of a surrogate pair, alone: no UTF-8 encoding holds it. */
const LONE_SURROGATE = /\p{Cs}/u;

/** How to make a key file, for every hint that needs it. */
export const MAKE_KEY_HINT =
  'Make a key file once with "edgeadm hub encryption-key create FILE" (or: umask 077; openssl rand -base64 32 > FILE) and give the same file to every hub replica with --encryption-key-file.';

/** The loaded keys. The first encrypts; all decrypt. Holds secrets: never log it. */
export interface EncryptionKeys {
  /** Ids of the keys, the encrypting key first. */
  readonly ids: readonly string[];
  /**
   * Encrypts `plaintext` for storage under `etcdKey`.
   *
   * @throws {EdgeadmError} `E_HUB_ENCRYPTION_TEXT_INVALID` for a text that is
   *   not well-formed Unicode (a lone surrogate), which would open as other text.
   */
  seal(plaintext: string, etcdKey: string): string;
  /**
   * Decrypts an envelope stored under `etcdKey`. Takes whatever was read
   * from the store (a record's field may be anything after tampering).
   *
   * @throws {EdgeadmError} `E_HUB_ENCRYPTION_KEY_WRONG` when it is not an
   *   envelope this version writes or no key of the file opens it.
   */
  open(envelope: unknown, etcdKey: string): string;
}

/** A key's id: a hash of it (16 hex digits), which tells keys apart without revealing them. */
export function encryptionKeyId(key: Buffer): string {
  return createHash('sha256').update('edgeadm-hub-encryption-key\0').update(key).digest('hex').slice(0, 16);
}

/** A new key file's text: one fresh key. */
export function newEncryptionKeyFileText(): string {
  return `# edgeadm hub encryption key: give this same file to every hub replica (--encryption-key-file).\n${randomBytes(KEY_BYTES).toString('base64')}\n`;
}

/** The error of a replica whose key file does not open what the store holds. */
export function wrongKeyError(detail: string): EdgeadmError {
  return new EdgeadmError(`the encryption key file does not open the hub's secrets in etcd: ${detail}`, {
    code: 'E_HUB_ENCRYPTION_KEY_WRONG',
    exitCode: 3,
    hints: [
      'Give this replica the same --encryption-key-file as the replicas that first stored the hub in etcd.',
      'After a rotation, keep the old key in the file (below the new one) until every value is re-encrypted.',
    ],
  });
}

/** Builds the keys from raw 32-byte keys, the encrypting one first. */
export function encryptionKeysFrom(rawKeys: readonly Buffer[]): EncryptionKeys {
  const keys = new Map(rawKeys.map((key) => [encryptionKeyId(key), key] as const));
  const primary = rawKeys[0];
  if (primary === undefined) throw new Error('no encryption key');
  const primaryId = encryptionKeyId(primary);
  return {
    ids: [...keys.keys()],
    seal(plaintext, etcdKey) {
      if (LONE_SURROGATE.test(plaintext)) {
        throw new EdgeadmError(`the text to store under ${etcdKey} is not well-formed Unicode`, {
          code: 'E_HUB_ENCRYPTION_TEXT_INVALID',
        });
      }
      const nonce = randomBytes(NONCE_BYTES);
      const cipher = createCipheriv('aes-256-gcm', primary, nonce);
      cipher.setAAD(Buffer.from(etcdKey, 'utf8'));
      const body = Buffer.concat([nonce, cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
      return `${ENVELOPE_PREFIX}${primaryId}:${body.toString('base64')}`;
    },
    open(envelope, etcdKey) {
      if (typeof envelope !== 'string' || !envelope.startsWith(ENVELOPE_PREFIX)) {
        throw wrongKeyError(`the value under ${etcdKey} is not encrypted (or not in a format this edgeadm reads)`);
      }
      const rest = envelope.slice(ENVELOPE_PREFIX.length);
      const colon = rest.indexOf(':');
      const id = rest.slice(0, colon);
      const key = keys.get(id);
      if (colon < 0 || key === undefined) {
        throw wrongKeyError(`the value under ${etcdKey} was encrypted with key ${id}, which the file does not hold`);
      }
      const text = rest.slice(colon + 1);
      if (!CANONICAL_BASE64.test(text)) throw wrongKeyError(`the value under ${etcdKey} is malformed`);
      const body = Buffer.from(text, 'base64');
      // The one encoding of these bytes: no trailing bits set that the decoder dropped.
      if (body.toString('base64') !== text) throw wrongKeyError(`the value under ${etcdKey} is malformed`);
      if (body.length < NONCE_BYTES + TAG_BYTES) throw wrongKeyError(`the value under ${etcdKey} is truncated`);
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, body.subarray(0, NONCE_BYTES));
        decipher.setAAD(Buffer.from(etcdKey, 'utf8'));
        decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
        return Buffer.concat([
          decipher.update(body.subarray(NONCE_BYTES, body.length - TAG_BYTES)),
          decipher.final(),
        ]).toString('utf8');
      } catch (error) {
        throw Object.assign(wrongKeyError(`the value under ${etcdKey} does not authenticate`), { cause: error });
      }
    },
  };
}

/** Parses a key file's text. */
export function parseEncryptionKeyFile(text: string, source: string): EncryptionKeys {
  const invalid = (why: string): ValidationError =>
    new ValidationError(`the encryption key file ${source} is invalid: ${why}`, {
      code: 'E_HUB_ENCRYPTION_KEY_INVALID',
      hints: [MAKE_KEY_HINT],
    });
  const raw: Buffer[] = [];
  for (const [index, line] of text.split('\n').entries()) {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed)) throw invalid(`line ${index + 1} is not base64`);
    const key = Buffer.from(trimmed, 'base64');
    if (key.length !== KEY_BYTES) throw invalid(`line ${index + 1} holds ${key.length} bytes, not ${KEY_BYTES}`);
    raw.push(key);
  }
  if (raw.length === 0) throw invalid('it holds no key');
  return encryptionKeysFrom(raw);
}

/**
 * Reads the key file a replica was given.
 *
 * @throws {ValidationError} `E_HUB_ENCRYPTION_KEY_MISSING` without a file,
 *   `E_HUB_ENCRYPTION_KEY_INVALID` for a malformed or exposed one.
 */
export function loadEncryptionKeyFile(path: string | undefined): EncryptionKeys {
  if (path === undefined || path === '' || !existsSync(path)) {
    throw new ValidationError(
      path === undefined || path === ''
        ? 'a hub on etcd needs --encryption-key-file: its secrets are encrypted in etcd'
        : `the encryption key file ${path} does not exist`,
      { code: 'E_HUB_ENCRYPTION_KEY_MISSING', hints: [MAKE_KEY_HINT] },
    );
  }
  // A key others could read protects nothing: refused, as ssh refuses an exposed private key.
  if ((statSync(path).mode & 0o077) !== 0) {
    throw new ValidationError(`the encryption key file ${path} is readable by others than its owner`, {
      code: 'E_HUB_ENCRYPTION_KEY_INVALID',
      hints: [`chmod 600 ${path}`],
    });
  }
  return parseEncryptionKeyFile(readFileSync(path, 'utf8'), path);
}
