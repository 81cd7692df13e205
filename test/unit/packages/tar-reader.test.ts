/**
 * The strict tar reader on single headers and records, byte by byte: what it
 * reads, and each ambiguity it refuses, with the entry named. (Whole archives
 * against GNU tar: test/integration/packages/gnu-tar-differential.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { isPackageError } from '../../../src/packages/errors.js';
import { MAX_PAX_HEADER_BYTES, MAX_TRAILING_BYTES } from '../../../src/packages/limits.js';
import {
  headerChecksum,
  parseHeader,
  parsePaxRecords,
  StrictTarReader,
  type TarEvent,
} from '../../../src/packages/tar-reader.js';
import { blocks, GNU_MAGIC, paxEntry, paxRecords, rawHeader, type RawHeaderFields } from '../../support/hostile-tar.js';

function refusal(action: () => unknown): {
  code: string;
  message: string;
  entry: string | undefined;
  details: Record<string, unknown> | undefined;
} {
  try {
    action();
  } catch (error) {
    if (isPackageError(error))
      return { code: error.code, message: error.message, entry: error.entry, details: error.details };
    throw error;
  }
  throw new Error('expected a refusal');
}

const header = (fields: RawHeaderFields) => parseHeader(rawHeader({ name: 'bin/k3s', mode: 0o755, ...fields }));

describe('parseHeader reads', () => {
  it('a POSIX ustar header, joining prefix and name', () => {
    expect(header({ prefix: 'opt/edge', name: 'k3s', size: 5 })).toEqual({
      name: 'opt/edge/k3s',
      typeflag: '0',
      mode: 0o755,
      size: 5,
      linkname: '',
    });
  });

  it('a GNU header whose extension area is empty, by its name alone', () => {
    expect(header({ magic: GNU_MAGIC }).name).toBe('bin/k3s');
  });

  it.each([
    ['digits, NUL', '0000755\u0000'],
    ['digits, space, NUL', '000755 \u0000'],
    ['digits, space', '0000755 '],
    ['short digits, NULs', '755\u0000\u0000\u0000\u0000\u0000'],
  ])('an octal mode written as %s', (_name, field) => {
    expect(header({ mode: Buffer.from(field, 'latin1') }).mode).toBe(0o755);
  });

  it('an all-NUL uid, gid, mtime or device number as 0, and a base-256 uid', () => {
    const big = Buffer.alloc(8);
    big[0] = 0x80;
    big.writeUInt32BE(3_000_000, 4);
    expect(() =>
      header({ uid: big, gid: Buffer.alloc(8), mtime: Buffer.alloc(12), devmajor: Buffer.alloc(8) }),
    ).not.toThrow();
  });
});

describe('parseHeader refuses, naming the entry', () => {
  it.each([
    [
      'version xx with a prefix (GNU tar uses the prefix, others do not)',
      { magic: Buffer.from('ustar\u0000xx', 'latin1'), prefix: 'bin', name: 'k3s' },
    ],
    ['version " \\0" with the POSIX magic', { magic: Buffer.from('ustar\u0000 \u0000', 'latin1') }],
    ['no magic at all (V7)', { magic: Buffer.alloc(8) }],
    [
      'a GNU header with an offset in its extension area',
      { magic: GNU_MAGIC, extension: Buffer.from('\u0000'.repeat(24) + '00000001000\u0000', 'latin1') },
    ],
    ['a ustar header with bytes in its padding', { extension: Buffer.concat([Buffer.alloc(155), Buffer.from('x')]) }],
    ['bytes after the NUL ending the name', { name: Buffer.from('bin/k3s\u0000evil', 'latin1') }],
  ])('%s', (_name, fields) => {
    const error = refusal(() => header(fields as RawHeaderFields));
    expect(error.code).toBe('E_PACKAGE_CORRUPT');
    expect(error.entry).toMatch(/k3s/);
  });

  it.each([
    ['leading spaces', 'size', '     12\u0000'],
    ['a leading NUL (GNU tar skips it)', 'size', '\u00000000012\u0000'],
    ['no terminator', 'size', '000000000012'],
    ['digits after the terminator', 'size', '12 7\u0000'],
    ['a non-octal digit', 'size', '0000000019\u0000'],
    ['base-64 (+)', 'size', '+12\u0000'],
    ['base-256 (size)', 'size', '\u0080\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u000c'],
    ['all NULs (size)', 'size', '\u0000'.repeat(12)],
    ['garbage', 'mode', 'rwxr-xr\u0000'],
    ['all NULs (mode)', 'mode', '\u0000'.repeat(8)],
    ['a negative base-256 mtime', 'mtime', '\u00ff'.repeat(12)],
  ])('a numeric field with %s', (_name, field, text) => {
    const error = refusal(() => header({ [field]: Buffer.from(text, 'latin1') }));
    expect(error.code).toBe('E_PACKAGE_CORRUPT');
    expect(error.message).toContain(`${field} field of entry "bin/k3s"`);
  });

  it('a bad checksum', () => {
    expect(refusal(() => header({ checksum: Buffer.from('0000001\u0000') })).message).toContain('bad checksum');
  });
});

function read(chunks: Buffer[]): TarEvent[] {
  const reader = new StrictTarReader();
  const events = chunks.flatMap((chunk) => reader.push(chunk));
  reader.finish();
  return events;
}

describe('StrictTarReader', () => {
  it('streams entries and content across arbitrary chunk boundaries', () => {
    const content = Buffer.from('x'.repeat(700));
    const archive = Buffer.concat([
      rawHeader({ name: 'a', size: content.length }),
      blocks(content),
      rawHeader({ name: 'd/', typeflag: '5', mode: 0o755 }),
      Buffer.alloc(1024),
    ]);
    for (const size of [1, 7, 512, 513, archive.length]) {
      const chunks: Buffer[] = [];
      for (let at = 0; at < archive.length; at += size) chunks.push(archive.subarray(at, at + size));
      const events = read(chunks);
      expect(events.filter((e) => e.kind === 'entry').map((e) => e.entry.path)).toEqual(['a', 'd/']);
      const data = Buffer.concat(events.flatMap((e) => (e.kind === 'data' ? [e.bytes] : [])));
      expect(data.equals(content)).toBe(true);
      expect(events.at(-1)).toEqual({ kind: 'end' });
    }
  });

  it('takes the name from a pax path, and refuses a pax key outside path and times', () => {
    const pax = paxRecords([
      ['path', 'bin/long-name'],
      ['mtime', '1714564800.5'],
    ]);
    const events = read([
      rawHeader({ name: 'PaxHeader/x', typeflag: 'x', size: pax.length }),
      blocks(pax),
      rawHeader({ name: 'short' }),
      Buffer.alloc(1024),
    ]);
    expect(events[0]).toMatchObject({ kind: 'entry', entry: { path: 'bin/long-name' } });
    for (const key of [
      'GNU.sparse.name',
      'linkpath',
      'size',
      'uid',
      'SCHILY.xattr.security.capability',
      'hdrcharset',
    ]) {
      const error = refusal(() => parsePaxRecords(paxRecords([[key, 'bin/k3s']]), 'PaxHeader/x'));
      expect(error.message).toContain(`sets "${key}"`);
    }
  });

  it.each([
    ['a wrong record length', Buffer.from('99 path=bin/k3s\n')],
    ['a leading zero in a length', Buffer.from('017 path=bin/k3s\n')],
    ['a record without =', Buffer.from('14 pathbin/k3\n')],
    [
      'a key set twice',
      paxRecords([
        ['mtime', '1'],
        ['mtime', '2'],
      ]),
    ],
    ['a time that is not one', paxRecords([['mtime', '-1']])],
    ['bytes after the last record', Buffer.concat([paxRecords([['mtime', '1']]), Buffer.from('x')])],
  ])('refuses pax records with %s', (_name, data) => {
    expect(refusal(() => parsePaxRecords(data, 'PaxHeader/x')).code).toBe('E_PACKAGE_CORRUPT');
  });

  it.each([
    ['N', 'old GNU long-names entry'],
    ['L', 'GNU long-name entry'],
    ['K', 'GNU long-link entry'],
    ['S', 'GNU sparse file'],
    ['M', 'GNU multi-volume continuation'],
    ['V', 'GNU volume label'],
    ['7', 'contiguous file'],
    ['Q', 'vendor extension entry (tar type Q)'],
    ['Z', 'vendor extension entry (tar type Z)'],
    ['9', 'entry of unknown type "9"'],
    ['a', 'entry of unknown type "a"'],
    ['[', 'entry of unknown type "["'],
  ])('refuses type %s by name', (typeflag, kind) => {
    const error = refusal(() => read([rawHeader({ name: 'bin/k3s', typeflag }), Buffer.alloc(1024)]));
    expect(error.code).toBe('E_PACKAGE_SPECIAL_FILE');
    expect(error.message).toContain(kind);
    expect(error.entry).toBe('bin/k3s');
    expect(error.details?.type).toBe(typeflag);
  });

  it('reads only types 0, NUL and 5 as entries: every other type byte is refused', () => {
    const accepted: string[] = [];
    for (let byte = 0; byte < 256; byte++) {
      const typeflag = String.fromCharCode(byte);
      if (typeflag === 'x') continue; // a pax header, not an entry: tested above
      try {
        read([rawHeader({ name: 'd/', typeflag }), Buffer.alloc(1024)]);
        accepted.push(typeflag);
      } catch (error) {
        if (!isPackageError(error)) throw error;
      }
    }
    expect(accepted).toEqual(['\u0000', '0', '5']);
  });

  it('refuses links with their own code, a pax header with nothing after it, and a lone zero block', () => {
    expect(
      refusal(() => read([rawHeader({ name: 'l', typeflag: '2', linkname: '/etc' }), Buffer.alloc(1024)])).code,
    ).toBe('E_PACKAGE_LINK');
    const pax = paxRecords([['mtime', '1']]);
    expect(
      refusal(() => read([rawHeader({ name: 'p', typeflag: 'x', size: pax.length }), blocks(pax), Buffer.alloc(1024)]))
        .message,
    ).toContain('followed by the end');
    expect(refusal(() => read([Buffer.alloc(512), rawHeader({ name: 'hidden' }), Buffer.alloc(1024)])).entry).toBe(
      'hidden',
    );
  });

  it('refuses a stream that ends inside an entry or without its end marker', () => {
    expect(refusal(() => read([rawHeader({ name: 'a', size: 10 })])).message).toContain('ends inside an entry');
    expect(refusal(() => read([rawHeader({ name: 'a' })])).message).toContain('end-of-archive marker');
  });
});

/** Pax records for one `path` whose whole header is exactly `total` bytes long. */
function paxPathOfLength(total: number): { data: Buffer; path: string } {
  const digits = String(total).length;
  const path = `bin/${'k'.repeat(total - digits - ' path=\n'.length - 'bin/'.length)}`;
  const data = paxRecords([['path', path]]);
  expect(data.length).toBe(total);
  return { data, path };
}

