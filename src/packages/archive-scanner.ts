/**
 * The streaming core of package verification and extraction.
 *
 * One pass over the file: read → SHA-256 of the archive bytes → gunzip (with
 * a bound on decompressed bytes) → the `tar` package's parser, entry by entry.
 * Nothing is loaded whole and nothing touches the disk unless an
 * {@link EntryWriter} is given (extraction), in which case each file's bytes
 * go to it as they stream, through the very same checks.
 *
 * The rules, each refused with a {@link PackageError} naming the entry:
 * - `manifest.json` is the first entry (so that every later entry is checked
 *   against it as it streams), a valid manifest within the limits;
 * - every other entry is a regular file listed in the manifest, with the
 *   listed size, mode and SHA-256, or a directory (not extracted: directories
 *   are implied by file paths); nothing else — no symbolic or hard links at
 *   all (packages never need them, so none is safer than "none that escape"),
 *   no devices, FIFOs or other types, no global pax headers;
 * - every path is a safe package path (package-path.ts), and appears once;
 * - entry sizes, the total and the entry count stay within the limits, checked
 *   on the header, before any content is read;
 * - the gzip stream and the tar stream are complete: truncation, bad header
 *   checksums, a missing end-of-archive marker, or a lone zero block before
 *   more entries (tar readers disagree on whether the archive ends there) are
 *   all refused. What follows the end marker is ignored, as every tar reader
 *   ignores it, up to a bound;
 * - every file the manifest lists is in the archive.
 */
