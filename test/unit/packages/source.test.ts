/**
 * resolvePackageSource against a real HTTP server on localhost: downloads,
 * 404s, web pages instead of packages, stalls, size limits, pins and the
 * cache.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { displayUrl, resolvePackageSource, type DownloadProgress } from '../../../src/packages/source.js';
import { buildFixturePackage, flipByteInPackage } from '../../support/package-fixtures.js';

let work: string;
let server: Server;
let base: string;
let good: { file: string; bytes: Buffer; sha256: string };
let flipped: Buffer;
const hits = new Map<string, number>();

function send(res: ServerResponse, status: number, body: Buffer | string, type = 'application/gzip'): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'edgeadm-source-'));
  const built = await buildFixturePackage(work, { name: 'served' });
  good = { file: built.file, bytes: await readFile(built.file), sha256: built.archiveSha256 };
  flipped = await readFile(await flipByteInPackage(built.file, join(work, 'served-flipped.tar.gz')));
  server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    switch (path) {
      case '/pkg.tar.gz':
        return send(res, 200, good.bytes);
      case '/flipped.tar.gz':
        return send(res, 200, flipped);
      case '/page.tar.gz':
        return send(res, 200, '<html><body>Download our package!</body></html>', 'text/html; charset=utf-8');
      case '/error.tar.gz':
        return send(res, 503, 'busy', 'text/plain');
      case '/stall.tar.gz':
        res.writeHead(200, { 'content-type': 'application/gzip', 'content-length': good.bytes.length });
        res.write(good.bytes.subarray(0, 1000));
        return; // and never another byte
      default:
        return send(res, 404, 'not found', 'text/plain');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await rm(work, { recursive: true, force: true });
});

function cacheDir(name: string): string {
  return join(work, 'cache', name);
}

describe('resolvePackageSource with a local path', () => {
  it('uses the file where it is, verified', async () => {
    const resolved = await resolvePackageSource(good.file, { cacheDir: cacheDir('local') });
    expect(resolved.file).toBe(good.file);
    expect(resolved.origin).toEqual({ kind: 'file' });
    expect(resolved.archiveSha256).toBe(good.sha256);
  });

  it('refuses a damaged local file before it is used', async () => {
    await expect(
      resolvePackageSource(join(work, 'served-flipped.tar.gz'), { cacheDir: cacheDir('local') }),
    ).rejects.toMatchObject({
      code: 'E_PACKAGE_CHECKSUM',
      entry: 'bin/k3s',
    });
  });

  it('refuses a file whose checksum is not the pinned one', async () => {
    await expect(
      resolvePackageSource(good.file, { cacheDir: cacheDir('local'), expectedSha256: `sha256:${'0'.repeat(64)}` }),
    ).rejects.toMatchObject({ code: 'E_PACKAGE_CHECKSUM' });
  });

  it('refuses a URL scheme other than http(s)', async () => {
    await expect(
      resolvePackageSource('ftp://example.com/pkg.tar.gz', { cacheDir: cacheDir('local') }),
    ).rejects.toMatchObject({
      code: 'E_PACKAGE_URL',
    });
  });
});

describe('resolvePackageSource with a URL', () => {
  it('downloads into the cache, verifies, and reports progress', async () => {
    const progress: DownloadProgress[] = [];
    const dir = cacheDir('download');
    const resolved = await resolvePackageSource(`${base}/pkg.tar.gz?X-Signature=secret`, {
      cacheDir: dir,
      onProgress: (p) => progress.push(p),
    });
    expect(resolved.origin).toEqual({ kind: 'url', url: `${base}/pkg.tar.gz`, downloaded: true });
    expect(resolved.file.startsWith(dir)).toBe(true);
    expect(resolved.file.endsWith('-pkg.tar.gz')).toBe(true);
    expect((await readFile(resolved.file)).equals(good.bytes)).toBe(true);
    expect(resolved.archiveSha256).toBe(good.sha256);
    expect(progress.at(-1)).toEqual({ receivedBytes: good.bytes.length, totalBytes: good.bytes.length });
    expect(await readdir(dir)).toHaveLength(1);
  });

  it('with a pin, reuses a cached copy that matches instead of downloading again', async () => {
    const dir = cacheDir('pinned');
    const url = `${base}/pkg.tar.gz?pinned`;
    const first = await resolvePackageSource(url, { cacheDir: dir, expectedSha256: good.sha256 });
    const hitsAfterFirst = hits.get('/pkg.tar.gz');
    const second = await resolvePackageSource(url, { cacheDir: dir, expectedSha256: good.sha256 });
    expect(first.origin).toMatchObject({ downloaded: true });
    expect(second.origin).toMatchObject({ downloaded: false });
    expect(hits.get('/pkg.tar.gz')).toBe(hitsAfterFirst);
  });

  it('refuses a damaged download, naming the entry, and keeps nothing in the cache', async () => {
    const dir = cacheDir('flipped');
    const error = await resolvePackageSource(`${base}/flipped.tar.gz`, { cacheDir: dir }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'E_PACKAGE_CHECKSUM', entry: 'bin/k3s' });
    expect((error as Error).message).toContain(`package ${base}/flipped.tar.gz:`);
    expect(await readdir(dir)).toEqual([]);
  });

  it('says so when the URL serves a web page instead of a package', async () => {
    const dir = cacheDir('page');
    const error = await resolvePackageSource(`${base}/page.tar.gz`, { cacheDir: dir }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'E_PACKAGE_CORRUPT' });
    expect((error as Error).message).toContain('text/html');
    expect(await readdir(dir)).toEqual([]);
  });

  it('reports 404 as E_PACKAGE_NOT_FOUND', async () => {
    await expect(resolvePackageSource(`${base}/missing.tar.gz`, { cacheDir: cacheDir('404') })).rejects.toMatchObject({
      code: 'E_PACKAGE_NOT_FOUND',
      exitCode: 3,
    });
  });

  it('reports a server error as a download failure (exit 1, may be retried)', async () => {
    await expect(resolvePackageSource(`${base}/error.tar.gz`, { cacheDir: cacheDir('503') })).rejects.toMatchObject({
      code: 'E_PACKAGE_DOWNLOAD',
      exitCode: 1,
    });
  });

  it('reports an unreachable server clearly', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const error = await resolvePackageSource(`http://127.0.0.1:${port}/pkg.tar.gz`, {
      cacheDir: cacheDir('down'),
    }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'E_PACKAGE_DOWNLOAD' });
    expect((error as Error).message).toContain('ECONNREFUSED');
  });

  it('abandons a download that stalls', async () => {
    const dir = cacheDir('stall');
    const error = await resolvePackageSource(`${base}/stall.tar.gz`, { cacheDir: dir, idleTimeoutMs: 300 }).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: 'E_PACKAGE_DOWNLOAD' });
    expect((error as Error).message).toContain('stalled');
    expect(await readdir(dir)).toEqual([]);
  });

  it('refuses a download over the size limit from its Content-Length', async () => {
    const dir = cacheDir('large');
    await expect(
      resolvePackageSource(`${base}/pkg.tar.gz`, { cacheDir: dir, maxDownloadBytes: 1000 }),
    ).rejects.toMatchObject({ code: 'E_PACKAGE_TOO_LARGE' });
    expect(await readdir(dir)).toEqual([]);
  });
});

describe('displayUrl', () => {
  it('drops user info, query and fragment, which may hold credentials or signatures', () => {
    expect(displayUrl(new URL('https://user:pw@example.com/a/pkg.tar.gz?sig=abc#x'))).toBe(
      'https://example.com/a/pkg.tar.gz',
    );
  });
});