function chunked(archive: Buffer, size: number): Buffer[] {
  const chunks: Buffer[] = [];
  for (let at = 0; at < archive.length; at += size) chunks.push(archive.subarray(at, at + size));
  return chunks;
}

describe('StrictTarReader events, exactly', () => {
  it('reports each entry, its bytes and its end, and the end of the archive, nothing else', () => {
    const events = read([
      rawHeader({ name: 'a', size: 3 }),
      blocks(Buffer.from('abc')),
      rawHeader({ name: 'd/', typeflag: '5', mode: 0o755 }),
      Buffer.alloc(1024),
    ]);
    expect(events).toEqual([
      { kind: 'entry', entry: { path: 'a', kind: 'file', mode: 0o644, size: 3 } },
      { kind: 'data', bytes: Buffer.from('abc') },
      { kind: 'entryEnd' },
      { kind: 'entry', entry: { path: 'd/', kind: 'directory', mode: 0o755, size: 0 } },
      { kind: 'entryEnd' },
      { kind: 'end' },
    ]);
  });

  it('reads pax headers split anywhere: one a whole block long, one with padding', () => {
    const long = paxPathOfLength(512);
    const times = paxRecords([['mtime', '1714564800.123456789']]);
    const archive = Buffer.concat([
      paxEntry(long.data),
      rawHeader({ name: 'short', size: 2 }),
      blocks(Buffer.from('hi')),
      paxEntry(times),
      rawHeader({ name: 'timed' }),
      Buffer.alloc(1024),
    ]);
    for (const size of [1, 7, 100, 511, 513, 1000, archive.length]) {
      const entries = read(chunked(archive, size)).flatMap((e) => (e.kind === 'entry' ? [e.entry.path] : []));
      expect(entries, `chunks of ${size} bytes`).toEqual([long.path, 'timed']);
    }
  });

  it(`accepts a pax header of exactly ${MAX_PAX_HEADER_BYTES} bytes, the limit`, () => {
    const pax = paxPathOfLength(MAX_PAX_HEADER_BYTES);
    const events = read([paxEntry(pax.data), rawHeader({ name: 'x' }), Buffer.alloc(1024)]);
    expect(events[0]).toMatchObject({ kind: 'entry', entry: { path: pax.path } });
  });

  it(`accepts up to ${MAX_TRAILING_BYTES} bytes after the end marker, in the same chunk, and refuses one more`, () => {
    const reader = new StrictTarReader();
    const archive = Buffer.concat([rawHeader({ name: 'a' }), Buffer.alloc(1024), Buffer.alloc(MAX_TRAILING_BYTES)]);
    expect(reader.push(archive).at(-1)).toEqual({ kind: 'end' });
    expect(() => reader.finish()).not.toThrow();
    const error = refusal(() => reader.push(Buffer.from('x')));
    expect(error.code).toBe('E_PACKAGE_CORRUPT');
    expect(error.message).toBe(`there are more than ${MAX_TRAILING_BYTES} bytes after the end-of-archive marker`);
  });
});

