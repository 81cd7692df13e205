/**
 * Install packages for tests: good ones built by edgeadm itself, and bad ones
 * crafted byte by byte with the `tar` package's header encoder, the way an
 * attacker or a broken tool would make them (`../x`, `/etc/passwd`, a
 * symlink to `/etc`, a hard link to `/etc/shadow`, a device, duplicates, a
 * flipped byte, truncation, a missing manifest, a huge declared size, …).
 *
 * {@link MALICIOUS_PACKAGES} is the catalogue: each case says which error
 * code and entry name verification must report, so unit and CLI tests check
 * the same list.
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { Header, Pax, type types } from 'tar';
import { buildPackage, type BuiltPackage } from '../../src/packages/build.js';
import type { PackageErrorCodeValue } from '../../src/packages/errors.js';
import { renderManifest, type PackageFile, type PackageManifest } from '../../src/packages/manifest.js';
import { fileEntry, ISSUE_TRICKS, manifestEntryBytes } from './hostile-tar.js';

/** The creation time of fixture packages: fixed, so builds are reproducible. */
export const FIXTURE_CREATED_AT = new Date('2024-05-01T12:00:00Z');
/** Marks the content of the fixture k3s binary, so a test can find it inside the tar stream. */
export const K3S_MARKER = 'EDGEADM-FIXTURE-K3S-BINARY';

/** Deterministic bytes that do not compress away (so archives are realistic in size). */
export function fixtureBytes(seed: string, length: number): Buffer {
  const out = Buffer.alloc(length);
  let block = createHash('sha256').update(seed).digest();
  for (let offset = 0; offset < length; offset += block.length) {
    block.copy(out, offset);
    block = createHash('sha256').update(block).digest();
  }
  return out;
}

/** A file of a fixture source directory. */
export interface SourceFileSpec {
  content: Buffer;
  mode: number;
}

/**
 * The first bytes of an amd64 ELF executable (class 64-bit, little-endian,
 * type EXEC, machine x86-64): what `package build` reads to check that a
 * file under bin/ runs on the package's architecture.
 */
export const FIXTURE_ELF_AMD64_HEAD = Buffer.from([
  0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x01, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x00, 0x3e, 0x00,
]);

/** The default source tree: what a small k3s package looks like. */
export function defaultSourceFiles(): Record<string, SourceFileSpec> {
  return {
    'bin/k3s': {
      content: Buffer.concat([FIXTURE_ELF_AMD64_HEAD, Buffer.from(K3S_MARKER), fixtureBytes('k3s', 200_000)]),
      mode: 0o755,
    },
    'images/k3s-airgap-images-amd64.tar.zst': { content: fixtureBytes('images', 300_000), mode: 0o644 },
    'assets/k3s.service': { content: Buffer.from('[Unit]\nDescription=k3s\n'), mode: 0o644 },
    'cni/bridge': { content: fixtureBytes('cni', 5_000), mode: 0o755 },
  };
}

/** Writes a source directory for `package build`. */
export async function writeSourceDir(dir: string, files = defaultSourceFiles()): Promise<string> {
  for (const [path, spec] of Object.entries(files)) {
    const absolute = join(dir, ...path.split('/'));
    await mkdir(dirname(absolute), { recursive: true });
    await writeFile(absolute, spec.content, { mode: spec.mode });
  }
  return dir;
}

/** Builds a good package with edgeadm from the default source tree (or `files`). */
export async function buildFixturePackage(
  workDir: string,
  options: { name?: string; files?: Record<string, SourceFileSpec> } = {},
): Promise<BuiltPackage & { sourceDir: string }> {
  const sourceDir = await writeSourceDir(join(workDir, `src-${options.name ?? 'pkg'}`), options.files);
  const built = await buildPackage({
    from: sourceDir,
    distribution: 'k3s',
    kubernetesVersion: 'v1.30.4',
    arch: 'amd64',
    output: join(workDir, `${options.name ?? 'pkg'}.tar.gz`),
    createdAt: FIXTURE_CREATED_AT,
  });
  return { ...built, sourceDir };
}

