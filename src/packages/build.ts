/**
 * `buildPackage`: a directory in, an install package (`.tar.gz`) out.
 *
 * The source must hold regular files and directories only: a symbolic link,
 * device, FIFO or socket is refused with its path rather than followed or
 * skipped, and so is a name outside the package path rules, so that what
 * builds always verifies. Empty directories are not kept (the manifest lists
 * files; directories are implied by their paths). The files the distribution
 * installs (`REQUIRED_PACKAGE_FILES`: k3s needs bin/k3s; kubeadm needs
 * kubeadm, kubelet, containerd and its runc runtime) must be there; the
 * refusal lists every one that is missing.
 *
 * A file with a setuid, setgid or sticky bit is refused, not packed without
 * it: the bit cannot travel (verify refuses such modes, because a package
 * must never install a setuid binary as root), and dropping it silently
 * would ship a file that behaves differently from its source with nobody
 * told. The refusal names the file, so its owner can clear the bit knowingly.
 *
 * Every package carries a bill of materials, `sbom.cdx.json` (sbom.ts),
 * listed in the manifest like any file. With a signing key, the manifest's
 * signature (signature.ts) follows the manifest as `manifest.json.sig`; it
 * covers the SBOM and every file through the manifest's hashes. An ECDSA
 * signature differs from one signing to the next, so a signed build is
 * reproducible in everything but those few bytes.
 *
 * The archive is `manifest.json` first, then the files sorted by path, as
 * plain ustar entries (a pax header only for a path too long for ustar):
 * owner root (0/0), the file's permission bits, and every mtime set to the
 * creation time. The gzip header carries
 * no time or name. So the same directory, options and `createdAt` give the
 * same bytes, and a fixed `createdAt` (`SOURCE_DATE_EPOCH` in the CLI) makes
 * builds reproducible (with the same Node.js zlib).
 *
 * Each file is read twice: once to hash it for the manifest, which must come
 * first, and once into the archive, hashed again so that a file changed in
 * between is refused instead of packaged with a wrong checksum. The output is
 * written to a temporary file beside it, flushed, and renamed into place.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { lstat, rename, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { Header, Pax } from 'tar';
import { EdgeadmError, isEdgeadmError, ValidationError } from '../errors.js';
import { PackageError, PackageErrorCode, quoteEntry } from './errors.js';
import { DEFAULT_PACKAGE_LIMITS } from './limits.js';
import {
  comparePaths,
  isKubernetesVersion,
  isPackageName,
  MANIFEST_FORMAT_VERSION,
  MANIFEST_PATH,
  modeString,
  renderManifest,
  validateManifest,
  AIRGAP_IMAGES_DIR,
  isAirgapImage,
  type Architecture,
  type Distribution,
  type PackageFile,
  type PackageManifest,
} from './manifest.js';
import {
  checkExecutables,
  checkSourceDirectory,
  collectFiles,
  mergeSources,
  refuseIncomplete,
  refuseUnimportableImages,
  type SourceFile,
} from './build-source.js';
import { readImageReferences, type ImageReference } from './image-references.js';
import { renderSbom, SBOM_PATH } from './sbom.js';
import { signManifest, SIGNATURE_MODE, SIGNATURE_PATH } from './signature.js';
import type { PrivateSigningKey } from './signing-keys.js';
import { buildInfo } from '../build-info.js';
import { MANIFEST_MODE } from './entry-headers.js';

/** gzip level of built packages: zlib's default, a fair trade for binaries and already-compressed image tarballs. */
export const BUILD_GZIP_LEVEL = 6;
/** Bytes read from a source file at a time. */
export const BUILD_READ_CHUNK_BYTES = 1024 * 1024;
/** Mode of a file the build writes itself (the SBOM). */
const GENERATED_FILE_MODE = 0o644;
const TAR_BLOCK = 512;
/** Two zero blocks end a tar archive. */
const END_OF_ARCHIVE = Buffer.alloc(2 * TAR_BLOCK);

