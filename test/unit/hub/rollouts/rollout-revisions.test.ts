/** A rollout's revisions (src/hub/rollouts/rollout-revisions.ts), against a real store. */
import { afterEach, describe, expect, it } from 'vitest';
import { KnownClusters } from '../../../../src/hub/rollouts/known-clusters.js';
import { canonicalJson, LiveRollouts } from '../../../../src/hub/rollouts/live-rollouts.js';
import type { RolloutActor } from '../../../../src/hub/rollouts/rollout-permissions.js';
import { RolloutRevisions } from '../../../../src/hub/rollouts/rollout-revisions.js';
import type { SqliteHubStore } from '../../../../src/hub/store/sqlite-store.js';
import type { PendingRemovalRecord } from '../../../../src/hub/store/store.js';
import { silentLogger } from '../../../../src/log/run-log.js';
import { parseRollout } from '../../../../src/rollout/spec.js';
import { rolloutDocument } from '../../rollout/fixtures.js';
import { FakeClock, storeWith } from './controller-fakes.js';

const stores: SqliteHubStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

const alice: RolloutActor = { user: 'alice', groups: ['ops'], clustersSelector: '', isAdmin: false };

async function revisions() {
  const store = await storeWith(['a', 'b']);
  stores.push(store);
  const clusters = new KnownClusters();
  await clusters.reload(store);
  const rollouts = new LiveRollouts(store, silentLogger);
  const owed: PendingRemovalRecord[] = [];
  const events: string[] = [];
  const written = new RolloutRevisions({
    store,
    rollouts,
    clusters,
    clock: new FakeClock(),
    logger: silentLogger,
    viewKeyOf: () => 'key',
    owe: async (removals) => void owed.push(...removals),
    wake: (name) => events.push(`wake ${name}`),
    mark: (name) => events.push(`mark ${name}`),
  });
  return { store, rollouts, revisions: written, owed, events };
}

describe('the rollout revisions', () => {
  it('writes the next revision, and owes a removal, as the applier, to each cluster it no longer places', async () => {
    const { store, rollouts, revisions: written, owed, events } = await revisions();
    const first = rolloutDocument();
    const one = await written.write(undefined, parseRollout(first), first, canonicalJson(first), alice);
    one.record.progress.clusters = { a: { wave: 0, phase: 'ready', targetRevision: '1-x' } };
    const second = rolloutDocument({ placement: { clusters: ['b'] } });
    const two = await written.write(one, parseRollout(second), second, canonicalJson(second), alice);
    expect([two.record.revision, two.record.owner.user, rollouts.get('web')]).toEqual([2, 'alice', two]);
    expect(owed).toEqual([{ rollout: 'web', cluster: 'a', owner: { user: 'alice', groups: ['ops'] } }]);
    expect(events).toEqual(['wake web', 'mark web', 'wake web', 'mark web']);
    expect(await store.listRolloutRevisions('web')).toEqual([1, 2]);
  });

  it('reads the revision before the current one, and says when there is none', async () => {
    const { revisions: written } = await revisions();
    const first = rolloutDocument();
    const one = await written.write(undefined, parseRollout(first), first, canonicalJson(first), alice);
    expect(await written.previous(one)).toMatchObject({ ok: false, reason: 'none' });
    const second = rolloutDocument({ placement: { clusters: ['b'] } });
    const two = await written.write(one, parseRollout(second), second, canonicalJson(second), alice);
    expect(await written.previous(two)).toMatchObject({ ok: true, revision: 1, document: first });
  });
});