import { createHash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { Parser, type ReadEntry } from 'tar';
import { EdgeadmError, isEdgeadmError } from '../errors.js';
import { PackageError, PackageErrorCode, quoteEntry } from './errors.js';
import { MAX_TRAILING_BYTES, maxDecompressedBytes, type PackageLimits } from './limits.js';
import {
  MANIFEST_PATH,
  modeBits,
  modeString,
  parseManifest,
  type PackageFile,
  type PackageManifest,
} from './manifest.js';
import { checkEntryPath } from './package-path.js';

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

type Admission = { kind: 'skip' } | { kind: 'manifest' } | { kind: 'file'; file: PackageFile };

class ArchiveScanner {
  readonly #options: ScanOptions;
  readonly #parser: Parser;
  #failure: Error | undefined;
  readonly #failed = Promise.withResolvers<void>();
  #entries = 0;
  #declaredTotal = 0;
  readonly #seen = new Set<string>();
  #manifest: PackageManifest | undefined;
  #manifestSha256: string | undefined;
  readonly #pending = new Map<string, PackageFile>();
  #sawEndMarker = false;
  #loneZeroBlock = false;
  /** Extraction writes run one after another, in archive order. */
  #writes: Promise<void> = Promise.resolve();
  /** The entry an extraction write is pulling bytes from, if any. */
  #extracting: ReadEntry | undefined;

  constructor(options: ScanOptions) {
    this.#options = options;
    this.#parser = new Parser({
      onReadEntry: (entry) => this.#onEntry(entry),
      onwarn: (code, message, data) => this.#onWarn(code, message, data),
    });
    this.#parser.on('error', (error: Error) => this.#fail(corrupt(`the tar stream is damaged: ${error.message}`)));
    this.#parser.on('ignoredEntry', (entry: ReadEntry) => this.#onIgnored(entry));
    this.#parser.on('nullBlock', () => {
      this.#loneZeroBlock = true;
    });
    this.#parser.on('eof', () => {
      this.#loneZeroBlock = false;
      this.#sawEndMarker = true;
    });
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
      await this.#endParser();
    } catch (error) {
      this.#fail(archive.bytes === 0 ? corrupt('the file is empty') : streamError(error));
    }
    // Let a write in flight finish before the caller removes what it wrote.
    await this.#writes;
    if (this.#failure) throw this.#failure;
    return this.#result(archive.hash.digest('hex'), archive.bytes);
  }

  /** Decompressed bytes → the parser, with backpressure and the decompressed-size bound. */
  async #feed(source: AsyncIterable<Buffer>): Promise<void> {
    const maxBytes = maxDecompressedBytes(this.#options.limits);
    let decompressed = 0;
    let trailing = 0;
    for await (const chunk of source) {
      decompressed += chunk.length;
      if (decompressed > maxBytes) {
        throw new PackageError(
          PackageErrorCode.TooLarge,
          `the archive unpacks to more than ${maxBytes} bytes, more than any package within the limits`,
        );
      }
      if (this.#sawEndMarker) {
        // Every tar reader stops at the end marker, so what follows is inert
        // (tar writers pad to their record size); it is only bounded here.
        trailing += chunk.length;
        if (trailing > MAX_TRAILING_BYTES) {
          throw corrupt(`there are more than ${MAX_TRAILING_BYTES} bytes after the end-of-archive marker`);
        }
        continue;
      }
      if (!this.#parser.write(chunk)) await this.#drained();
      if (this.#failure) throw this.#failure;
    }
  }

  #drained(): Promise<void> {
    const drained = new Promise<void>((resolve) => this.#parser.once('drain', resolve));
    return Promise.race([drained, this.#failed.promise]);
  }

  async #endParser(): Promise<void> {
    if (this.#failure) return;
    const ended = new Promise<void>((resolve) => this.#parser.once('end', resolve));
    this.#parser.end();
    await Promise.race([ended, this.#failed.promise]);
  }

  #fail(error: Error): void {
    if (this.#failure) return;
    this.#failure = error;
    this.#failed.resolve();
    // An extraction write may be waiting for bytes that will never come
    // (the stream was cut short): end it, so that the write chain settles.
    this.#extracting?.destroy();
  }

  #onEntry(entry: ReadEntry): void {
    if (this.#failure) {
      entry.resume();
      return;
    }
    let admission: Admission;
    try {
      admission = this.#admit(entry);
    } catch (error) {
      this.#fail(error as Error);
      entry.resume();
      return;
    }
    if (admission.kind === 'skip') entry.resume();
    else if (admission.kind === 'manifest') this.#readManifest(entry);
    else if (this.#options.writer) this.#extractFile(entry, admission.file, this.#options.writer);
    else this.#hashFile(entry, admission.file);
  }

  /** Every check that the header alone allows, in order; throws on the first violation. */
  #admit(entry: ReadEntry): Admission {
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
    if (this.#loneZeroBlock) {
      throw corrupt(
        `a zero block comes before entry ${name}; tar readers disagree on whether the archive ends there`,
        raw,
      );
    }
    if (entry.globalExtended) {
      throw corrupt(`entry ${name} follows a global pax header; packages never use them`, raw);
    }

    const isDirectory = entry.type === 'Directory';
    const checked = checkEntryPath(raw, isDirectory);
    if (!checked.ok) {
      throw new PackageError(PackageErrorCode.UnsafePath, `entry ${name} is refused: ${checked.reason}`, {
        entry: raw,
      });
    }
    const path = checked.path;
    refuseEntryType(entry, name);

    if (this.#entries === 1 && !(entry.type === 'File' && path === MANIFEST_PATH)) {
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

    const mode = entry.mode ?? 0;
    if ((mode & ~0o777) !== 0) {
      throw new PackageError(
        PackageErrorCode.Mode,
        `entry ${name} has mode ${mode.toString(8).padStart(4, '0')}; setuid, setgid and sticky bits are not allowed`,
        { entry: raw, details: { mode: mode.toString(8) } },
      );
    }
    if (isDirectory) return { kind: 'skip' };

    const size = entry.size ?? 0;
    if (path === MANIFEST_PATH) {
      if (size > limits.maxManifestBytes) {
        throw new PackageError(
          PackageErrorCode.TooLarge,
          `entry ${name} is ${size} bytes; the limit for the manifest is ${limits.maxManifestBytes}`,
          { entry: raw, details: { size, limit: limits.maxManifestBytes } },
        );
      }
      return { kind: 'manifest' };
    }
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
    if (size !== file.size) {
      throw new PackageError(
        PackageErrorCode.Checksum,
        `entry ${name} is ${size} bytes; ${MANIFEST_PATH} says ${file.size}`,
        { entry: raw, details: { size, expectedSize: file.size } },
      );
    }
    if (modeString(mode) !== file.mode) {
      throw new PackageError(
        PackageErrorCode.Mode,
        `entry ${name} has mode ${modeString(mode)}; ${MANIFEST_PATH} says ${file.mode}`,
        { entry: raw, details: { mode: modeString(mode), expectedMode: file.mode } },
      );
    }
    return { kind: 'file', file };
  }

  #readManifest(entry: ReadEntry): void {
    const chunks: Buffer[] = [];
    entry.on('data', (chunk: Buffer) => chunks.push(chunk));
    entry.on('end', () => {
      if (this.#failure) return;
      try {
        const bytes = Buffer.concat(chunks);
        const sha256 = createHash('sha256').update(bytes).digest('hex');
        const expected = this.#options.expectedManifestSha256;
        if (expected !== undefined && sha256 !== expected) {
          throw corrupt(`${MANIFEST_PATH} changed since the package was verified`, MANIFEST_PATH);
        }
        this.#manifest = parseManifest(bytes, this.#options.limits);
        this.#manifestSha256 = sha256;
        for (const file of this.#manifest.files) this.#pending.set(file.path, file);
        const writer = this.#options.writer;
        if (writer) this.#queueWrite(() => writeWhole(writer, MANIFEST_PATH, bytes));
      } catch (error) {
        this.#fail(error as Error);
      }
    });
  }

  /** Verification: hash as the bytes flow, synchronously. */
  #hashFile(entry: ReadEntry, file: PackageFile): void {
    const hash = createHash('sha256');
    let received = 0;
    entry.on('data', (chunk: Buffer) => {
      hash.update(chunk);
      received += chunk.length;
    });
    entry.on('end', () => this.#checkContent(file, hash.digest('hex'), received));
  }

  /** Extraction: pull the bytes as the writer takes them (backpressure reaches the parser), hashing on the way. */
  #extractFile(entry: ReadEntry, file: PackageFile, writer: EntryWriter): void {
    this.#queueWrite(async () => {
      if (this.#failure) {
        entry.resume();
        return;
      }
      const hash = createHash('sha256');
      let received = 0;
      const sink = await writer.open(file.path, modeBits(file.mode));
      this.#extracting = entry;
      try {
        // A failure from here on destroys the entry; one that came while opening returns now.
        if (this.#failure) return;
        for await (const chunk of entry as AsyncIterable<Buffer>) {
          if (this.#failure) return;
          hash.update(chunk);
          received += chunk.length;
          await sink.write(chunk);
        }
      } finally {
        this.#extracting = undefined;
        await sink.close();
      }
      this.#checkContent(file, hash.digest('hex'), received);
    });
  }

  #checkContent(file: PackageFile, sha256: string, received: number): void {
    const name = quoteEntry(file.path);
    if (received !== file.size) {
      this.#fail(
        new PackageError(
          PackageErrorCode.Checksum,
          `entry ${name} holds ${received} bytes; ${MANIFEST_PATH} says ${file.size}`,
          {
            entry: file.path,
            details: { size: received, expectedSize: file.size },
          },
        ),
      );
    } else if (sha256 !== file.sha256) {
      this.#fail(
        new PackageError(
          PackageErrorCode.Checksum,
          `entry ${name} has SHA-256 ${sha256}; ${MANIFEST_PATH} says ${file.sha256}`,
          { entry: file.path, details: { sha256, expectedSha256: file.sha256 } },
        ),
      );
    }
  }

  #queueWrite(write: () => Promise<void>): void {
    this.#writes = this.#writes.then(write).catch((error: unknown) => this.#fail(writeError(error)));
  }

  #onWarn(code: string, message: string, data: Record<string, unknown>): void {
    const entry = data.entry as { path?: string } | undefined;
    const header = data.header as { path?: string } | undefined;
    const raw = entry?.path ?? header?.path;
    const where = raw === undefined ? '' : ` at entry ${quoteEntry(raw)}`;
    this.#fail(corrupt(`the tar stream is damaged${where}: ${message} (${code})`, raw));
  }

  #onIgnored(entry: ReadEntry): void {
    if (entry.meta) {
      this.#fail(
        corrupt(`a ${entry.type} header of ${entry.size} bytes is larger than tar readers accept`, entry.path),
      );
    } else {
      this.#fail(
        new PackageError(
          PackageErrorCode.SpecialFile,
          `entry ${quoteEntry(entry.path)} has a type packages do not allow (${entry.type})`,
          {
            entry: entry.path,
            details: { type: entry.type },
          },
        ),
      );
    }
  }

  #result(archiveSha256: string, archiveBytes: number): ScanResult {
    const manifest = this.#manifest;
    if (manifest === undefined || this.#manifestSha256 === undefined) {
      throw new PackageError(PackageErrorCode.Manifest, `the archive holds no ${MANIFEST_PATH}`, {
        entry: MANIFEST_PATH,
      });
    }
    if (!this.#sawEndMarker) {
      throw corrupt('the archive ends without its end-of-archive marker; it is probably truncated');
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
      archiveSha256,
      archiveBytes,
      fileCount: manifest.files.length,
      totalBytes: manifest.files.reduce((sum, file) => sum + file.size, 0),
    };
  }
}

