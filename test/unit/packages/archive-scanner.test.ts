/**
 * The scanner's extraction pass on its own: it must refuse exactly what the
 * verification pass refuses, even when handed an archive that was never
 * verified (the file changed between the two passes), and hand the writer
 * nothing but checked, listed paths.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scanArchive, type EntryWriter } from '../../../src/packages/archive-scanner.js';
import { resolveLimits } from '../../../src/packages/limits.js';
import { buildFixturePackage, flipByteInPackage, MALICIOUS_PACKAGES } from '../../support/package-fixtures.js';

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
