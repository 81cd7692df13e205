import { describe, expect, it } from 'vitest';
import { pendingClusters, watchEndOf } from '../../../src/hub-client/rollout-watch-end.js';
import type { PhaseCounts, RolloutStatusView } from '../../../src/rollout/api.js';

function counts(values: Partial<PhaseCounts>): PhaseCounts {
  return { waiting: 0, held: 0, 'offline-pending': 0, applying: 0, progressing: 0, ready: 0, failed: 0, ...values };
}

function view(state: RolloutStatusView['state'], values: Partial<PhaseCounts>, currentWave = 1): RolloutStatusView {
  const wave = { counts: counts({}), clusters: 0, state: 'started' as const };
  return {
    name: 'web',
    revision: 1,
    state,
    statusVersion: 1,
    owner: 'admin',
    currentWave,
    waves: [
      { ...wave, index: 0 },
      { ...wave, index: 1 },
    ],
    counts: counts(values),
    summaries: [],
    updatedAt: '2026-01-01T00:00:00.000Z',
  };
}

describe('when a rollout watch ends', () => {
  it('ends at complete, halted and aborted', () => {
    expect(watchEndOf(view('complete', { ready: 3 }))).toBe('complete');
    expect(watchEndOf(view('halted', { failed: 3 }))).toBe('halted');
    expect(watchEndOf(view('aborted', {}))).toBe('aborted');
  });

  it('ends when the last wave has started and only offline clusters are left, ready and held ones aside', () => {
    const done = view('progressing', { ready: 5, held: 1, 'offline-pending': 2 });
    expect(watchEndOf(done)).toBe('done-where-reachable');
    expect(pendingClusters(done)).toBe(2);
  });

  it('goes on while anything can still move: a wave to start, a copy in flight, a failure to count, a pause', () => {
    expect(watchEndOf(view('progressing', { ready: 5, 'offline-pending': 2 }, 0))).toBeUndefined();
    for (const moving of ['waiting', 'applying', 'progressing', 'failed'] as const) {
      expect(watchEndOf(view('progressing', { ready: 5, 'offline-pending': 2, [moving]: 1 })), moving).toBeUndefined();
    }
    expect(watchEndOf(view('paused', { ready: 5, 'offline-pending': 2 }))).toBeUndefined();
    expect(watchEndOf(view('progressing', { ready: 5 }))).toBeUndefined();
  });
});
