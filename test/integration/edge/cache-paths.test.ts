/**
 * One path, one key (issue #22): the edge-proxy against a raw upstream (a
 * SIMULATION that records the exact target it receives and never parses
 * it; not kube-apiserver). For generated request paths — plain ones, and
 * ones with `\`, dot segments, encoded separators and dots, `//`, trailing
 * slashes — the proxy either refuses with 400 before forwarding or looking
 * anything up, or forwards the path byte for byte and reads and writes only
 * the cache entry of exactly that path, for that identity.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeCacheEntry } from '../../../src/edge/cache-entry.js';
import { identityKeyOf } from '../../../src/edge/cache-key.js';
import { startEdgeProxy, type RunningEdgeProxy } from '../../../src/edge/edge-proxy.js';
import { parseApiPath } from '../../../src/kube/api-path.js';
import { call, upgradeStatus, type HttpsTarget } from '../../support/https-client.js';
import { sendJson, sendNotFound, startRawUpstream, type RawUpstream } from './raw-upstream.js';

/** Safety net for the proxy's own state changes (probe results); not a timing assertion. */
const STATE_WAIT_MS = 20_000;
const ALICE = 'alice-token-for-cache-path-tests';
const BOB = 'bob-token-for-cache-path-tests';
const CAROL = 'carol-token-for-cache-path-tests';
const CM1 = '/api/v1/namespaces/default/configmaps/cm1';

let dir: string;
let upstream: RawUpstream;
let proxy: RunningEdgeProxy;
let target: HttpsTarget;

/**
 * What the real API server does with a raw path, near enough for these
 * tests: it finds plain paths (answering with a list that names the exact
 * target it served), and finds nothing under a path with `\`, `%` or a dot
 * segment, which its router reads literally.
 */
function answerLikeARouter(target: string): { status: number; body?: unknown } {
  const path = target.split('?')[0]!;
  const isPlain = !/[\\%]/.test(path) && !path.split('/').some((segment) => segment === '.' || segment === '..');
  if (!isPlain) return { status: 404 };
  return {
    status: 200,
    body: { kind: 'List', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items: [], servedTarget: target },
  };
}

function entriesDir(): string {
  return join(dir, 'cache', 'entries');
}

/** Every entry file and its bytes. */
function snapshot(): Map<string, string> {
  return new Map(readdirSync(entriesDir()).map((name) => [name, readFileSync(join(entriesDir(), name), 'latin1')]));
}

/** Files added, changed or removed between two snapshots, with the content that tells whose entry it is. */
function changes(before: Map<string, string>, after: Map<string, string>): { name: string; content: string }[] {
  const changed: { name: string; content: string }[] = [];
  for (const [name, content] of after) if (before.get(name) !== content) changed.push({ name, content });
  for (const [name, content] of before) if (!after.has(name)) changed.push({ name, content });
  return changed;
}

/** What the WHATWG URL parser makes of a target (how the proxy once keyed its cache). */
function normalised(raw: string): string {
  const url = new URL(raw, 'https://edge-proxy.invalid');
  return `${url.pathname}${url.search}`;
}

function selectorsOf(raw: string): string {
  const params = new URLSearchParams(raw.split('?')[1] ?? '');
  return ['fieldSelector', 'labelSelector'].map((name) => params.getAll(name).join(',')).join('|');
}

const SEGMENTS = [
  'configmaps',
  'secrets',
  'cm1',
  'topsecret',
  'default',
  'kube-system',
  'namespaces',
  '.',
  '..',
  '%2e',
  '%2E',
  '%2e%2e',
  '.%2E',
  '%2e.',
  '',
  'a\\b',
  '\\..\\',
  '..\\cm1',
  '%2f',
  '%2F',
  '%5c',
  'cm%31',
  'x;y',
  'a.b',
  '..a',
];

