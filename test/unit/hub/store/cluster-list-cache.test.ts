/**
 * The web view's cache of registered clusters (src/hub/store/cluster-list-cache.ts):
 * one store read per fresh period however many requests, a stale copy only
 * within its bound (with one new read started), and never older.
 */
import { describe, expect, it } from 'vitest';
import type { ClusterRecord, HubStore } from '../../../../src/hub/store/store.js';
import { ClusterListCache } from '../../../../src/hub/store/cluster-list-cache.js';

function fakeStore(): { store: HubStore; reads: () => number; put: (names: string[]) => void } {
  let reads = 0;
  let rows: ClusterRecord[] = [];
  const store = {
    listClusters: async () => {
      reads += 1;
      return rows;
    },
  } as unknown as HubStore;
  return {
    store,
    reads: () => reads,
    put: (names) =>
      (rows = names.map((name) => ({ name, labels: {}, certSerial: '', certNotAfter: '', registeredAt: '' }))),
  };
}

describe('ClusterListCache', () => {
  it('shares one read among every request within the fresh period, then reads again', async () => {
    let now = 0;
    const fake = fakeStore();
    fake.put(['a']);
    const cache = new ClusterListCache({ store: fake.store, now: () => now, freshMs: 1000, staleMs: 5000 });
    const first = await Promise.all([cache.list(), cache.list(), cache.list()]);
    expect(fake.reads()).toBe(1);
    expect(first.map((list) => list.map((c) => c.name))).toEqual([['a'], ['a'], ['a']]);
    fake.put(['a', 'b']);
    now = 1000;
    expect((await cache.list()).map((c) => c.name)).toEqual(['a']);
    expect(fake.reads()).toBe(1);
    // Stale: answered from the last read at once, while one new read runs.
    now = 1001;
    expect((await cache.list()).map((c) => c.name)).toEqual(['a']);
    expect(fake.reads()).toBe(2);
    expect((await cache.list()).map((c) => c.name)).toEqual(['a', 'b']);
  });

  it('never answers from a copy older than the stale bound', async () => {
    let now = 0;
    const fake = fakeStore();
    fake.put(['a']);
    const cache = new ClusterListCache({ store: fake.store, now: () => now, freshMs: 1000, staleMs: 5000 });
    await cache.list();
    fake.put(['b']);
    now = 5001;
    expect((await cache.list()).map((c) => c.name)).toEqual(['b']);
  });

  it('reads again after invalidate, and keeps nothing of a read begun before it', async () => {
    const fake = fakeStore();
    fake.put(['a']);
    const cache = new ClusterListCache({ store: fake.store, now: () => 0, freshMs: 1000, staleMs: 5000 });
    await cache.list();
    // A read begins (the list is empty of a cluster's new hold), then the change is heard.
    let release: () => void = () => undefined;
    const slow = fake.store.listClusters.bind(fake.store);
    (fake.store as { listClusters: () => Promise<ClusterRecord[]> }).listClusters = async () => {
      const rows = await slow();
      await new Promise<void>((resolve) => (release = resolve));
      return rows;
    };
    cache.invalidate();
    const before = cache.list();
    fake.put(['a', 'held']);
    (fake.store as { listClusters: () => Promise<ClusterRecord[]> }).listClusters = slow;
    cache.invalidate();
    expect((await cache.list()).map((c) => c.name)).toEqual(['a', 'held']);
    release();
    expect((await before).map((c) => c.name)).toEqual(['a']);
    // The earlier read finished last; what the cache holds is still the later one.
    expect((await cache.list()).map((c) => c.name)).toEqual(['a', 'held']);
  });
});
