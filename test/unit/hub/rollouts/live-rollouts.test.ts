/** The controller's state and persistence (src/hub/rollouts/live-rollouts.ts), against a real store. */
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RolloutWrite } from '../../../../src/hub/store/store.js';
import type { ClusterProgress } from '../../../../src/rollout/progress.js';
import { canonicalJson, LiveRollouts, type CopyReportMessage } from '../../../../src/hub/rollouts/live-rollouts.js';
import type { SqliteHubStore } from '../../../../src/hub/store/sqlite-store.js';
import { silentLogger } from '../../../../src/log/run-log.js';
import { liveRollout, storeWith } from './controller-fakes.js';

const stores: SqliteHubStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

const report: CopyReportMessage = {
  kind: 'copy',
  rollout: 'web',
  cluster: 'a',
  revision: '1-x',
  readiness: 'ready',
  objects: [],
};

async function withWeb(): Promise<{ store: SqliteHubStore; rollouts: LiveRollouts }> {
  const store = await storeWith(['a']);
  stores.push(store);
  const rollouts = new LiveRollouts(store, silentLogger);
  const live = liveRollout();
  live.record.progress.clusters = { a: { wave: 0, phase: 'applying', targetRevision: '1-x', deliveredAt: 1 } };
  live.unconfirmed.add('a');
  rollouts.set(live);
  return { store, rollouts };
}

describe('the live rollouts', () => {
  it('writes JSON with sorted keys, so equal documents give equal text', () => {
    expect(canonicalJson({ b: [1, { d: 1, c: null }], a: 'x' })).toBe('{"a":"x","b":[1,{"c":null,"d":1}]}');
  });

  it('records a report at once and settles it only when the next write of its rollout is done', async () => {
    const { store, rollouts } = await withWeb();
    expect(rollouts.record('a', { ...report, rollout: 'api' })).toBeUndefined();
    const recorded = rollouts.record('a', report);
    expect(recorded?.rollout).toBe('web');
    const live = rollouts.get('web');
    expect(live?.record.progress.clusters.a?.phase).not.toBe('applying');
    expect(live?.unconfirmed.has('a')).toBe(false);
    let isSettled = false;
    void recorded?.written.then(() => (isSettled = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(isSettled).toBe(false);
    await rollouts.save(rollouts.all());
    await recorded?.written;
    expect((await store.listReportedCopies('web')).map((copy) => copy.cluster)).toEqual(['a']);
  });

  it('refuses the reports of a failed write, and every unwritten one at stop', async () => {
    const { store, rollouts } = await withWeb();
    const refused = rollouts.record('a', report)?.written;
    vi.spyOn(store, 'putRollouts').mockRejectedValueOnce(new Error('disk full'));
    await expect(rollouts.save(rollouts.all())).rejects.toThrow('disk full');
    await expect(refused).rejects.toThrow('disk full');
    const unwritten = rollouts.record('a', report)?.written;
    rollouts.rejectUnwritten(new Error('the rollout controller has stopped'));
    await expect(unwritten).rejects.toThrow('stopped');
  });

  it('writes only the clusters whose progress entry was replaced, and all of them after a failed write', async () => {
    const { store, rollouts } = await withWeb();
    const live = rollouts.get('web')!;
    const clusters = live.record.progress.clusters;
    for (let i = 0; i < 100; i += 1) clusters[`shop-${i}`] = { wave: 1, phase: 'waiting' };
    const writes: RolloutWrite[] = [];
    const put = store.putRollouts.bind(store);
    vi.spyOn(store, 'putRollouts').mockImplementation(async (batch) => {
      writes.push(...batch);
      return put(batch);
    });
    await rollouts.save([live]);
    expect(writes.at(-1)?.changedClusters).toBeUndefined();
    // An unchanged pass writes the head alone.
    await rollouts.save([live]);
    expect(writes.at(-1)?.changedClusters).toEqual([]);
    clusters['shop-7'] = { wave: 1, phase: 'applying', targetRevision: '1-x', deliveredAt: 2 };
    delete clusters['shop-8'];
    await rollouts.save([live]);
    expect(writes.at(-1)?.changedClusters).toEqual(['shop-7', 'shop-8']);
    // Refused by the store: what it did not take is written again with the next change.
    clusters['shop-9'] = { wave: 1, phase: 'failed', message: 'x' };
    vi.mocked(store.putRollouts).mockRejectedValueOnce(new Error('disk full'));
    await expect(rollouts.save([live])).rejects.toThrow('disk full');
    clusters['shop-10'] = { wave: 1, phase: 'ready' };
    await rollouts.save([live]);
    expect(writes.at(-1)?.changedClusters).toEqual(['shop-9', 'shop-10']);
    expect((await store.getRollout('web'))?.progress.clusters).toEqual(clusters);
  });

  it('keeps the store equal to the progress in memory over any sequence of changes, writes and refused writes', async () => {
    const { store, rollouts } = await withWeb();
    const live = rollouts.get('web')!;
    const put = store.putRollouts.bind(store);
    let refuse = false;
    /** A change made while the write is in flight (a report recorded meanwhile): it belongs to the next write. */
    let during: (() => void) | undefined;
    vi.spyOn(store, 'putRollouts').mockImplementation(async (batch) => {
      if (refuse) throw new Error('refused');
      await put(batch);
      during?.();
    });
    const step = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), cluster: fc.nat(12), phase: fc.constantFrom('waiting', 'ready') }),
      fc.record({ kind: fc.constant('delete' as const), cluster: fc.nat(12) }),
      fc.record({ kind: fc.constant('save' as const), isRefused: fc.boolean(), changeDuring: fc.option(fc.nat(12)) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 40 }), async (steps) => {
        for (const action of steps) {
          const clusters = live.record.progress.clusters;
          if (action.kind === 'set') {
            clusters[`c${action.cluster}`] = { wave: 0, phase: action.phase } as ClusterProgress;
          } else if (action.kind === 'delete') delete clusters[`c${action.cluster}`];
          else {
            refuse = action.isRefused;
            const changed = action.changeDuring;
            if (changed !== null) during = () => void (clusters[`c${changed}`] = { wave: 0, phase: 'failed' });
            await rollouts.save([live]).catch(() => undefined);
            refuse = false;
            during = undefined;
          }
        }
        await rollouts.save([live]);
        expect((await store.getRollout('web'))?.progress.clusters).toEqual(live.record.progress.clusters);
        // What the next leader (or this hub after a restart) loads.
        const loaded = (await store.listRollouts()).find((record) => record.name === 'web');
        expect(loaded?.progress.clusters).toEqual(live.record.progress.clusters);
      }),
      { numRuns: 60 },
    );
  });
});
