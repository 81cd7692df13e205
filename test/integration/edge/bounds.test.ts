/**
 * The edge-proxy's resource bounds (issue #22, limits.ts), against a raw
 * upstream (a SIMULATION, not kube-apiserver) whose answers the test paces:
 * the memory held for caching over all concurrent GETs, and open watches
 * per identity and in all, online and offline. The bounds are set small
 * through the proxy's `bounds` option so the tests reach them.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startEdgeProxy, type RunningEdgeProxy } from '../../../src/edge/edge-proxy.js';
import { call, openWatch, send, type HttpsTarget, type WatchStream } from '../../support/https-client.js';
import { sendJson, sendNotFound, startRawUpstream, type RawUpstream } from './raw-upstream.js';

/** Safety net for the proxy's own state changes (probe results, closed watches); not a timing assertion. */
const STATE_WAIT_MS = 20_000;
const ALICE = 'alice-token-for-bounds-tests';
const BOB = 'bob-token-for-bounds-tests';
const CAROL = 'carol-token-for-bounds-tests';
const DAVE = 'dave-token-for-bounds-tests';
const ERIN = 'erin-token-for-bounds-tests';
const FRANK = 'frank-token-for-bounds-tests';
const MALLORY = 'a-token-the-api-server-never-saw';
const CONFIGMAPS = '/api/v1/namespaces/default/configmaps';
const WATCHES_PER_IDENTITY = 3;
const WATCHES_TOTAL = 5;
const BUFFER_BUDGET = 300_000;
const LARGE_BLOB = 250_000;
/** Bytes of the slow answer sent before it pauses: most of the budget. */
const SLOW_FIRST_PART = 200_000;

let dir: string;
let upstream: RawUpstream;
let proxy: RunningEdgeProxy;
let target: HttpsTarget;
const upstreamWatches = new Set<ServerResponse>();
const openClientWatches: WatchStream[] = [];
let releaseSlow: () => void = () => {};

function largeList(selector: string): string {
  return JSON.stringify({
    kind: 'ConfigMapList',
    apiVersion: 'v1',
    metadata: { resourceVersion: '9' },
    items: [{ metadata: { name: `large-${selector}`, namespace: 'default' }, data: { blob: 'x'.repeat(LARGE_BLOB) } }],
  });
}

async function metric(name: string): Promise<number> {
  const match = new RegExp(`^${name} (\\d+)$`, 'm').exec(await proxy.metrics());
  return match ? Number(match[1]) : Number.NaN;
}

async function goOffline(): Promise<void> {
  upstream.down();
  await expect.poll(() => proxy.isOnline, { timeout: STATE_WAIT_MS }).toBe(false);
}

async function goOnline(): Promise<void> {
  upstream.up();
  await expect.poll(() => proxy.isOnline, { timeout: STATE_WAIT_MS }).toBe(true);
}

async function watch(token: string): Promise<WatchStream> {
  const stream = await openWatch(target, { path: `${CONFIGMAPS}?watch=true&resourceVersion=9`, token });
  openClientWatches.push(stream);
  return stream;
}

/** Opens a watch that may be refused: resolves at the response head, so an accepted one cannot hang the test. */
async function tryWatch(
  token: string,
  accept = 'application/json',
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary Kubernetes JSON
): Promise<{ status: number; retryAfter: string | undefined; json: () => Promise<any> }> {
  const stream = streamingGet(`${CONFIGMAPS}?watch=true`, token, 0, accept);
  const head = await stream.head;
  if (head.status === 200) stream.abort();
  return { status: head.status, retryAfter: head.retryAfter, json: async () => JSON.parse((await stream.done).body) };
}

/** Reads an answer as it streams; resolves `firstPart` once `bytes` have arrived, `done` at the end. */
function streamingGet(path: string, token: string, bytes: number, accept = 'application/json') {
  const pending = send(target, { path, token, headers: { accept } });
  let onFirstPart: () => void = () => {};
  const firstPart = new Promise<void>((resolve) => (onFirstPart = resolve));
  const head = pending.response.then((res) => ({
    status: res.statusCode ?? 0,
    retryAfter: res.headers['retry-after'] as string | undefined,
  }));
  head.catch(() => {}); // an aborted watch
  const done = pending.response.then(
    (res) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
          if (body.length >= bytes) onFirstPart();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', reject);
      }),
  );
  done.catch(() => {}); // an aborted watch
  return { firstPart, done, head, abort: () => pending.abort() };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edgeadm-edge-bounds-'));
  upstream = await startRawUpstream();
  upstream.handler = (_req, res, raw) => {
    if (raw.startsWith(`${CONFIGMAPS}?watch=true`)) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.flushHeaders();
      upstreamWatches.add(res);
      res.on('close', () => upstreamWatches.delete(res));
      return;
    }
    if (raw === `${CONFIGMAPS}?labelSelector=slow`) {
      // Most of the answer now, the rest when the test says so.
      const body = largeList('slow');
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(body.slice(0, SLOW_FIRST_PART));
      releaseSlow = () => res.end(body.slice(SLOW_FIRST_PART));
      return;
    }
    if (raw === `${CONFIGMAPS}?labelSelector=fast`) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(largeList('fast'));
      return;
    }
    if (raw === CONFIGMAPS) {
      sendJson(res, 200, { kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: '9' }, items: [] });
      return;
    }
    sendNotFound(res, raw);
  };
  proxy = await startEdgeProxy({
    upstream: upstream.config,
    listen: { host: '127.0.0.1', port: 0 },
    metricsListen: undefined,
    cacheDir: join(dir, 'cache'),
    cacheMaxBytes: 64 * 1024 * 1024,
    cacheMaxEntries: 1000,
    clientCerts: new Map(),
    healthIntervalMs: 500,
    bounds: {
      bufferedCacheBytes: BUFFER_BUDGET,
      watchesPerIdentity: WATCHES_PER_IDENTITY,
      watchesTotal: WATCHES_TOTAL,
    },
  });
  target = { url: proxy.url, caPem: readFileSync(proxy.servingCaFile!, 'utf8') };
});

