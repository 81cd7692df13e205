/**
 * `extractVerifiedPackage`: unpack a package on the machine edgeadm runs on,
 * all or nothing.
 *
 * 1. The file is opened once; both passes below read that same open file, so
 *    replacing the path in between changes nothing.
 * 2. Pass one verifies it completely (verify.ts); nothing is written.
 * 3. Pass two streams it again through the same checks, writing each listed
 *    file into a fresh temporary directory beside `destDir` as it goes and
 *    re-checking its SHA-256, and the manifest must be byte-identical to the
 *    one pass one verified. A file is created only at a checked package path
 *    under that directory, with O_EXCL and O_NOFOLLOW, and with the
 *    manifest's mode; parents get 0755. Directory entries are not extracted.
 * 4. The temporary directory is renamed to `destDir`.
 *
 * Any error removes the temporary directory; `destDir` is then still absent.
 * Nothing is ever written outside the temporary directory, except that
 * `destDir`'s parent is created if missing.
 */
import { constants } from 'node:fs';
import { chmod, lstat, mkdir, mkdtemp, open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { scanArchive, type EntryWriter, type FileSink } from './archive-scanner.js';
import { inPackage, PackageError, PackageErrorCode } from './errors.js';
import { checkPackageOrigin, UNPINNED_TRUST, type PackageTrust } from './signature.js';
import { resolveLimits, type PackageLimits } from './limits.js';
import { openPackageFile, type VerifiedPackage } from './verify.js';

/** Mode of the extracted package directory and of the directories inside it. */
export const EXTRACTED_DIRECTORY_MODE = 0o755;

/** Options of {@link extractVerifiedPackage}. */
export interface ExtractPackageOptions {
  /** Where the package's files end up. Must not exist yet. */
  destDir: string;
  /** Overrides of the default limits (limits.ts). */
  limits?: Partial<PackageLimits>;
  /** The keys that may have signed it (signature.ts); checked before anything is written. */
  trust?: PackageTrust;
}

/** A package that was verified and extracted. */
export interface ExtractedPackage extends VerifiedPackage {
  /** The absolute directory holding `manifest.json` and the package files. */
  directory: string;
}

/** Verifies a package, then extracts it into `destDir`, all or nothing. See the module comment. */
export async function extractVerifiedPackage(file: string, options: ExtractPackageOptions): Promise<ExtractedPackage> {
  const limits = resolveLimits(options.limits);
  const destination = resolve(options.destDir);
  await refuseExisting(destination);
  const handle = await openPackageFile(file);
  let temporary: string | undefined;
  try {
    const scanned = await scanArchive({ handle, limits });
    const verified = {
      ...scanned,
      signer: checkPackageOrigin(scanned.manifestBytes, scanned.signatureBytes, options.trust ?? UNPINNED_TRUST),
    };
    await mkdir(dirname(destination), { recursive: true });
    temporary = await mkdtemp(join(dirname(destination), `.${basename(destination)}.partial-`));
    await scanArchive({
      handle,
      limits,
      writer: new DirectoryWriter(temporary),
      expectedManifestSha256: verified.manifestSha256,
    });
    await chmod(temporary, EXTRACTED_DIRECTORY_MODE);
    await refuseExisting(destination);
    await rename(temporary, destination);
    temporary = undefined;
    return { file, ...verified, directory: destination };
  } catch (error) {
    throw inPackage(error, file);
  } finally {
    if (temporary !== undefined) await rm(temporary, { recursive: true, force: true });
    await handle.close();
  }
}

async function refuseExisting(destination: string): Promise<void> {
  try {
    await lstat(destination);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  throw new PackageError(PackageErrorCode.DestinationExists, `the extraction directory ${destination} already exists`, {
    details: { destDir: destination },
  });
}

/**
 * Writes files under one fresh directory that only this writer touches, so
 * no link or foreign file can be in the way; O_EXCL and O_NOFOLLOW make sure
 * of it anyway.
 */
class DirectoryWriter implements EntryWriter {
  readonly #root: string;

  constructor(root: string) {
    this.#root = root;
  }

  async open(path: string, mode: number): Promise<FileSink> {
    // `path` passed the package path rules: relative, no `.` or `..`, so it stays under root.
    const absolute = join(this.#root, ...path.split('/'));
    await mkdir(dirname(absolute), { recursive: true, mode: EXTRACTED_DIRECTORY_MODE });
    const handle = await open(
      absolute,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      mode,
    );
    let closed = false;
    return {
      async write(chunk: Buffer): Promise<void> {
        let offset = 0;
        while (offset < chunk.length) {
          const { bytesWritten } = await handle.write(chunk, offset, chunk.length - offset);
          offset += bytesWritten;
        }
      },
      async close(): Promise<void> {
        if (closed) return;
        closed = true;
        try {
          // The process umask may have narrowed the mode given to open().
          await handle.chmod(mode);
        } finally {
          await handle.close();
        }
      },
    };
  }
}
