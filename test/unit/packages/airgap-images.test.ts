/**
 * Airgap image archives in install packages: which names each distribution
 * carries (k3s: .tar, .tar.gz, .tar.zst from its images directory; kubeadm:
 * .tar, imported with ctr), `--images DIR` beside the source's images/, and
 * what `package inspect` shows of them.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildPackage, type BuildPackageOptions } from '../../../src/packages/build.js';
import { formatPackageSummary, inspectPackage } from '../../../src/packages/inspect.js';
import { AIRGAP_IMAGE_SUFFIXES, isAirgapImage, type Distribution } from '../../../src/packages/manifest.js';
import { FIXTURE_CREATED_AT, fixtureBytes } from '../../support/package-fixtures.js';

let work: string;
let counter = 0;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'edgeadm-images-'));
});

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

/** A source directory holding the distribution's binaries and these files (paths relative to it). */
async function source(distribution: Distribution, files: Record<string, Buffer>): Promise<string> {
  const dir = join(work, `src-${++counter}`);
  const binaries =
    distribution === 'k3s' ? ['k3s'] : ['kubeadm', 'kubelet', 'containerd', 'containerd-shim-runc-v2', 'runc'];
  await mkdir(join(dir, 'bin'), { recursive: true });
  for (const binary of binaries) await writeFile(join(dir, 'bin', binary), '#!/bin/sh\n', { mode: 0o755 });
  for (const [path, content] of Object.entries(files)) {
    await mkdir(join(dir, path, '..'), { recursive: true });
    await writeFile(join(dir, path), content, { mode: 0o644 });
  }
  return dir;
}

function options(from: string, extra: Partial<BuildPackageOptions> = {}): BuildPackageOptions {
  return {
    from,
    distribution: 'k3s',
    kubernetesVersion: 'v1.30.4',
    arch: 'amd64',
    output: join(work, `out-${++counter}.tar.gz`),
    createdAt: FIXTURE_CREATED_AT,
    ...extra,
  };
}

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

describe('which names are airgap image archives', () => {
  it.each([
    ['images/k3s-airgap-images-amd64.tar', 'k3s', true],
    ['images/k3s-airgap-images-amd64.tar.gz', 'k3s', true],
    ['images/k3s-airgap-images-amd64.tar.zst', 'k3s', true],
    ['images/app.tar', 'kubeadm', true],
    ['images/app.tar.zst', 'kubeadm', false],
    ['images/app.tar.gz', 'kubeadm', false],
    ['images/README', 'k3s', false],
    ['images/app.zip', 'k3s', false],
    ['images/.tar', 'k3s', false],
    ['images/sub/app.tar', 'k3s', false],
    ['bin/app.tar', 'k3s', false],
  ] as const)('%s in a %s package: %s', (path, distribution, expected) => {
    expect(isAirgapImage(path, distribution)).toBe(expected);
  });

  it('k3s carries the three archive kinds its import directory takes', () => {
    expect(AIRGAP_IMAGE_SUFFIXES.k3s).toEqual(['.tar', '.tar.gz', '.tar.zst']);
  });
});

describe('package build with images', () => {
  it('packs --images DIR as images/, recorded in the manifest with SHA-256, size and mode, and inspect lists them', async () => {
    const app = fixtureBytes('app-image', 3 * 1024 * 1024 + 17);
    const system = fixtureBytes('system-image', 4096);
    const from = await source('k3s', { 'images/k3s-airgap-images-amd64.tar.zst': system });
    const extra = join(work, `extra-${++counter}`);
    await mkdir(extra);
    await writeFile(join(extra, 'app.tar.gz'), app, { mode: 0o640 });
    const built = await buildPackage(options(from, { images: extra }));
    expect(built.manifest.files.filter((file) => file.path.startsWith('images/'))).toEqual([
      { path: 'images/app.tar.gz', sha256: sha256(app), size: app.length, mode: '0640' },
      { path: 'images/k3s-airgap-images-amd64.tar.zst', sha256: sha256(system), size: system.length, mode: '0644' },
    ]);

    const summary = await inspectPackage(built.file);
    expect(summary.images.map((image) => [image.path, image.size, image.sha256])).toEqual([
      ['images/app.tar.gz', app.length, sha256(app)],
      ['images/k3s-airgap-images-amd64.tar.zst', system.length, sha256(system)],
    ]);
    const text = formatPackageSummary(summary);
    expect(text).toContain('Images:        2 airgap archive(s)');
    expect(text).toContain(`  app.tar.gz  3.0 MiB  sha256 ${sha256(app)}`);
  });

  it('inspect says "none" for a package without images', async () => {
    const built = await buildPackage(options(await source('k3s', {})));
    const summary = await inspectPackage(built.file);
    expect(summary.images).toEqual([]);
    expect(formatPackageSummary(summary)).toContain('Images:        none');
  });

  it.each([
    [
      'k3s',
      'images/README',
      /not an airgap image archive a k3s package can carry \(names end in \.tar, \.tar\.gz, \.tar\.zst\)/,
    ],
    ['k3s', 'images/nested/app.tar', /in a subdirectory of images\/; k3s imports only the archives directly in it/],
    [
      'kubeadm',
      'images/pause.tar.zst',
      /not an airgap image archive a kubeadm package can carry \(names end in \.tar\)/,
    ],
  ] as const)('refuses a %s source with %s, naming it', async (distribution, path, message) => {
    const from = await source(distribution, { [path]: Buffer.from('x') });
    const error = await buildPackage(options(from, { distribution })).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'E_PACKAGE_SOURCE', entry: path });
    expect((error as Error).message).toMatch(message);
  });

  it('refuses a name in --images that is not an archive, before writing anything', async () => {
    const from = await source('k3s', {});
    const extra = join(work, `extra-${++counter}`);
    await mkdir(extra);
    await writeFile(join(extra, 'notes.txt'), 'x');
    const error = await buildPackage(options(from, { images: extra })).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'E_PACKAGE_SOURCE', entry: 'images/notes.txt' });
  });

  it('refuses an archive both in images/ and in --images rather than choosing one', async () => {
    const from = await source('k3s', { 'images/app.tar': Buffer.from('one') });
    const extra = join(work, `extra-${++counter}`);
    await mkdir(extra);
    await writeFile(join(extra, 'app.tar'), 'two');
    const error = await buildPackage(options(from, { images: extra })).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'E_PACKAGE_DUPLICATE', entry: 'images/app.tar' });
  });

  it('refuses an --images path that is not a directory', async () => {
    const from = await source('k3s', {});
    const error = await buildPackage(options(from, { images: join(work, 'nowhere') })).catch(
      (caught: unknown) => caught,
    );
    expect(error).toMatchObject({ code: 'E_PACKAGE_SOURCE' });
    expect((error as Error).message).toMatch(/nowhere does not exist/);
  });
});
