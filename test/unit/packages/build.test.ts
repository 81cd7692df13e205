import { createHash } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildPackage, createdAtFromSourceDateEpoch, type BuildPackageOptions } from '../../../src/packages/build.js';
import { distributionFor } from '../../../src/cluster/distributions/index.js';
import { inspectPackage } from '../../../src/packages/inspect.js';
import { DISTRIBUTIONS, REQUIRED_PACKAGE_FILES } from '../../../src/packages/manifest.js';
import { verifyPackage } from '../../../src/packages/verify.js';
import { FIXTURE_CREATED_AT, writeSourceDir } from '../../support/package-fixtures.js';

let work: string;
let counter = 0;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'edgeadm-build-'));
});

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

async function freshSource(): Promise<string> {
  counter += 1;
  return writeSourceDir(join(work, `src-${counter}`));
}

function options(from: string, output: string, extra: Partial<BuildPackageOptions> = {}): BuildPackageOptions {
  return {
    from,
    distribution: 'k3s',
    kubernetesVersion: 'v1.30.4',
    arch: 'amd64',
    output,
    createdAt: FIXTURE_CREATED_AT,
    ...extra,
  };
}

describe('buildPackage', () => {
  it('builds a package that verifies and inspects to what was packed (round trip)', async () => {
    const from = await freshSource();
    // An arm64 package holds arm64 executables: the fixture's bin/k3s becomes one (ELF machine 183, AArch64).
    const arm64K3s = await readFile(join(from, 'bin', 'k3s'));
    arm64K3s.writeUInt16LE(183, 18);
    await writeFile(join(from, 'bin', 'k3s'), arm64K3s);
    const output = join(work, 'round-trip.tar.gz');
    const built = await buildPackage(options(from, output, { kubernetesVersion: '1.30.4', arch: 'arm64' }));
    expect(built.manifest.name).toBe('edge-k3s-v1.30.4-arm64');
    expect(built.manifest.kubernetesVersion).toBe('v1.30.4');
    expect(built.manifest.createdAt).toBe('2024-05-01T12:00:00.000Z');

    const verified = await verifyPackage(output);
    expect(verified.manifest).toEqual(built.manifest);
    const summary = await inspectPackage(output);
    expect(summary.files.map((file) => [file.path, file.mode])).toEqual([
      ['assets/k3s.service', '0644'],
      ['bin/k3s', '0755'],
      ['cni/bridge', '0755'],
      ['images/k3s-airgap-images-amd64.tar.zst', '0644'],
      // The bill of materials every build writes (sbom.ts), listed like any file.
      ['sbom.cdx.json', '0644'],
    ]);
    const k3s = await readFile(join(from, 'bin/k3s'));
    expect(summary.files.find((file) => file.path === 'bin/k3s')).toMatchObject({
      size: k3s.length,
      sha256: createHash('sha256').update(k3s).digest('hex'),
    });
  });

  it('gives the same bytes for the same input (determinism)', async () => {
    const first = await buildPackage(options(await freshSource(), join(work, 'det-1.tar.gz')));
    const second = await buildPackage(options(await freshSource(), join(work, 'det-2.tar.gz')));
    expect(second.archiveSha256).toBe(first.archiveSha256);
    const bytes = [await readFile(first.file), await readFile(second.file)];
    expect(bytes[0]!.equals(bytes[1]!)).toBe(true);
  });

  it('writes manifest.json first, owner root, mtimes at the creation time, readable by GNU tar', async () => {
    const output = join(work, 'gnu-readable.tar.gz');
    await buildPackage(options(await freshSource(), output));
    const { stdout } = await execa('tar', ['-tvzf', output], { env: { TZ: 'UTC' } });
    const lines = stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^-rw-r--r-- 0\/0 .* 2024-05-01 12:00 manifest\.json$/);
    expect(lines[2]).toMatch(/^-rwxr-xr-x 0\/0 .* bin\/k3s$/);
    // manifest.json, the four source files and sbom.cdx.json.
    expect(lines).toHaveLength(6);
  });

  it('puts a path too long for a ustar header in a pax header, and it verifies', async () => {
    const from = join(work, 'long-src');
    const longPath = `share/${'d'.repeat(120)}/${'f'.repeat(120)}.tar`;
    await mkdir(join(from, 'share', 'd'.repeat(120)), { recursive: true });
    await writeFile(join(from, longPath), 'x');
    await mkdir(join(from, 'bin'));
    await writeFile(join(from, 'bin', 'k3s'), '#!/bin/sh\n', { mode: 0o755 });
    const output = join(work, 'long.tar.gz');
    await buildPackage(options(from, output));
    expect((await verifyPackage(output)).manifest.files.map((file) => file.path)).toEqual([
      'bin/k3s',
      'sbom.cdx.json',
      longPath,
    ]);
    expect(gunzipSync(await readFile(output)).includes(`path=${longPath}`)).toBe(true);
  });

  it('honours SOURCE_DATE_EPOCH for the creation time', () => {
    expect(createdAtFromSourceDateEpoch('1714564800')?.toISOString()).toBe('2024-05-01T12:00:00.000Z');
    expect(createdAtFromSourceDateEpoch(undefined)).toBeUndefined();
    expect(() => createdAtFromSourceDateEpoch('soon')).toThrow(expect.objectContaining({ code: 'E_PACKAGE_OPTIONS' }));
  });
});

