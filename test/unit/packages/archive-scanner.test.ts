/**
 * The scanner's extraction pass on its own: it must refuse exactly what the
 * verification pass refuses, even when handed an archive that was never
 * verified (the file changed between the two passes), and hand the writer
 * nothing but checked, listed paths.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, open, rm, writeFile, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EdgeadmError } from '../../../src/errors.js';
import { scanArchive, type EntryWriter } from '../../../src/packages/archive-scanner.js';
import { PackageError } from '../../../src/packages/errors.js';
import { maxDecompressedBytes, resolveLimits, type PackageLimits } from '../../../src/packages/limits.js';
import { renderManifest } from '../../../src/packages/manifest.js';
import { fileEntry, rawHeader, type RawHeaderFields } from '../../support/hostile-tar.js';
import {
  buildFixturePackage,
  fixtureBytes,
  flipByteInPackage,
  manifestFor,
  MALICIOUS_PACKAGES,
} from '../../support/package-fixtures.js';

let work: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'edgeadm-scanner-'));
});

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

/** An in-memory writer that records what it was asked to write. */
function recordingWriter() {
  const files = new Map<string, { mode: number; chunks: Buffer[]; closed: boolean }>();
  const writer: EntryWriter = {
    open(path, mode) {
      const record = { mode, chunks: [] as Buffer[], closed: false };
      files.set(path, record);
      return Promise.resolve({
        write: (chunk: Buffer) => {
          record.chunks.push(Buffer.from(chunk));
          return Promise.resolve();
        },
        close: () => {
          record.closed = true;
          return Promise.resolve();
        },
      });
    },
  };
  return { writer, files };
}

async function scanWithWriter(file: string, expectedManifestSha256?: string) {
  const { writer, files } = recordingWriter();
  const handle = await open(file, 'r');
  try {
    const result = await scanArchive({
      handle,
      limits: resolveLimits(),
      writer,
      ...(expectedManifestSha256 === undefined ? {} : { expectedManifestSha256 }),
    });
    return { result, files, error: undefined };
  } catch (error) {
    return { result: undefined, files, error: error as { code?: string; entry?: string } };
  } finally {
    await handle.close();
  }
}

describe('scanArchive with a writer', () => {
  it('hands every listed file to the writer, in order, with its mode, and closes each', async () => {
    const built = await buildFixturePackage(work, { name: 'good' });
    const { result, files, error } = await scanWithWriter(built.file);
    expect(error).toBeUndefined();
    expect([...files.keys()]).toEqual(['manifest.json', ...built.manifest.files.map((file) => file.path)]);
    for (const listed of built.manifest.files) {
      const written = files.get(listed.path)!;
      expect(written.closed).toBe(true);
      expect(written.mode).toBe(Number.parseInt(listed.mode, 8));
      expect(createHash('sha256').update(Buffer.concat(written.chunks)).digest('hex')).toBe(listed.sha256);
    }
    expect(result?.archiveSha256).toBe(built.archiveSha256);
  });

  it('re-checks checksums while writing: a file changed since verification is refused', async () => {
    const built = await buildFixturePackage(work, { name: 'changed' });
    const flipped = await flipByteInPackage(built.file, join(work, 'changed-flipped.tar.gz'));
    const { error, files } = await scanWithWriter(flipped);
    expect(error).toMatchObject({ code: 'E_PACKAGE_CHECKSUM', entry: 'bin/k3s' });
    // It did stream the file to the writer (that is what "while writing" means) but stopped there.
    expect(files.has('bin/k3s')).toBe(true);
    expect([...files.keys()]).not.toContain('images/k3s-airgap-images-amd64.tar.zst');
  });

  it('refuses a manifest that differs from the one verified in the first pass', async () => {
    const built = await buildFixturePackage(work, { name: 'pinned' });
    const { error, files } = await scanWithWriter(built.file, '0'.repeat(64));
    expect(error).toMatchObject({ code: 'E_PACKAGE_CORRUPT', entry: 'manifest.json' });
    expect(files.size).toBe(0);
    expect((error as unknown as Error).message).toBe('manifest.json changed since the package was verified');
  });

  it.each(MALICIOUS_PACKAGES.map((bad) => [bad.name, bad] as const))(
    'refuses %s and never hands the writer an unlisted or unsafe path',
    async (_name, bad) => {
      const file = await bad.make(work);
      const { error, files } = await scanWithWriter(file);
      expect(error).toMatchObject({ code: bad.code });
      expect(error?.entry).toBe(bad.entry);
      for (const path of files.keys())
        expect(['manifest.json', 'bin/k3s', 'assets/k3s.service', 'pad']).toContain(path);
    },
  );
});

