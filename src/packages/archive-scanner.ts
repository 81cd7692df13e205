/**
 * The streaming core of package verification and extraction.
 *
 * One pass over the file: read → SHA-256 of the archive bytes → gunzip (with
 * a bound on decompressed bytes) → the strict tar reader (tar-reader.ts),
 * entry by entry. Nothing is loaded whole and nothing touches the disk unless
 * an {@link EntryWriter} is given (extraction), in which case each file's
 * bytes go to it as they stream, through the very same checks. Each chunk is
 * fully handled (written, for extraction) before the next is read, which is
 * the backpressure.
 *
 * The tar reader refuses every archive that tar readers could read
 * differently (other entry types, pax keys, GNU extensions, ambiguous header
 * fields, a lone zero block); on top of it, each refused with a
 * {@link PackageError} naming the entry:
 * - `manifest.json` is the first entry (so that every later entry is checked
 *   against it as it streams), a valid manifest within the limits, mode 0644;
 * - `manifest.json.sig`, the package's signature (signature.ts), may follow
 *   as the second entry only, mode 0644, small; it is handed back for the
 *   caller to check against its trusted keys, not trusted here;
 * - every other entry is a regular file listed in the manifest, with the
 *   listed size, mode and SHA-256, or a directory that is a parent of a listed
 *   file (so that unpacking creates exactly the manifest's files and their
 *   directories, nothing else);
 * - every path is a safe package path (package-path.ts), and appears once;
 * - no mode has setuid, setgid or sticky bits;
 * - entry sizes, the total and the entry count stay within the limits, checked
 *   on the header, before any content is read;
 * - the gzip stream and the tar stream are complete, and what follows the end
 *   marker (ignored by every tar reader) stays within a bound;
 * - every file the manifest lists is in the archive.
 */
