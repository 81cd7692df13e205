/** What is shown of a rollout (src/hub/rollouts/status-views.ts): pure, from a live rollout and the clusters' facts. */
import { describe, expect, it } from 'vitest';
import {
  listItemOf,
  statusViewOf,
  viewKeyOf,
  zeroCounts,
  type ClusterFacts,
} from '../../../../src/hub/rollouts/status-views.js';
import { clusterRecord, liveRollout } from './controller-fakes.js';

/** Facts of clusters a and b, of which only `connected` are connected. */
function facts(connected: string[]): ClusterFacts {
  return { get: (name) => clusterRecord(name), isConnected: (name) => connected.includes(name) };
}

function rolloutOnTwoClusters() {
  const live = liveRollout();
  live.record.progress.clusters = {
    a: { wave: 0, phase: 'ready', targetRevision: '1-x' },
    b: { wave: 1, phase: 'waiting' },
  };
  live.record.progress.currentWave = 1;
  return live;
}

describe('the status views', () => {
  it("lists a rollout with its clusters' counts by phase", () => {
    const item = listItemOf(rolloutOnTwoClusters());
    expect(item).toMatchObject({
      name: 'web',
      revision: 1,
      state: 'progressing',
      owner: 'edgeadm-hub-admin',
      clusters: 2,
    });
    expect(item.counts).toEqual({ ...zeroCounts(), ready: 1, waiting: 1 });
  });

  it('shows each wave done, started or waiting, and says when a ready cluster is offline now', () => {
    const view = statusViewOf(rolloutOnTwoClusters(), true, facts([]));
    expect(view.waves.map((wave) => [wave.index, wave.clusters, wave.state])).toEqual([
      [0, 1, 'done'],
      [1, 1, 'started'],
    ]);
    expect(view.clusters?.[0]?.message).toBe('not connected to the hub now; last known ready (never seen by the hub)');
    expect(statusViewOf(rolloutOnTwoClusters(), true, facts(['a'])).clusters?.[0]?.message).toBeUndefined();
    expect(statusViewOf(rolloutOnTwoClusters(), false, facts([])).clusters).toBeUndefined();
  });

  it('keys a view by what it shows, not by its version or time, and keeps the view', () => {
    const live = rolloutOnTwoClusters();
    const key = viewKeyOf(live, facts(['a']));
    expect(live.view?.clusters).toHaveLength(2);
    live.record.statusVersion += 1;
    live.record.updatedAt = '2027-01-01T00:00:00.000Z';
    expect(viewKeyOf(live, facts(['a']))).toBe(key);
    expect(viewKeyOf(live, facts([]))).not.toBe(key);
  });
});
