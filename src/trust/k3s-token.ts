/**
 * k3s join tokens: `K10<ca hash>::<credentials>`, where the credentials are a
 * bootstrap token `<id>.<secret>` or `<username>:<password>`.
 *
 * edgeadm builds them itself, from the CA bundle that discovery has already
 * verified by pin, so the operator only ever handles kubeadm-style flags.
 * The CA hash is computed the way the k3s agent checks it, which is not the
 * SPKI pin:
 * - a bundle of one certificate: SHA-256 of the bundle's literal bytes (the
 *   PEM text as served, newlines included);
 * - several certificates: SHA-256 of the DER of the root that the first
 *   certificate chains to (so a renewed intermediate keeps the hash); if no
 *   chain verifies, the literal bytes again.
 */
import { createHash, type X509Certificate } from 'node:crypto';
import { ValidationError } from '../errors.js';
import {
  assertBootstrapToken,
  formatBootstrapToken,
  isBootstrapToken,
  parseBootstrapToken,
  type BootstrapToken,
} from './bootstrap-token.js';
import { parsePemCertificates, type PemCertificate } from './pem.js';
import { x509 } from './x509.js';

/** What every full k3s token starts with. */
export const K3S_TOKEN_PREFIX = 'K10';
/** A CA hash is 64 lowercase hex characters (SHA-256). */
export const K3S_CA_HASH_LENGTH = 64;
/** The longest issuer chain followed when looking for the bundle's root. */
const MAX_CHAIN_LENGTH = 10;

/** The credentials part of a k3s token. Both kinds are secrets. */
export type K3sCredentials =
  { kind: 'bootstrap-token'; token: BootstrapToken } | { kind: 'password'; username: string; password: string };

/** A parsed k3s token. */
export interface K3sToken {
  /** Undefined for a token without a CA hash (a bare password or bootstrap token). */
  caHash: string | undefined;
  credentials: K3sCredentials;
}

/** Options for {@link buildK3sToken}. */
export interface BuildK3sTokenOptions {
  /** The cluster CA bundle, byte for byte as the k3s server serves it at /cacerts. */
  caBundle: string | Buffer;
  credentials: BootstrapToken | { username: string; password: string };
}

