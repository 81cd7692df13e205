/**
 * The strict tar reader on single headers and records, byte by byte: what it
 * reads, and each ambiguity it refuses, with the entry named. (Whole archives
 * against GNU tar: test/integration/packages/gnu-tar-differential.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { isPackageError } from '../../../src/packages/errors.js';
import { parseHeader, parsePaxRecords, StrictTarReader, type TarEvent } from '../../../src/packages/tar-reader.js';
import { blocks, GNU_MAGIC, paxRecords, rawHeader, type RawHeaderFields } from '../../support/hostile-tar.js';

function refusal(action: () => unknown): { code: string; message: string; entry: string | undefined } {
  try {
    action();
  } catch (error) {
    if (isPackageError(error)) return { code: error.code, message: error.message, entry: error.entry };
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
    ['a record without =', Buffer.from('13 pathbin/k3\n')],
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
    ['Q', 'vendor extension entry'],
    ['9', 'entry of unknown type'],
  ])('refuses type %s by name', (typeflag, kind) => {
    const error = refusal(() => read([rawHeader({ name: 'bin/k3s', typeflag }), Buffer.alloc(1024)]));
    expect(error.code).toBe('E_PACKAGE_SPECIAL_FILE');
    expect(error.message).toContain(kind);
    expect(error.entry).toBe('bin/k3s');
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
