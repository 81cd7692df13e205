/** Copies on their way to clusters (src/hub/rollouts/copy-delivery.ts), with a fake delivery. */
import { afterEach, describe, expect, it } from 'vitest';
import { CopyDelivery } from '../../../../src/hub/rollouts/copy-delivery.js';
import { CopyBudget } from '../../../../src/hub/rollouts/copy-renderings.js';
import { DeliveryQueues } from '../../../../src/hub/rollouts/delivery-queues.js';
import { KnownClusters } from '../../../../src/hub/rollouts/known-clusters.js';
import { LiveRollouts } from '../../../../src/hub/rollouts/live-rollouts.js';
import { OwedRemovals } from '../../../../src/hub/rollouts/owed-removals.js';
import type { SqliteHubStore } from '../../../../src/hub/store/sqlite-store.js';
import { silentLogger } from '../../../../src/log/run-log.js';
import type { Delivery } from '../../../../src/rollout/progress.js';
import { copyRevisionOf } from '../../../../src/rollout/render.js';
import { FakeClock, FakeDelivery, liveRollout, storeWith } from './controller-fakes.js';

const stores: SqliteHubStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

async function copies(connected: string[], budget?: CopyBudget) {
  const store = await storeWith(['a', 'b']);
  stores.push(store);
  const clusters = new KnownClusters();
  await clusters.reload(store);
  for (const cluster of connected) clusters.connect(cluster);
  const delivery = new FakeDelivery();
  for (const cluster of connected) delivery.connected.add(cluster);
  const drained = { next: Promise.withResolvers<void>() };
  const queues = new DeliveryQueues(silentLogger, () => drained.next.resolve());
  const rollouts = new LiveRollouts(store, silentLogger);
  const removals = new OwedRemovals({ store, delivery, queues, clusters, logger: silentLogger });
  const marked: string[] = [];
  const logger = silentLogger;
  const clock = new FakeClock();
  const copyDelivery = new CopyDelivery({
    rollouts,
    clusters,
    removals,
    queues,
    delivery,
    clock,
    logger,
    mark: (name) => marked.push(name),
    ...(budget === undefined ? {} : { budget }),
  });
  const live = liveRollout();
  rollouts.set(live);
  return { clusters, delivery, drained, copyDelivery, live, marked };
}

function copyFor(live: ReturnType<typeof liveRollout>, cluster: string): Delivery {
  const facts = { name: cluster, labels: { env: 'prod', region: 'eu' }, properties: {} };
  const rendered = copyRevisionOf(live.spec, live.record.revision, facts);
  if (!rendered.ok) throw new Error('does not render');
  return { cluster, revision: rendered.revision, facts };
}

describe('the copy delivery', () => {
  it("sends a cluster's current target only, as the rollout's owner", async () => {
    const { delivery, drained, copyDelivery, live } = await copies(['a', 'b']);
    const [a, b] = [copyFor(live, 'a'), copyFor(live, 'b')];
    live.record.progress.clusters = {
      a: { wave: 0, phase: 'applying', targetRevision: a.revision },
      b: { wave: 0, phase: 'applying', targetRevision: 'an-older-one' },
    };
    copyDelivery.deliver(live, a);
    copyDelivery.deliver(live, b);
    await drained.next.promise;
    expect(delivery.copies.map((sent) => [sent.cluster, sent.message.owner.user])).toEqual([
      ['a', 'edgeadm-hub-admin'],
    ]);
    expect([...live.unconfirmed]).toEqual(['b']);
  });

  it('keeps a copy for an offline cluster, and makes a copy no tunnel took wait again, offline-pending', async () => {
    const { clusters, delivery, drained, copyDelivery, live, marked } = await copies(['a']);
    const a = copyFor(live, 'a');
    live.record.progress.clusters = { a: { wave: 0, phase: 'applying', targetRevision: a.revision, deliveredAt: 1 } };
    delivery.connected.delete('a');
    copyDelivery.deliver(live, a);
    await drained.next.promise;
    expect(clusters.isConnected('a')).toBe(false);
    expect(live.record.progress.clusters.a).toEqual({ wave: 0, phase: 'offline-pending', targetRevision: a.revision });
    expect(marked).toEqual(['web']);
    copyDelivery.deliver(live, copyFor(live, 'b'));
    expect(live.unconfirmed.has('b')).toBe(true);
  });

  it("records a refused copy as the cluster's failure", async () => {
    const { delivery, drained, copyDelivery, live, marked } = await copies(['a']);
    const a = copyFor(live, 'a');
    live.record.progress.clusters = { a: { wave: 0, phase: 'applying', targetRevision: a.revision, deliveredAt: 1 } };
    delivery.failing.set('a', 'forbidden by RBAC');
    copyDelivery.deliver(live, a);
    await drained.next.promise;
    expect(live.record.progress.clusters.a).toMatchObject({ phase: 'failed', message: 'forbidden by RBAC' });
    expect(marked).toEqual(['web']);
  });

  it('renders each copy in its turn, with no more copies in flight than the budget allows', async () => {
    const names = Array.from({ length: 12 }, (_, i) => `c${i}`);
    const { clusters, delivery, drained, copyDelivery, live } = await copies([], new CopyBudget(1024 * 1024, 3));
    let inFlight = 0;
    let most = 0;
    const send = delivery.sendCopy.bind(delivery);
    delivery.sendCopy = async (cluster, message) => {
      most = Math.max(most, (inFlight += 1));
      await new Promise((resolve) => setTimeout(resolve, 1));
      inFlight -= 1;
      return send(cluster, message);
    };
    for (const name of names) {
      clusters.connect(name);
      delivery.connected.add(name);
      const copy = copyFor(live, name);
      live.record.progress.clusters[name] = { wave: 0, phase: 'applying', targetRevision: copy.revision };
      copyDelivery.deliver(live, copy);
    }
    await drained.next.promise;
    expect(delivery.copies.map((sent) => sent.cluster).sort()).toEqual([...names].sort());
    expect(most).toBe(3);
    // Each copy is the one its revision names, rendered for its cluster.
    for (const sent of delivery.copies) {
      expect(sent.message.copy.revision).toBe(live.record.progress.clusters[sent.cluster]?.targetRevision);
      expect(JSON.stringify(sent.message.copy.objects)).toContain(`"site":"${sent.cluster}"`);
    }
  });
});
