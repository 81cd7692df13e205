/**
 * A strict tar reader: the one place where edgeadm turns tar bytes into
 * entries, written so that it can never read an archive differently from the
 * GNU tar that unpacks packages on the hosts (`tar -xzf PKG --no-same-owner`).
 *
 * General tar readers are lenient, and each is lenient in its own way: a
 * header that one reader takes as metadata another extracts as a file (type
 * `N`), a pax key one ignores renames the file in another
 * (`GNU.sparse.name`), a prefix field one reads only with version `00` and
 * another with any version. When the reader that verifies and the reader that
 * unpacks disagree, the bytes installed are not the bytes verified. So this
 * reader accepts one narrow, unambiguous subset of the format and refuses
 * everything else, before any content is read:
 *
 * - headers: ustar magic `ustar\0` with version `00` (the name is prefix +
 *   `/` + name, as POSIX and GNU tar read it), or the GNU magic `ustar  \0`
 *   (what GNU tar writes by default) with its whole extension area zero, so
 *   that no reader finds a prefix, sparse map or offset there; the header
 *   checksum right; string fields NUL-padded with nothing after the first NUL;
 * - numeric fields: octal digits followed by NUL or space terminators only
 *   (no leading space or NUL, no base-64, no digits after a terminator);
 *   base-256 only for uid, gid and mtime, which unpacking ignores; an all-NUL
 *   field (read as 0 by GNU tar) only where no meaning hangs on it;
 * - entry types: regular file (`0`, and the legacy NUL) and directory (`5`);
 *   one pax extended header (`x`) may precede an entry, holding only the keys
 *   in {@link PAX_ALLOWED_KEYS}; everything else is refused, named: links,
 *   devices, FIFOs, contiguous files, global pax headers, GNU long names and
 *   links (`L`, `K`), old GNU long names (`N`), sparse files (`S`),
 *   multi-volume parts (`M`), volume labels (`V`), dump directories (`D`),
 *   and every other letter;
 * - the end: two zero blocks. A lone zero block followed by more entries is
 *   refused (GNU tar stops at it, other readers go on).
 *
 * The reader is a pure state machine: bytes in, events out, no I/O. The
 * caller (archive-scanner.ts) applies the package rules (paths, manifest,
 * limits) to the entries.
 */
import { PackageError, PackageErrorCode, quoteEntry } from './errors.js';
import { MAX_PAX_HEADER_BYTES, MAX_TRAILING_BYTES } from './limits.js';

/** Size of a tar block. */
export const TAR_BLOCK_BYTES = 512;

/**
 * The pax keys an entry may carry, and why each is safe:
 * - `path`: the name (long paths; checked by the package path rules like any name);
 * - `mtime`, `atime`, `ctime`: times only, and GNU tar's `--format=posix`
 *   writes all three by default.
 *
 * Evidence for the refusals: GNU tar 1.34 renames, resizes, re-types or
 * rewrites a file from `linkpath`, `size`, `GNU.sparse.*` (name, size, map,
 * major/minor: the content is read as a sparse map), `GNU.dumpdir`,
 * `GNU.volume.*` (multi-volume offsets), `SCHILY.*`/`LIBARCHIVE.*` (extended
 * attributes such as file capabilities), `charset`/`hdrcharset` (how names
 * are decoded). Ownership keys (`uid`, `gid`, `uname`, `gname`) are inert
 * under `--no-same-owner` but packages never need them, so they are refused
 * too: the list holds what packages use, not what is harmless today.
 */
export const PAX_ALLOWED_KEYS: ReadonlySet<string> = new Set(['path', 'mtime', 'atime', 'ctime']);

/** One entry as GNU tar reads it. */
export interface TarEntry {
  /** The name exactly as written (pax `path`, else prefix + `/` + name); not yet checked against the path rules. */
  path: string;
  kind: 'file' | 'directory';
  /** The mode field, all bits (the caller refuses bits beyond 0777). */
  mode: number;
  /** Content bytes that follow the header. */
  size: number;
}

/** What {@link StrictTarReader.push} found in a chunk, in order. */
export type TarEvent =
  { kind: 'entry'; entry: TarEntry } | { kind: 'data'; bytes: Buffer } | { kind: 'entryEnd' } | { kind: 'end' };