/** Request targets as a client (or an attacker) could send them. */
const targets = fc
  .tuple(
    fc.constantFrom(
      '/api/v1',
      '/api/v1/namespaces/default',
      '/api/v1/namespaces/default/configmaps',
      '/api/v1/namespaces/default/secrets/topsecret',
      '/apis/apps/v1/namespaces/default/deployments',
      '/api',
      '/version',
    ),
    fc.array(
      fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom(...SEGMENTS) },
        { weight: 1, arbitrary: fc.stringMatching(/^[a-z0-9.%\\-]{1,5}$/) },
      ),
      { maxLength: 5 },
    ),
    fc.boolean(),
    fc.option(
      fc.constantFrom(
        'labelSelector=app%3Dweb',
        'fieldSelector=metadata.name%3Dcm1',
        'limit=500&resourceVersion=0',
        'resourceVersion=5&resourceVersionMatch=Exact',
        'x=1',
        'q=%2e%2e%2f',
      ),
      { nil: undefined },
    ),
  )
  .map(([prefix, segments, hasTrailingSlash, query]) => {
    const path = [prefix, ...segments].join('/') + (hasTrailingSlash ? '/' : '');
    return query === undefined ? path : `${path}?${query}`;
  })
  // Watches and streams hold the connection open: other tests cover them.
  .filter((raw) => !/(^|[/?&])(watch|follow)([/=]|$)/.test(raw));

async function goOffline(): Promise<void> {
  upstream.down();
  await expect.poll(() => proxy.isOnline, { timeout: STATE_WAIT_MS }).toBe(false);
}

async function goOnline(): Promise<void> {
  upstream.up();
  await expect.poll(() => proxy.isOnline, { timeout: STATE_WAIT_MS }).toBe(true);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edgeadm-cache-paths-'));
  upstream = await startRawUpstream();
  upstream.handler = (_req, res, raw) => {
    const answer = answerLikeARouter(raw);
    if (answer.status === 200) sendJson(res, 200, answer.body);
    else sendNotFound(res, raw);
  };
  proxy = await startEdgeProxy({
    upstream: upstream.config,
    listen: { host: '127.0.0.1', port: 0 },
    metricsListen: undefined,
    cacheDir: join(dir, 'cache'),
    cacheMaxBytes: 256 * 1024 * 1024,
    cacheMaxEntries: 100_000,
    clientCerts: new Map(),
    healthIntervalMs: 500,
  });
  target = { url: proxy.url, caPem: readFileSync(proxy.servingCaFile!, 'utf8') };
});

