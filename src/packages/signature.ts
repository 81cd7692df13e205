/**
 * Package signatures: who made a package (issue #39). Pure: no I/O.
 *
 * A signature is over the exact bytes of `manifest.json`, which lists every
 * file of the package (the SBOM included) with its SHA-256, size and mode,
 * and the package's name, distribution, version, arch and creation time. So
 * one signature covers everything the package installs.
 *
 * The format is cosign's for a blob signed with a key pair: ECDSA P-256 over
 * SHA-256, the ASN.1 DER signature in base64. It travels in the package as
 * `manifest.json.sig`, the second entry, right after the manifest, so that
 * these two commands check a package without edgeadm:
 *
 *     tar -xzf pkg.tar.gz manifest.json manifest.json.sig
 *     cosign verify-blob --key signing.pub --signature manifest.json.sig --insecure-ignore-tlog manifest.json
 *
 * Trust is pinned by the operator (`--trusted-key`): a package is accepted
 * when its signature verifies with one of the pinned public keys. With no key
 * pinned, nothing about the origin is checked, and {@link checkPackageOrigin}
 * says so rather than failing, so that unsigned packages keep working where
 * nobody asked for more.
 */
import { sign, verify } from 'node:crypto';
import { PackageError, PackageErrorCode } from './errors.js';
import { MANIFEST_PATH, SIGNATURE_ENTRY_PATH } from './manifest.js';
import type { PrivateSigningKey, PublicSigningKey } from './signing-keys.js';

/** Where the signature lives in a package: the second entry. */
export const SIGNATURE_PATH = SIGNATURE_ENTRY_PATH;
/** Mode of the signature entry, like the manifest's. */
export const SIGNATURE_MODE = 0o644;
/**
 * Largest signature entry. A DER ECDSA P-256 signature is at most 72 bytes,
 * 96 characters of base64; the bound leaves room for a newline or CRLF that
 * an editor or another tool adds, and nothing more.
 */
export const MAX_SIGNATURE_BYTES = 512;

/** The keys an operator trusts to sign packages. Empty: the origin is not checked. */
export interface PackageTrust {
  keys: PublicSigningKey[];
}

/** No key pinned. */
export const UNPINNED_TRUST: PackageTrust = Object.freeze({ keys: [] });

/** What is known about who made a package. */
export type SignerCheck =
  | {
      /** The signature verified with a pinned key. */
      isChecked: true;
      isSigned: true;
      /** The pinned key's fingerprint, `sha256:<hex>`. */
      fingerprint: string;
      /** Where that key was read from. */
      keyFile: string;
    }
  | {
      /** No key was pinned: nothing about the origin was checked. */
      isChecked: false;
      /** Whether the package carries a signature at all (unchecked). */
      isSigned: boolean;
    };

/** The line every command prints when no key is pinned: loud, since the package could come from anyone. */
export function uncheckedOriginWarning(packageName: string, signer: SignerCheck): string | undefined {
  if (signer.isChecked) return undefined;
  const what = signer.isSigned
    ? 'is signed, but no trusted key is pinned'
    : 'is not signed and no trusted key is pinned';
  return (
    `the origin of package ${packageName} is NOT checked: it ${what}. ` +
    'Anyone who could write the package could have replaced its files and manifest. ' +
    'Pin the signing public key with --trusted-key FILE to refuse packages that are unsigned or signed by anyone else.'
  );
}

/** Signs manifest bytes: base64 of the DER ECDSA P-256 / SHA-256 signature, as `cosign sign-blob` writes it. */
export function signManifest(manifestBytes: Buffer, key: PrivateSigningKey): string {
  return sign('sha256', manifestBytes, { key: key.key, dsaEncoding: 'der' }).toString('base64');
}

/**
 * Decodes a signature entry: base64 (surrounding whitespace allowed, as cosign
 * and editors may add a newline), at most {@link MAX_SIGNATURE_BYTES}.
 *
 * @throws {PackageError} `E_PACKAGE_SIGNATURE` for anything else.
 */
export function decodeSignature(bytes: Buffer): Buffer {
  if (bytes.length > MAX_SIGNATURE_BYTES) {
    throw signatureError(`${SIGNATURE_PATH} is ${bytes.length} bytes; a signature is at most ${MAX_SIGNATURE_BYTES}`);
  }
  const text = bytes.toString('latin1').trim();
  if (text === '' || !/^[A-Za-z0-9+/]+={0,2}$/.test(text) || text.length % 4 !== 0) {
    throw signatureError(`${SIGNATURE_PATH} is not a base64 signature`);
  }
  return Buffer.from(text, 'base64');
}

/**
 * Decides a package's origin from its manifest bytes and signature entry.
 * With keys pinned: the signature must verify over these exact manifest bytes
 * with one of them. That refuses an unsigned package, a package signed by
 * any other key, a manifest changed after signing (a file swapped and the
 * manifest recomputed), and a signature moved from another package (it
 * signs that package's manifest, not this one).
 *
 * @throws {PackageError} `E_PACKAGE_UNSIGNED`, `E_PACKAGE_SIGNATURE`.
 */
export function checkPackageOrigin(
  manifestBytes: Buffer,
  signature: Buffer | undefined,
  trust: PackageTrust,
): SignerCheck {
  if (trust.keys.length === 0) return { isChecked: false, isSigned: signature !== undefined };
  const pinned = trust.keys.map((key) => key.fingerprint);
  if (signature === undefined) {
    throw new PackageError(
      PackageErrorCode.Unsigned,
      `the package is not signed (it has no ${SIGNATURE_PATH}), and a trusted key is pinned (${pinned.join(', ')})`,
      { entry: SIGNATURE_PATH, details: { trustedKeys: pinned } },
    );
  }
  const raw = decodeSignature(signature);
  for (const key of trust.keys) {
    if (verify('sha256', manifestBytes, { key: key.key, dsaEncoding: 'der' }, raw)) {
      return { isChecked: true, isSigned: true, fingerprint: key.fingerprint, keyFile: key.source };
    }
  }
  throw signatureError(
    `the signature does not verify with ${pinned.length === 1 ? 'the trusted key' : `any of the ${pinned.length} trusted keys`} ` +
      `(${pinned.join(', ')}): ${MANIFEST_PATH} was changed after it was signed, the package was signed by a key that is not trusted, ` +
      'or the signature belongs to another package',
    { trustedKeys: pinned },
  );
}

function signatureError(message: string, details: Record<string, unknown> = {}): PackageError {
  return new PackageError(PackageErrorCode.Signature, message, { entry: SIGNATURE_PATH, details });
}
