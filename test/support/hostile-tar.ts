/**
 * Hostile tar archives built byte by byte, and a seeded generator of them,
 * for the differential tests of `package verify` against GNU tar.
 *
 * {@link rawHeader} writes any 512-byte header a tar writer (or an attacker)
 * could: every field is raw bytes, so type flags, magic and version, prefix,
 * numeric encodings (octal, base-256, leading spaces or NULs, garbage) and the
 * checksum can all be set at will. {@link ISSUE_TRICKS} are the three ways
 * found to make GNU tar write other bytes into `bin/k3s` than the ones
 * verified; {@link generateHostileArchive} mixes their families at random,
 * from a seed, so a failure can be replayed.
 */
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { renderManifest, type PackageManifest } from '../../src/packages/manifest.js';

const BLOCK = 512;

/** The good bytes the manifest lists for bin/k3s, and the bytes an attack tries to install instead. */
export const GOOD_K3S = Buffer.from('#!/bin/sh\necho the verified k3s\n');
export const EVIL_K3S = Buffer.from('#!/bin/sh\necho owned\n');
export const GOOD_NOTES = Buffer.from('release notes\n');
const CREATED_AT = '2024-05-01T12:00:00.000Z';
const MTIME = Math.floor(Date.parse(CREATED_AT) / 1000);

/** Raw header fields; strings are written as Latin-1 bytes, numbers as canonical octal. */
export interface RawHeaderFields {
  name?: string | Buffer;
  mode?: number | Buffer;
  uid?: number | Buffer;
  gid?: number | Buffer;
  size?: number | Buffer;
  mtime?: number | Buffer;
  /** Computed unless given. */
  checksum?: Buffer | undefined;
  /** One character (`0`, `5`, `x`, `N`, …). */
  typeflag?: string;
  linkname?: string | Buffer | undefined;
  /** 8 bytes: magic and version. Defaults to POSIX `ustar\0` `00`. */
  magic?: Buffer;
  uname?: string | Buffer;
  gname?: string | Buffer;
  devmajor?: number | Buffer;
  devminor?: number | Buffer;
  prefix?: string | Buffer;
  /** Raw bytes written at offset 345 over the prefix and padding area (GNU extension fields). */
  extension?: Buffer;
}

export const USTAR_MAGIC = Buffer.from('ustar\u000000', 'latin1');
export const GNU_MAGIC = Buffer.from('ustar  \u0000', 'latin1');

/** Canonical octal: zero-padded digits and a NUL, filling the field. */
export function octal(value: number, length: number): Buffer {
  return Buffer.from(`${value.toString(8).padStart(length - 1, '0')}\u0000`, 'latin1');
}

function put(block: Buffer, offset: number, length: number, value: string | Buffer | number | undefined): void {
  if (value === undefined) return;
  const bytes = typeof value === 'number' ? octal(value, length) : Buffer.from(value as string, 'latin1');
  bytes.copy(block, offset, 0, Math.min(length, bytes.length));
}

/** One 512-byte header, with a correct checksum unless `checksum` is given. */
export function rawHeader(fields: RawHeaderFields): Buffer {
  const block = Buffer.alloc(BLOCK);
  put(block, 0, 100, fields.name ?? '');
  put(block, 100, 8, fields.mode ?? 0o644);
  put(block, 108, 8, fields.uid ?? 0);
  put(block, 116, 8, fields.gid ?? 0);
  put(block, 124, 12, fields.size ?? 0);
  put(block, 136, 12, fields.mtime ?? MTIME);
  block.write(fields.typeflag ?? '0', 156, 1, 'latin1');
  put(block, 157, 100, fields.linkname);
  (fields.magic ?? USTAR_MAGIC).copy(block, 257, 0, 8);
  put(block, 265, 32, fields.uname ?? 'root');
  put(block, 297, 32, fields.gname ?? 'root');
  put(block, 329, 8, fields.devmajor ?? 0);
  put(block, 337, 8, fields.devminor ?? 0);
  put(block, 345, 155, fields.prefix);
  if (fields.extension) fields.extension.copy(block, 345, 0, Math.min(167, fields.extension.length));
  if (fields.checksum) {
    fields.checksum.copy(block, 148, 0, 8);
  } else {
    block.fill(0x20, 148, 156);
    let sum = 0;
    for (const byte of block) sum += byte;
    Buffer.from(`${sum.toString(8).padStart(6, '0')}\u0000 `, 'latin1').copy(block, 148);
  }
  return block;
}

