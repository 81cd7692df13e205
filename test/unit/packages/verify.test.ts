import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { Pax } from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PackageError } from '../../../src/packages/errors.js';
import { verifyPackage } from '../../../src/packages/verify.js';
import {
  buildFixturePackage,
  flipByteInPackage,
  listTree,
  GOOD_FILES,
  MALICIOUS_PACKAGES,
  manifestEntry,
  manifestFor,
  tarBytes,
  writeCrafted,
} from '../../support/package-fixtures.js';

let work: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'edgeadm-verify-'));
});

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

async function refusal(file: string, limits = {}): Promise<PackageError> {
  try {
    await verifyPackage(file, { limits });
  } catch (error) {
    expect(error).toBeInstanceOf(PackageError);
    return error as PackageError;
  }
  throw new Error(`expected ${file} to be refused`);
}

describe('verifyPackage on a good package', () => {
  it('returns the manifest, the file count, the sizes and the archive checksum', async () => {
    const built = await buildFixturePackage(work, { name: 'good' });
    const verified = await verifyPackage(built.file);
    expect(verified.manifest).toEqual(built.manifest);
    // The four source files and the SBOM the build writes.
    expect(verified.fileCount).toBe(5);
    expect(verified.totalBytes).toBe(built.totalBytes);
    const bytes = await readFile(built.file);
    expect(verified.archiveBytes).toBe(bytes.length);
    expect(verified.archiveSha256).toBe(createHash('sha256').update(bytes).digest('hex'));
    expect(verified.archiveSha256).toBe(built.archiveSha256);
  });

  it('accepts a package made by GNU tar with the manifest first (directory entries, ./ prefixes, record padding)', async () => {
    const built = await buildFixturePackage(work, { name: 'for-gnu-tar' });
    const dir = join(work, 'gnu-tar-tree');
    await mkdir(dir, { recursive: true });
    await execa('tar', ['-xzf', built.file, '-C', dir]);
    const file = join(work, 'gnu.tar.gz');
    await execa('tar', [
      '-czf',
      file,
      '-C',
      dir,
      '--owner=0',
      '--group=0',
      './manifest.json',
      './assets',
      './bin',
      './cni',
      './images',
      './sbom.cdx.json',
    ]);
    const verified = await verifyPackage(file);
    expect(verified.manifest).toEqual(built.manifest);
  });
});

describe('verifyPackage refuses, naming the entry', () => {
  it.each(MALICIOUS_PACKAGES.map((bad) => [bad.name, bad] as const))('%s', async (_name, bad) => {
    const file = await bad.make(work);
    const error = await refusal(file);
    expect(error.code).toBe(bad.code);
    expect(error.exitCode).toBe(3);
    expect(error.entry).toBe(bad.entry);
    if (bad.entry !== undefined) expect(error.message).toContain(bad.entry);
    expect(error.message).toContain(`package ${file}:`);
    expect(error.details?.file).toBe(file);
    expect(error.hints.length).toBeGreaterThan(0);
  });

  it('one flipped byte in a built package', async () => {
    const built = await buildFixturePackage(work, { name: 'to-flip' });
    const flipped = await flipByteInPackage(built.file, join(work, 'flipped.tar.gz'));
    const error = await refusal(flipped);
    expect(error.code).toBe('E_PACKAGE_CHECKSUM');
    expect(error.entry).toBe('bin/k3s');
    expect(error.details?.expectedSha256).toBe(built.manifest.files.find((f) => f.path === 'bin/k3s')?.sha256);
  });

  it('a missing file path as E_PACKAGE_NOT_FOUND', async () => {
    const error = await refusal(join(work, 'nope.tar.gz'));
    expect(error.code).toBe('E_PACKAGE_NOT_FOUND');
  });

  it('an empty file, saying so', async () => {
    const file = join(work, 'empty-file.tar.gz');
    await writeFile(file, '');
    const error = await refusal(file);
    expect(error.code).toBe('E_PACKAGE_CORRUPT');
    expect(error.message).toContain('the file is empty');
  });

  it('a directory given as the package', async () => {
    const error = await refusal(work);
    expect(error.code).toBe('E_PACKAGE_CORRUPT');
  });

  it('a hostile entry name quoted, so terminal escapes are not printed raw', async () => {
    const name = 'bin/\u001b[31mred';
    const file = await writeCrafted(
      join(work, 'escape.tar.gz'),
      tarBytes([manifestEntry(manifestFor(GOOD_FILES)), { path: name, content: Buffer.from('x') }]),
    );
    const error = await refusal(file);
    expect(error.code).toBe('E_PACKAGE_UNSAFE_PATH');
    expect(error.message).not.toContain('\u001b');
    expect(error.message).toContain('\\u001b[31mred');
  });
});

