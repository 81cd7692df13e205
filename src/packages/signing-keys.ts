/**
 * Package signing keys: ECDSA P-256 key pairs in the PEM forms cosign reads
 * and writes, so that the same keys serve edgeadm and `cosign sign-blob` /
 * `cosign verify-blob` (issue #39).
 *
 * - Public keys are PEM `PUBLIC KEY` (PKIX SubjectPublicKeyInfo), exactly the
 *   `cosign.pub` that `cosign generate-key-pair` writes and `verify-blob
 *   --key` reads.
 * - Private keys are PEM `PRIVATE KEY` (PKCS#8), unencrypted, mode 0600.
 *   cosign's own `cosign.key` is scrypt + NaCl secretbox, which Node's crypto
 *   does not offer; `cosign import-key-pair --key <edgeadm key>` turns an
 *   edgeadm key into one, and a signature made by cosign with any key can be
 *   attached with `package sign --signature`. SEC1 `EC PRIVATE KEY` (what
 *   openssl ecparam writes) is read too.
 *
 * A key is named by its fingerprint: `sha256:` + hex SHA-256 of its DER
 * SubjectPublicKeyInfo, the same form as edgeadm's CA pins. Key material is
 * never put into a message, a log or a `--json` document; only paths and
 * fingerprints are.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { ValidationError } from '../errors.js';

/** The one signature algorithm edgeadm writes and accepts: what cosign's default key pair uses. */
export const SIGNATURE_ALGORITHM = 'ecdsa-p256-sha256';
/** The curve of every signing key (OpenSSL's name for NIST P-256). */
const CURVE = 'prime256v1';
/** Largest key file read: a P-256 key in PEM is a few hundred bytes. */
export const MAX_KEY_FILE_BYTES = 16 * 1024;
/** Mode of a private key file edgeadm writes. */
export const PRIVATE_KEY_MODE = 0o600;
/** Mode of a public key file edgeadm writes. */
export const PUBLIC_KEY_MODE = 0o644;

/** A public key that package signatures are checked against. */
export interface PublicSigningKey {
  /** Where it was read from (for messages), or a label. */
  source: string;
  /** `sha256:<hex>` of the DER SubjectPublicKeyInfo. */
  fingerprint: string;
  key: KeyObject;
}

/** A private key that signs packages. Its `key` never leaves this process. */
export interface PrivateSigningKey {
  source: string;
  /** The fingerprint of its public half. */
  fingerprint: string;
  key: KeyObject;
}

/** A freshly generated pair as PEM text, and its fingerprint. */
export interface GeneratedKeyPair {
  privateKeyPem: string;
  publicKeyPem: string;
  fingerprint: string;
}

/** Generates an ECDSA P-256 key pair: PKCS#8 private key, PKIX public key, both PEM. */
export function generateSigningKeyPair(): GeneratedKeyPair {
  const pair = generateKeyPairSync('ec', {
    namedCurve: CURVE,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return {
    privateKeyPem: pair.privateKey,
    publicKeyPem: pair.publicKey,
    fingerprint: keyFingerprint(createPublicKey(pair.publicKey)),
  };
}

/** `sha256:` + hex SHA-256 of the key's DER SubjectPublicKeyInfo (a private key is named by its public half). */
export function keyFingerprint(key: KeyObject): string {
  const publicKey = key.type === 'private' ? createPublicKey(key) : key;
  const der = publicKey.export({ type: 'spki', format: 'der' });
  return `sha256:${createHash('sha256').update(der).digest('hex')}`;
}

/**
 * Parses a PEM public key (`PUBLIC KEY`, PKIX) and checks that it is ECDSA
 * P-256. `source` names the file in errors.
 *
 * @throws {ValidationError} `E_PACKAGE_KEY` for anything else.
 */
export function parsePublicSigningKey(pem: string, source: string): PublicSigningKey {
  if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem)) {
    throw keyError(`${source} holds a private key; a trusted key is the public half`, [
      'Pin the .pub file that "edgeadm package keygen" (or "cosign generate-key-pair") wrote beside the private key.',
    ]);
  }
  if (!pem.includes('-----BEGIN PUBLIC KEY-----')) {
    throw keyError(`${source} is not a PEM public key (no "-----BEGIN PUBLIC KEY-----" line)`, [
      'Give the .pub file of an ECDSA P-256 key pair ("edgeadm package keygen" or "cosign generate-key-pair").',
    ]);
  }
  let key: KeyObject;
  try {
    key = createPublicKey({ key: pem, format: 'pem' });
  } catch (error) {
    throw keyError(`${source} is not a readable PEM public key: ${(error as Error).message}`, undefined, error);
  }
  requireP256(key, source);
  return { source, fingerprint: keyFingerprint(key), key };
}