/** One entry of a hand-made tar stream. Anything a header can say can be said here. */
export interface RawEntry {
  path: string;
  /** A tar type name (`File`, `SymbolicLink`, `CharacterDevice`, …) or a raw one-character type flag. */
  type?: types.EntryTypeName | types.EntryTypeCode;
  content?: Buffer;
  /** Size written in the header; defaults to the content length. Larger with no content = a lying header. */
  declaredSize?: number;
  mode?: number;
  linkpath?: string;
  devmaj?: number;
  devmin?: number;
  /** A pax extended header (`x`) before this entry, with these records. */
  pax?: { path?: string };
  /** A global pax header (`g`) before this entry. */
  globalPax?: { comment?: string };
  /** Write a wrong header checksum. */
  badChecksum?: boolean;
  /** A single zero block before this entry. */
  zeroBlockBefore?: boolean;
}

/** Raw tar bytes for `entries`, ended by the two zero blocks unless told otherwise. */
export function tarBytes(entries: RawEntry[], options: { endMarker?: boolean; trailing?: Buffer } = {}): Buffer {
  const parts: Buffer[] = [];
  for (const entry of entries) {
    if (entry.zeroBlockBefore) parts.push(Buffer.alloc(512));
    if (entry.globalPax) parts.push(new Pax({ comment: entry.globalPax.comment ?? 'x' }, true).encode());
    if (entry.pax) parts.push(new Pax(entry.pax.path === undefined ? {} : { path: entry.pax.path }).encode());
    const content = entry.content ?? Buffer.alloc(0);
    const block = Buffer.alloc(512);
    const header = new Header({
      path: entry.path,
      mode: entry.mode ?? 0o644,
      uid: 0,
      gid: 0,
      size: entry.declaredSize ?? content.length,
      mtime: FIXTURE_CREATED_AT,
      linkpath: entry.linkpath ?? '',
      devmaj: entry.devmaj ?? 0,
      devmin: entry.devmin ?? 0,
    });
    // The setter takes type names and raw one-character flags alike.
    header.type = entry.type ?? 'File';
    header.encode(block);
    if (entry.badChecksum) block.write('0000001\0', 148, 'ascii');
    parts.push(block, content, Buffer.alloc((512 - (content.length % 512)) % 512));
  }
  if (options.endMarker ?? true) parts.push(Buffer.alloc(1024));
  if (options.trailing) parts.push(options.trailing);
  return Buffer.concat(parts);
}

/** A manifest listing these files with their real checksums. */
export function manifestFor(files: Array<{ path: string; content: Buffer; mode?: number }>): PackageManifest {
  return {
    formatVersion: 1,
    name: 'crafted',
    distribution: 'k3s',
    kubernetesVersion: 'v1.30.4',
    arch: 'amd64',
    createdAt: FIXTURE_CREATED_AT.toISOString(),
    files: files.map((file): PackageFile => ({
      path: file.path,
      sha256: createHash('sha256').update(file.content).digest('hex'),
      size: file.content.length,
      mode: `0${(file.mode ?? 0o644).toString(8).padStart(3, '0')}`,
    })),
  };
}

/** The manifest entry for a manifest (or raw bytes, for malformed ones). */
export function manifestEntry(manifest: PackageManifest | Buffer): RawEntry {
  return { path: 'manifest.json', content: Buffer.isBuffer(manifest) ? manifest : renderManifest(manifest) };
}

/** Two ordinary files that most crafted packages carry, listed in their manifest. */
export const GOOD_FILES = [
  { path: 'bin/k3s', content: Buffer.from('#!/bin/sh\necho k3s\n'), mode: 0o755 },
  { path: 'assets/k3s.service', content: Buffer.from('[Unit]\n'), mode: 0o644 },
];

function goodEntries(): RawEntry[] {
  return GOOD_FILES.map((file) => ({ path: file.path, content: file.content, mode: file.mode }));
}

/** Writes a crafted archive, gzip-compressed. */
export async function writeCrafted(file: string, tar: Buffer): Promise<string> {
  await writeFile(file, gzipSync(tar));
  return file;
}

