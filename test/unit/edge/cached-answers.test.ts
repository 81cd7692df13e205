import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseApiPath } from '../../../src/kube/api-path.js';
import { cacheKeyOf, classifyRequest } from '../../../src/edge/cache-key.js';
import {
  CachedAnswers,
  collectionsHolding,
  isCacheableRead,
  isWholeAnswer,
  objectFromList,
} from '../../../src/edge/cached-answers.js';
import { DiskCache } from '../../../src/edge/disk-cache.js';
import { RequestCounters } from '../../../src/edge/metrics.js';
import { nodeReadOf } from '../../../src/edge/offline-answers.js';
import { silentLogger } from '../../../src/log/run-log.js';

function classified(method: string, text: string, accept = 'application/json') {
  const checked = parseApiPath(text);
  if (!checked.ok) throw new Error(checked.message);
  return classifyRequest(method, checked.value, accept);
}

const nodeList = {
  kind: 'NodeList',
  apiVersion: 'v1',
  metadata: { resourceVersion: '7' },
  items: [{ metadata: { name: 'edge-1', resourceVersion: '6' } }, { metadata: { name: 'edge-2' } }],
};
const podList = {
  kind: 'PodList',
  apiVersion: 'v1',
  metadata: {},
  items: [{ metadata: { name: 'p', namespace: 'a' } }, { metadata: { name: 'p', namespace: 'b', uid: 'in-b' } }],
};

describe('the pure cache decisions', () => {
  it('knows which collections hold an object, and that a collection is no object', () => {
    expect(collectionsHolding('/api/v1/namespaces/a/pods/p')).toEqual({
      namespace: 'a',
      name: 'p',
      collections: new Set(['/api/v1/namespaces/a/pods', '/api/v1/pods']),
    });
    expect(collectionsHolding('/apis/apps/v1/deployments/d')?.collections).toEqual(
      new Set(['/apis/apps/v1/deployments']),
    );
    expect(collectionsHolding('/api/v1/pods')).toBeUndefined();
    expect(collectionsHolding('/api/v1/namespaces/a/pods/p/log')).toBeUndefined();
  });

  it('answers an object GET from a list as the API server would: kind, apiVersion, the item, in its namespace only', () => {
    expect(objectFromList(nodeList, undefined, 'edge-1')).toEqual({
      kind: 'Node',
      apiVersion: 'v1',
      metadata: { name: 'edge-1', resourceVersion: '6' },
    });
    expect(objectFromList(podList, 'b', 'p')).toMatchObject({ kind: 'Pod', metadata: { uid: 'in-b' } });
    expect(objectFromList(podList, 'c', 'p')).toBeUndefined();
    expect(objectFromList(nodeList, undefined, 'edge-3')).toBeUndefined();
  });

  it('stores only whole answers of cacheable reads', () => {
    expect(isWholeAnswer(nodeList)).toBe(true);
    expect(isWholeAnswer({ ...nodeList, metadata: { continue: 'abc' } })).toBe(false);
    expect(isWholeAnswer({ ...nodeList, metadata: { continue: '' } })).toBe(true);
    expect(isWholeAnswer(null)).toBe(true);
    expect(isCacheableRead(classified('GET', '/api/v1/nodes'))).toBe(true);
    expect(isCacheableRead(classified('GET', '/api/v1/nodes?watch=1'))).toBe(false);
    expect(isCacheableRead(classified('POST', '/api/v1/nodes'))).toBe(false);
    expect(isCacheableRead(classified('GET', '/api/v1/nodes', 'application/vnd.kubernetes.protobuf'))).toBe(false);
  });

  it('looks up only a valid node name on registration', () => {
    expect(nodeReadOf('edge-1')?.path).toBe('/api/v1/nodes/edge-1');
    expect(nodeReadOf('../namespaces/kube-system/secrets/x')).toBeUndefined();
    expect(nodeReadOf('edge-1/status')).toBeUndefined();
    expect(nodeReadOf('Edge-1')).toBeUndefined();
    expect(nodeReadOf(undefined)).toBeUndefined();
  });
});

describe('CachedAnswers', () => {
  let dir: string;
  let cache: DiskCache;
  let answers: CachedAnswers;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'edgeadm-cached-answers-'));
    cache = DiskCache.open({ dir, maxBytes: 1024 * 1024, maxEntries: 100 });
    answers = new CachedAnswers(cache, new RequestCounters(), silentLogger);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const store = (identityKey: string, text: string, body: unknown) => {
    const request = classified('GET', text);
    return answers.store(
      cacheKeyOf(identityKey, request),
      identityKey,
      request,
      'application/json',
      Buffer.from(JSON.stringify(body)),
    );
  };

  it('stores a whole list and finds its object for the same identity only', async () => {
    await store('id-a', '/api/v1/nodes', nodeList);
    await store('id-a', '/api/v1/pods?limit=500&continue=x', { ...podList, metadata: { continue: 'next' } });
    expect(cache.entryCount).toBe(1); // the page of a chunked list was left out
    const hit = await answers.lookup('application/json', classified('GET', '/api/v1/nodes/edge-2'), 'id-a');
    expect(JSON.parse(hit!.body.toString('utf8'))).toEqual({
      kind: 'Node',
      apiVersion: 'v1',
      metadata: { name: 'edge-2' },
    });
    expect(await answers.lookup('application/json', classified('GET', '/api/v1/nodes/edge-2'), 'id-b')).toBeUndefined();
    // An object GET with a query that narrows it is not answered from a list.
    expect(
      await answers.lookup('application/json', classified('GET', '/api/v1/nodes/edge-2?fieldSelector=x'), 'id-a'),
    ).toBeUndefined();
  });

  it('answers a Table request that also takes plain JSON from the JSON entry, and never an object from a Table', async () => {
    await store('id-a', '/api/v1/nodes', nodeList);
    const table = 'application/json;as=Table;v=v1;g=meta.k8s.io';
    const hit = await answers.lookup(
      `${table},application/json`,
      classified('GET', '/api/v1/nodes', `${table},application/json`),
      'id-a',
    );
    expect(JSON.parse(hit!.body.toString('utf8'))).toEqual(nodeList);
    expect(await answers.lookup(table, classified('GET', '/api/v1/nodes', table), 'id-a')).toBeUndefined();

    const tableRequest = classified('GET', '/api/v1/pods', table);
    await answers.store(
      cacheKeyOf('id-a', tableRequest),
      'id-a',
      tableRequest,
      'application/json',
      Buffer.from(JSON.stringify(podList)),
    );
    expect(
      await answers.lookup('application/json', classified('GET', '/api/v1/namespaces/a/pods/p'), 'id-a'),
    ).toBeUndefined();
  });
});