/** A package made of raw tar bytes (hostile-tar.ts), gzip-compressed into a file of the work directory. */
let crafted = 0;
async function craftedFile(tar: Buffer): Promise<string> {
  const file = join(work, `crafted-${crafted++}.tar.gz`);
  await writeFile(file, gzipSync(tar));
  return file;
}

const END = Buffer.alloc(1024);
const K3S = { path: 'bin/k3s', content: Buffer.from('#!/bin/sh\necho k3s\n'), mode: 0o755 };
const NOTES = { path: 'notes', content: Buffer.from('release notes\n'), mode: 0o644 };

/** manifest.json, then each file as listed, with header fields overridden per path. */
function packageTar(
  listed: Array<{ path: string; content: Buffer; mode: number }>,
  options: { entries?: Buffer[]; manifestFields?: RawHeaderFields; fields?: Record<string, RawHeaderFields> } = {},
): Buffer {
  const manifest = renderManifest(manifestFor(listed));
  return Buffer.concat([
    fileEntry('manifest.json', manifest, options.manifestFields ?? {}),
    ...(options.entries ??
      listed.map((file) => fileEntry(file.path, file.content, { mode: file.mode, ...options.fields?.[file.path] }))),
    END,
  ]);
}

async function scanFile(file: string, limits: Partial<PackageLimits> = {}, writer?: EntryWriter) {
  const handle = await open(file, 'r');
  try {
    return await scanArchive({ handle, limits: resolveLimits(limits), ...(writer ? { writer } : {}) });
  } finally {
    await handle.close();
  }
}

async function scanError(
  source: Buffer | string,
  limits: Partial<PackageLimits> = {},
  writer?: EntryWriter,
): Promise<PackageError> {
  const file = typeof source === 'string' ? source : await craftedFile(source);
  try {
    await scanFile(file, limits, writer);
  } catch (error) {
    if (error instanceof EdgeadmError) return error as PackageError;
    throw error;
  }
  throw new Error('expected a refusal');
}

/** A stand-in for an open package file whose reads yield `chunks`, then fail with `failure` if given. */
function fakeHandle(chunks: Buffer[], failure?: NodeJS.ErrnoException): FileHandle {
  return {
    createReadStream: () =>
      new Readable({
        read() {
          const chunk = chunks.shift();
          if (chunk) this.push(chunk);
          else if (failure) this.destroy(failure);
          else this.push(null);
        },
      }),
  } as unknown as FileHandle;
}