function sha256Hex(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

function isValidNow(certificate: X509Certificate, now: Date): boolean {
  return certificate.validFromDate <= now && now <= certificate.validToDate;
}

/** True when `issuer` issued and signed `certificate`. */
function isIssuedBy(certificate: X509Certificate, issuer: X509Certificate): boolean {
  try {
    return certificate.checkIssued(issuer) && certificate.verify(issuer.publicKey);
  } catch {
    return false;
  }
}

/**
 * The root the first certificate chains to, using the others as roots (no
 * authority key id, or one equal to their own subject key id) and
 * intermediates. Undefined when no chain verifies.
 */
function findRoot(certificates: readonly PemCertificate[], now: Date): PemCertificate | undefined {
  const [first, ...others] = certificates;
  if (!first || !isValidNow(first.certificate, now)) return undefined;
  const isRoot = (entry: PemCertificate): boolean => {
    const { authorityKeyId, subjectKeyId } = keyIds(entry.certificate);
    return authorityKeyId === undefined || authorityKeyId === subjectKeyId;
  };
  const roots = others.filter(isRoot);
  const intermediates = others.filter((entry) => !isRoot(entry));
  if (roots.some((root) => root.der.equals(first.der))) return first;

  const walk = (current: PemCertificate, path: readonly PemCertificate[]): PemCertificate | undefined => {
    if (path.length > MAX_CHAIN_LENGTH) return undefined;
    for (const root of roots) {
      if (isValidNow(root.certificate, now) && isIssuedBy(current.certificate, root.certificate)) return root;
    }
    for (const next of intermediates) {
      if (path.includes(next) || !isValidNow(next.certificate, now)) continue;
      if (!isIssuedBy(current.certificate, next.certificate)) continue;
      const root = walk(next, [...path, next]);
      if (root) return root;
    }
    return undefined;
  };
  return walk(first, [first]);
}

/**
 * The authority and subject key identifiers, lowercase hex (undefined when
 * absent). Node's certificate object does not expose them, so they are read
 * with the X.509 library.
 */
function keyIds(certificate: X509Certificate): {
  authorityKeyId?: string | undefined;
  subjectKeyId?: string | undefined;
} {
  const parsed = new x509.X509Certificate(certificate.raw);
  const authorityKeyId = parsed.getExtension(x509.AuthorityKeyIdentifierExtension)?.keyId?.toLowerCase();
  const subjectKeyId = parsed.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId?.toLowerCase();
  return { authorityKeyId: authorityKeyId || undefined, subjectKeyId: subjectKeyId || undefined };
}

/**
 * The CA hash of a bundle, as the k3s agent computes it.
 *
 * @param now - the clock chains are verified at, for tests.
 * @throws {ValidationError} `E_CERT_PARSE` when the bundle holds no certificate.
 */
export function k3sCaHash(caBundle: string | Buffer, now: Date = new Date()): string {
  const bytes = typeof caBundle === 'string' ? Buffer.from(caBundle, 'utf8') : caBundle;
  const certificates = parsePemCertificates(bytes, 'the CA bundle');
  if (certificates.length > 1) {
    const root = findRoot(certificates, now);
    if (root) return sha256Hex(root.der);
  }
  return sha256Hex(bytes);
}

/** Builds `K10<ca hash>::<credentials>`. The result is a credential: never log it. */
export function buildK3sToken(options: BuildK3sTokenOptions): string {
  const { credentials } = options;
  let creds: string;
  if ('id' in credentials) {
    creds = formatBootstrapToken(assertBootstrapToken(credentials));
  } else {
    if (credentials.username === '' || credentials.username.includes(':') || credentials.password === '') {
      throw new ValidationError('a k3s token needs a username without ":" and a non-empty password', {
        code: 'E_K3S_TOKEN_INVALID',
      });
    }
    creds = `${credentials.username}:${credentials.password}`;
  }
  return `${K3S_TOKEN_PREFIX}${k3sCaHash(options.caBundle)}::${creds}`;
}

/**
 * Parses a k3s token the way the k3s agent does: a value without the `K10`
 * prefix is a bare bootstrap token or password (no CA hash); the hash must
 * be empty or 64 characters; the credentials are a bootstrap token if they
 * look like one, otherwise `username:password`. A bare password has an
 * empty username: the agent supplies its own (`server` or `node`).
 *
 * @throws {ValidationError} `E_K3S_TOKEN_INVALID`; the message never repeats the token.
 */
export function parseK3sToken(text: string): K3sToken {
  const invalid = (why: string): ValidationError =>
    new ValidationError(`invalid k3s token: ${why}`, {
      code: 'E_K3S_TOKEN_INVALID',
      hints: ['A full k3s token looks like K10<64 hex>::<id>.<secret> or K10<64 hex>::server:<password>.'],
    });
  if (text.length === 0) throw invalid('token must not be empty');

  let caHash: string | undefined;
  let creds: string;
  if (!text.startsWith(K3S_TOKEN_PREFIX)) {
    creds = isBootstrapToken(text) ? text : `:${text}`;
  } else {
    const rest = text.slice(K3S_TOKEN_PREFIX.length);
    const separator = rest.indexOf('::');
    if (separator < 0) {
      // No "::": the whole rest is the credentials (k3s reads it the same way).
      creds = rest;
    } else {
      const hash = rest.slice(0, separator);
      creds = rest.slice(separator + 2);
      if (hash.length > 0 && hash.length !== K3S_CA_HASH_LENGTH) throw invalid('invalid token CA hash length');
      if (hash.length > 0 && !/^[0-9a-f]+$/.test(hash)) {
        throw invalid('the CA hash must be lowercase hexadecimal');
      }
      caHash = hash.length > 0 ? hash : undefined;
    }
  }

  if (isBootstrapToken(creds)) {
    return { caHash, credentials: { kind: 'bootstrap-token', token: parseBootstrapToken(creds) } };
  }
  const colon = creds.indexOf(':');
  if (colon < 0 || colon === creds.length - 1) throw invalid('invalid token format');
  return {
    caHash,
    credentials: { kind: 'password', username: creds.slice(0, colon), password: creds.slice(colon + 1) },
  };
}

/**
 * Checks a token's CA hash against a CA bundle, as the agent does before it
 * trusts a server. A token without a hash passes (it pins nothing).
 *
 * @throws {ValidationError} `E_K3S_CA_HASH_MISMATCH`, with the k3s message.
 */
export function verifyK3sCaHash(token: K3sToken, caBundle: string | Buffer, now?: Date): void {
  if (token.caHash === undefined) return;
  const actual = k3sCaHash(caBundle, now);
  if (actual !== token.caHash) {
    throw new ValidationError(
      `token CA hash does not match the Cluster CA certificate hash: ${token.caHash} != ${actual}`,
      { code: 'E_K3S_CA_HASH_MISMATCH' },
    );
  }
}