/** A malicious or broken package and what verification must say about it. */
export interface MaliciousPackage {
  /** Test name. */
  name: string;
  /** The error code verification must report. */
  code: PackageErrorCodeValue;
  /** The entry name the error must carry (undefined: the error concerns the whole stream). */
  entry: string | undefined;
  /** Writes the package into `dir` and returns its path. */
  make(dir: string): Promise<string>;
}

/** A crafted package of the good files plus `extra` entries, whose manifest lists the good files (and `listed`). */
function crafted(
  fileName: string,
  extra: RawEntry[],
  options: { listed?: Array<{ path: string; content: Buffer; mode?: number }> } = {},
) {
  return (dir: string) =>
    writeCrafted(
      join(dir, fileName),
      tarBytes([manifestEntry(manifestFor([...GOOD_FILES, ...(options.listed ?? [])])), ...goodEntries(), ...extra]),
    );
}

const payload = Buffer.from('owned\n');

/** Every way a package must be refused, with the code and entry the refusal names. */
export const MALICIOUS_PACKAGES: MaliciousPackage[] = [
  {
    name: 'an entry ../x',
    code: 'E_PACKAGE_UNSAFE_PATH',
    entry: '../x',
    make: crafted('dotdot.tar.gz', [{ path: '../x', content: payload }]),
  },
  {
    name: 'an entry ../x that the manifest lists too',
    code: 'E_PACKAGE_UNSAFE_PATH',
    entry: '../x',
    make: crafted('dotdot-listed.tar.gz', [{ path: '../x', content: payload }], {
      listed: [{ path: '../x', content: payload }],
    }),
  },
  {
    name: 'a .. inside a path',
    code: 'E_PACKAGE_UNSAFE_PATH',
    entry: 'bin/../../etc/cron.d/x',
    make: crafted('dotdot-inner.tar.gz', [{ path: 'bin/../../etc/cron.d/x', content: payload }]),
  },
  {
    name: 'an absolute path /etc/passwd',
    code: 'E_PACKAGE_UNSAFE_PATH',
    entry: '/etc/passwd',
    make: crafted('absolute.tar.gz', [{ path: '/etc/passwd', content: payload }]),
  },
  {
    name: 'a pax header that renames a harmless entry to ../evil',
    code: 'E_PACKAGE_UNSAFE_PATH',
    entry: '../evil',
    make: crafted('pax-path.tar.gz', [{ path: 'bin/harmless', content: payload, pax: { path: '../evil' } }]),
  },
  {
    name: 'a symlink to /etc',
    code: 'E_PACKAGE_LINK',
    entry: 'etc',
    make: crafted('symlink.tar.gz', [{ path: 'etc', type: 'SymbolicLink', linkpath: '/etc', mode: 0o777 }]),
  },
  {
    name: 'a symlink that stays inside the tree (all links are refused)',
    code: 'E_PACKAGE_LINK',
    entry: 'bin/kubectl',
    make: crafted('symlink-inside.tar.gz', [
      { path: 'bin/kubectl', type: 'SymbolicLink', linkpath: 'k3s', mode: 0o777 },
    ]),
  },
  {
    name: 'a hard link to /etc/shadow',
    code: 'E_PACKAGE_LINK',
    entry: 'shadow',
    make: crafted('hardlink.tar.gz', [{ path: 'shadow', type: 'Link', linkpath: '/etc/shadow' }]),
  },
  {
    name: 'a character device',
    code: 'E_PACKAGE_SPECIAL_FILE',
    entry: 'dev/mem',
    make: crafted('chardev.tar.gz', [{ path: 'dev/mem', type: 'CharacterDevice', devmaj: 1, devmin: 1 }]),
  },
  {
    name: 'a FIFO',
    code: 'E_PACKAGE_SPECIAL_FILE',
    entry: 'run/pipe',
    make: crafted('fifo.tar.gz', [{ path: 'run/pipe', type: 'FIFO' }]),
  },
  {
    name: 'an entry of a type tar readers disagree on (GNU sparse)',
    code: 'E_PACKAGE_SPECIAL_FILE',
    entry: 'images/sparse.img',
    make: crafted('sparse.tar.gz', [{ path: 'images/sparse.img', type: 'S', content: payload }]),
  },
  {
    name: 'a duplicate entry',
    code: 'E_PACKAGE_DUPLICATE',
    entry: 'bin/k3s',
    make: crafted('duplicate.tar.gz', [{ path: 'bin/k3s', content: payload, mode: 0o755 }]),
  },
  {
    name: 'a file whose content does not match its manifest checksum',
    code: 'E_PACKAGE_CHECKSUM',
    entry: 'bin/k3s',
    make: (dir) => {
      const tampered = Buffer.from(GOOD_FILES[0]!.content);
      tampered[3] = tampered[3]! ^ 0x01;
      return writeCrafted(
        join(dir, 'tampered.tar.gz'),
        tarBytes([
          manifestEntry(manifestFor(GOOD_FILES)),
          { path: 'bin/k3s', content: tampered, mode: 0o755 },
          goodEntries()[1]!,
        ]),
      );
    },
  },
  {
    name: 'a file whose size differs from the manifest',
    code: 'E_PACKAGE_CHECKSUM',
    entry: 'bin/k3s',
    make: (dir) =>
      writeCrafted(
        join(dir, 'resized.tar.gz'),
        tarBytes([
          manifestEntry(manifestFor(GOOD_FILES)),
          { path: 'bin/k3s', content: Buffer.concat([GOOD_FILES[0]!.content, payload]), mode: 0o755 },
          goodEntries()[1]!,
        ]),
      ),
  },
  {
    name: 'a setuid file',
    code: 'E_PACKAGE_MODE',
    entry: 'bin/k3s',
    make: (dir) =>
      writeCrafted(
        join(dir, 'setuid.tar.gz'),
        tarBytes([
          manifestEntry(manifestFor(GOOD_FILES)),
          { path: 'bin/k3s', content: GOOD_FILES[0]!.content, mode: 0o4755 },
          goodEntries()[1]!,
        ]),
      ),
  },
  {
    name: 'a file the manifest does not list',
    code: 'E_PACKAGE_UNLISTED',
    entry: 'bin/extra',
    make: crafted('unlisted.tar.gz', [{ path: 'bin/extra', content: payload }]),
  },
  {
    name: 'a listed file the archive does not hold',
    code: 'E_PACKAGE_MISSING_FILE',
    entry: 'cni/bridge',
    make: (dir) =>
      writeCrafted(
        join(dir, 'missing-file.tar.gz'),
        tarBytes([
          manifestEntry(manifestFor([...GOOD_FILES, { path: 'cni/bridge', content: payload }])),
          ...goodEntries(),
        ]),
      ),
  },
  {
    name: 'no manifest',
    code: 'E_PACKAGE_MANIFEST',
    entry: 'bin/k3s',
    make: (dir) => writeCrafted(join(dir, 'no-manifest.tar.gz'), tarBytes(goodEntries())),
  },
  {
    name: 'a manifest that is not the first entry',
    code: 'E_PACKAGE_MANIFEST',
    entry: 'bin/k3s',
    make: (dir) =>
      writeCrafted(
        join(dir, 'manifest-late.tar.gz'),
        tarBytes([goodEntries()[0]!, manifestEntry(manifestFor(GOOD_FILES)), goodEntries()[1]!]),
      ),
  },
  {
    name: 'a manifest that is not JSON',
    code: 'E_PACKAGE_MANIFEST',
    entry: 'manifest.json',
    make: (dir) =>
      writeCrafted(
        join(dir, 'manifest-json.tar.gz'),
        tarBytes([manifestEntry(Buffer.from('{"name": ')), ...goodEntries()]),
      ),
  },
  {
    name: 'a manifest with an unknown distribution',
    code: 'E_PACKAGE_MANIFEST',
    entry: 'manifest.json',
    make: (dir) =>
      writeCrafted(
        join(dir, 'manifest-field.tar.gz'),
        tarBytes([
          manifestEntry(Buffer.from(JSON.stringify({ ...manifestFor(GOOD_FILES), distribution: 'rke2' }))),
          ...goodEntries(),
        ]),
      ),
  },
  {
    name: 'an entry declaring 7 GiB',
    code: 'E_PACKAGE_TOO_LARGE',
    entry: 'images/huge.tar',
    make: crafted('huge.tar.gz', [{ path: 'images/huge.tar', declaredSize: 7 * 1024 ** 3 }]),
  },
  {
    name: 'an entry declaring 100 GiB in a base-256 size field',
    code: 'E_PACKAGE_CORRUPT',
    entry: 'images/huge.tar',
    make: crafted('huge-base256.tar.gz', [{ path: 'images/huge.tar', declaredSize: 100 * 1024 ** 3 }]),
  },
  {
    name: 'a gzip stream cut short',
    code: 'E_PACKAGE_CORRUPT',
    entry: undefined,
    make: async (dir) => {
      const pad = { path: 'pad', content: fixtureBytes('pad', 4096) };
      const whole = gzipSync(tarBytes([manifestEntry(manifestFor([...GOOD_FILES, pad])), ...goodEntries(), pad]));
      await writeFile(join(dir, 'truncated.tar.gz'), whole.subarray(0, Math.floor(whole.length * 0.6)));
      return join(dir, 'truncated.tar.gz');
    },
  },
  {
    name: 'a tar stream without its end-of-archive marker',
    code: 'E_PACKAGE_CORRUPT',
    entry: undefined,
    make: (dir) =>
      writeCrafted(
        join(dir, 'no-end.tar.gz'),
        tarBytes([manifestEntry(manifestFor(GOOD_FILES)), ...goodEntries()], { endMarker: false }),
      ),
  },
  {
    name: 'a header with a bad checksum',
    code: 'E_PACKAGE_CORRUPT',
    entry: 'assets/k3s.service',
    make: (dir) =>
      writeCrafted(
        join(dir, 'bad-header.tar.gz'),
        tarBytes([
          manifestEntry(manifestFor(GOOD_FILES)),
          goodEntries()[0]!,
          { ...goodEntries()[1]!, badChecksum: true },
        ]),
      ),
  },
  {
    name: 'a lone zero block hiding an entry from other tar readers',
    code: 'E_PACKAGE_CORRUPT',
    entry: 'assets/k3s.service',
    make: (dir) =>
      writeCrafted(
        join(dir, 'zero-block.tar.gz'),
        tarBytes([
          manifestEntry(manifestFor(GOOD_FILES)),
          goodEntries()[0]!,
          { ...goodEntries()[1]!, zeroBlockBefore: true },
        ]),
      ),
  },
  {
    name: 'a global pax header',
    code: 'E_PACKAGE_CORRUPT',
    entry: 'PaxHeader/',
    make: (dir) =>
      writeCrafted(
        join(dir, 'global-pax.tar.gz'),
        tarBytes([manifestEntry(manifestFor(GOOD_FILES)), { ...goodEntries()[0]!, globalPax: {} }, goodEntries()[1]!]),
      ),
  },
  {
    name: 'megabytes of data after the end-of-archive marker',
    code: 'E_PACKAGE_CORRUPT',
    entry: undefined,
    make: (dir) =>
      writeCrafted(
        join(dir, 'trailing.tar.gz'),
        tarBytes([manifestEntry(manifestFor(GOOD_FILES)), ...goodEntries()], {
          trailing: Buffer.concat([Buffer.alloc(2 * 1024 * 1024), tarBytes([{ path: 'smuggled', content: payload }])]),
        }),
      ),
  },
  {
    name: 'an old GNU long-names entry (type N) named bin/k3s after the real one (GNU tar extracts it as a file)',
    code: 'E_PACKAGE_SPECIAL_FILE',
    entry: 'bin/k3s',
    make: (dir) => writeHostile(dir, 'trick-type-n.tar.gz', ISSUE_TRICKS['type N duplicate of bin/k3s']!()),
  },
  {
    name: 'a pax GNU.sparse.name=bin/k3s on an entry named notes (GNU tar renames it)',
    code: 'E_PACKAGE_CORRUPT',
    entry: 'PaxHeader/entry',
    make: (dir) =>
      writeHostile(dir, 'trick-sparse-name.tar.gz', ISSUE_TRICKS['pax GNU.sparse.name=bin/k3s on entry notes']!()),
  },
  {
    name: 'a ustar version other than 00 with prefix bin and name k3s (GNU tar reads bin/k3s)',
    code: 'E_PACKAGE_CORRUPT',
    entry: 'k3s',
    make: (dir) =>
      writeHostile(
        dir,
        'trick-version.tar.gz',
        ISSUE_TRICKS['ustar version other than 00 with prefix bin and name k3s']!(),
      ),
  },
  {
    name: 'a size field that is garbage',
    code: 'E_PACKAGE_CORRUPT',
    entry: 'bin/k3s',
    make: (dir) => writeGarbageField(dir, 'garbage-size.tar.gz', { size: Buffer.from('1x\u0000') }),
  },
  {
    name: 'a mode field that is garbage',
    code: 'E_PACKAGE_CORRUPT',
    entry: 'bin/k3s',
    make: (dir) => writeGarbageField(dir, 'garbage-mode.tar.gz', { mode: Buffer.from(' 0755 x\u0000') }),
  },
  {
    name: 'a plain tar that is not gzip-compressed',
    code: 'E_PACKAGE_CORRUPT',
    entry: undefined,
    make: async (dir) => {
      await writeFile(join(dir, 'plain.tar.gz'), tarBytes([manifestEntry(manifestFor(GOOD_FILES)), ...goodEntries()]));
      return join(dir, 'plain.tar.gz');
    },
  },
  {
    name: 'an empty file',
    code: 'E_PACKAGE_CORRUPT',
    entry: undefined,
    make: async (dir) => {
      await writeFile(join(dir, 'empty.tar.gz'), Buffer.alloc(0));
      return join(dir, 'empty.tar.gz');
    },
  },
];

