/** The controller's state and persistence (src/hub/rollouts/live-rollouts.ts), against a real store. */
import { afterEach, describe, expect, it, vi } from 'vitest';
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
});
