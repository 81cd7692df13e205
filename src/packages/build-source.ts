/**
 * What \`package build\` reads and checks of its source before it packs
 * anything: the directory itself (a directory, not the output's), its files
 * (regular files only, safe paths), the airgap images beside them, the files
 * the distribution needs, the image archives it can import, and what is
 * under bin/ (executables for the package's architecture).
 */
import { open, readdir, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { PackageError, PackageErrorCode, quoteEntry } from './errors.js';
import { DEFAULT_PACKAGE_LIMITS } from './limits.js';
import {
  AIRGAP_IMAGES_DIR,
  AIRGAP_IMAGE_SUFFIXES,
  comparePaths,
  isAirgapImage,
  MANIFEST_PATH,
  REQUIRED_PACKAGE_FILES,
  type Architecture,
  type Distribution,
} from './manifest.js';
import { checkPackagePath } from './package-path.js';
import { EXECUTABLE_HEAD_BYTES, executableKindOf, isElfFor } from './executables.js';
import { SBOM_PATH } from './sbom.js';
import { SIGNATURE_PATH } from './signature.js';

/** A file found in the source directory, or one the build writes itself (the SBOM). */
export type SourceFile = { path: string; absolute: string } | { path: string; bytes: Buffer };

export async function checkSourceDirectory(from: string, output: string): Promise<void> {
  let stats;
  try {
    stats = await stat(from);
  } catch (error) {
    throw new PackageError(PackageErrorCode.Source, `source directory ${from} does not exist`, { cause: error });
  }
  if (!stats.isDirectory()) throw new PackageError(PackageErrorCode.Source, `source ${from} is not a directory`);
  if (output === from || output.startsWith(`${from}${sep}`)) {
    throw new PackageError(
      PackageErrorCode.Source,
      `the output ${output} is inside the source directory ${from}; the package would contain itself`,
      { hints: ['Write the package outside the directory it is built from.'] },
    );
  }
}

/** Walks the source without following links; sorted by package path, each path under `prefix` (e.g. `images/`). */
export async function collectFiles(root: string, prefix = ''): Promise<SourceFile[]> {
  const files: SourceFile[] = [];
  const maxFiles = DEFAULT_PACKAGE_LIMITS.maxEntries - 1;
  const walk = async (directory: string): Promise<void> => {
    for (const dirent of await readdir(directory, { withFileTypes: true })) {
      const absolute = join(directory, dirent.name);
      const path = prefix + relative(root, absolute).split(sep).join('/');
      const checked = checkPackagePath(path);
      if (!checked.ok) {
        throw new PackageError(
          PackageErrorCode.UnsafePath,
          `source path ${quoteEntry(path)} cannot be packaged: ${checked.reason}`,
          {
            entry: path,
            hints: ['Rename the file: package paths use letters, digits and . _ - + @ = , ~ only.'],
          },
        );
      }
      if (dirent.isSymbolicLink()) {
        throw new PackageError(
          PackageErrorCode.Link,
          `source path ${quoteEntry(path)} is a symbolic link; packages hold regular files only and links are not followed`,
          { entry: path, hints: ['Replace the link with the file it points to.'] },
        );
      }
      if (dirent.isDirectory()) {
        await walk(absolute);
      } else if (dirent.isFile()) {
        if (path === MANIFEST_PATH || path === SIGNATURE_PATH || path === SBOM_PATH) {
          throw new PackageError(
            PackageErrorCode.Source,
            `the source directory has its own ${path}; that name is reserved for the one edgeadm writes`,
            { entry: path, hints: [`Remove ${path} from the source directory (edgeadm writes a fresh one).`] },
          );
        }
        files.push({ path, absolute });
        if (files.length > maxFiles) {
          throw new PackageError(PackageErrorCode.TooLarge, `the source holds more than ${maxFiles} files`, {
            entry: path,
          });
        }
      } else {
        throw new PackageError(
          PackageErrorCode.SpecialFile,
          `source path ${quoteEntry(path)} is not a regular file or directory (device, FIFO or socket)`,
          { entry: path },
        );
      }
    }
  };
  await walk(root);
  return files.sort((a, b) => comparePaths(a.path, b.path));
}

/** The source's files and those of `--images`, sorted; a path in both is refused rather than one silently chosen. */
export function mergeSources(fromSource: SourceFile[], fromImages: SourceFile[]): SourceFile[] {
  const paths = new Set(fromSource.map((source) => source.path));
  const clash = fromImages.find((image) => paths.has(image.path));
  if (clash !== undefined) {
    throw new PackageError(
      PackageErrorCode.Duplicate,
      `${quoteEntry(clash.path)} is both in the source directory and in the --images directory`,
      { entry: clash.path, hints: ['Keep each image archive in one of the two directories.'] },
    );
  }
  const merged = [...fromSource, ...fromImages].sort((a, b) => comparePaths(a.path, b.path));
  if (merged.length > DEFAULT_PACKAGE_LIMITS.maxEntries - 1) {
    throw new PackageError(
      PackageErrorCode.TooLarge,
      `the source and --images hold more than ${DEFAULT_PACKAGE_LIMITS.maxEntries - 1} files`,
    );
  }
  return merged;
}

/**
 * Every file under `images/` must be an archive the distribution imports: a
 * file it would skip is refused at build, not found missing on a site with no
 * registry. See {@link AIRGAP_IMAGE_SUFFIXES} for what each imports.
 */
export function refuseUnimportableImages(sources: SourceFile[], distribution: Distribution): void {
  for (const source of sources) {
    if (!source.path.startsWith(AIRGAP_IMAGES_DIR)) continue;
    if (isAirgapImage(source.path, distribution)) continue;
    const suffixes = AIRGAP_IMAGE_SUFFIXES[distribution].join(', ');
    const nested = source.path.slice(AIRGAP_IMAGES_DIR.length).includes('/');
    throw new PackageError(
      PackageErrorCode.Source,
      nested
        ? `${quoteEntry(source.path)} is in a subdirectory of ${AIRGAP_IMAGES_DIR}; ${distribution} imports only the archives directly in it`
        : `${quoteEntry(source.path)} is not an airgap image archive a ${distribution} package can carry (names end in ${suffixes})`,
      {
        entry: source.path,
        details: { distribution, suffixes: AIRGAP_IMAGE_SUFFIXES[distribution] },
        hints: [
          distribution === 'kubeadm'
            ? 'kubeadm packages import images with "ctr images import", one uncompressed .tar each: decompress the archive first (e.g. "zstd -d" or "gunzip").'
            : `Rename or remove the file: ${distribution} imports ${suffixes} archives from its images directory at start.`,
        ],
      },
    );
  }
}

/**
 * Every file under bin/ is an executable for the package's architecture: an
 * ELF executable for another one is refused (hosts could not run it, and
 * would find out only after the install); what is not an ELF executable at
 * all (a script) is packed with a warning, returned.
 */
export async function checkExecutables(sources: SourceFile[], arch: Architecture): Promise<string[]> {
  const warnings: string[] = [];
  for (const source of sources) {
    if (!source.path.startsWith('bin/')) continue;
    const kind = executableKindOf(await headOf(source));
    if (kind.kind === 'elf') {
      if (isElfFor(kind, arch)) continue;
      throw new PackageError(
        PackageErrorCode.Arch,
        `${quoteEntry(source.path)} is an ELF executable for ${kind.machineName}${kind.elfClass === 1 ? ' (32-bit)' : ''}, not for ${arch}, the package's architecture`,
        {
          entry: source.path,
          details: { arch, machine: kind.machineName },
          hints: [
            `Put the ${arch} build of ${source.path.slice('bin/'.length)} into the source directory, or build the package with the --arch it was built for.`,
          ],
        },
      );
    }
    const what = kind.kind === 'script' ? `a script for ${kind.interpreter}` : 'neither an ELF executable nor a script';
    warnings.push(
      `${source.path} is not an ELF executable for ${arch} (it is ${what}): hosts will run it as it is; check that it is the program you meant to package`,
    );
  }
  return warnings;
}

async function headOf(source: SourceFile): Promise<Buffer> {
  if ('bytes' in source) return source.bytes.subarray(0, EXECUTABLE_HEAD_BYTES);
  const file = await open(source.absolute, 'r');
  try {
    const head = Buffer.alloc(EXECUTABLE_HEAD_BYTES);
    const { bytesRead } = await file.read(head, 0, EXECUTABLE_HEAD_BYTES, 0);
    return head.subarray(0, bytesRead);
  } finally {
    await file.close();
  }
}

/** Every file the distribution installs must be in the source; the error lists all that are missing. */
export function refuseIncomplete(sources: SourceFile[], distribution: Distribution, from: string): void {
  const present = new Set(sources.map((source) => source.path));
  const missing = REQUIRED_PACKAGE_FILES[distribution].filter((path) => !present.has(path));
  if (missing.length === 0) return;
  const what = sources.length === 0 ? 'holds no files' : 'lacks files';
  throw new PackageError(
    PackageErrorCode.Incomplete,
    `the source directory ${from} ${what} that a ${distribution} package must hold: ${missing.join(', ')}`,
    {
      entry: missing[0] ?? '',
      details: { distribution, missing },
      hints: [`Put ${missing.join(', ')} into ${from} (paths relative to it), then build again.`],
    },
  );
}
