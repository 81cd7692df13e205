/**
 * A stored rollout the hub cannot load (issue #30): a document nested
 * thousands of levels deep, stored by a hub before the document limits,
 * stopped every later start with "Maximum call stack size exceeded". Now it
 * is quarantined: the controller starts, serves the other rollouts, reports
 * the quarantined one, and lets its owner or an admin delete it.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RolloutController } from '../../../../src/hub/rollouts/rollout-controller.js';
import { type RolloutActor } from '../../../../src/hub/rollouts/rollout-permissions.js';
import { type DeliveryOutcome } from '../../../../src/hub/rollouts/rollout-delivery.js';
import { SqliteHubStore } from '../../../../src/hub/store/sqlite-store.js';
import { silentLogger } from '../../../../src/log/run-log.js';
import { parseRollout } from '../../../../src/rollout/spec.js';
import type { RemoveMessage } from '../../../../src/rollout/wire.js';
import { rolloutDocument } from '../../rollout/fixtures.js';

const admin: RolloutActor = { user: 'edgeadm-hub-admin', groups: [], clustersSelector: '', isAdmin: true };
const eve: RolloutActor = { user: 'eve', groups: ['shops-eu'], clustersSelector: 'region=eu', isAdmin: false };
const strategy = { waves: ['100%'], maxUnavailable: '100%', soakSeconds: 0 };

/** `depth` objects, one inside the other, built without recursion. */
function nested(depth: number): unknown {
  let value: unknown = 'leaf';
  for (let level = 0; level < depth; level += 1) value = { a: value };
  return value;
}

function named(name: string, extraResource?: unknown): Record<string, unknown> {
  const document = rolloutDocument({ strategy });
  (document['metadata'] as { name: string }).name = name;
  if (extraResource !== undefined) (document['spec'] as { resources: unknown[] }).resources.push(extraResource);
  return document;
}

const stores: SqliteHubStore[] = [];
const controllers: RolloutController[] = [];
afterEach(async () => {
  for (const controller of controllers.splice(0)) await controller.stop();
  for (const store of stores.splice(0)) await store.close();
});

async function start(store: SqliteHubStore, removals: { cluster: string; message: RemoveMessage }[] = []) {
  const controller = await RolloutController.start({
    store,
    delivery: {
      sendCopy: async (): Promise<DeliveryOutcome> => ({ status: 'delivered' }),
      sendRemove: async (cluster, message): Promise<DeliveryOutcome> => {
        removals.push({ cluster, message });
        return { status: 'delivered' };
      },
    },
    logger: silentLogger,
    passIntervalMs: 0,
    connected: ['eu-1', 'eu-2'],
  });
  controllers.push(controller);
  await controller.settled();
  return controller;
}

describe('stored rollouts the hub cannot load', () => {
  it('are quarantined at start: the hub serves the others, reports it, and its deletion cleans its clusters', async () => {
    const store = await SqliteHubStore.open(join(mkdtempSync(join(tmpdir(), 'stored-rollout-')), 'hub.db'));
    stores.push(store);
    for (const name of ['eu-1', 'eu-2']) {
      await store.addCluster({
        name,
        labels: { env: 'prod', region: 'eu' },
        certSerial: name,
        certNotAfter: '2030-01-01T00:00:00.000Z',
        registeredAt: '2026-01-01T00:00:00.000Z',
      });
    }
    const first = await start(store);
    for (const name of ['good', 'deep']) await first.apply(named(name), parseRollout(named(name)), admin);
    await first.settled();
    await first.stop();
    // What a hub without document limits took and stored: a resource nested 3,000 levels deep.
    const deep = named('deep', {
      apiVersion: 'example.io/v1',
      kind: 'Deep',
      metadata: { name: 'd' },
      spec: nested(3000),
    });
    const record = (await store.listRollouts()).find((rollout) => rollout.name === 'deep');
    await store.putRollout(record!, {
      name: 'deep',
      revision: record!.revision,
      document: deep,
      appliedBy: admin.user,
      appliedAt: '2026-01-01T00:00:00.000Z',
    });

    const removals: { cluster: string; message: RemoveMessage }[] = [];
    const controller = await start(store, removals);
    expect(controller.status('good', admin, false)).toMatchObject({ name: 'good', revision: 1 });
    expect(controller.list(admin).map((item) => item.name)).toEqual(['good']);
    const [quarantined] = controller.quarantined(admin);
    expect(quarantined).toMatchObject({ name: 'deep', revision: 1, owner: admin.user });
    expect(quarantined?.reason).toMatch(/depth limit/);
    expect(controller.quarantinedCount).toBe(1);
    expect(() => controller.status('deep', admin, false)).toThrow(/quarantined/);
    // A user who does not own it is not told of it.
    expect(controller.quarantined(eve)).toEqual([]);
    await expect(controller.delete('deep', eve)).rejects.toMatchObject({ status: 404 });

    expect(await controller.delete('deep', admin)).toEqual({
      name: 'deep',
      removed: ['eu-1', 'eu-2'],
      pendingRemovals: [],
    });
    expect(removals.map(({ cluster, message }) => [cluster, message.rollout, message.owner.user])).toEqual([
      ['eu-1', 'deep', admin.user],
      ['eu-2', 'deep', admin.user],
    ]);
    expect(controller.quarantined(admin)).toEqual([]);
    expect((await store.listRollouts()).map((rollout) => rollout.name)).toEqual(['good']);
  });
});