/** Content padded to whole blocks. */
export function blocks(content: Buffer): Buffer {
  return Buffer.concat([content, Buffer.alloc((BLOCK - (content.length % BLOCK)) % BLOCK)]);
}

/** A file entry: header and padded content. */
export function fileEntry(name: string, content: Buffer, fields: RawHeaderFields = {}): Buffer {
  return Buffer.concat([rawHeader({ name, size: content.length, ...fields }), blocks(content)]);
}

/** Pax records, each `"<len> key=value\n"` with the length computed. */
export function paxRecords(records: Array<[string, string | Buffer]>): Buffer {
  return Buffer.concat(
    records.map(([key, value]) => {
      const body = Buffer.concat([
        Buffer.from(` ${key}=`, 'latin1'),
        Buffer.from(value as string, 'latin1'),
        Buffer.from('\n'),
      ]);
      let length = body.length + 1;
      while (String(length).length + body.length !== length) length = String(length).length + body.length;
      return Buffer.concat([Buffer.from(String(length), 'latin1'), body]);
    }),
  );
}

/** A pax header entry (`x`, or `g` when global) holding `data`. */
export function paxEntry(data: Buffer, options: { global?: boolean; fields?: RawHeaderFields } = {}): Buffer {
  return Buffer.concat([
    rawHeader({ name: 'PaxHeader/entry', typeflag: options.global ? 'g' : 'x', size: data.length, ...options.fields }),
    blocks(data),
  ]);
}

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

/**
 * The manifest every hostile archive carries: bin/k3s with the good bytes,
 * and decoys (a second file, listed honestly under the name a lenient reader
 * sees, that GNU tar reads under another name).
 */
export function hostileManifest(decoys: Array<{ path: string; content: Buffer; mode: string }> = []): PackageManifest {
  const files = [{ path: 'bin/k3s', sha256: sha256(GOOD_K3S), size: GOOD_K3S.length, mode: '0755' }];
  for (const decoy of decoys) {
    files.push({ path: decoy.path, sha256: sha256(decoy.content), size: decoy.content.length, mode: decoy.mode });
  }
  return {
    formatVersion: 1,
    name: 'hostile',
    distribution: 'k3s',
    kubernetesVersion: 'v1.30.4',
    arch: 'amd64',
    createdAt: CREATED_AT,
    files: files.sort((a, b) => (a.path < b.path ? -1 : 1)),
  };
}

/** The manifest entry, mode 0644 as edgeadm writes it. */
export function manifestEntryBytes(manifest: PackageManifest): Buffer {
  return fileEntry('manifest.json', renderManifest(manifest));
}

const END = Buffer.alloc(2 * BLOCK);