describe('StrictTarReader refuses, naming why', () => {
  it('a stream cut inside a header, after a pax header, or after a whole entry without its end marker', () => {
    expect(refusal(() => read([rawHeader({ name: 'a' }).subarray(0, 100)])).message).toContain('ends inside an entry');
    expect(refusal(() => read([paxEntry(paxRecords([['mtime', '1']]))])).message).toContain('ends inside an entry');
    expect(refusal(() => read([rawHeader({ name: 'a', size: 3 }), blocks(Buffer.from('abc'))])).message).toContain(
      'without its end-of-archive marker',
    );
  });

  it('two pax headers in a row', () => {
    const pax = paxEntry(paxRecords([['mtime', '1']]));
    const error = refusal(() => read([pax, pax, rawHeader({ name: 'a' }), Buffer.alloc(1024)]));
    expect(error.code).toBe('E_PACKAGE_CORRUPT');
    expect(error.message).toBe('two pax extended headers in a row (at "PaxHeader/entry")');
  });

  it('a regular file that names a link target', () => {
    const error = refusal(() => read([rawHeader({ name: 'bin/k3s', linkname: 'bin/x' }), Buffer.alloc(1024)]));
    expect(error).toMatchObject({ code: 'E_PACKAGE_CORRUPT', entry: 'bin/k3s' });
    expect(error.message).toBe('entry "bin/k3s" names a link target but is not a link');
  });

  it('a directory with content', () => {
    const error = refusal(() =>
      read([rawHeader({ name: 'd/', typeflag: '5', size: 512 }), Buffer.alloc(512), Buffer.alloc(1024)]),
    );
    expect(error).toMatchObject({ code: 'E_PACKAGE_CORRUPT', entry: 'd/' });
    expect(error.message).toBe('directory entry "d/" declares 512 bytes of content');
  });

  it('a link, with its target in the details', () => {
    const error = refusal(() => read([rawHeader({ name: 'l', typeflag: '2', linkname: '/etc' }), Buffer.alloc(1024)]));
    expect(error.message).toContain('entry "l" is a symbolic link to "/etc"');
    expect(error.details).toMatchObject({ type: '2', linkpath: '/etc' });
  });
});

