import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import type { ClientRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseApiPath } from '../../../src/kube/api-path.js';
import { BufferBudget } from '../../../src/edge/buffer-budget.js';
import { cacheKeyOf, classifyRequest } from '../../../src/edge/cache-key.js';
import { DiskCache } from '../../../src/edge/disk-cache.js';
import type { UpstreamClient, UpstreamRequestOptions } from '../../../src/edge/upstream-client.js';
import type { UpstreamState } from '../../../src/edge/upstream-state.js';
import { resyncFromCachedList, type ResyncParts, type ResyncSink } from '../../../src/edge/watch-resync.js';
import { silentLogger } from '../../../src/log/run-log.js';

const checked = parseApiPath('/api/v1/nodes?watch=1&resourceVersion=7');
if (!checked.ok) throw new Error(checked.message);
const classified = classifyRequest('GET', checked.value, 'application/json');
const listKey = cacheKeyOf('id-a', classified);

const seen = {
  kind: 'NodeList',
  apiVersion: 'v1',
  metadata: { resourceVersion: '7' },
  items: [
    { metadata: { name: 'edge-1', resourceVersion: '6' } },
    { metadata: { name: 'edge-2', resourceVersion: '5' } },
  ],
};
const fresh = {
  kind: 'NodeList',
  apiVersion: 'v1',
  metadata: { resourceVersion: '9' },
  items: [
    { metadata: { name: 'edge-1', resourceVersion: '8' } },
    { metadata: { name: 'edge-3', resourceVersion: '9' } },
  ],
};

/** An upstream whose every request is answered with `answer` (or fails with it). */
function fakeUpstream(answer: { status: number; body: string } | Error) {
  const asked: UpstreamRequestOptions[] = [];
  const upstream = {
    request(options: UpstreamRequestOptions) {
      asked.push(options);
      const request = Object.assign(new EventEmitter(), {
        end() {
          setImmediate(() => {
            if (answer instanceof Error) {
              request.emit('error', answer);
              return;
            }
            const response = Object.assign(new PassThrough(), { statusCode: answer.status });
            request.emit('response', response);
            // In 8-byte chunks, so a budget can run out part way.
            for (let at = 0; at < answer.body.length; at += 8) response.write(answer.body.slice(at, at + 8));
            response.end();
          });
        },
        destroy() {},
      });
      return request as unknown as ClientRequest;
    },
  };
  return { upstream: upstream as unknown as UpstreamClient, asked };
}

let dir: string;
let cache: DiskCache;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'edgeadm-watch-resync-'));
  cache = DiskCache.open({ dir, maxBytes: 1024 * 1024, maxEntries: 100 });
  await cache.put({
    meta: {
      key: listKey,
      identityKey: 'id-a',
      path: classified.path,
      contentType: 'application/json',
      storedAt: 'then',
    },
    body: Buffer.from(JSON.stringify(seen)),
  });
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function run(upstream: UpstreamClient, options: { budget?: BufferBudget; closeAfterWrites?: number } = {}) {
  const written: unknown[] = [];
  const unreachable: string[] = [];
  const state = { markUnreachable: (reason: string) => unreachable.push(reason) } as unknown as UpstreamState;
  const budget = options.budget ?? new BufferBudget(1024 * 1024);
  const parts: ResyncParts = {
    ...{ classified, listKey, headers: {}, clientCertCn: undefined, upstream, cache, budget, state },
    logger: silentLogger,
  };
  const sink: ResyncSink = {
    isClosed: () => options.closeAfterWrites !== undefined && written.length >= options.closeAfterWrites,
    setCurrent: () => {},
    write: (line) => {
      written.push(JSON.parse(line));
      return Promise.resolve();
    },
  };
  return { outcome: resyncFromCachedList(parts, sink), written, unreachable, budget };
}

const cachedList = async () => JSON.parse((await cache.get(listKey))!.body.toString('utf8')) as unknown;

describe('resyncFromCachedList', () => {
  it('re-lists without the watch parameters, sends what changed since the cached list, stores the fresh list and resumes from it', async () => {
    const { upstream, asked } = fakeUpstream({ status: 200, body: JSON.stringify(fresh) });
    const { outcome, written, budget } = run(upstream);
    expect(await outcome).toEqual({ next: 'connect', version: '9' });
    expect(asked.map((a) => a.path)).toEqual(['/api/v1/nodes']);
    expect(written).toEqual([
      { type: 'MODIFIED', object: fresh.items[0] },
      { type: 'ADDED', object: fresh.items[1] },
      { type: 'DELETED', object: seen.items[1] },
    ]);
    expect(await cachedList()).toEqual(fresh);
    expect(budget.used).toBe(0);
  });

  it('resumes from what the client saw when the re-list does not fit the memory budget, and gives the budget back', async () => {
    const { upstream } = fakeUpstream({ status: 200, body: JSON.stringify(fresh) });
    const { outcome, written, budget } = run(upstream, { budget: new BufferBudget(16) });
    expect(await outcome).toEqual({ next: 'connect', version: undefined });
    expect(written).toEqual([]);
    expect(await cachedList()).toEqual(seen);
    expect(budget.used).toBe(0);
  });

  it('holds again, and takes the proxy offline, when the upstream is gone again', async () => {
    const { upstream } = fakeUpstream(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
    const { outcome, unreachable, written } = run(upstream);
    expect(await outcome).toEqual({ next: 'hold' });
    expect(unreachable).toEqual(['connect ECONNREFUSED']);
    expect(written).toEqual([]);
  });

  it('resumes without a diff when the re-list is refused, and stops when the client leaves mid-way', async () => {
    const refused = run(fakeUpstream({ status: 403, body: '{"kind":"Status"}' }).upstream);
    expect(await refused.outcome).toEqual({ next: 'connect', version: undefined });
    expect(await cachedList()).toEqual(seen);

    const left = run(fakeUpstream({ status: 200, body: JSON.stringify(fresh) }).upstream, { closeAfterWrites: 3 });
    expect(await left.outcome).toEqual({ next: 'closed' });
    expect(await cachedList()).toEqual(seen);
    expect(left.budget.used).toBe(0);
  });

  it('resumes at once, with no request, when nothing usable is cached', async () => {
    await cache.delete(listKey);
    const { upstream, asked } = fakeUpstream({ status: 200, body: JSON.stringify(fresh) });
    expect(await run(upstream).outcome).toEqual({ next: 'connect', version: undefined });
    expect(asked).toEqual([]);
  });
});