/** The three tricks of the issue: each verified by edgeadm before, each installs EVIL_K3S with GNU tar. */
export const ISSUE_TRICKS: Record<string, () => Buffer> = {
  /** An entry of type N named bin/k3s after the real one: metadata to one reader, a file to GNU tar. */
  'type N duplicate of bin/k3s': () =>
    gzipSync(
      Buffer.concat([
        manifestEntryBytes(hostileManifest()),
        fileEntry('bin/k3s', GOOD_K3S, { mode: 0o755 }),
        fileEntry('bin/k3s', EVIL_K3S, { mode: 0o755, typeflag: 'N' }),
        END,
      ]),
    ),
  /** A pax GNU.sparse.name on an entry named notes: GNU tar renames it to bin/k3s. */
  'pax GNU.sparse.name=bin/k3s on entry notes': () => {
    const manifest = hostileManifest([{ path: 'notes', content: EVIL_K3S, mode: '0755' }]);
    return gzipSync(
      Buffer.concat([
        manifestEntryBytes(manifest),
        fileEntry('bin/k3s', GOOD_K3S, { mode: 0o755 }),
        paxEntry(paxRecords([['GNU.sparse.name', 'bin/k3s']])),
        fileEntry('notes', EVIL_K3S, { mode: 0o755 }),
        END,
      ]),
    );
  },
  /** A ustar header with version "xx", prefix bin and name k3s: GNU tar reads bin/k3s, a version-strict reader k3s. */
  'ustar version other than 00 with prefix bin and name k3s': () =>
    gzipSync(
      Buffer.concat([
        manifestEntryBytes(hostileManifest([{ path: 'k3s', content: EVIL_K3S, mode: '0755' }])),
        fileEntry('bin/k3s', GOOD_K3S, { mode: 0o755 }),
        fileEntry('k3s', EVIL_K3S, { mode: 0o755, prefix: 'bin', magic: Buffer.from('ustar\u0000xx', 'latin1') }),
        END,
      ]),
    ),
};

/** A small seeded PRNG (mulberry32): the same seed gives the same archives everywhere. */
export function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One generated archive and how it was made (for the failure message). */
export interface HostileArchive {
  seed: number;
  /** The mutations applied, in words. */
  steps: string[];
  /** The gzip-compressed archive. */
  gzip: Buffer;
  /** What the manifest lists. */
  manifest: PackageManifest;
}

const TYPE_FLAGS = [
  '0',
  '\u0000',
  '1',
  '2',
  '3',
  '4',
  '5',
  '6',
  '7',
  'x',
  'g',
  'L',
  'K',
  'N',
  'S',
  'M',
  'V',
  'D',
  'A',
  'E',
  'I',
  'X',
];
const NAMES = [
  'bin/k3s',
  'notes',
  'k3s',
  'bin',
  'bin/',
  './bin/k3s',
  '././bin/k3s',
  'bin//k3s',
  'bin/k3s/',
  '/bin/k3s',
  '../bin/k3s',
  'bin/./k3s',
  'bin/k3s\u0000x',
  './',
  '.',
  'notes/',
  'bin/k3s ',
  'BIN/k3s',
  'bin/k3s.new',
  'extra',
];
const PAX_KEYS = [
  'path',
  'mtime',
  'atime',
  'ctime',
  'size',
  'linkpath',
  'uid',
  'gid',
  'uname',
  'gname',
  'comment',
  'charset',
  'hdrcharset',
  'GNU.sparse.name',
  'GNU.sparse.size',
  'GNU.sparse.realsize',
  'GNU.sparse.major',
  'GNU.sparse.minor',
  'GNU.sparse.map',
  'GNU.sparse.numblocks',
  'GNU.sparse.offset',
  'GNU.sparse.numbytes',
  'GNU.dumpdir',
  'GNU.volume.label',
  'GNU.volume.offset',
  'GNU.volume.size',
  'GNU.volume.filename',
  'SCHILY.xattr.security.capability',
  'SCHILY.devmajor',
  'LIBARCHIVE.xattr.user.x',
];
const PAX_VALUES = [
  'bin/k3s',
  'notes',
  './bin/k3s',
  '0',
  '1',
  '22',
  '1714564800',
  '1714564800.5',
  '-1',
  'x',
  '0,22',
  '',
];
const MAGICS = [
  USTAR_MAGIC,
  GNU_MAGIC,
  Buffer.from('ustar\u0000xx', 'latin1'),
  Buffer.from('ustar\u0000\u0000\u0000', 'latin1'),
  Buffer.from('ustar\u0000 \u0000', 'latin1'),
  Buffer.from('ustar\u000001', 'latin1'),
  Buffer.from('ustar \u000000', 'latin1'),
  Buffer.alloc(8),
];