/** Links, devices, FIFOs and every other non-file, non-directory type are refused by name. */
function refuseEntryType(entry: ReadEntry, name: string): void {
  const raw = entry.path;
  switch (entry.type) {
    case 'File':
    case 'Directory':
      return;
    case 'SymbolicLink':
    case 'Link': {
      const kind = entry.type === 'Link' ? 'hard link' : 'symbolic link';
      throw new PackageError(
        PackageErrorCode.Link,
        `entry ${name} is a ${kind} to ${quoteEntry(entry.linkpath ?? '')}; packages never contain links`,
        { entry: raw, details: { type: entry.type, linkpath: entry.linkpath } },
      );
    }
    default: {
      const kind = SPECIAL_TYPE_NAMES[entry.type] ?? `${entry.type} entry`;
      throw new PackageError(
        PackageErrorCode.SpecialFile,
        `entry ${name} is a ${kind}; packages hold regular files only`,
        {
          entry: raw,
          details: { type: entry.type },
        },
      );
    }
  }
}

const SPECIAL_TYPE_NAMES: Record<string, string> = {
  CharacterDevice: 'character device',
  BlockDevice: 'block device',
  FIFO: 'FIFO',
  ContiguousFile: 'contiguous file (tar type 7)',
  GNUDumpDir: 'GNU dump directory',
  OldFile: 'old-style file',
};

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
  const code = (error as NodeJS.ErrnoException).code;
  if (typeof code === 'string' && code.startsWith('Z_')) {
    return corrupt(`the gzip stream is truncated or damaged (${(error as Error).message})`);
  }
  return new EdgeadmError(`cannot read the package: ${(error as Error).message}`, {
    code: 'E_PACKAGE_READ',
    hints: ['Check that the file is readable and the disk is healthy.'],
    cause: error,
  });
}

function writeError(error: unknown): Error {
  if (isEdgeadmError(error)) return error;
  return new EdgeadmError(`cannot write an extracted file: ${(error as Error).message}`, {
    code: 'E_PACKAGE_EXTRACT',
    hints: ['Check free space and permissions where the package is extracted.'],
    cause: error,
  });
}