/** What to build. */
export interface BuildPackageOptions {
  /** The directory whose files the package holds. */
  from: string;
  distribution: Distribution;
  /** Kubernetes version; a missing leading `v` is added (`1.30.4` → `v1.30.4`). */
  kubernetesVersion: string;
  arch: Architecture;
  /** The package file to write (replaced atomically if it exists). */
  output: string;
  /** Package name; defaults to `edge-<distribution>-<version>-<arch>`. */
  name?: string;
  /** Creation time for the manifest and every entry's mtime; defaults to now. Fix it for reproducible builds. */
  createdAt?: Date;
  /**
   * A directory of airgap image archives packed as `images/<name>` beside
   * the source's own `images/` (a name in both is refused).
   */
  images?: string;
  /** Signs the manifest; the signature travels in the package as its second entry. */
  signingKey?: PrivateSigningKey;
}

/** What was built. */
export interface BuiltPackage {
  file: string;
  manifest: PackageManifest;
  /** SHA-256 of the package file. */
  archiveSha256: string;
  archiveBytes: number;
  fileCount: number;
  /** Sum of the file sizes, uncompressed. */
  totalBytes: number;
  /** The manifest.json bytes, as signed. */
  manifestBytes: Buffer;
  /** The signature entry, when a key signed the package. */
  signatureBytes?: Buffer;
  /** The fingerprint of the key that signed it, when one did. */
  signedBy?: string;
  /** What the build found doubtful but packed: files under bin/ that are not ELF executables. */
  warnings: string[];
}

/** The package's Kubernetes version (with its "v") and name, checked before anything is read. */
function packageIdentity(options: BuildPackageOptions): { kubernetesVersion: string; name: string } {
  const kubernetesVersion = options.kubernetesVersion.startsWith('v')
    ? options.kubernetesVersion
    : `v${options.kubernetesVersion}`;
  if (!isKubernetesVersion(kubernetesVersion)) {
    throw new ValidationError(
      `Kubernetes version ${quoteEntry(options.kubernetesVersion)} is not a version such as v1.30.4`,
      {
        code: 'E_PACKAGE_OPTIONS',
        hints: ['Give the version the package carries, for example v1.30.4 or v1.30.4+k3s1.'],
      },
    );
  }
  const name = options.name ?? `edge-${options.distribution}-${kubernetesVersion.replace(/\+/g, '-')}-${options.arch}`;
  if (!isPackageName(name)) {
    throw new ValidationError(`package name ${quoteEntry(name)} is not valid`, {
      code: 'E_PACKAGE_OPTIONS',
      hints: ['Use letters, digits and . _ + - (at most 128 characters), starting with a letter or digit.'],
    });
  }
  return { kubernetesVersion, name };
}

/** Builds a package from a directory. See the module comment for the format and guarantees. */
export async function buildPackage(options: BuildPackageOptions): Promise<BuiltPackage> {
  const from = resolve(options.from);
  const output = resolve(options.output);
  const { kubernetesVersion, name } = packageIdentity(options);
  await checkSourceDirectory(from, output);
  const images = options.images === undefined ? undefined : resolve(options.images);
  if (images !== undefined) await checkSourceDirectory(images, output);

  const sources = mergeSources(
    await collectFiles(from),
    images === undefined ? [] : await collectFiles(images, AIRGAP_IMAGES_DIR),
  );
  refuseIncomplete(sources, options.distribution, from);
  refuseUnimportableImages(sources, options.distribution);
  const warnings = await checkExecutables(sources, options.arch);
  const files: PackageFile[] = [];
  for (const source of sources) files.push(await describeFile(source));
  const createdAt = wholeSeconds(options.createdAt ?? new Date());
  // What both the SBOM and the manifest say the package is.
  const identity = {
    name,
    distribution: options.distribution,
    kubernetesVersion,
    arch: options.arch,
    createdAt: createdAt.toISOString(),
  };
  const sbom: SourceFile = {
    path: SBOM_PATH,
    bytes: renderSbom({
      ...identity,
      files,
      images: await imagesOf(sources, options.distribution),
      toolVersion: buildInfo().version,
    }),
  };
  files.push(await describeFile(sbom));
  sources.push(sbom);
  files.sort((a, b) => comparePaths(a.path, b.path));
  sources.sort((a, b) => comparePaths(a.path, b.path));
  // validateManifest is the same check verify runs: a package that builds, verifies.
  const manifest = validateManifest(
    { formatVersion: MANIFEST_FORMAT_VERSION, ...identity, files },
    DEFAULT_PACKAGE_LIMITS,
  );

  const manifestBytes = renderManifest(manifest);
  const signatureBytes =
    options.signingKey === undefined
      ? undefined
      : Buffer.from(signManifest(manifestBytes, options.signingKey), 'latin1');
  const archive = await writeAtomically(output, [
    Readable.from(tarStream(manifest, sources, createdAt, signatureBytes)),
    createGzip({ level: BUILD_GZIP_LEVEL }),
  ]);
  return {
    file: options.output,
    manifest,
    manifestBytes,
    ...(signatureBytes === undefined ? {} : { signatureBytes, signedBy: options.signingKey!.fingerprint }),
    archiveSha256: archive.sha256,
    archiveBytes: archive.bytes,
    fileCount: files.length,
    totalBytes: files.reduce((sum, file) => sum + file.size, 0),
    warnings,
  };
}