/** Encodings of a number in a numeric field of `length` bytes: valid ones and every kind of garbage. */
function numericVariants(value: number, length: number): Array<[string, Buffer]> {
  const digits = value.toString(8);
  const base256 = Buffer.alloc(length);
  base256[0] = 0x80;
  base256.writeUIntBE(value, length - 6, 6);
  const variants: Array<[string, string]> = [
    ['octal NUL', `${digits.padStart(length - 1, '0')}\u0000`],
    ['octal space NUL', `${digits.padStart(length - 2, '0')} \u0000`],
    ['octal space', `${digits.padStart(length - 1, '0')} `],
    ['short octal NUL padded', `${digits}\u0000`.padEnd(length, '\u0000')],
    ['leading spaces', `${digits}\u0000`.padStart(length, ' ')],
    ['leading NUL', `\u0000${digits.padStart(length - 2, '0')}\u0000`],
    ['no terminator', digits.padStart(length, '0')],
    ['digits after terminator', `${digits} 7`.padEnd(length, '\u0000')],
    ['non-octal digit', `${digits.padStart(length - 2, '0')}8\u0000`],
    ['garbage', 'zz'.padEnd(length, '\u0000')],
    ['empty', ''.padEnd(length, '\u0000')],
    ['plus base-64', `+${digits}`.padEnd(length, '\u0000')],
  ];
  return [
    ...variants.map(([name, text]): [string, Buffer] => [name, Buffer.from(text.slice(0, length), 'latin1')]),
    ['base-256', base256],
    ['negative base-256', Buffer.alloc(length, 0xff)],
  ];
}

/**
 * A hostile archive from `seed`: the manifest, the good bin/k3s (and notes),
 * then one to three mutations drawn from the families of the issue's tricks.
 * Many are harmless (and must be accepted: the test checks that GNU tar then
 * writes exactly the manifest's files); the rest must be refused.
 */
