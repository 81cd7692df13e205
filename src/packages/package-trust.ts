/**
 * The operator's pinned package signing keys (`--trusted-key FILE`,
 * repeatable, or `trustedKeys` in a configuration file), read once at the
 * top of a command, before any package is opened or any host is reached.
 */
import { readPublicSigningKey, type PublicSigningKey } from './signing-keys.js';
import { uncheckedOriginWarning, UNPINNED_TRUST, type PackageTrust } from './signature.js';
import { resolvePackageSource, type ResolvedPackage } from './source.js';

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

/** Options of {@link resolveTrustedPackage}. */
export interface ResolveTrustedPackageOptions {
  /** Where downloaded packages are cached. */
  cacheDir: string;
  /** `--trusted-key` files; none: the origin is not checked, and `warn` is told so. */
  trustedKeyFiles?: readonly string[] | undefined;
  /** Where the loud line goes when the origin is not checked (the terminal, the run log). */
  warn?: ((line: string) => void) | undefined;
}

/**
 * The one way the workflows get their package: the pinned keys read, the
 * package resolved and verified against them ({@link resolvePackageSource}),
 * and a loud line when nobody pinned a key. All on this machine, before any
 * host is reached.
 */
export async function resolveTrustedPackage(
  source: string,
  options: ResolveTrustedPackageOptions,
): Promise<ResolvedPackage> {
  const trust = loadPackageTrust(options.trustedKeyFiles);
  const pkg = await resolvePackageSource(source, { cacheDir: options.cacheDir, trust });
  const warning = uncheckedOriginWarning(pkg.manifest.name, pkg.signer);
  if (warning !== undefined) options.warn?.(warning);
  return pkg;
}
