/**
 * The operator's pinned package signing keys (`--trusted-key FILE`,
 * repeatable, or `trustedKeys` in a configuration file), read once at the
 * top of a command, before any package is opened or any host is reached.
 */
import { readPublicSigningKey, type PublicSigningKey } from './signing-keys.js';
import { UNPINNED_TRUST, type PackageTrust } from './signature.js';

/**
 * Reads each trusted public key file; the same key given twice counts once.
 *
 * @throws {ValidationError} `E_PACKAGE_KEY` naming the first file that is not an ECDSA P-256 public key.
 */
export function loadPackageTrust(files: readonly string[] | undefined): PackageTrust {
  if (files === undefined || files.length === 0) return UNPINNED_TRUST;
  const keys = new Map<string, PublicSigningKey>();
  for (const file of files) {
    const key = readPublicSigningKey(file);
    if (!keys.has(key.fingerprint)) keys.set(key.fingerprint, key);
  }
  return { keys: [...keys.values()] };
}

/** The fingerprints of the pinned keys (for `--json` and messages; never the keys themselves). */
export function trustedFingerprints(trust: PackageTrust): string[] {
  return trust.keys.map((key) => key.fingerprint);
}