export function generateHostileArchive(seed: number): HostileArchive {
  const random = prng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const chance = (p: number): boolean => random() < p;
  // The second file: honest release notes, or a decoy listed with the evil
  // bytes under a name that a trick may turn into bin/k3s.
  const second = pick([
    undefined,
    { path: 'notes', content: GOOD_NOTES, mode: '0644' },
    { path: 'notes', content: EVIL_K3S, mode: '0755' },
    { path: 'k3s', content: EVIL_K3S, mode: '0755' },
  ]);
  // Half the archives draw only from the variants that look valid, so that
  // enough of them are accepted for GNU tar to be tested on them.
  const isMostlyValid = chance(0.5);
  const pickValid = <T>(valid: readonly T[], all: readonly T[]): T => pick(isMostlyValid ? valid : all);
  const manifest = hostileManifest(second ? [second] : []);
  const steps: string[] = [];
  type Entry = { fields: RawHeaderFields; content: Buffer; pax?: Buffer; before?: Buffer };
  const entries: Entry[] = [{ fields: { name: 'manifest.json' }, content: renderManifest(manifest) }];
  const good: Entry[] = [{ fields: { name: 'bin/k3s', mode: 0o755 }, content: GOOD_K3S }];
  if (second)
    good.push({ fields: { name: second.path, mode: Number.parseInt(second.mode, 8) }, content: second.content });
  if (chance(0.3)) {
    const mode = pick([0o755, 0o700, 0o777, 0o2755]);
    const name = pick(['bin/', 'bin', './bin/']);
    good.unshift({ fields: { name, typeflag: '5', mode }, content: Buffer.alloc(0) });
    steps.push(`directory entry ${JSON.stringify(name)} mode ${mode.toString(8)}`);
  }
  entries.push(...good);
  let tail = END;

  const mutations = 1 + Math.floor(random() * 3);
  for (let m = 0; m < mutations; m++) {
    const family = pickValid(
      ['pax', 'magic', 'prefix', 'numeric', 'numeric', 'harmless', 'name', 'zero block'],
      [
        'extra entry',
        'extra entry',
        'pax',
        'pax',
        'magic',
        'prefix',
        'numeric',
        'numeric',
        'name',
        'gnu long name',
        'zero block',
        'link',
        'gnu extension area',
        'harmless',
      ],
    );
    const target = pick(entries.slice(1));
    switch (family) {
      case 'extra entry': {
        // Every type byte can come up, the known ones more often.
        const typeflag = chance(0.3) ? String.fromCharCode(Math.floor(random() * 256)) : pick(TYPE_FLAGS);
        const name = pick(NAMES);
        const content = pick([EVIL_K3S, GOOD_K3S, Buffer.alloc(0), GOOD_NOTES]);
        const mode = pick([0o755, 0o644, 0o4755]);
        entries.push({
          fields: { name, typeflag, mode, linkname: typeflag === '1' || typeflag === '2' ? 'bin/k3s' : undefined },
          content: typeflag === '5' ? Buffer.alloc(0) : content,
        });
        steps.push(
          `extra entry type ${JSON.stringify(typeflag)} ${JSON.stringify(name)} (${content.length} bytes, mode ${mode.toString(8)})`,
        );
        break;
      }
      case 'pax': {
        const count = 1 + Math.floor(random() * 3);
        const records: Array<[string, string]> = [];
        for (let i = 0; i < count; i++) {
          const key = chance(0.5) ? pick(['path', 'mtime', 'atime', 'ctime']) : pickValid(['mtime'], PAX_KEYS);
          const value =
            key.endsWith('time') && (isMostlyValid || chance(0.7))
              ? pick(['1714564800', '1714564800.123456789'])
              : key === 'path' && isMostlyValid
                ? String(target.fields.name)
                : pick(PAX_VALUES);
          if (!records.some(([k]) => k === key) || !isMostlyValid) records.push([key, value]);
        }
        const onto =
          isMostlyValid || chance(0.5) ? target : { fields: { name: pick(NAMES), mode: 0o755 }, content: EVIL_K3S };
        if (onto !== target) entries.push(onto);
        onto.pax = paxRecords(records);
        const global = !isMostlyValid && chance(0.15);
        if (global) onto.before = paxEntry(onto.pax, { global: true });
        if (global) delete onto.pax;
        steps.push(`${global ? 'global ' : ''}pax ${JSON.stringify(records)} on ${JSON.stringify(onto.fields.name)}`);
        break;
      }
      case 'magic': {
        const magic = pickValid([USTAR_MAGIC, GNU_MAGIC], MAGICS);
        target.fields.magic = magic;
        steps.push(`magic ${JSON.stringify(magic.toString('latin1'))} on ${JSON.stringify(target.fields.name)}`);
        break;
      }
      case 'prefix': {
        const name = target.fields.name as string;
        const slash = name.lastIndexOf('/');
        const [prefix, rest] =
          chance(0.5) && slash > 0
            ? [name.slice(0, slash), name.slice(slash + 1)]
            : [pick(['bin', 'x', '', './bin', 'bin/']), pick(['k3s', 'notes'])];
        target.fields.prefix = prefix;
        target.fields.name = rest;
        if (chance(0.4)) target.fields.magic = pick(MAGICS);
        steps.push(
          `prefix ${JSON.stringify(prefix)} name ${JSON.stringify(rest)} magic ${JSON.stringify((target.fields.magic ?? USTAR_MAGIC).toString('latin1'))}`,
        );
        break;
      }
      case 'numeric': {
        const mode = typeof target.fields.mode === 'number' ? target.fields.mode : 0o644;
        const [field, length, value] = pick([
          ['size', 12, target.content.length],
          ['mode', 8, mode],
          ['mtime', 12, MTIME],
          ['uid', 8, 0],
          ['gid', 8, 0],
          ['devmajor', 8, 0],
          ['checksum', 8, -1],
        ] as const);
        if (field === 'checksum') {
          const kind = pick(['zero', 'garbage', 'off by one']);
          target.fields.checksum =
            kind === 'zero'
              ? Buffer.from('0000000\u0000')
              : kind === 'garbage'
                ? Buffer.from('zzzzzz\u0000 ')
                : undefined;
          if (kind === 'off by one') target.fields.uname = 'rooT';
          if (kind === 'off by one') target.fields.checksum = Buffer.alloc(0);
          steps.push(`checksum ${kind} on ${JSON.stringify(target.fields.name)}`);
          break;
        }
        const variants = numericVariants(value, length);
        const [variant, bytes] = pickValid(variants.slice(0, 5), variants);
        (target.fields as Record<string, unknown>)[field] = bytes;
        steps.push(`${field} as ${variant} on ${JSON.stringify(target.fields.name)}`);
        break;
      }
      case 'name': {
        const name = pickValid(['./bin/k3s', String(target.fields.name), 'bin/k3s/'], NAMES);
        steps.push(`rename ${JSON.stringify(target.fields.name)} to ${JSON.stringify(name)}`);
        target.fields.name = name;
        break;
      }
      case 'gnu long name': {
        const type = pick(['L', 'K', 'N']);
        const longName = Buffer.from(`${pick(NAMES)}\u0000`, 'latin1');
        const onto = chance(0.5) ? target : { fields: { name: 'notes', mode: 0o755 }, content: EVIL_K3S };
        if (onto !== target) entries.push(onto);
        onto.before = Buffer.concat([
          rawHeader({ name: '././@LongLink', typeflag: type, size: longName.length, magic: GNU_MAGIC }),
          blocks(longName),
        ]);
        steps.push(
          `GNU ${type} ${JSON.stringify(longName.toString('latin1'))} before ${JSON.stringify(onto.fields.name)}`,
        );
        break;
      }
      case 'zero block': {
        const where = pickValid(
          ['garbage after end', 'extra entry after end'],
          ['before an entry', 'lone at end', 'none at end', 'extra entry after end', 'garbage after end'],
        );
        if (where === 'before an entry')
          target.before = Buffer.concat([Buffer.alloc(BLOCK), target.before ?? Buffer.alloc(0)]);
        if (where === 'lone at end') tail = Buffer.alloc(BLOCK);
        if (where === 'none at end') tail = Buffer.alloc(0);
        if (where === 'extra entry after end')
          tail = Buffer.concat([END, fileEntry('bin/k3s', EVIL_K3S, { mode: 0o755 }), END]);
        if (where === 'garbage after end') tail = Buffer.concat([END, Buffer.from('garbage')]);
        steps.push(`zero blocks: ${where}`);
        break;
      }
      case 'link': {
        const type = pick(['1', '2']);
        entries.push({
          fields: {
            name: pick(NAMES),
            typeflag: type,
            linkname: pick(['bin/k3s', '/etc/shadow', 'notes']),
            mode: 0o777,
          },
          content: Buffer.alloc(0),
        });
        steps.push(`link type ${type}`);
        break;
      }
      case 'gnu extension area': {
        const extension = Buffer.alloc(167);
        const at = pick([0, 12, 24, 36, 41, 141, 142, 155]);
        extension.write(pick(['00000000001\u0000', '\u0001', '00000001000\u0000']), at, 'latin1');
        target.fields.magic = GNU_MAGIC;
        target.fields.extension = extension;
        steps.push(`GNU header with extension data at +${at} on ${JSON.stringify(target.fields.name)}`);
        break;
      }
      case 'harmless': {
        target.fields.uname = pick(['', 'nobody', 'root']);
        target.fields.mtime = pick([0, MTIME, 0o77777777777]);
        steps.push(`harmless owner/time change on ${JSON.stringify(target.fields.name)}`);
        break;
      }
    }
  }

  const parts: Buffer[] = [];
  for (const entry of entries) {
    if (entry.before) parts.push(entry.before);
    if (entry.pax) parts.push(paxEntry(entry.pax));
    const fields = { ...entry.fields };
    if (fields.checksum?.length === 0) {
      // "Off by one": compute the checksum for one header, then change a byte.
      const block = rawHeader({ ...fields, checksum: undefined, uname: 'root' });
      block.write('rooT', 265, 'latin1');
      parts.push(block, blocks(entry.content));
      continue;
    }
    if (fields.size === undefined) fields.size = entry.content.length;
    parts.push(rawHeader(fields), blocks(entry.content));
  }
  parts.push(tail);
  return { seed, steps, gzip: gzipSync(Buffer.concat(parts)), manifest };
}