/** The images each airgap archive names (image-references.ts), for the SBOM. */
async function imagesOf(
  sources: SourceFile[],
  distribution: Distribution,
): Promise<Map<string, readonly ImageReference[]>> {
  const images = new Map<string, readonly ImageReference[]>();
  for (const source of sources) {
    if ('absolute' in source && isAirgapImage(source.path, distribution)) {
      images.set(source.path, await readImageReferences(source.absolute));
    }
  }
  return images;
}

async function describeFile(source: SourceFile): Promise<PackageFile> {
  if ('bytes' in source) {
    const sha256 = createHash('sha256').update(source.bytes).digest('hex');
    return { path: source.path, sha256, size: source.bytes.length, mode: modeString(GENERATED_FILE_MODE) };
  }
  const stats = await lstat(source.absolute);
  if (!stats.isFile()) {
    throw new PackageError(PackageErrorCode.Source, `source path ${quoteEntry(source.path)} changed while building`, {
      entry: source.path,
    });
  }
  if ((stats.mode & 0o7000) !== 0) {
    const mode = (stats.mode & 0o7777).toString(8).padStart(4, '0');
    throw new PackageError(
      PackageErrorCode.Mode,
      `source file ${quoteEntry(source.path)} has mode ${mode}: packages never carry setuid, setgid or sticky bits, and edgeadm does not drop them silently`,
      {
        entry: source.path,
        details: { mode },
        hints: [`Clear the bit if the file does not need it (chmod u-s,g-s,o-t ${source.absolute}), then build again.`],
      },
    );
  }
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(source.absolute, { highWaterMark: BUILD_READ_CHUNK_BYTES })) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { path: source.path, sha256: hash.digest('hex'), size, mode: modeString(stats.mode) };
}

/** The tar bytes: manifest first, then its signature if any, then each file as listed, then the end marker. */
async function* tarStream(
  manifest: PackageManifest,
  sources: SourceFile[],
  mtime: Date,
  signature: Buffer | undefined,
): AsyncGenerator<Buffer> {
  const manifestBytes = renderManifest(manifest);
  yield entryHeader(MANIFEST_PATH, manifestBytes.length, MANIFEST_MODE, mtime);
  yield manifestBytes;
  yield padding(manifestBytes.length);
  if (signature !== undefined) {
    yield entryHeader(SIGNATURE_PATH, signature.length, SIGNATURE_MODE, mtime);
    yield signature;
    yield padding(signature.length);
  }
  for (const [index, file] of manifest.files.entries()) {
    const source = sources[index];
    if (source?.path !== file.path) throw new Error(`internal: source order differs at ${file.path}`);
    yield entryHeader(file.path, file.size, Number.parseInt(file.mode, 8), mtime);
    yield* fileContent(source, file);
    yield padding(file.size);
  }
  yield END_OF_ARCHIVE;
}

