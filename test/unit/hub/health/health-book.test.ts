/**
 * The hub's book of health reports: the latest in memory at once, the
 * store written only when a report says something new, at most once per
 * interval per cluster (the latest winning), and a waiting write kept when
 * the tunnel closes. The store is a stand-in that counts writes; the clock
 * is vitest's.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ClusterHealthBook } from '../../../../src/hub/health/health-book.js';
import type { ClusterHealthReport, ClusterHealthView } from '../../../../src/health/wire.js';
import type { HubStore } from '../../../../src/hub/store/store.js';
import { silentLogger } from '../../../../src/log/run-log.js';

const INTERVAL_MS = 10_000;

function report(ready: number): ClusterHealthReport {
  return { nodes: { total: 3, ready, notReady: [] }, certificates: [] };
}

function storeStandIn(stored?: ClusterHealthView): {
  store: HubStore;
  writes: ClusterHealthView[];
  failNext: () => void;
} {
  const writes: ClusterHealthView[] = [];
  let isFailing = false;
  const store = {
    getCluster: async () => (stored === undefined ? { name: 'c' } : { name: 'c', health: stored }),
    updateClusterHealth: async (_name: string, health: ClusterHealthView) => {
      if (isFailing) {
        isFailing = false;
        throw new Error('the store is away');
      }
      writes.push(health);
    },
  } as unknown as HubStore;
  return { store, writes, failNext: () => (isFailing = true) };
}

describe('ClusterHealthBook', () => {
  beforeEach(() => vi.useFakeTimers({ now: new Date('2030-01-01T00:00:00Z') }));
  afterEach(() => vi.useRealTimers());

  const bookOn = (store: HubStore) =>
    new ClusterHealthBook({ store, logger: silentLogger, minIntervalMs: INTERVAL_MS });

  it('stores the first report at once, and the same report never again', async () => {
    const { store, writes } = storeStandIn();
    const book = bookOn(store);
    await book.take('c', report(3));
    expect(writes.map((w) => w.nodes?.ready)).toEqual([3]);
    for (let i = 0; i < 5; i += 1) {
      await vi.advanceTimersByTimeAsync(INTERVAL_MS);
      await book.take('c', report(3));
    }
    expect(writes).toHaveLength(1);
    expect(book.get('c')?.reportedAt).toBe(new Date(Date.now()).toISOString());
  });

  it('writes a report that changes on every line once per interval, the latest winning', async () => {
    const { store, writes } = storeStandIn();
    const book = bookOn(store);
    await book.take('c', report(3));
    for (let i = 0; i < 50; i += 1) await book.take('c', report(i % 3));
    // The latest is in memory at once; the store waits for the interval.
    expect(book.get('c')?.nodes?.ready).toBe(49 % 3);
    expect(writes).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(INTERVAL_MS);
    expect(writes.map((w) => w.nodes?.ready)).toEqual([3, 49 % 3]);
  });

  it('does not write what the store already holds from before a restart', async () => {
    const { store, writes } = storeStandIn({ ...report(2), reportedAt: '2029-12-31T00:00:00.000Z' });
    await bookOn(store).take('c', report(2));
    expect(writes).toHaveLength(0);
  });

  it('keeps a waiting write when the tunnel closes, and writes again after a failed write', async () => {
    const { store, writes, failNext } = storeStandIn();
    const book = bookOn(store);
    failNext();
    await book.take('c', report(3));
    expect(writes).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(INTERVAL_MS);
    await book.take('c', report(3));
    expect(writes.map((w) => w.nodes?.ready)).toEqual([3]);
    await book.take('c', report(1));
    book.forget('c');
    await vi.advanceTimersByTimeAsync(0);
    expect(writes.map((w) => w.nodes?.ready)).toEqual([3, 1]);
    expect(book.get('c')).toBeUndefined();
  });
});