/**
 * Parses a PEM private key (PKCS#8 `PRIVATE KEY` or SEC1 `EC PRIVATE KEY`)
 * and checks that it is ECDSA P-256. Messages never quote the key.
 *
 * @throws {ValidationError} `E_PACKAGE_KEY`; cosign's encrypted format gets a
 * hint that says how to use it.
 */
export function parsePrivateSigningKey(pem: string, source: string): PrivateSigningKey {
  if (/-----BEGIN ENCRYPTED (SIGSTORE|COSIGN) PRIVATE KEY-----/.test(pem)) {
    throw keyError(`${source} is a cosign-encrypted private key, which edgeadm does not read`, [
      'Sign manifest.json with "cosign sign-blob --key <it>" and attach the signature with "edgeadm package sign PKG --signature FILE".',
      'Or sign with a key from "edgeadm package keygen" (cosign imports it with "cosign import-key-pair --key").',
    ]);
  }
  if (pem.includes('-----BEGIN ENCRYPTED PRIVATE KEY-----')) {
    throw keyError(`${source} is an encrypted PKCS#8 key, which edgeadm does not read`, [
      'Use an unencrypted PKCS#8 key kept with mode 0600 (edgeadm package keygen writes one).',
    ]);
  }
  if (!/-----BEGIN (EC )?PRIVATE KEY-----/.test(pem)) {
    throw keyError(`${source} is not a PEM private key`, [
      'Give the .key file that "edgeadm package keygen" wrote (PEM "PRIVATE KEY").',
    ]);
  }
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: pem, format: 'pem' });
  } catch (error) {
    // The library's message is about the format, never the key's bytes.
    throw keyError(`${source} is not a readable PEM private key: ${(error as Error).message}`, undefined, error);
  }
  requireP256(key, source);
  return { source, fingerprint: keyFingerprint(key), key };
}

/**
 * Reads and parses a trusted public key file.
 *
 * @throws {ValidationError} `E_PACKAGE_KEY` naming the file.
 */
export function readPublicSigningKey(file: string): PublicSigningKey {
  return parsePublicSigningKey(readKeyFile(file, 'trusted key'), file);
}

/**
 * Reads and parses a private key file. Like ssh with its identities, it
 * refuses a key that others can read: a signing key readable by anyone on
 * the machine signs for anyone on it.
 *
 * @throws {ValidationError} `E_PACKAGE_KEY` naming the file.
 */
export function readPrivateSigningKey(file: string): PrivateSigningKey {
  const text = readKeyFile(file, 'signing key');
  const mode = statSync(file).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    throw keyError(
      `signing key ${file} has mode ${mode.toString(8).padStart(4, '0')}: a private key must be readable by its owner only`,
      [`chmod 600 ${file}`],
    );
  }
  return parsePrivateSigningKey(text, file);
}

/** What {@link writeKeyPair} wrote. */
export interface WrittenKeyPair {
  privateKeyFile: string;
  publicKeyFile: string;
  fingerprint: string;
}

