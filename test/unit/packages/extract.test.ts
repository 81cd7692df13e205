import { lstat, mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractVerifiedPackage } from '../../../src/packages/extract.js';
import { PackageError } from '../../../src/packages/errors.js';
import {
  buildFixturePackage,
  defaultSourceFiles,
  flipByteInPackage,
  listTree,
  MALICIOUS_PACKAGES,
} from '../../support/package-fixtures.js';

let work: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'edgeadm-extract-'));
});

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch {
    return false;
  }
}

describe('extractVerifiedPackage', () => {
  it('extracts every file with its content and mode, plus manifest.json', async () => {
    const built = await buildFixturePackage(work, { name: 'good' });
    const destDir = join(work, 'out', 'pkg');
    const extracted = await extractVerifiedPackage(built.file, { destDir });
    expect(extracted.directory).toBe(destDir);
    expect(extracted.manifest).toEqual(built.manifest);
    for (const [path, spec] of Object.entries(defaultSourceFiles())) {
      const file = join(destDir, path);
      expect((await readFile(file)).equals(spec.content)).toBe(true);
      expect((await stat(file)).mode & 0o777).toBe(spec.mode);
    }
    expect(JSON.parse(await readFile(join(destDir, 'manifest.json'), 'utf8'))).toEqual(built.manifest);
    expect((await stat(destDir)).mode & 0o777).toBe(0o755);
    expect(await listTree(join(work, 'out'))).toEqual([
      'pkg/',
      `pkg/assets/`,
      `pkg/assets/k3s.service ${defaultSourceFiles()['assets/k3s.service']!.content.length}`,
      'pkg/bin/',
      `pkg/bin/k3s ${defaultSourceFiles()['bin/k3s']!.content.length}`,
      'pkg/cni/',
      `pkg/cni/bridge ${defaultSourceFiles()['cni/bridge']!.content.length}`,
      'pkg/images/',
      `pkg/images/k3s-airgap-images-amd64.tar.zst ${defaultSourceFiles()['images/k3s-airgap-images-amd64.tar.zst']!.content.length}`,
      `pkg/manifest.json ${(await stat(join(destDir, 'manifest.json'))).size}`,
      `pkg/sbom.cdx.json ${(await stat(join(destDir, 'sbom.cdx.json'))).size}`,
    ]);
  });

  it('refuses a destination that already exists, and leaves it as it was', async () => {
    const built = await buildFixturePackage(work, { name: 'exists' });
    const destDir = join(work, 'already');
    await mkdir(destDir);
    await expect(extractVerifiedPackage(built.file, { destDir })).rejects.toMatchObject({
      code: 'E_PACKAGE_DEST_EXISTS',
    });
    expect(await listTree(destDir)).toEqual([]);
  });
});

describe('extractVerifiedPackage refuses what verify refuses, and writes nothing', () => {
  it.each(MALICIOUS_PACKAGES.map((bad) => [bad.name, bad] as const))('%s', async (_name, bad) => {
    const packages = join(work, 'bad-packages');
    await mkdir(packages, { recursive: true });
    const file = await bad.make(packages);
    const parent = join(work, `target-${bad.make.name}-${Math.random().toString(16).slice(2)}`);
    await mkdir(parent);
    const before = await listTree(parent);
    const destDir = join(parent, 'pkg');

    const error = await extractVerifiedPackage(file, { destDir }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PackageError);
    expect((error as PackageError).code).toBe(bad.code);
    expect((error as PackageError).entry).toBe(bad.entry);
    expect(await exists(destDir)).toBe(false);
    expect(await listTree(parent)).toEqual(before);
    // Nothing escaped the tree either: the payload of the path-traversal cases is nowhere near.
    expect(await exists(join(work, 'x'))).toBe(false);
    expect(await exists(join(work, 'evil'))).toBe(false);
  });

  it('one flipped byte, leaving no partial directory behind', async () => {
    const built = await buildFixturePackage(work, { name: 'flip' });
    const flipped = await flipByteInPackage(built.file, join(work, 'flip-bad.tar.gz'));
    const parent = join(work, 'flip-target');
    await mkdir(parent);
    await expect(extractVerifiedPackage(flipped, { destDir: join(parent, 'pkg') })).rejects.toMatchObject({
      code: 'E_PACKAGE_CHECKSUM',
      entry: 'bin/k3s',
    });
    expect(await listTree(parent)).toEqual([]);
  });
});