describe('verifyPackage limits', () => {
  it('refuses a file over the per-entry limit on its header', async () => {
    const built = await buildFixturePackage(work, { name: 'limits' });
    const error = await refusal(built.file, { maxEntryBytes: 250_000 });
    expect(error.code).toBe('E_PACKAGE_TOO_LARGE');
    expect(error.entry).toBe('images/k3s-airgap-images-amd64.tar.zst');
  });

  it('refuses a package over the total limit', async () => {
    const built = await buildFixturePackage(work, { name: 'limits-total' });
    const error = await refusal(built.file, { maxTotalBytes: 400_000 });
    expect(error.code).toBe('E_PACKAGE_TOO_LARGE');
  });

  it('refuses more entries than the limit, naming the first one over', async () => {
    const files = Array.from({ length: 5 }, (_, i) => ({ path: `f${i}`, content: Buffer.from(String(i)) }));
    const file = await writeCrafted(
      join(work, 'many.tar.gz'),
      tarBytes([
        manifestEntry(manifestFor(files.slice(0, 2))),
        ...files.map((f) => ({ path: f.path, content: f.content })),
      ]),
    );
    const error = await refusal(file, { maxEntries: 3 });
    expect(error.code).toBe('E_PACKAGE_TOO_LARGE');
    expect(error.entry).toBe('f2');
  });

  it('refuses a manifest over its size limit', async () => {
    const built = await buildFixturePackage(work, { name: 'limits-manifest' });
    const error = await refusal(built.file, { maxManifestBytes: 100 });
    expect(error.code).toBe('E_PACKAGE_TOO_LARGE');
    expect(error.entry).toBe('manifest.json');
  });

  it('refuses a small gzip of huge pax headers before it unpacks them', async () => {
    // Pax headers produce no entries, so no entry limit would stop a stream of them.
    const header = new Pax({ path: 'a'.repeat(512 * 1024) }).encode();
    const file = await writeCrafted(
      join(work, 'bomb.tar.gz'),
      Buffer.concat([
        tarBytes([manifestEntry(manifestFor(GOOD_FILES))], { endMarker: false }),
        ...Array(20).fill(header),
      ]),
    );
    const error = await refusal(file, { maxTotalBytes: 1024, maxEntries: 10, maxManifestBytes: 4096 });
    expect(error.code).toBe('E_PACKAGE_CORRUPT');
    expect(error.message).toMatch(/a pax extended header of \d+ bytes is larger than packages need/);
  });
});

describe('verifyPackage writes nothing', () => {
  it('leaves the directory of a good or a malicious package exactly as it was', async () => {
    const dir = join(work, 'untouched');
    await mkdir(dir);
    const good = await buildFixturePackage(dir, { name: 'good' });
    const bad = await MALICIOUS_PACKAGES[0]!.make(dir);
    const before = await listTree(dir);
    await verifyPackage(good.file);
    await refusal(bad);
    expect(await listTree(dir)).toEqual(before);
  });
});

describe('verifyPackage names the package and releases the file', () => {
  /** Open file descriptors of this process: a verification must leave none behind. */
  const openDescriptors = async (): Promise<number> => (await readdir('/proc/self/fd')).length;

  it('names the package by its label (a download names its URL), not by the temporary file', async () => {
    const bad = await MALICIOUS_PACKAGES[0]!.make(work);
    let error: unknown;
    try {
      await verifyPackage(bad, { label: 'https://packages.example/edge.tar.gz' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(PackageError);
    expect((error as PackageError).message).toMatch(/^package https:\/\/packages\.example\/edge\.tar\.gz: /);
    expect((error as PackageError).details?.file).toBe('https://packages.example/edge.tar.gz');
  });

  it('reports a path it cannot open for another reason than absence as E_PACKAGE_READ, exit 1', async () => {
    const built = await buildFixturePackage(work, { name: 'not-a-dir' });
    let error: unknown;
    try {
      await verifyPackage(join(built.file, 'inside'));
    } catch (caught) {
      error = caught;
    }
    expect(error).toMatchObject({ code: 'E_PACKAGE_READ', exitCode: 1 });
    expect((error as Error).message).toContain(`cannot open package ${join(built.file, 'inside')}: `);
    expect((error as Error).message).toContain('ENOTDIR');
    expect((error as PackageError).hints).toEqual(['Check that the file is readable.']);
    expect(((error as Error).cause as NodeJS.ErrnoException).code).toBe('ENOTDIR');
  });

  it('says a missing file does not exist, and a directory is not a regular file', async () => {
    const missing = join(work, 'absent.tar.gz');
    const absent = await refusal(missing);
    expect(absent.message).toBe(`package file ${missing} does not exist`);
    expect((absent.cause as NodeJS.ErrnoException).code).toBe('ENOENT');
    expect((await refusal(work)).message).toBe(`package ${work} is not a regular file`);
  });

  it('closes the package file after success, after a refusal, and when the path is a directory', async () => {
    const good = await buildFixturePackage(work, { name: 'fd-good' });
    const bad = await MALICIOUS_PACKAGES[0]!.make(work);
    await verifyPackage(good.file);
    const before = await openDescriptors();
    for (let i = 0; i < 5; i++) {
      await verifyPackage(good.file);
      await refusal(bad);
      await refusal(work);
    }
    expect(await openDescriptors()).toBe(before);
  });

  it('applies the limits it is given (and only those)', async () => {
    const built = await buildFixturePackage(work, { name: 'limits-given' });
    await expect(verifyPackage(built.file, { limits: { maxEntries: 6 } })).resolves.toMatchObject({ fileCount: 5 });
    expect((await refusal(built.file, { maxEntries: 5 })).code).toBe('E_PACKAGE_TOO_LARGE');
  });
});
