/**
 * `verifyPackage`: the check every command runs before it uses a package.
 *
 * It streams the file once through the archive scanner (archive-scanner.ts
 * has the full list of rules) and writes nothing anywhere. On success it
 * returns the parsed manifest and the archive's SHA-256, which is what a host
 * compares after an upload; on failure it throws a {@link PackageError} whose
 * message starts with the file and names the entry.
 *
 * With trusted keys pinned (`trust`), the package's signature must verify
 * over its manifest with one of them (signature.ts); without, the result
 * says that the origin was not checked, for the caller to say loudly.
 *
 * Why the manifest must be the first entry: it lets each later entry be
 * checked against the manifest as it streams, in one pass, with no second
 * read and nothing held in memory but the manifest.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { EdgeadmError } from '../errors.js';
import { scanArchive, type ScanResult } from './archive-scanner.js';
import { inPackage, PackageError, PackageErrorCode } from './errors.js';
import { resolveLimits, type PackageLimits } from './limits.js';
import { checkPackageOrigin, UNPINNED_TRUST, type PackageTrust, type SignerCheck } from './signature.js';

/** Options of {@link verifyPackage}. */
export interface VerifyPackageOptions {
  /** Overrides of the default limits (limits.ts). */
  limits?: Partial<PackageLimits>;
  /** How errors name the package; defaults to the file path (a download names its URL). */
  label?: string;
  /** The keys that may have signed it; none pinned when absent (the origin is then not checked). */
  trust?: PackageTrust;
}

/** A package that passed verification. */
export interface VerifiedPackage extends ScanResult {
  /** The file as given. */
  file: string;
  /** Who signed it, as far as the pinned keys tell. */
  signer: SignerCheck;
}

/**
 * Verifies a package file: manifest, checksums, sizes, modes, safe paths, no
 * links or special files, no duplicates, limits, and an intact gzip/tar
 * stream. Reads the file once; writes nothing.
 */
export async function verifyPackage(file: string, options: VerifyPackageOptions = {}): Promise<VerifiedPackage> {
  const limits = resolveLimits(options.limits);
  const handle = await openPackageFile(file);
  try {
    const result = await scanArchive({ handle, limits });
    const signer = checkPackageOrigin(result.manifestBytes, result.signatureBytes, options.trust ?? UNPINNED_TRUST);
    return { file, ...result, signer };
  } catch (error) {
    throw inPackage(error, options.label ?? file);
  } finally {
    await handle.close();
  }
}

/**
 * Opens a package file for reading. A missing path is `E_PACKAGE_NOT_FOUND`;
 * anything but a regular file is `E_PACKAGE_CORRUPT`.
 */
export async function openPackageFile(file: string): Promise<FileHandle> {
  let handle: FileHandle;
  try {
    handle = await open(file, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new PackageError(PackageErrorCode.NotFound, `package file ${file} does not exist`, { cause: error });
    }
    throw new EdgeadmError(`cannot open package ${file}: ${(error as Error).message}`, {
      code: 'E_PACKAGE_READ',
      hints: ['Check that the file is readable.'],
      cause: error,
    });
  }
  const stats = await handle.stat();
  if (!stats.isFile()) {
    await handle.close();
    throw new PackageError(PackageErrorCode.Corrupt, `package ${file} is not a regular file`);
  }
  return handle;
}