import { createHash, type Hash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { EdgeadmError, isEdgeadmError } from '../errors.js';
import { PackageError, PackageErrorCode, quoteEntry } from './errors.js';
import { maxDecompressedBytes, type PackageLimits } from './limits.js';
import { MANIFEST_PATH, modeBits, parseManifest, type PackageFile, type PackageManifest } from './manifest.js';
import { checkEntryPath, parentDirectories } from './package-path.js';
import { checkListedFileHeader, checkManifestHeader, checkSignatureHeader } from './entry-headers.js';
import { SIGNATURE_PATH } from './signature.js';
import { StrictTarReader, type TarEntry, type TarEvent } from './tar-reader.js';

/** Bytes read from the package file at a time. */
export const READ_CHUNK_BYTES = 1024 * 1024;
/** Decompressed bytes handed to the tar parser at a time. */
export const GUNZIP_CHUNK_BYTES = 256 * 1024;
/** How many missing files an error lists in its details. */
const MAX_LISTED_MISSING = 20;

const GZIP_MAGIC = [0x1f, 0x8b];

/** Where extraction sends one file's bytes. */
export interface FileSink {
  write(chunk: Buffer): Promise<void>;
  /** Called once all bytes are written (also after a failure, to release the file). */
  close(): Promise<void>;
}

/** Receives the files of a package as they stream (extraction). */
export interface EntryWriter {
  /** Opens `path` (a checked package path, or manifest.json) for writing with permission bits `mode`. */
  open(path: string, mode: number): Promise<FileSink>;
}

/** What one scan needs. */
export interface ScanOptions {
  /** The package file, open for reading; read from offset 0, never closed here. */
  handle: FileHandle;
  limits: PackageLimits;
  /** Extraction: where the files go. Without it the scan writes nothing. */
  writer?: EntryWriter;
  /** A second pass must see the very manifest that the first pass verified. */
  expectedManifestSha256?: string;
}

/** What a successful scan proved. */
export interface ScanResult {
  manifest: PackageManifest;
  /** SHA-256 of the manifest.json bytes: identifies the package content. */
  manifestSha256: string;
  /** The manifest.json bytes, exactly as signed. */
  manifestBytes: Buffer;
  /** The signature entry's bytes, when the package has one (unchecked: see signature.ts). */
  signatureBytes?: Buffer;
  /** SHA-256 of the package file as a whole (what a host compares after upload). */
  archiveSha256: string;
  /** Size of the package file. */
  archiveBytes: number;
  /** Files listed and verified (the manifest not counted). */
  fileCount: number;
  /** Sum of the file sizes, uncompressed. */
  totalBytes: number;
}

/** Reads a package once and checks every rule above. Throws a {@link PackageError} on the first violation. */
export async function scanArchive(options: ScanOptions): Promise<ScanResult> {
  return new ArchiveScanner(options).run();
}

type Admission = { kind: 'skip' } | { kind: 'manifest' } | { kind: 'signature' } | { kind: 'file'; file: PackageFile };

/** The entry whose content is streaming. */
type Current =
  | { kind: 'skip' }
  | { kind: 'manifest'; chunks: Buffer[] }
  | { kind: 'signature'; chunks: Buffer[] }
  | { kind: 'file'; file: PackageFile; hash: Hash; received: number; sink: FileSink | undefined };

class ArchiveScanner {
  readonly #options: ScanOptions;
  readonly #reader = new StrictTarReader();
  #entries = 0;
  #declaredTotal = 0;
  readonly #seen = new Set<string>();
  #manifest: PackageManifest | undefined;
  #manifestSha256: string | undefined;
  #manifestBytes: Buffer | undefined;
  #signature: Buffer | undefined;
  readonly #pending = new Map<string, PackageFile>();
  /** Parents of the manifest's files: the only directory entries allowed. */
  readonly #directories = new Set<string>();
  #current: Current | undefined;

  constructor(options: ScanOptions) {
    this.#options = options;
  }

  async run(): Promise<ScanResult> {
    const archive = { hash: createHash('sha256'), bytes: 0 };
    try {
      await pipeline(
        this.#options.handle.createReadStream({ start: 0, autoClose: false, highWaterMark: READ_CHUNK_BYTES }),
        archiveTap(archive),
        createGunzip({ chunkSize: GUNZIP_CHUNK_BYTES }),
        (source: AsyncIterable<Buffer>) => this.#feed(source),
      );
    } catch (error) {
      // A file being written when the stream failed is closed, so that the caller can remove it.
      const current = this.#current;
      this.#current = undefined;
      if (current?.kind === 'file' && current.sink) await current.sink.close().catch(() => undefined);
      // gunzip fails on no input at all: that is an empty file. A read that fails
      // before the first byte is the disk's fault, like any other read error.
      throw archive.bytes === 0 && isZlibError(error) ? corrupt('the file is empty') : streamError(error);
    }
    return this.#result(archive.hash.digest('hex'), archive.bytes);
  }

  /** Decompressed bytes → the tar reader → the package rules, chunk by chunk. */
  async #feed(source: AsyncIterable<Buffer>): Promise<void> {
    const maxBytes = maxDecompressedBytes(this.#options.limits);
    let decompressed = 0;
    for await (const chunk of source) {
      decompressed += chunk.length;
      if (decompressed > maxBytes) {
        throw new PackageError(
          PackageErrorCode.TooLarge,
          `the archive unpacks to more than ${maxBytes} bytes, more than any package within the limits`,
        );
      }
      for (const event of this.#reader.push(chunk)) await this.#onEvent(event);
    }
    this.#reader.finish();
  }

  async #onEvent(event: TarEvent): Promise<void> {
    switch (event.kind) {
      case 'entry':
        await this.#onEntry(event.entry);
        return;
      case 'data':
        await this.#onData(event.bytes);
        return;
      case 'entryEnd':
        await this.#onEntryEnd();
        return;
      case 'end':
        return;
    }
  }

  async #onEntry(entry: TarEntry): Promise<void> {
    const admission = this.#admit(entry);
    if (admission.kind === 'skip') this.#current = { kind: 'skip' };
    else if (admission.kind === 'manifest') this.#current = { kind: 'manifest', chunks: [] };
    else if (admission.kind === 'signature') this.#current = { kind: 'signature', chunks: [] };
    else {
      const { file } = admission;
      const writer = this.#options.writer;
      const sink = writer ? await writer.open(file.path, modeBits(file.mode)).catch(rethrowWrite) : undefined;
      this.#current = { kind: 'file', file, hash: createHash('sha256'), received: 0, sink };
    }
  }

  async #onData(bytes: Buffer): Promise<void> {
    const current = this.#current;
    if (current === undefined || current.kind === 'skip') return;
    if (current.kind === 'manifest' || current.kind === 'signature') {
      current.chunks.push(Buffer.from(bytes));
      return;
    }
    current.hash.update(bytes);
    current.received += bytes.length;
    if (current.sink) await current.sink.write(bytes).catch(rethrowWrite);
  }

  async #onEntryEnd(): Promise<void> {
    const current = this.#current;
    if (current === undefined) return;
    if (current.kind === 'manifest') {
      await this.#readManifest(Buffer.concat(current.chunks));
    } else if (current.kind === 'signature') {
      this.#signature = Buffer.concat(current.chunks);
      const writer = this.#options.writer;
      if (writer) await writeWhole(writer, SIGNATURE_PATH, this.#signature).catch(rethrowWrite);
    } else if (current.kind === 'file') {
      // Forgotten before it is closed, so that a failed close is not tried again on the way out.
      const sink = current.sink;
      current.sink = undefined;
      if (sink) await sink.close().catch(rethrowWrite);
      this.#checkContent(current.file, current.hash.digest('hex'), current.received);
    }
    this.#current = undefined;
  }

  /** Every check that the header alone allows, in order; throws on the first violation. */
  #admit(entry: TarEntry): Admission {
    const { limits } = this.#options;
    const raw = entry.path;
    const name = quoteEntry(raw);
    this.#entries += 1;
    if (this.#entries > limits.maxEntries) {
      throw new PackageError(
        PackageErrorCode.TooLarge,
        `entry ${name} is entry number ${this.#entries}; the limit is ${limits.maxEntries}`,
        { entry: raw, details: { limit: limits.maxEntries } },
      );
    }

    const isDirectory = entry.kind === 'directory';
    const checked = checkEntryPath(raw, isDirectory);
    if (!checked.ok) {
      throw new PackageError(PackageErrorCode.UnsafePath, `entry ${name} is refused: ${checked.reason}`, {
        entry: raw,
      });
    }
    const path = checked.path;

    if (this.#entries === 1 && !(entry.kind === 'file' && path === MANIFEST_PATH)) {
      throw new PackageError(
        PackageErrorCode.Manifest,
        `the first entry is ${name}, not ${MANIFEST_PATH}; the manifest must come first so that the package can be checked as it streams`,
        { entry: raw },
      );
    }
    if (this.#seen.has(path)) {
      throw new PackageError(PackageErrorCode.Duplicate, `entry ${name} appears more than once`, { entry: raw });
    }
    this.#seen.add(path);

    const { mode } = entry;
    if ((mode & ~0o777) !== 0) {
      throw new PackageError(
        PackageErrorCode.Mode,
        `entry ${name} has mode ${mode.toString(8).padStart(4, '0')}; setuid, setgid and sticky bits are not allowed`,
        { entry: raw, details: { mode: mode.toString(8) } },
      );
    }
    if (isDirectory) {
      if (!this.#directories.has(path)) {
        throw new PackageError(
          PackageErrorCode.Unlisted,
          `directory entry ${name} holds no file that ${MANIFEST_PATH} lists; unpacking would create it as an extra, empty directory`,
          { entry: raw },
        );
      }
      return { kind: 'skip' };
    }

    const header = { raw, name, size: entry.size, mode };
    if (path === MANIFEST_PATH) {
      checkManifestHeader(header, limits.maxManifestBytes);
      return { kind: 'manifest' };
    }
    if (path === SIGNATURE_PATH) {
      checkSignatureHeader(header, this.#entries);
      return { kind: 'signature' };
    }
    const { size } = header;
    if (size > limits.maxEntryBytes) {
      throw new PackageError(
        PackageErrorCode.TooLarge,
        `entry ${name} declares ${size} bytes; the limit per file is ${limits.maxEntryBytes}`,
        { entry: raw, details: { size, limit: limits.maxEntryBytes } },
      );
    }
    this.#declaredTotal += size;
    if (this.#declaredTotal > limits.maxTotalBytes) {
      throw new PackageError(
        PackageErrorCode.TooLarge,
        `entry ${name} brings the package to ${this.#declaredTotal} bytes; the limit is ${limits.maxTotalBytes}`,
        { entry: raw, details: { total: this.#declaredTotal, limit: limits.maxTotalBytes } },
      );
    }
    const file = this.#pending.get(path);
    if (file === undefined) {
      throw new PackageError(PackageErrorCode.Unlisted, `entry ${name} is not listed in ${MANIFEST_PATH}`, {
        entry: raw,
      });
    }
    this.#pending.delete(path);
    checkListedFileHeader(header, file);
    return { kind: 'file', file };
  }

  async #readManifest(bytes: Buffer): Promise<void> {
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const expected = this.#options.expectedManifestSha256;
    if (expected !== undefined && sha256 !== expected) {
      throw corrupt(`${MANIFEST_PATH} changed since the package was verified`, MANIFEST_PATH);
    }
    this.#manifest = parseManifest(bytes, this.#options.limits);
    this.#manifestSha256 = sha256;
    this.#manifestBytes = bytes;
    for (const file of this.#manifest.files) {
      this.#pending.set(file.path, file);
      for (const directory of parentDirectories(file.path)) this.#directories.add(directory);
    }
    const writer = this.#options.writer;
    if (writer) await writeWhole(writer, MANIFEST_PATH, bytes).catch(rethrowWrite);
  }

  #checkContent(file: PackageFile, sha256: string, received: number): void {
    const name = quoteEntry(file.path);
    if (received !== file.size) {
      throw new PackageError(
        PackageErrorCode.Checksum,
        `entry ${name} holds ${received} bytes; ${MANIFEST_PATH} says ${file.size}`,
        { entry: file.path, details: { size: received, expectedSize: file.size } },
      );
    }
    if (sha256 !== file.sha256) {
      throw new PackageError(
        PackageErrorCode.Checksum,
        `entry ${name} has SHA-256 ${sha256}; ${MANIFEST_PATH} says ${file.sha256}`,
        { entry: file.path, details: { sha256, expectedSha256: file.sha256 } },
      );
    }
  }

  #result(archiveSha256: string, archiveBytes: number): ScanResult {
    const manifest = this.#manifest;
    if (manifest === undefined || this.#manifestSha256 === undefined || this.#manifestBytes === undefined) {
      throw new PackageError(PackageErrorCode.Manifest, `the archive holds no ${MANIFEST_PATH}`, {
        entry: MANIFEST_PATH,
      });
    }
    if (this.#pending.size > 0) {
      const missing = [...this.#pending.keys()];
      const first = missing[0] ?? '';
      const more = missing.length > 1 ? ` (and ${missing.length - 1} more)` : '';
      throw new PackageError(
        PackageErrorCode.MissingFile,
        `${MANIFEST_PATH} lists ${quoteEntry(first)}${more}, which the archive does not hold`,
        { entry: first, details: { missing: missing.slice(0, MAX_LISTED_MISSING), missingCount: missing.length } },
      );
    }
    return {
      manifest,
      manifestSha256: this.#manifestSha256,
      manifestBytes: this.#manifestBytes,
      ...(this.#signature === undefined ? {} : { signatureBytes: this.#signature }),
      archiveSha256,
      archiveBytes,
      fileCount: manifest.files.length,
      totalBytes: manifest.files.reduce((sum, file) => sum + file.size, 0),
    };
  }
}