describe('scanArchive counts and limits, at their exact values', () => {
  it('accepts exactly maxEntries entries and names the first one over', async () => {
    const tar = packageTar([K3S, NOTES]);
    await expect(scanFile(await craftedFile(tar), { maxEntries: 3 })).resolves.toMatchObject({ fileCount: 2 });
    const error = await scanError(tar, { maxEntries: 2 });
    // The manifest's own check (2 files + itself > 2) comes first.
    expect(error.code).toBe('E_PACKAGE_TOO_LARGE');
    const headersOnly = await scanError(
      packageTar([K3S], {
        entries: [fileEntry('bin/k3s', K3S.content, { mode: 0o755 }), fileEntry('x', Buffer.alloc(0))],
      }),
      { maxEntries: 2 },
    );
    expect(headersOnly.message).toBe('entry "x" is entry number 3; the limit is 2');
    expect(headersOnly.details).toMatchObject({ limit: 2 });
  });

  it('takes the manifest up to maxManifestBytes, and refuses one byte more, saying so', async () => {
    const tar = packageTar([K3S]);
    const size = renderManifest(manifestFor([K3S])).length;
    await expect(scanFile(await craftedFile(tar), { maxManifestBytes: size })).resolves.toBeDefined();
    const error = await scanError(tar, { maxManifestBytes: size - 1 });
    expect(error.message).toBe(`entry "manifest.json" is ${size} bytes; the limit for the manifest is ${size - 1}`);
    expect(error.details).toMatchObject({ size, limit: size - 1 });
  });

  it('checks the size a header declares against the per-file limit before comparing it with the manifest', async () => {
    const declared = (size: number) => packageTar([K3S], { fields: { 'bin/k3s': { size } } });
    const over = await scanError(declared(1001), { maxEntryBytes: 1000 });
    expect(over.code).toBe('E_PACKAGE_TOO_LARGE');
    expect(over.message).toBe('entry "bin/k3s" declares 1001 bytes; the limit per file is 1000');
    expect(over.details).toMatchObject({ size: 1001, limit: 1000 });
    const atLimit = await scanError(declared(1000), { maxEntryBytes: 1000 });
    expect(atLimit.code).toBe('E_PACKAGE_CHECKSUM');
    expect(atLimit.message).toBe(`entry "bin/k3s" is 1000 bytes; manifest.json says ${K3S.content.length}`);
    expect(atLimit.details).toMatchObject({ size: 1000, expectedSize: K3S.content.length });
  });

  it('adds up declared sizes against the total limit', async () => {
    const tar = packageTar([K3S, NOTES], { fields: { notes: { size: 100 } } });
    const total = K3S.content.length + 100;
    const over = await scanError(tar, { maxTotalBytes: total - 1 });
    expect(over.code).toBe('E_PACKAGE_TOO_LARGE');
    expect(over.message).toBe(`entry "notes" brings the package to ${total} bytes; the limit is ${total - 1}`);
    expect(over.details).toMatchObject({ total, limit: total - 1 });
    expect((await scanError(tar, { maxTotalBytes: total })).code).toBe('E_PACKAGE_CHECKSUM');
  });

  it('bounds the decompressed bytes: a gzip of zeros past the bound is refused as too large, not as corrupt', async () => {
    const zero = { maxEntryBytes: 0, maxTotalBytes: 0, maxEntries: 0, maxManifestBytes: 0 };
    const bound = maxDecompressedBytes(resolveLimits(zero));
    const over = await scanError(Buffer.alloc(bound + 1), zero);
    expect(over.code).toBe('E_PACKAGE_TOO_LARGE');
    expect(over.message).toBe(
      `the archive unpacks to more than ${bound} bytes, more than any package within the limits`,
    );
    const at = await scanError(Buffer.alloc(bound), zero);
    expect(at.message).toBe('the archive holds no manifest.json');
    expect(at.entry).toBe('manifest.json');
  });
});

