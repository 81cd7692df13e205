/**
 * A full cache disk degrades, never wedges (issue #22): the edge-proxy with
 * its `--cache-dir` on a real 600 KiB tmpfs (mounted by the test, as root)
 * and a raw upstream (a SIMULATION, not kube-apiserver) that answers a
 * 200 KB ConfigMap list for any field selector. The reproduction:
 * the list read with five different selectors, far past what the disk
 * holds, while the cache's own byte bound is far above it.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEdgeProxy, type RunningEdgeProxy } from '../../../src/edge/edge-proxy.js';
import { call, type HttpsTarget } from '../../support/https-client.js';
import { sendJson, sendNotFound, startRawUpstream, type RawUpstream } from './raw-upstream.js';

/** Safety net for the proxy's own state changes (probe results); not a timing assertion. */
const STATE_WAIT_MS = 20_000;
const ALICE = 'alice-token-for-full-disk-tests';
const LIST = '/api/v1/namespaces/default/configmaps';
const SELECTORS = [
  'metadata.name%3Dbig',
  'metadata.namespace%3Ddefault',
  'metadata.name%21%3Dother-1',
  'metadata.name%21%3Dother-2',
  'metadata.name%21%3Dother-3',
];
const isRoot = process.getuid?.() === 0;

let dir: string;
let cacheDir: string;
let upstream: RawUpstream;
let proxy: RunningEdgeProxy;
let target: HttpsTarget;

function listPath(index: number): string {
  return `${LIST}?fieldSelector=${SELECTORS[index]}`;
}

function entryFiles(): string[] {
  return readdirSync(join(cacheDir, 'entries'));
}

async function goOffline(): Promise<void> {
  upstream.down();
  await expect.poll(() => proxy.isOnline, { timeout: STATE_WAIT_MS }).toBe(false);
}

async function goOnline(): Promise<void> {
  upstream.up();
  await expect.poll(() => proxy.isOnline, { timeout: STATE_WAIT_MS }).toBe(true);
}

beforeAll(async () => {
  if (!isRoot) return;
  dir = await mkdtemp(join(tmpdir(), 'edgeadm-full-disk-'));
  cacheDir = join(dir, 'cache');
  mkdirSync(cacheDir);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=600k,mode=0700', 'tmpfs', cacheDir]);
  upstream = await startRawUpstream();
  const blob = 'x'.repeat(200_000);
  upstream.handler = (_req, res, raw) => {
    if (!raw.startsWith(`${LIST}?`)) {
      sendNotFound(res, raw);
      return;
    }
    sendJson(res, 200, {
      kind: 'ConfigMapList',
      apiVersion: 'v1',
      metadata: { resourceVersion: '7' },
      items: [{ metadata: { name: 'big', namespace: 'default', resourceVersion: '7' }, data: { blob } }],
      servedTarget: raw,
    });
  };
  proxy = await startEdgeProxy({
    upstream: upstream.config,
    listen: { host: '127.0.0.1', port: 0 },
    metricsListen: undefined,
    cacheDir,
    // Far above the disk: only a full disk can stop a write here.
    cacheMaxBytes: 64 * 1024 * 1024,
    cacheMaxEntries: 1000,
    clientCerts: new Map(),
    healthIntervalMs: 500,
  });
  target = { url: proxy.url, caPem: readFileSync(proxy.servingCaFile!, 'utf8') };
});

afterAll(async () => {
  if (!isRoot) return;
  await proxy?.close();
  await upstream?.close();
  execFileSync('umount', [cacheDir]);
  await rm(dir, { recursive: true, force: true });
});

describe('edge-proxy with a full cache disk', () => {
  it.skipIf(!isRoot)(
    'keeps caching after the disk fills (evicting), leaves no temporaries, reports what is on disk and serves what it kept offline',
    async () => {
      for (let i = 0; i < SELECTORS.length; i++) {
        const listed = await call(target, { path: listPath(i), token: ALICE });
        expect(listed.status).toBe(200);
        await proxy.cache.flush();
      }
      // The disk filled: fewer than five entries stayed, although the byte bound allows them all.
      expect(proxy.cache.entryCount).toBeLessThan(SELECTORS.length);
      expect(entryFiles().filter((name) => name.endsWith('.tmp'))).toEqual([]);
      const onDisk = entryFiles().reduce((sum, name) => sum + statSync(join(cacheDir, 'entries', name)).size, 0);
      expect(proxy.cache.byteCount).toBe(onDisk);
      expect(await proxy.metrics()).toMatch(new RegExp(`^edgeadm_edge_proxy_cache_bytes ${onDisk}$`, 'm'));

      await goOffline();
      const answers = [];
      for (let i = 0; i < SELECTORS.length; i++) answers.push(await call(target, { path: listPath(i), token: ALICE }));
      // The last write made room for itself; every answer is the right one or an honest miss.
      expect(answers.at(-1)!.status).toBe(200);
      for (const [i, answer] of answers.entries()) {
        expect([200, 503]).toContain(answer.status);
        if (answer.status === 200) {
          expect(answer.headers['x-edgeadm-edge-proxy']).toMatch(/^cached/);
          expect(answer.json.servedTarget).toBe(listPath(i));
        }
      }
      await goOnline();

      // Writes keep resuming: the first list again, then it is served offline.
      expect((await call(target, { path: listPath(0), token: ALICE })).status).toBe(200);
      await proxy.cache.flush();
      expect(entryFiles().filter((name) => name.endsWith('.tmp'))).toEqual([]);
      await goOffline();
      const again = await call(target, { path: listPath(0), token: ALICE });
      expect(again.status).toBe(200);
      expect(again.json.servedTarget).toBe(listPath(0));
      await goOnline();
    },
  );
});
