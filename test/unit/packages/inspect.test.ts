import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatMiB, formatPackageSummary, inspectPackage } from '../../../src/packages/inspect.js';
import { buildFixturePackage, flipByteInPackage } from '../../support/package-fixtures.js';

let work: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'edgeadm-inspect-'));
});

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe('inspectPackage', () => {
  it('summarises a verified package: identity, counts, sizes and files', async () => {
    const built = await buildFixturePackage(work, { name: 'inspect' });
    const summary = await inspectPackage(built.file);
    expect(summary).toMatchObject({
      file: built.file,
      name: 'edge-k3s-v1.30.4-amd64',
      distribution: 'k3s',
      kubernetesVersion: 'v1.30.4',
      arch: 'amd64',
      createdAt: '2024-05-01T12:00:00.000Z',
      // The four source files and the SBOM.
      fileCount: 5,
      totalBytes: built.totalBytes,
      archiveBytes: built.archiveBytes,
      archiveSha256: built.archiveSha256,
    });
    expect(summary.files).toEqual(built.manifest.files);
  });

  it('verifies first: a damaged package is refused, not summarised', async () => {
    const built = await buildFixturePackage(work, { name: 'inspect-bad' });
    const flipped = await flipByteInPackage(built.file, join(work, 'inspect-flipped.tar.gz'));
    await expect(inspectPackage(flipped)).rejects.toMatchObject({ code: 'E_PACKAGE_CHECKSUM', entry: 'bin/k3s' });
  });
});

describe('formatPackageSummary', () => {
  it('prints the identity lines and one table row per file', async () => {
    const built = await buildFixturePackage(work, { name: 'format' });
    const text = formatPackageSummary(await inspectPackage(built.file));
    expect(text).toContain('Package:       edge-k3s-v1.30.4-amd64');
    expect(text).toContain('Kubernetes:    v1.30.4');
    expect(text).toContain(`Files:         5 (${formatMiB(built.totalBytes)} uncompressed)`);
    expect(text).toContain('Signature:     none (the origin of this package cannot be checked)');
    expect(text).toContain('SBOM:          sbom.cdx.json');
    const k3s = built.manifest.files.find((file) => file.path === 'bin/k3s')!;
    expect(text).toMatch(new RegExp(`^0755 +${k3s.size}  ${k3s.sha256.slice(0, 12)}  bin/k3s$`, 'm'));
    expect(text.split('\n').filter((line) => /^0[0-7]{3} /.test(line))).toHaveLength(5);
  });

  it('formats sizes in MiB with one decimal', () => {
    expect(formatMiB(0)).toBe('0.0 MiB');
    expect(formatMiB(200 * 1024 * 1024)).toBe('200.0 MiB');
    expect(formatMiB(1536 * 1024)).toBe('1.5 MiB');
  });
});