/** Counts and hashes the package bytes on their way to gunzip, and refuses anything that is not gzip. */
function archiveTap(archive: { hash: ReturnType<typeof createHash>; bytes: number }): Transform {
  let head = Buffer.alloc(0);
  return new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      archive.hash.update(chunk);
      archive.bytes += chunk.length;
      if (head.length < GZIP_MAGIC.length) {
        head = Buffer.concat([head, chunk.subarray(0, GZIP_MAGIC.length - head.length)]);
        if (head.length === GZIP_MAGIC.length && !GZIP_MAGIC.every((byte, i) => head[i] === byte)) {
          callback(corrupt('the file is not gzip-compressed (a package is a .tar.gz)'));
          return;
        }
      }
      callback(null, chunk);
    },
  });
}

async function writeWhole(writer: EntryWriter, path: string, bytes: Buffer): Promise<void> {
  const sink = await writer.open(path, 0o644);
  try {
    await sink.write(bytes);
  } finally {
    await sink.close();
  }
}

function corrupt(message: string, entry?: string): PackageError {
  return new PackageError(PackageErrorCode.Corrupt, message, entry === undefined ? {} : { entry });
}

/** zlib errors mean a damaged or truncated file; read errors are I/O failures, not the package's fault. */
function streamError(error: unknown): Error {
  if (isEdgeadmError(error)) return error;
  if (isZlibError(error)) {
    return corrupt(`the gzip stream is truncated or damaged (${(error as Error).message})`);
  }
  return new EdgeadmError(`cannot read the package: ${(error as Error).message}`, {
    code: 'E_PACKAGE_READ',
    hints: ['Check that the file is readable and the disk is healthy.'],
    cause: error,
  });
}

/** An error of gunzip (zlib codes start with `Z_`), as opposed to one of reading the file. */
function isZlibError(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' && code.startsWith('Z_');
}

/** Writer failures are I/O errors of this machine, not the package's fault. */
function rethrowWrite(error: unknown): never {
  if (isEdgeadmError(error)) throw error;
  throw new EdgeadmError(`cannot write an extracted file: ${(error as Error).message}`, {
    code: 'E_PACKAGE_EXTRACT',
    hints: ['Check free space and permissions where the package is extracted.'],
    cause: error,
  });
}