/** A file's bytes, exactly as many as the manifest says, hashed again on the way. */
async function* fileContent(source: SourceFile, file: PackageFile): AsyncGenerator<Buffer> {
  const changed = () =>
    new PackageError(
      PackageErrorCode.Source,
      `source file ${quoteEntry(file.path)} changed while the package was being built`,
      {
        entry: file.path,
        hints: ['Make sure nothing writes to the source directory during "package build", then build again.'],
      },
    );
  if ('bytes' in source) {
    yield source.bytes;
    return;
  }
  const hash = createHash('sha256');
  let size = 0;
  for await (const data of createReadStream(source.absolute, { highWaterMark: BUILD_READ_CHUNK_BYTES })) {
    const chunk = data as Buffer;
    size += chunk.length;
    if (size > file.size) throw changed();
    hash.update(chunk);
    yield chunk;
  }
  if (size !== file.size || hash.digest('hex') !== file.sha256) throw changed();
}

/** A ustar header for a regular file owned by root, preceded by a pax header when the path needs one (also for sign.ts). */
export function entryHeader(path: string, size: number, mode: number, mtime: Date): Buffer {
  const header = new Header({ path, mode, uid: 0, gid: 0, uname: '', gname: '', size, mtime, type: 'File' });
  const needsPax = header.encode();
  if (!header.block) throw new Error(`internal: no tar header for ${path}`);
  if (!needsPax) return header.block;
  return Buffer.concat([new Pax({ path }).encode(), header.block]);
}

export function padding(size: number): Buffer {
  const remainder = size % TAR_BLOCK;
  return Buffer.alloc(remainder === 0 ? 0 : TAR_BLOCK - remainder);
}

/**
 * The creation time that `SOURCE_DATE_EPOCH` (seconds since 1970, the
 * reproducible-builds convention) asks for, or undefined when it is unset.
 */
export function createdAtFromSourceDateEpoch(value: string | undefined): Date | undefined {
  if (value === undefined || value === '') return undefined;
  if (!/^\d{1,12}$/.test(value)) {
    throw new ValidationError(`SOURCE_DATE_EPOCH=${quoteEntry(value)} is not a number of seconds since 1970`, {
      code: 'E_PACKAGE_OPTIONS',
      hints: ['Set SOURCE_DATE_EPOCH to an integer such as $(git log -1 --format=%ct), or unset it.'],
    });
  }
  return new Date(Number(value) * 1000);
}

function wholeSeconds(date: Date): Date {
  if (Number.isNaN(date.getTime()))
    throw new ValidationError('the creation time is not a valid date', { code: 'E_PACKAGE_OPTIONS' });
  return new Date(Math.floor(date.getTime() / 1000) * 1000);
}

/**
 * Streams `stages` (a source and its transforms) into a temporary file beside
 * `output`, hashing what is written, flushes it to disk and renames it into
 * place. On any error the temporary file is removed and `output` is untouched.
 */
export async function writeAtomically(
  output: string,
  stages: Array<NodeJS.ReadableStream | NodeJS.ReadWriteStream>,
): Promise<{ sha256: string; bytes: number }> {
  const temporary = join(dirname(output), `.${basename(output)}.${randomBytes(6).toString('hex')}.partial`);
  const hash = createHash('sha256');
  let bytes = 0;
  const tap = new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      hash.update(chunk);
      bytes += chunk.length;
      callback(null, chunk);
    },
  });
  try {
    await pipeline([...stages, tap, createWriteStream(temporary, { flags: 'wx', mode: 0o644, flush: true })]);
    await rename(temporary, output);
  } catch (error) {
    await rm(temporary, { force: true });
    if (isEdgeadmError(error)) throw error;
    throw new EdgeadmError(`cannot write the package ${output}: ${(error as Error).message}`, {
      code: 'E_PACKAGE_WRITE',
      hints: ['Check that the output directory exists and is writable, and that there is free space.'],
      cause: error,
    });
  }
  return { sha256: hash.digest('hex'), bytes };
}