describe('parseHeader, field by field', () => {
  it('reads a name that fills its whole field, without a NUL', () => {
    expect(header({ name: 'a'.repeat(100) }).name).toBe('a'.repeat(100));
  });

  it.each([
    ['uname', 'root\u0000x'],
    ['uname', '\u0000x'],
    ['gname', 'root\u0000x'],
    ['linkname', '\u0000/etc'],
  ])('refuses bytes after the NUL ending %s %j, naming the entry', (field, text) => {
    const error = refusal(() => header({ [field]: Buffer.from(text, 'latin1') }));
    expect(error).toMatchObject({ code: 'E_PACKAGE_CORRUPT', entry: 'bin/k3s' });
    expect(error.message).toBe(`the ${field} field of entry "bin/k3s" has bytes after its terminating NUL`);
  });

  it('says which headers it reads when the magic is another', () => {
    const error = refusal(() => header({ magic: Buffer.alloc(8) }));
    expect(error.message).toContain('only POSIX ustar ("ustar\\u000000") and GNU ("ustar  \\u0000") headers are read');
    expect(error.message).toContain('disagree on whether other headers carry a name prefix');
  });

  it.each([
    ['a prefix-like name at its start', Buffer.from('bin', 'latin1')],
    ['one byte at its very end', Buffer.concat([Buffer.alloc(166), Buffer.from([1])])],
  ])('refuses a GNU header with %s in its extension area', (_name, extension) => {
    const error = refusal(() => header({ magic: GNU_MAGIC, name: 'k3s', extension }));
    expect(error.code).toBe('E_PACKAGE_CORRUPT');
    expect(error.message).toBe(
      'the GNU header of entry "k3s" uses its extension area (times, sparse map or volume offset)',
    );
  });

  it('refuses a ustar header with data in its padding, saying so', () => {
    const error = refusal(() => header({ extension: Buffer.concat([Buffer.alloc(155), Buffer.from('x')]) }));
    expect(error.message).toBe('the header of entry "bin/k3s" has data in its unused bytes');
  });

  it('names the field and the expected form of a bad number', () => {
    const size = refusal(() => header({ size: Buffer.from('zz'.padEnd(12, '\u0000'), 'latin1') }));
    expect(size.message).toContain('not an octal number with NUL or space terminators');
    expect(size.details).toMatchObject({ field: 'size' });
    const checksum = refusal(() => header({ checksum: Buffer.from('zzzzzz\u0000 ', 'latin1') }));
    expect(checksum.message).toContain(
      'the checksum field of entry "bin/k3s" is "zzzzzz\\u0000 ", not an octal number',
    );
    for (const field of ['uid', 'gid', 'mtime'] as const) {
      const error = refusal(() => header({ [field]: Buffer.from('zz\u0000', 'latin1') }));
      expect(error.message).toContain(`the ${field} field of entry "bin/k3s"`);
      expect(error.message).toContain('not a number (octal, zero or base-256)');
    }
    for (const field of ['devmajor', 'devminor'] as const) {
      const error = refusal(() => header({ [field]: Buffer.from('zz\u0000', 'latin1') }));
      expect(error.message).toContain(`the ${field} field of entry "bin/k3s"`);
      expect(error.message).toContain('not a number (octal or zero)');
    }
  });

  it('reads base-256 in uid, gid and mtime up to the largest safe integer, and refuses more', () => {
    const base256 = (length: number, value: bigint): Buffer => {
      const bytes = Buffer.alloc(length);
      for (let i = length - 1, rest = value; i > 0; i--, rest >>= 8n) bytes[i] = Number(rest & 0xffn);
      bytes[0] = 0x80;
      return bytes;
    };
    const large = BigInt(2 ** 50);
    const safe = BigInt(Number.MAX_SAFE_INTEGER);
    expect(() => header({ uid: base256(8, large), gid: base256(8, large), mtime: base256(12, safe) })).not.toThrow();
    for (const field of ['uid', 'gid'] as const) {
      expect(refusal(() => header({ [field]: base256(8, safe + 1n) })).details).toMatchObject({ field });
    }
    expect(refusal(() => header({ mtime: base256(12, 2n ** 80n) })).details).toMatchObject({ field: 'mtime' });
  });

  it('refuses a uid that starts like base-256 but is not (a non-0x80 first byte)', () => {
    expect(refusal(() => header({ uid: Buffer.from('z'.padEnd(8, '\u0000'), 'latin1') })).details).toMatchObject({
      field: 'uid',
    });
  });

  it('sums exactly one block for the checksum, even when handed a longer buffer', () => {
    const block = rawHeader({ name: 'bin/k3s' });
    const longer = Buffer.concat([block, Buffer.from([0xff])]);
    expect(headerChecksum(longer)).toBe(headerChecksum(block));
    expect(headerChecksum(block)).toBe(Number.parseInt(block.subarray(148, 154).toString('latin1'), 8));
  });
});

