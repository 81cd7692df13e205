/** Removals owed to clusters (src/hub/rollouts/owed-removals.ts), against a real store. */
import { afterEach, describe, expect, it } from 'vitest';
import { DeliveryQueues } from '../../../../src/hub/rollouts/delivery-queues.js';
import { KnownClusters } from '../../../../src/hub/rollouts/known-clusters.js';
import { OwedRemovals } from '../../../../src/hub/rollouts/owed-removals.js';
import type { SqliteHubStore } from '../../../../src/hub/store/sqlite-store.js';
import { silentLogger } from '../../../../src/log/run-log.js';
import { FakeDelivery, storeWith } from './controller-fakes.js';

const stores: SqliteHubStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

async function owedRemovals(connected: string[]) {
  const store = await storeWith(['a', 'b']);
  stores.push(store);
  const clusters = new KnownClusters(connected);
  await clusters.reload(store);
  const delivery = new FakeDelivery();
  for (const cluster of connected) delivery.connected.add(cluster);
  const drained = { next: Promise.withResolvers<void>() };
  const queues = new DeliveryQueues(silentLogger, () => drained.next.resolve());
  const removals = new OwedRemovals({ store, delivery, queues, clusters, logger: silentLogger });
  return { store, clusters, delivery, removals, drained };
}

const owner = { user: 'alice', groups: ['ops'] };

describe('the owed removals', () => {
  it('stores a removal before it is sent, sends it to connected clusters only, and forgets what was taken', async () => {
    const { store, delivery, removals, drained } = await owedRemovals(['a']);
    const forgotten: string[] = [];
    await removals.owe(
      [
        { rollout: 'web', cluster: 'a', owner },
        { rollout: 'web', cluster: 'b', owner },
      ],
      async (removal) => void forgotten.push(removal.cluster),
    );
    expect(forgotten).toEqual(['a', 'b']);
    await drained.next.promise;
    expect(delivery.removals).toEqual([{ cluster: 'a', message: { rollout: 'web', owner } }]);
    expect((await store.listPendingRemovals()).map((removal) => removal.cluster)).toEqual(['b']);
    expect(removals.get('a', 'web')).toBeUndefined();
    expect(removals.get('b', 'web')).toBeDefined();
  });

  it("keeps a held cluster's removal owed, and a deleted cluster owed nothing", async () => {
    const { store, clusters, delivery, removals, drained } = await owedRemovals(['a']);
    await store.setClusterHold('a', { reason: 'maintenance', since: '2026-01-01T00:00:00.000Z', by: 'admin' });
    await clusters.reload(store);
    await removals.owe([{ rollout: 'web', cluster: 'a', owner }], async () => undefined);
    await drained.next.promise;
    expect(delivery.removals).toEqual([]);
    expect(await removals.send({ rollout: 'web', cluster: 'b', owner })).toBe(true);
    await store.deleteCluster('a');
    await removals.clustersReloaded(await clusters.reload(store));
    expect(removals.get('a', 'web')).toBeUndefined();
    expect(await store.listPendingRemovals()).toEqual([]);
  });
});