afterAll(async () => {
  await proxy?.close();
  await upstream?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('edge-proxy: one path, one key', () => {
  it('reads and writes only the entry of exactly the path it forwards, or refuses with 400 (generated paths)', async () => {
    await goOnline();
    const aliceKey = identityKeyOf(proxy.cache.installKey, { principal: `token:${ALICE}`, impersonation: [] });
    await fc.assert(
      fc.asyncProperty(targets, async (raw) => {
        // Entries that a wrong reading would touch: the normalised path's for
        // this identity, and the same path's for another identity.
        const other = normalised(raw);
        if (other !== raw && parseApiPath(other).ok) await call(target, { path: other, token: ALICE });
        if (parseApiPath(raw).ok) await call(target, { path: raw, token: BOB });
        await proxy.cache.flush();
        const before = snapshot();
        const sentBefore = upstream.requests.length;

        const answer = await call(target, { path: raw, token: ALICE });
        await proxy.cache.flush();
        const touched = changes(before, snapshot());
        const sent = upstream.requests.slice(sentBefore);

        const checked = parseApiPath(raw);
        if (!checked.ok) {
          // Nothing looked up or written, nothing forwarded, and a Status that says so.
          expect(touched.map(({ content }) => decodeCacheEntry(Buffer.from(content, 'latin1')).meta.path)).toEqual([]);
          expect(sent).toEqual([]);
          expect(answer.status).toBe(400);
          expect(answer.json).toMatchObject({ kind: 'Status', code: 400, reason: 'BadRequest' });
          return;
        }
        expect(sent.map((request) => request.target)).toEqual([raw]);
        for (const { content } of touched) {
          const { meta } = decodeCacheEntry(Buffer.from(content, 'latin1'));
          expect(meta.identityKey).toBe(aliceKey);
          expect(meta.path).toBe(checked.value.path);
        }
        if (answer.status === 200) expect(answer.json.servedTarget).toBe(raw);
      }),
      { numRuns: 150, seed: 22 },
    );
  });

  it('offline, answers a path only from the entry of exactly that path and identity (generated paths)', async () => {
    await goOnline();
    const samples = fc.sample(targets, { numRuns: 150, seed: 2222 });
    for (const raw of samples) await call(target, { path: raw, token: ALICE });
    await proxy.cache.flush();
    await goOffline();
    for (const raw of samples) {
      const checked = parseApiPath(raw);
      const answer = await call(target, { path: raw, token: ALICE });
      if (!checked.ok) {
        expect(answer.status, raw).toBe(400);
        continue;
      }
      expect([200, 503], raw).toContain(answer.status);
      if (answer.status === 200) {
        const served = String(answer.json.servedTarget);
        expect(served.split('?')[0], raw).toBe(checked.value.path);
        expect(selectorsOf(served), raw).toBe(selectorsOf(raw));
      }
      // An identity that never read anything has nothing to be served.
      expect([400, 503], raw).toContain((await call(target, { path: raw, token: CAROL })).status);
    }
    await goOnline();
  });

  it('never lets a historical LIST (resourceVersionMatch=Exact, or limit with a resourceVersion) replace the cached current one', async () => {
    await goOnline();
    const current = '/api/v1/namespaces/default/pods';
    expect((await call(target, { path: current, token: ALICE })).status).toBe(200);
    for (const query of ['resourceVersion=5&resourceVersionMatch=Exact', 'limit=500&resourceVersion=5']) {
      const historical = await call(target, { path: `${current}?${query}`, token: ALICE });
      expect(historical.json.servedTarget).toBe(`${current}?${query}`);
    }
    await proxy.cache.flush();
    await goOffline();
    const offline = await call(target, { path: `${current}?limit=500&resourceVersion=0`, token: ALICE });
    expect(offline.status).toBe(200);
    expect(offline.json.servedTarget).toBe(current);
    await goOnline();
  });

  it('refuses an upgrade (exec) whose path has more than one reading before it reaches the upstream', async () => {
    await goOnline();
    const upgrade = (path: string) => upgradeStatus(target, { path, token: ALICE, headers: { upgrade: 'SPDY/3.1' } });
    const sentBefore = upstream.requests.length;
    const status = await upgrade('/api/v1/namespaces/default/pods/p/%2e%2e/other/exec?command=sh');
    expect(upstream.requests.slice(sentBefore)).toEqual([]);
    expect(status).toBe(400);
    // A plain path still goes through (the raw upstream refuses it with 404).
    expect(await upgrade('/api/v1/namespaces/default/pods/p/exec?command=sh')).toBe(404);
    expect(upstream.requests.at(-1)?.target).toBe('/api/v1/namespaces/default/pods/p/exec?command=sh');
  });

  it.each([
    ['a backslash (configmaps\\cm1)', '/api/v1/namespaces/default/configmaps\\cm1'],
    [
      'encoded dot segments (%2e%2e)',
      '/api/v1/namespaces/default/secrets/topsecret/%2e%2e/%2e%2e/%2e%2e/default/configmaps/cm1',
    ],
  ])('refuses a path with %s, and the cached cm1 stays cached', async (_name, raw) => {
    await goOnline();
    const cm1 = await call(target, { path: CM1, token: ALICE });
    expect(cm1.status).toBe(200);
    await proxy.cache.flush();
    const sentBefore = upstream.requests.length;

    const refused = await call(target, { path: raw, token: ALICE });
    const sent = upstream.requests.slice(sentBefore);
    await proxy.cache.flush();

    await goOffline();
    // The defect: the upstream's 404 for the raw path deleted cm1's entry, so cm1 was gone offline.
    const offline = await call(target, { path: CM1, token: ALICE });
    expect(offline.status).toBe(200);
    expect(offline.json.servedTarget).toBe(CM1);
    expect((await call(target, { path: raw, token: ALICE })).status).toBe(400);
    await goOnline();
    expect(sent).toEqual([]);
    expect(refused.status).toBe(400);
    expect(refused.json).toMatchObject({ kind: 'Status', code: 400 });
  });
});