describe('parsePaxRecords, message by message', () => {
  const why = (data: Buffer): string => refusal(() => parsePaxRecords(data, 'PaxHeader/x')).message;
  const malformed = 'the pax extended header "PaxHeader/x" is malformed: ';

  it.each([
    ['no space after the length', '17', 'a record does not start with its length'],
    ['a length followed by a letter', '9x path=a\n', 'a record does not start with its length'],
    ['a length short of the newline', '10 mtime=1x\n', 'a record length does not match its content'],
    ['no = in the record', '14 pathbin/k3\n', 'a record has no key'],
    ['an empty key', '7 =abc\n', 'a record has no key'],
    ['a time with letters after it', '15 mtime=12abc\n', 'mtime="12abc" is not a time in seconds'],
    ['a key set twice', '11 mtime=1\n11 mtime=2\n', 'mtime is set twice'],
  ])('%s', (_name, text, reason) => {
    expect(why(Buffer.from(text, 'latin1'))).toBe(`${malformed}${reason}`);
  });

  it('names the keys it allows when it refuses another', () => {
    expect(why(paxRecords([['size', '1']]))).toBe(
      'the pax extended header "PaxHeader/x" sets "size"; packages may set only path, mtime, atime, ctime, because tar readers use other keys to rename, resize or re-type a file',
    );
  });

  it('reads times with up to nine decimals', () => {
    expect(parsePaxRecords(paxRecords([['mtime', '1714564800.123456789']]), 'p').get('mtime')).toBe(
      '1714564800.123456789',
    );
  });
});