describe('scanArchive refuses, with the message a user reads', () => {
  it('a directory named manifest.json as the first entry', async () => {
    const error = await scanError(
      Buffer.concat([rawHeader({ name: 'manifest.json/', typeflag: '5', mode: 0o755 }), END]),
    );
    expect(error.code).toBe('E_PACKAGE_MANIFEST');
    expect(error.message).toMatch(
      /^the first entry is "manifest\.json\/", not manifest\.json; the manifest must come first/,
    );
  });

  it.each([
    [0o4755, '4755'],
    [0o1755, '1755'],
    [0o2755, '2755'],
  ])('mode %o, naming the bits', async (mode, shown) => {
    const error = await scanError(packageTar([K3S], { fields: { 'bin/k3s': { mode } } }));
    expect(error.code).toBe('E_PACKAGE_MODE');
    expect(error.message).toBe(`entry "bin/k3s" has mode ${shown}; setuid, setgid and sticky bits are not allowed`);
    expect(error.details).toMatchObject({ mode: shown });
  });

  it('a manifest.json whose mode is not 0644', async () => {
    const error = await scanError(packageTar([K3S], { manifestFields: { mode: 0o600 } }));
    expect(error.code).toBe('E_PACKAGE_MODE');
    expect(error.message).toBe('entry "manifest.json" has mode 0600; manifest.json is always 0644');
    expect(error.details).toMatchObject({ mode: '0600', expectedMode: '0644' });
  });

  it('a file whose mode differs from the manifest', async () => {
    const error = await scanError(packageTar([K3S], { fields: { 'bin/k3s': { mode: 0o700 } } }));
    expect(error.code).toBe('E_PACKAGE_MODE');
    expect(error.message).toBe('entry "bin/k3s" has mode 0700; manifest.json says 0755');
    expect(error.details).toMatchObject({ mode: '0700', expectedMode: '0755' });
  });

  it('a directory no listed file needs, but not the parent of a listed file', async () => {
    const dir = (name: string) => rawHeader({ name, typeflag: '5', mode: 0o755 });
    const entries = (extra: Buffer[]) => [...extra, fileEntry('bin/k3s', K3S.content, { mode: 0o755 })];
    await expect(
      scanFile(await craftedFile(packageTar([K3S], { entries: entries([dir('bin/')]) }))),
    ).resolves.toMatchObject({
      fileCount: 1,
    });
    const error = await scanError(packageTar([K3S], { entries: entries([dir('etc/')]) }));
    expect(error.code).toBe('E_PACKAGE_UNLISTED');
    expect(error.message).toBe(
      'directory entry "etc/" holds no file that manifest.json lists; unpacking would create it as an extra, empty directory',
    );
    expect(error.entry).toBe('etc/');
  });

  it('a file the manifest does not list, and one whose bytes differ', async () => {
    const unlisted = await scanError(packageTar([K3S], { entries: [fileEntry('notes', NOTES.content)] }));
    expect(unlisted.message).toBe('entry "notes" is not listed in manifest.json');
    const other = Buffer.from(K3S.content);
    other[0] = 0x41;
    const changed = await scanError(packageTar([K3S], { entries: [fileEntry('bin/k3s', other, { mode: 0o755 })] }));
    const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
    expect(changed.message).toBe(
      `entry "bin/k3s" has SHA-256 ${sha256(other)}; manifest.json says ${sha256(K3S.content)}`,
    );
    expect(changed.details).toMatchObject({ sha256: sha256(other), expectedSha256: sha256(K3S.content) });
  });

  it('listed files the archive lacks: the first named, the rest counted, twenty in the details', async () => {
    const listed = Array.from({ length: 25 }, (_, i) => ({
      path: `f${String(i).padStart(2, '0')}`,
      content: Buffer.from('x'),
      mode: 0o644,
    }));
    const one = await scanError(
      packageTar([K3S, NOTES], { entries: [fileEntry('bin/k3s', K3S.content, { mode: 0o755 })] }),
    );
    expect(one.message).toBe('manifest.json lists "notes", which the archive does not hold');
    const many = await scanError(packageTar(listed, { entries: [] }));
    expect(many.code).toBe('E_PACKAGE_MISSING_FILE');
    expect(many.message).toBe('manifest.json lists "f00" (and 24 more), which the archive does not hold');
    expect(many.entry).toBe('f00');
    expect(many.details?.missing).toEqual(listed.slice(0, 20).map((f) => f.path));
    expect(many.details?.missingCount).toBe(25);
  });

  it('an archive without any entry', async () => {
    const error = await scanError(END);
    expect(error).toMatchObject({ code: 'E_PACKAGE_MANIFEST', entry: 'manifest.json' });
    expect(error.message).toBe('the archive holds no manifest.json');
  });

  it('a file that is not gzip, and a gzip stream cut short, saying which', async () => {
    const plain = join(work, 'plain-bytes.tar.gz');
    await writeFile(plain, 'xx not gzip');
    expect((await scanError(plain)).message).toBe('the file is not gzip-compressed (a package is a .tar.gz)');
    const cut = join(work, 'cut.tar.gz');
    await writeFile(cut, gzipSync(packageTar([K3S])).subarray(0, 30));
    expect((await scanError(cut)).message).toMatch(/^the gzip stream is truncated or damaged \(.+\)$/);
  });
});

