/**
 * The controllers that must run once run on the replica that leads: two
 * replicas campaign on the in-memory coordination of test/support
 * (SIMULATED: leases run out when the test says so) over one SQLite store;
 * exactly one runs the rollout controller, and when it stops or its lease
 * runs out the other takes over, loading the rollouts from the store.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { OpenedHubStore } from '../../../../src/hub/store/coordination.js';
import type { HubContext } from '../../../../src/hub/api/hub-context.js';
import { LocalCoordination } from '../../../../src/hub/store/local-coordination.js';
import { HubMetrics } from '../../../../src/hub/metrics/hub-metrics.js';
import { TunnelRolloutDelivery } from '../../../../src/hub/rollouts/rollout-tunnel.js';
import { RunOnceControllers } from '../../../../src/hub/rollouts/run-once-controllers.js';
import { silentLogger } from '../../../../src/log/run-log.js';
import { InMemoryReplicaSet } from '../../../support/in-memory-replicas.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function replicaSelf(id: string): { id: string; peerUrl: string; advertiseUrl: string; startedAt: string } {
  const url = `https://127.0.0.1:${id === 'a' ? 1 : 2}`;
  return { id, peerUrl: url, advertiseUrl: url, startedAt: new Date(0).toISOString() };
}

async function replica(opened: OpenedHubStore): Promise<{ context: HubContext; controllers: RunOnceControllers }> {
  const context = {
    store: opened.store,
    metrics: new HubMetrics(),
    logger: silentLogger,
    tunnels: new Map(),
    now: () => new Date(),
    coordination: opened.coordination,
  } as unknown as HubContext;
  await opened.coordination.join();
  const controllers = new RunOnceControllers({
    store: opened.store,
    coordination: opened.coordination,
    delivery: new TunnelRolloutDelivery({ tunnels: new Map(), logger: silentLogger }),
    context,
    connected: () => [],
    logger: silentLogger,
  });
  await controllers.start();
  cleanups.push(() => controllers.stop());
  return { context, controllers };
}

async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe('run-once controllers', () => {
  it('run on one replica at a time; the other takes over when the leader withdraws', async () => {
    const set = new InMemoryReplicaSet(mkdtempSync(join(tmpdir(), 'edgeadm-run-once-')));
    cleanups.push(() => set.close());
    const a = await replica(await set.opener()(replicaSelf('a')));
    const b = await replica(await set.opener()(replicaSelf('b')));
    expect(a.context.rollouts).toBeDefined();
    expect(b.context.rollouts).toBeUndefined();
    expect([a.controllers.isLeader, b.controllers.isLeader]).toEqual([true, false]);
    await a.controllers.stop();
    await until(() => b.context.rollouts !== undefined);
    expect(a.context.rollouts).toBeUndefined();
    expect(set.leaderOf('controllers')).toBe('b');
  });

  it('move to another replica when the leader’s lease runs out', async () => {
    const set = new InMemoryReplicaSet(mkdtempSync(join(tmpdir(), 'edgeadm-run-once-')));
    cleanups.push(() => set.close());
    const a = await replica(await set.opener()(replicaSelf('a')));
    const b = await replica(await set.opener()(replicaSelf('b')));
    set.expire('a');
    await until(() => b.context.rollouts !== undefined && a.context.rollouts === undefined);
    expect(set.leaderOf('controllers')).toBe('b');
  });

  it('start at once on a single replica, before the hub serves', async () => {
    const self = replicaSelf('a');
    const coordination = new LocalCoordination(self);
    const set = new InMemoryReplicaSet(mkdtempSync(join(tmpdir(), 'edgeadm-run-once-')));
    cleanups.push(() => set.close());
    const shared = await set.opener()(self);
    const one = await replica({ store: shared.store, coordination });
    expect(one.context.rollouts).toBeDefined();
  });
});