afterEach(async () => {
  // Each test uses its own identities, so slots freed late cannot reach the next one.
  for (const stream of openClientWatches.splice(0)) stream.close();
  // Cleanup, not an assertion: a proxy without the gauge has nothing to wait for.
  await expect
    .poll(
      async () => {
        const open = await metric('edgeadm_edge_proxy_open_watches');
        return Number.isNaN(open) ? 0 : open;
      },
      { timeout: STATE_WAIT_MS },
    )
    .toBe(0);
  await goOnline();
});

afterAll(async () => {
  await proxy?.close();
  await upstream?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('edge-proxy bounds', () => {
  it('caps open watches per identity and in all with 429 and a Status, and frees a slot when a watch ends', async () => {
    for (let i = 0; i < WATCHES_PER_IDENTITY; i++) expect((await watch(ALICE)).status).toBe(200);
    const refused = await tryWatch(ALICE);
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ kind: 'Status', code: 429, reason: 'TooManyRequests' });
    expect(refused.retryAfter).toMatch(/^\d+$/);
    // A watch in a form the proxy only streams through (protobuf) takes a slot too.
    expect((await tryWatch(ALICE, 'application/vnd.kubernetes.protobuf')).status).toBe(429);

    // Another identity has its own slots, up to the proxy-wide bound.
    for (let i = 0; i < WATCHES_TOTAL - WATCHES_PER_IDENTITY; i++) expect((await watch(BOB)).status).toBe(200);
    const overall = await tryWatch(CAROL);
    expect(overall.status).toBe(429);
    expect((await overall.json()).message).toContain(`${WATCHES_TOTAL} watches are open`);

    openClientWatches[0]!.close();
    await expect.poll(() => metric('edgeadm_edge_proxy_open_watches'), { timeout: STATE_WAIT_MS }).toBe(4);
    expect((await watch(ALICE)).status).toBe(200);
    expect(await metric('edgeadm_edge_proxy_open_watches')).toBe(WATCHES_TOTAL);
  });

  it('streams a watch in a form it cannot read (protobuf) through, starting the answer at once', async () => {
    const protobuf = await tryWatch(FRANK, 'application/vnd.kubernetes.protobuf');
    expect(protobuf.status).toBe(200);
    expect(upstream.requests.at(-1)).toMatchObject({ target: `${CONFIGMAPS}?watch=true` });
  });

  it('offline, holds a new watch only for an identity whose list is cached, and counts held watches too', async () => {
    expect((await call(target, { path: CONFIGMAPS, token: DAVE })).status).toBe(200);
    await proxy.cache.flush();
    await goOffline();

    // Nobody authenticates offline: a token the API server never answered gets nothing held.
    const stranger = await tryWatch(MALLORY);
    expect(stranger.status).toBe(503);
    expect(await stranger.json()).toMatchObject({ kind: 'Status', code: 503 });

    const held = [];
    for (let i = 0; i < WATCHES_PER_IDENTITY; i++) held.push(await watch(DAVE));
    expect(held.map((stream) => [stream.status, stream.isEnded])).toEqual(held.map(() => [200, false]));
    expect((await tryWatch(DAVE)).status).toBe(429);
    expect(await metric('edgeadm_edge_proxy_held_watches')).toBe(WATCHES_PER_IDENTITY);
  });

  it('streams an answer uncached when the memory budget for buffered answers is spent, and caches again once it is free', async () => {
    const slow = streamingGet(`${CONFIGMAPS}?labelSelector=slow`, ERIN, SLOW_FIRST_PART);
    await slow.firstPart;
    const bufferedWhileSlow = await metric('edgeadm_edge_proxy_cache_buffered_bytes');

    // Past the budget while the slow one holds most of it: the client still gets all of it.
    const fast = await call(target, { path: `${CONFIGMAPS}?labelSelector=fast`, token: ERIN });
    expect(fast.status).toBe(200);
    expect(fast.json.items[0].data.blob).toHaveLength(LARGE_BLOB);

    releaseSlow();
    const slowDone = await slow.done;
    expect(slowDone.status).toBe(200);
    expect(JSON.parse(slowDone.body).items[0].data.blob).toHaveLength(LARGE_BLOB);
    await proxy.cache.flush();

    await goOffline();
    expect((await call(target, { path: `${CONFIGMAPS}?labelSelector=slow`, token: ERIN })).status).toBe(200);
    // Not cached: it came while the budget was spent.
    expect((await call(target, { path: `${CONFIGMAPS}?labelSelector=fast`, token: ERIN })).status).toBe(503);
    await goOnline();
    // With the budget free again, the same answer is cached.
    expect((await call(target, { path: `${CONFIGMAPS}?labelSelector=fast`, token: ERIN })).status).toBe(200);
    await proxy.cache.flush();
    await goOffline();
    expect((await call(target, { path: `${CONFIGMAPS}?labelSelector=fast`, token: ERIN })).status).toBe(200);

    expect(bufferedWhileSlow).toBeGreaterThanOrEqual(SLOW_FIRST_PART);
    expect(bufferedWhileSlow).toBeLessThanOrEqual(BUFFER_BUDGET);
    expect(await metric('edgeadm_edge_proxy_cache_buffered_bytes')).toBe(0);
    expect(await proxy.metrics()).toMatch(
      /^edgeadm_edge_proxy_requests_total\{outcome="not_cached_memory_bound"\} 1$/m,
    );
  });
});