describe('scanArchive reads and reports', () => {
  it('the manifest digest, the counts and the sizes of what it verified', async () => {
    const tar = packageTar([K3S, NOTES]);
    const result = await scanFile(await craftedFile(tar));
    expect(result.manifestSha256).toBe(
      createHash('sha256')
        .update(renderManifest(manifestFor([K3S, NOTES])))
        .digest('hex'),
    );
    expect(result.fileCount).toBe(2);
    expect(result.totalBytes).toBe(K3S.content.length + NOTES.content.length);
    expect(result.archiveBytes).toBe(gzipSync(tar).length);
  });

  it('gzip magic split over two reads, as a slow source gives it', async () => {
    const gzip = gzipSync(packageTar([K3S]));
    const result = await scanArchive({
      handle: fakeHandle([gzip.subarray(0, 1), gzip.subarray(1, 2), gzip.subarray(2)]),
      limits: resolveLimits(),
    });
    expect(result.fileCount).toBe(1);
    expect(result.archiveBytes).toBe(gzip.length);
    const notGzip = Buffer.from(gzip);
    notGzip[1] = 0;
    const error = await scanArchive({
      handle: fakeHandle([notGzip.subarray(0, 1), notGzip.subarray(1)]),
      limits: resolveLimits(),
    }).catch((caught: unknown) => caught as PackageError);
    expect(error).toMatchObject({
      code: 'E_PACKAGE_CORRUPT',
      message: 'the file is not gzip-compressed (a package is a .tar.gz)',
    });
  });

  it('a read error as E_PACKAGE_READ (the disk, not the package), also on the first read', async () => {
    const gzip = gzipSync(packageTar([K3S]));
    const failures = [Object.assign(new Error('EIO: i/o error, read'), { code: 'EIO' }), new Error('read failed')];
    const cases = failures.flatMap((f): Array<[Error, Buffer[]]> => [
      [f, [gzip.subarray(0, 20)]],
      [f, []],
    ]);
    for (const [failure, chunks] of cases) {
      const error = await scanArchive({ handle: fakeHandle(chunks, failure), limits: resolveLimits() }).then(
        () => {
          throw new Error('expected a read error');
        },
        (caught: unknown) => caught as EdgeadmError,
      );
      expect(error).toMatchObject({ code: 'E_PACKAGE_READ', exitCode: 1 });
      expect(error.message).toBe(`cannot read the package: ${failure.message}`);
      expect(error.hints).toEqual(['Check that the file is readable and the disk is healthy.']);
      expect(error.cause).toBe(failure);
    }
  });
});

describe('scanArchive with a failing or watching writer', () => {
  type Failing = 'open' | 'write' | 'close';
  /** A writer that fails at one step for one path, and counts every close. */
  function failingWriter(
    step: Failing | undefined,
    path: string,
    failure: Error = new Error('no space left on device'),
  ) {
    const closes = new Map<string, number>();
    const writer: EntryWriter = {
      open(opened) {
        if (step === 'open' && opened === path) return Promise.reject(failure);
        return Promise.resolve({
          write: () => (step === 'write' && opened === path ? Promise.reject(failure) : Promise.resolve()),
          close: () => {
            closes.set(opened, (closes.get(opened) ?? 0) + 1);
            return step === 'close' && opened === path ? Promise.reject(failure) : Promise.resolve();
          },
        });
      },
    };
    return { writer, closes };
  }

  it.each([
    ['open', 'bin/k3s'],
    ['write', 'bin/k3s'],
    ['close', 'bin/k3s'],
    ['open', 'manifest.json'],
    ['write', 'manifest.json'],
    ['close', 'manifest.json'],
  ] as const)("a failed %s of %s is E_PACKAGE_EXTRACT, this machine's fault", async (step, path) => {
    const { writer, closes } = failingWriter(step, path);
    const error = await scanError(await craftedFile(packageTar([K3S])), {}, writer);
    expect(error).toMatchObject({ code: 'E_PACKAGE_EXTRACT', exitCode: 1 });
    expect(error.message).toBe('cannot write an extracted file: no space left on device');
    expect(error.hints).toEqual(['Check free space and permissions where the package is extracted.']);
    if (step !== 'open') expect(closes.get(path)).toBe(1);
  });

  it('passes a refusal thrown by the writer through unchanged', async () => {
    const refusal = new PackageError('E_PACKAGE_UNSAFE_PATH', 'refused by the writer', { entry: 'bin/k3s' });
    const { writer } = failingWriter('open', 'bin/k3s', refusal);
    expect(await scanError(await craftedFile(packageTar([K3S])), {}, writer)).toBe(refusal);
  });

  it('closes each file once: after its bytes, and when the stream breaks inside it', async () => {
    const big = { path: 'big', content: fixtureBytes('big', 600_000), mode: 0o644 };
    const changed = Buffer.from(K3S.content);
    changed[0] = 0x41;
    const checksum = failingWriter(undefined, '');
    await scanError(
      packageTar([K3S], { entries: [fileEntry('bin/k3s', changed, { mode: 0o755 })] }),
      {},
      checksum.writer,
    );
    expect(checksum.closes.get('bin/k3s')).toBe(1);
    const gzip = gzipSync(packageTar([big]));
    const cut = join(work, 'cut-inside.tar.gz');
    await writeFile(cut, gzip.subarray(0, Math.floor(gzip.length * 0.7)));
    const broken = failingWriter(undefined, '');
    expect((await scanError(cut, {}, broken.writer)).code).toBe('E_PACKAGE_CORRUPT');
    expect(broken.closes.get('big')).toBe(1);
  });
});