const USTAR_MAGIC = Buffer.from('ustar\u000000', 'latin1');
const GNU_MAGIC = Buffer.from('ustar  \u0000', 'latin1');

/** Header layout (POSIX.1-1988 ustar): offset and length of each field. */
const FIELD = {
  name: [0, 100],
  mode: [100, 8],
  uid: [108, 8],
  gid: [116, 8],
  size: [124, 12],
  mtime: [136, 12],
  checksum: [148, 8],
  typeflag: [156, 1],
  linkname: [157, 100],
  magic: [257, 8],
  uname: [265, 32],
  gname: [297, 32],
  devmajor: [329, 8],
  devminor: [337, 8],
  prefix: [345, 155],
  pad: [500, 12],
} as const satisfies Record<string, readonly [number, number]>;
type FieldName = keyof typeof FIELD;

/** What each refused type flag is, for the message. */
const TYPE_NAMES: Record<string, string> = {
  '1': 'hard link',
  '2': 'symbolic link',
  '3': 'character device',
  '4': 'block device',
  '6': 'FIFO',
  '7': 'contiguous file (tar type 7)',
  g: 'global pax header (tar type g)',
  L: 'GNU long-name entry (tar type L)',
  K: 'GNU long-link entry (tar type K)',
  N: 'old GNU long-names entry (tar type N)',
  S: 'GNU sparse file (tar type S)',
  M: 'GNU multi-volume continuation (tar type M)',
  V: 'GNU volume label (tar type V)',
  D: 'GNU dump directory (tar type D)',
  X: 'Solaris extended header (tar type X)',
  A: 'Solaris ACL entry (tar type A)',
  E: 'Solaris extended attribute entry (tar type E)',
  I: 'inode-only entry (tar type I)',
};

type State =
  | { kind: 'header' }
  | { kind: 'pax'; remaining: number; padding: number; chunks: Buffer[]; headerName: string }
  | { kind: 'data'; remaining: number; padding: number }
  | { kind: 'ended' };

/**
 * Reads a tar stream strictly (see the module comment). Feed it with
 * {@link push}; call {@link finish} at the end of the stream. Every refusal
 * is a {@link PackageError} naming the entry.
 */
export class StrictTarReader {
  #state: State = { kind: 'header' };
  /** Bytes of the block being assembled. */
  readonly #block = Buffer.alloc(TAR_BLOCK_BYTES);
  #blockFill = 0;
  #zeroBlockSeen = false;
  #pax: Map<string, string> | undefined;
  #trailing = 0;