describe('buildPackage refuses', () => {
  async function expectRefusal(from: string, code: string, entry?: string, extra: Partial<BuildPackageOptions> = {}) {
    const output = join(work, `refused-${counter}.tar.gz`);
    await writeFile(output, 'previous package');
    await expect(buildPackage(options(from, output, extra))).rejects.toMatchObject({
      code,
      ...(entry === undefined ? {} : { entry }),
    });
    // The previous output is untouched and no temporary file is left behind.
    expect(await readFile(output, 'utf8')).toBe('previous package');
    expect((await readdir(work)).filter((name) => name.endsWith('.partial'))).toEqual([]);
  }

  it('a symbolic link in the source, naming it, instead of following it', async () => {
    const from = await freshSource();
    await symlink('/etc', join(from, 'etc'));
    await expectRefusal(from, 'E_PACKAGE_LINK', 'etc');
  });

  it('a FIFO in the source', async () => {
    const from = await freshSource();
    await execa('mkfifo', [join(from, 'bin', 'pipe')]);
    await expectRefusal(from, 'E_PACKAGE_SPECIAL_FILE', 'bin/pipe');
  });

  it('a file name outside the package path rules', async () => {
    const from = await freshSource();
    await writeFile(join(from, 'bin', 'with space'), 'x');
    await expectRefusal(from, 'E_PACKAGE_UNSAFE_PATH', 'bin/with space');
  });

  it('a manifest.json of its own in the source', async () => {
    const from = await freshSource();
    await writeFile(join(from, 'manifest.json'), '{}');
    await expectRefusal(from, 'E_PACKAGE_SOURCE', 'manifest.json');
  });

  it('an output inside the source directory', async () => {
    const from = await freshSource();
    await expect(buildPackage(options(from, join(from, 'pkg.tar.gz')))).rejects.toMatchObject({
      code: 'E_PACKAGE_SOURCE',
    });
    expect(await readdir(from)).not.toContain('pkg.tar.gz');
  });

  it('a missing source directory', async () => {
    await expectRefusal(join(work, 'does-not-exist'), 'E_PACKAGE_SOURCE');
  });

  it('a Kubernetes version that is not one', async () => {
    await expectRefusal(await freshSource(), 'E_PACKAGE_OPTIONS', undefined, { kubernetesVersion: 'latest' });
  });

  it('a bad package name', async () => {
    await expectRefusal(await freshSource(), 'E_PACKAGE_OPTIONS', undefined, { name: '../evil' });
  });

  it.each([
    [0o4755, '4755'],
    [0o2755, '2755'],
    [0o1755, '1755'],
  ])(
    'a file with mode %s (setuid, setgid or sticky), naming it and its mode, rather than dropping the bit',
    async (mode, shown) => {
      const from = await freshSource();
      await chmod(join(from, 'cni', 'bridge'), mode);
      await expectRefusal(from, 'E_PACKAGE_MODE', 'cni/bridge');
      await expect(buildPackage(options(from, join(work, `suid-${shown}.tar.gz`)))).rejects.toThrow(
        new RegExp(`"cni/bridge" has mode ${shown}`),
      );
    },
  );

  it('an empty source directory, listing what a k3s package must hold (exit 3)', async () => {
    const from = join(work, `empty-${++counter}`);
    await mkdir(from);
    await expectRefusal(from, 'E_PACKAGE_INCOMPLETE', 'bin/k3s');
    const error = await buildPackage(options(from, join(work, 'empty.tar.gz'))).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ exitCode: 3, details: { missing: ['bin/k3s'] } });
    expect((error as Error).message).toContain('holds no files');
  });

  it('a kubeadm source without its binaries, listing every missing one', async () => {
    const from = await freshSource();
    await writeFile(join(from, 'bin', 'kubelet'), '#!/bin/sh\n', { mode: 0o755 });
    const error = await buildPackage(options(from, join(work, 'kubeadm.tar.gz'), { distribution: 'kubeadm' })).catch(
      (caught: unknown) => caught,
    );
    expect(error).toMatchObject({
      code: 'E_PACKAGE_INCOMPLETE',
      exitCode: 3,
      details: { missing: ['bin/kubeadm', 'bin/containerd', 'bin/containerd-shim-runc-v2', 'bin/runc'] },
    });
    expect((error as Error).message).toContain('bin/kubeadm, bin/containerd, bin/containerd-shim-runc-v2, bin/runc');
  });
});

describe('REQUIRED_PACKAGE_FILES', () => {
  it('is what the distribution drivers install from bin/', () => {
    for (const name of DISTRIBUTIONS) {
      expect(REQUIRED_PACKAGE_FILES[name]).toEqual(distributionFor(name).requiredBinaries.map((b) => `bin/${b}`));
    }
  });
});