async function writeHostile(dir: string, name: string, gzip: Buffer): Promise<string> {
  await writeFile(join(dir, name), gzip);
  return join(dir, name);
}

/** The good files, bin/k3s with a raw numeric field replaced. */
function writeGarbageField(dir: string, name: string, fields: { size?: Buffer; mode?: Buffer }): Promise<string> {
  const manifest = manifestFor(GOOD_FILES);
  return writeHostile(
    dir,
    name,
    gzipSync(
      Buffer.concat([
        manifestEntryBytes(manifest),
        fileEntry('bin/k3s', GOOD_FILES[0]!.content, { mode: 0o755, ...fields }),
        fileEntry('assets/k3s.service', GOOD_FILES[1]!.content),
        Buffer.alloc(1024),
      ]),
    ),
  );
}

/**
 * A copy of a good built package with one byte of the k3s binary's content
 * flipped, recompressed: the tar structure stays valid, only the checksum
 * can tell.
 */
export async function flipByteInPackage(packageFile: string, output: string): Promise<string> {
  const tar = gunzipSync(await readFile(packageFile));
  const at = tar.indexOf(K3S_MARKER);
  if (at < 0) throw new Error('fixture: k3s marker not found in the package');
  tar[at + 1000] = tar[at + 1000]! ^ 0x20;
  await writeFile(output, gzipSync(tar));
  return output;
}

/** Every path under `dir` (recursively, sorted) with its type and size: compare before and after to prove nothing was written. */
export async function listTree(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (current: string, prefix: string): Promise<void> => {
    let names: string[];
    try {
      names = (await readdir(current)).sort();
    } catch {
      return;
    }
    for (const name of names) {
      const absolute = join(current, name);
      const stats = await stat(absolute);
      out.push(`${prefix}${name}${stats.isDirectory() ? '/' : ` ${stats.size}`}`);
      if (stats.isDirectory()) await walk(absolute, `${prefix}${name}/`);
    }
  };
  await walk(dir, '');
  return out;
}