  /** Consumes `chunk`; returns what it completed. Throws on the first violation. */
  push(chunk: Buffer): TarEvent[] {
    const events: TarEvent[] = [];
    let at = 0;
    while (at < chunk.length) {
      const state = this.#state;
      if (state.kind === 'ended') {
        // Every tar reader stops at the end marker (writers pad to their record
        // size), so what follows is inert; it is only bounded here.
        this.#trailing += chunk.length - at;
        if (this.#trailing > MAX_TRAILING_BYTES) {
          throw corrupt(`there are more than ${MAX_TRAILING_BYTES} bytes after the end-of-archive marker`);
        }
        return events;
      }
      if (state.kind === 'data') {
        if (state.remaining > 0) {
          const take = Math.min(state.remaining, chunk.length - at);
          events.push({ kind: 'data', bytes: chunk.subarray(at, at + take) });
          state.remaining -= take;
          at += take;
        } else {
          const skip = Math.min(state.padding, chunk.length - at);
          state.padding -= skip;
          at += skip;
        }
        if (state.remaining === 0 && state.padding === 0) {
          events.push({ kind: 'entryEnd' });
          this.#state = { kind: 'header' };
        }
        continue;
      }
      if (state.kind === 'pax') {
        if (state.remaining > 0) {
          const take = Math.min(state.remaining, chunk.length - at);
          state.chunks.push(Buffer.from(chunk.subarray(at, at + take)));
          state.remaining -= take;
          at += take;
        } else {
          const skip = Math.min(state.padding, chunk.length - at);
          state.padding -= skip;
          at += skip;
        }
        if (state.remaining === 0 && state.padding === 0) {
          this.#pax = parsePaxRecords(Buffer.concat(state.chunks), state.headerName);
          this.#state = { kind: 'header' };
        }
        continue;
      }
      const take = Math.min(TAR_BLOCK_BYTES - this.#blockFill, chunk.length - at);
      chunk.copy(this.#block, this.#blockFill, at, at + take);
      this.#blockFill += take;
      at += take;
      if (this.#blockFill === TAR_BLOCK_BYTES) {
        this.#blockFill = 0;
        events.push(...this.#onHeaderBlock(this.#block));
      }
    }
    return events;
  }

  /** The stream ended: refuses an archive cut short or without its end-of-archive marker. */
  finish(): void {
    if (this.#state.kind === 'ended') return;
    if (this.#state.kind !== 'header' || this.#blockFill !== 0 || this.#pax !== undefined) {
      throw corrupt('the tar stream is truncated: it ends inside an entry');
    }
    throw corrupt('the archive ends without its end-of-archive marker; it is probably truncated');
  }

  #onHeaderBlock(block: Buffer): TarEvent[] {
    if (isZero(block, 0, TAR_BLOCK_BYTES)) {
      if (this.#pax !== undefined) throw corrupt('a pax extended header is followed by the end of the archive');
      if (this.#zeroBlockSeen) {
        this.#state = { kind: 'ended' };
        return [{ kind: 'end' }];
      }
      this.#zeroBlockSeen = true;
      return [];
    }
    const header = parseHeader(block);
    if (this.#zeroBlockSeen) {
      throw corrupt(
        `a zero block comes before entry ${quoteEntry(header.name)}; tar readers disagree on whether the archive ends there`,
        header.name,
      );
    }
    const { typeflag } = header;
    if (typeflag === 'x') {
      if (this.#pax !== undefined) {
        throw corrupt(`two pax extended headers in a row (at ${quoteEntry(header.name)})`, header.name);
      }
      if (header.size > MAX_PAX_HEADER_BYTES) {
        throw corrupt(
          `a pax extended header of ${header.size} bytes is larger than packages need (limit ${MAX_PAX_HEADER_BYTES})`,
          header.name,
        );
      }
      this.#state = {
        kind: 'pax',
        remaining: header.size,
        padding: paddingOf(header.size),
        chunks: [],
        headerName: header.name,
      };
      if (header.size === 0) {
        this.#pax = new Map();
        this.#state = { kind: 'header' };
      }
      return [];
    }
    const pax = this.#pax;
    this.#pax = undefined;
    const path = pax?.get('path') ?? header.name;
    if (typeflag !== '0' && typeflag !== '\0' && typeflag !== '5') refuseType(typeflag, path, header.linkname);
    if (header.linkname !== '') {
      throw corrupt(`entry ${quoteEntry(path)} names a link target but is not a link`, path);
    }
    const kind = typeflag === '5' ? 'directory' : 'file';
    if (kind === 'directory' && header.size !== 0) {
      throw corrupt(`directory entry ${quoteEntry(path)} declares ${header.size} bytes of content`, path);
    }
    const entry: TarEvent = { kind: 'entry', entry: { path, kind, mode: header.mode, size: header.size } };
    if (header.size === 0) return [entry, { kind: 'entryEnd' }];
    this.#state = { kind: 'data', remaining: header.size, padding: paddingOf(header.size) };
    return [entry];
  }
}

/** A header's fields as this reader needs them. */
interface ParsedHeader {
  /** prefix + `/` + name, or name. */
  name: string;
  typeflag: string;
  mode: number;
  size: number;
  linkname: string;
}

/** Parses one non-zero header block strictly; throws a {@link PackageError} on anything ambiguous. */
export function parseHeader(block: Buffer): ParsedHeader {
  const rawName = stringField(block, 'name', '');
  const magic = field(block, 'magic');
  const isUstar = magic.equals(USTAR_MAGIC);
  const isGnu = magic.equals(GNU_MAGIC);
  // The checksum first: a damaged header says nothing reliable.
  const stored = numberField(block, 'checksum', rawName, 'octal');
  if (stored !== headerChecksum(block)) {
    throw corrupt(`the header of entry ${quoteEntry(rawName)} has a bad checksum`, rawName);
  }
  if (!isUstar && !isGnu) {
    throw corrupt(
      `the header of entry ${quoteEntry(rawName)} has magic and version ${JSON.stringify(magic.toString('latin1'))}; ` +
        'only POSIX ustar ("ustar\\u000000") and GNU ("ustar  \\u0000") headers are read, because tar readers ' +
        'disagree on whether other headers carry a name prefix',
      rawName,
    );
  }
  let name = rawName;
  if (isUstar) {
    const prefix = stringField(block, 'prefix', rawName);
    if (prefix !== '') name = `${prefix}/${rawName}`;
    if (!isZero(block, FIELD.pad[0], FIELD.pad[1])) {
      throw corrupt(`the header of entry ${quoteEntry(name)} has data in its unused bytes`, name);
    }
  } else if (!isZero(block, FIELD.prefix[0], FIELD.prefix[1] + FIELD.pad[1])) {
    // GNU headers keep times, a sparse map and a multi-volume offset there.
    throw corrupt(
      `the GNU header of entry ${quoteEntry(name)} uses its extension area (times, sparse map or volume offset)`,
      name,
    );
  }
  const typeflag = String.fromCharCode(block[FIELD.typeflag[0]] ?? 0);
  const linkname = stringField(block, 'linkname', name);
  stringField(block, 'uname', name);
  stringField(block, 'gname', name);
  const mode = numberField(block, 'mode', name, 'octal');
  const size = numberField(block, 'size', name, 'octal');
  numberField(block, 'uid', name, 'octal, zero or base-256');
  numberField(block, 'gid', name, 'octal, zero or base-256');
  numberField(block, 'mtime', name, 'octal, zero or base-256');
  numberField(block, 'devmajor', name, 'octal or zero');
  numberField(block, 'devminor', name, 'octal or zero');
  return { name, typeflag, mode, size, linkname };
}

/** The header checksum as POSIX defines it: the unsigned byte sum with the checksum field read as spaces. */
export function headerChecksum(block: Buffer): number {
  let sum = 0;
  for (let i = 0; i < TAR_BLOCK_BYTES; i++) {
    sum += i >= FIELD.checksum[0] && i < FIELD.checksum[0] + FIELD.checksum[1] ? 0x20 : (block[i] ?? 0);
  }
  return sum;
}

function field(block: Buffer, name: FieldName): Buffer {
  const [offset, length] = FIELD[name];
  return block.subarray(offset, offset + length);
}

/** A string field: its bytes up to the first NUL, and only NULs after it. Latin-1, so every byte stays visible. */
function stringField(block: Buffer, name: FieldName, entry: string): string {
  const bytes = field(block, name);
  const end = bytes.indexOf(0);
  if (end >= 0 && !isZero(bytes, end, bytes.length - end)) {
    const named = entry === '' ? bytes.subarray(0, end).toString('latin1') : entry;
    throw corrupt(`the ${name} field of entry ${quoteEntry(named)} has bytes after its terminating NUL`, named);
  }
  return bytes.subarray(0, end >= 0 ? end : bytes.length).toString('latin1');
}

type NumberFormat = 'octal' | 'octal or zero' | 'octal, zero or base-256';

/**
 * A numeric field, strictly: octal digits then one or more NUL/space
 * terminators and nothing else; where allowed, all NULs (0) or base-256
 * (first byte 0x80, positive, within a safe integer).
 */
function numberField(block: Buffer, name: FieldName, entry: string, format: NumberFormat): number {
  const bytes = field(block, name);
  if (format !== 'octal' && isZero(bytes, 0, bytes.length)) return 0;
  if (format === 'octal, zero or base-256' && bytes[0] === 0x80) {
    let value = 0;
    for (let i = 1; i < bytes.length; i++) value = value * 256 + (bytes[i] ?? 0);
    if (Number.isSafeInteger(value)) return value;
  }
  let digits = 0;
  while (digits < bytes.length && isOctalDigit(bytes[digits] ?? 0)) digits++;
  const terminated = digits > 0 && digits < bytes.length && bytes.subarray(digits).every((b) => b === 0 || b === 0x20);
  if (!terminated) {
    const shown = JSON.stringify(bytes.toString('latin1'));
    throw new PackageError(
      PackageErrorCode.Corrupt,
      `the ${name} field of entry ${quoteEntry(entry)} is ${shown}, not ${format === 'octal' ? 'an octal number' : `a number (${format})`} with NUL or space terminators; tar readers would read it differently`,
      { entry, details: { field: name } },
    );
  }
  return Number.parseInt(bytes.subarray(0, digits).toString('latin1'), 8);
}

function isOctalDigit(byte: number): boolean {
  return byte >= 0x30 && byte <= 0x37;
}

function isZero(bytes: Buffer, offset: number, length: number): boolean {
  for (let i = offset; i < offset + length; i++) if (bytes[i] !== 0) return false;
  return true;
}

function paddingOf(size: number): number {
  return (TAR_BLOCK_BYTES - (size % TAR_BLOCK_BYTES)) % TAR_BLOCK_BYTES;
}

/** Refuses every type but file and directory, by name; links get their own code. */
function refuseType(typeflag: string, path: string, linkname: string): never {
  const name = quoteEntry(path);
  if (typeflag === '1' || typeflag === '2') {
    throw new PackageError(
      PackageErrorCode.Link,
      `entry ${name} is a ${TYPE_NAMES[typeflag]} to ${quoteEntry(linkname)}; packages never contain links`,
      { entry: path, details: { type: typeflag, linkpath: linkname } },
    );
  }
  if (typeflag === 'g') {
    throw corrupt(`entry ${name} is a global pax header; packages never use them`, path);
  }
  const code = typeflag.charCodeAt(0);
  const kind =
    TYPE_NAMES[typeflag] ??
    (code >= 0x41 && code <= 0x5a
      ? `vendor extension entry (tar type ${typeflag})`
      : `entry of unknown type ${JSON.stringify(typeflag)}`);
  throw new PackageError(
    PackageErrorCode.SpecialFile,
    `entry ${name} is a ${kind}; packages hold regular files and directories only, and tar readers disagree on other types`,
    { entry: path, details: { type: typeflag } },
  );
}

/**
 * Parses pax records (`"<length> <key>=<value>\n"`, the length counting the
 * whole record in decimal) strictly: exact lengths, no leading zeros, no
 * repeated key, nothing after the last record, and only allowed keys with
 * well-formed values.
 */
export function parsePaxRecords(data: Buffer, headerName: string): Map<string, string> {
  const records = new Map<string, string>();
  let at = 0;
  const malformed = (why: string): PackageError =>
    corrupt(`the pax extended header ${quoteEntry(headerName)} is malformed: ${why}`, headerName);
  while (at < data.length) {
    const space = data.indexOf(0x20, at);
    const lengthText = space < 0 ? '' : data.subarray(at, space).toString('latin1');
    if (!/^[1-9][0-9]{0,5}$/.test(lengthText)) throw malformed('a record does not start with its length');
    const end = at + Number(lengthText);
    if (end > data.length || data[end - 1] !== 0x0a) throw malformed('a record length does not match its content');
    const record = data.subarray(space + 1, end - 1).toString('latin1');
    const equals = record.indexOf('=');
    if (equals <= 0) throw malformed('a record has no key');
    const key = record.slice(0, equals);
    const value = record.slice(equals + 1);
    if (!PAX_ALLOWED_KEYS.has(key)) {
      throw corrupt(
        `the pax extended header ${quoteEntry(headerName)} sets ${quoteEntry(key)}; packages may set only ${[...PAX_ALLOWED_KEYS].join(', ')}, because tar readers use other keys to rename, resize or re-type a file`,
        headerName,
      );
    }
    if (records.has(key)) throw malformed(`${key} is set twice`);
    if (key !== 'path' && !/^[0-9]{1,12}(?:\.[0-9]{1,9})?$/.test(value)) {
      throw malformed(`${key}=${JSON.stringify(value)} is not a time in seconds`);
    }
    records.set(key, value);
    at = end;
  }
  return records;
}

function corrupt(message: string, entry?: string): PackageError {
  return new PackageError(PackageErrorCode.Corrupt, message, entry === undefined ? {} : { entry });
}
