/**
 * The halted rollouts the attention list reads from the rollout controller
 * (src/hub/attention/halted-rollouts.ts): only halted ones, each with the
 * phase of every cluster it places, their rows read only for them, as the
 * caller; nothing known on a replica without a controller.
 */
import { describe, expect, it } from 'vitest';
import { haltedRollouts, type RolloutReader } from '../../../../src/hub/attention/halted-rollouts.js';
import type { RolloutActor } from '../../../../src/hub/rollouts/rollout-permissions.js';
import type { RolloutListItem, RolloutStatusView } from '../../../../src/rollout/api.js';
import type { RolloutState } from '../../../../src/rollout/progress.js';

const zero = { waiting: 0, held: 0, 'offline-pending': 0, applying: 0, progressing: 0, ready: 0, failed: 0 };

function item(name: string, state: RolloutState): RolloutListItem {
  return { name, revision: 1, state, owner: 'alice', clusters: 2, counts: zero, updatedAt: '2026-06-01T10:00:00.000Z' };
}

describe('haltedRollouts', () => {
  it('reads the rows of halted rollouts only, as the caller, with each cluster’s phase', () => {
    const asked: { name: string; actor: RolloutActor; withClusters: boolean }[] = [];
    const reader: RolloutReader = {
      list: () => [item('dns', 'progressing'), item('web', 'halted'), item('cache', 'complete')],
      status: (name, actor, withClusters) => {
        asked.push({ name, actor, withClusters });
        return {
          name,
          revision: 1,
          state: 'halted',
          haltReason: '1 cluster failed (budget 0)',
          statusVersion: 7,
          owner: 'alice',
          currentWave: 0,
          waves: [],
          counts: zero,
          summaries: [],
          clusters: [
            { cluster: 'shop-1', wave: 0, phase: 'failed' },
            { cluster: 'shop-2', wave: 0, phase: 'waiting' },
          ],
          updatedAt: '2026-06-01T11:00:00.000Z',
        } satisfies RolloutStatusView;
      },
    };
    const actor: RolloutActor = { user: 'eve', groups: [], clustersSelector: 'region=eu', isAdmin: false };
    expect(haltedRollouts(reader, actor)).toEqual([
      {
        name: 'web',
        haltReason: '1 cluster failed (budget 0)',
        since: '2026-06-01T11:00:00.000Z',
        clusters: new Map([
          ['shop-1', 'failed'],
          ['shop-2', 'waiting'],
        ]),
      },
    ]);
    expect(asked).toEqual([{ name: 'web', actor, withClusters: true }]);
  });

  it('knows nothing without a rollout controller (a replica that does not lead)', () => {
    expect(haltedRollouts(undefined, { user: 'a', groups: [], clustersSelector: '', isAdmin: true })).toBeUndefined();
  });
});