/**
 * Writes a new key pair: the private key created with mode 0600 from the
 * first byte (never widened by the umask, never briefly readable), the public
 * key 0644. Existing files are refused unless `isOverwriteAllowed`.
 *
 * @throws {ValidationError} `E_PACKAGE_KEY_EXISTS` when a file is there.
 */
export async function writeKeyPair(
  pair: GeneratedKeyPair,
  files: { privateKeyFile: string; publicKeyFile: string; isOverwriteAllowed: boolean },
): Promise<WrittenKeyPair> {
  if (files.privateKeyFile === files.publicKeyFile) {
    throw new ValidationError(`the private and the public key would both be ${files.privateKeyFile}`, {
      code: 'E_FLAG_INVALID',
    });
  }
  const flags = files.isOverwriteAllowed ? 'w' : 'wx';
  if (files.isOverwriteAllowed) await rm(files.privateKeyFile, { force: true });
  await writeNew(files.privateKeyFile, pair.privateKeyPem, flags, PRIVATE_KEY_MODE);
  try {
    await writeNew(files.publicKeyFile, pair.publicKeyPem, flags, PUBLIC_KEY_MODE);
  } catch (error) {
    await rm(files.privateKeyFile, { force: true });
    throw error;
  }
  return { privateKeyFile: files.privateKeyFile, publicKeyFile: files.publicKeyFile, fingerprint: pair.fingerprint };
}

async function writeNew(file: string, text: string, flags: 'w' | 'wx', mode: number): Promise<void> {
  let handle;
  try {
    handle = await open(file, flags, mode);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new ValidationError(`${file} already exists; keygen does not overwrite keys`, {
        code: 'E_PACKAGE_KEY_EXISTS',
        hints: [
          'Choose another --output-key-prefix, or pass --force to replace it (packages signed with the old key then need the old public key to verify).',
        ],
      });
    }
    throw new ValidationError(`cannot write ${file}: ${(error as Error).message}`, { code: 'E_PACKAGE_KEY_WRITE' });
  }
  try {
    await handle.chmod(mode);
    await handle.writeFile(text, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function readKeyFile(file: string, what: string): string {
  let size: number;
  try {
    const stats = statSync(file);
    if (!stats.isFile()) throw keyError(`${what} ${file} is not a regular file`);
    size = stats.size;
  } catch (error) {
    if (error instanceof ValidationError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    throw keyError(
      code === 'ENOENT' ? `${what} ${file} does not exist` : `cannot read ${what} ${file}: ${code ?? 'error'}`,
      undefined,
      error,
    );
  }
  if (size > MAX_KEY_FILE_BYTES) {
    throw keyError(`${what} ${file} is ${size} bytes; an ECDSA P-256 key in PEM is well under ${MAX_KEY_FILE_BYTES}`);
  }
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw keyError(
      `cannot read ${what} ${file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
      undefined,
      error,
    );
  }
}

function requireP256(key: KeyObject, source: string): void {
  const curve = key.asymmetricKeyType === 'ec' ? key.asymmetricKeyDetails?.namedCurve : undefined;
  if (curve !== CURVE) {
    const what =
      key.asymmetricKeyType === 'ec'
        ? `an EC key on ${curve ?? 'an unknown curve'}`
        : `a ${key.asymmetricKeyType ?? 'unknown'} key`;
    throw keyError(`${source} is ${what}; package signatures use ECDSA P-256 keys only`, [
      'Make a key pair with "edgeadm package keygen" (or "cosign generate-key-pair", whose keys are P-256 too).',
    ]);
  }
}

function keyError(message: string, hints?: string[], cause?: unknown): ValidationError {
  return new ValidationError(message, {
    code: 'E_PACKAGE_KEY',
    hints: hints ?? ['Check the key file: edgeadm package keygen writes a usable pair.'],
    ...(cause === undefined ? {} : { cause }),
  });
}
