/** What is shown of a rollout (src/hub/rollouts/status-views.ts): pure, from a live rollout and the clusters' facts. */
import fc from 'fast-check';
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

  it('keys a view by what it shows, not by its version or time', () => {
    const live = rolloutOnTwoClusters();
    const key = viewKeyOf(live, facts(['a']));
    live.record.statusVersion += 1;
    live.record.updatedAt = '2027-01-01T00:00:00.000Z';
    expect(viewKeyOf(live, facts(['a']))).toBe(key);
    expect(viewKeyOf(live, facts([]))).not.toBe(key);
  });

  it('changes the key exactly when the full view (rows included) changes, whatever changed and however', () => {
    type Change =
      | { kind: 'phase'; cluster: string; phase: 'waiting' | 'applying' | 'ready' | 'failed' }
      | { kind: 'same-entry-copy'; cluster: string }
      | { kind: 'connect' | 'disconnect' | 'remove' | 'add'; cluster: string }
      | { kind: 'facts'; cluster: string; lastSeen: string };
    const cluster = fc.constantFrom('a', 'b', 'c');
    const change: fc.Arbitrary<Change> = fc.oneof(
      fc.record({
        kind: fc.constant('phase' as const),
        cluster,
        phase: fc.constantFrom('waiting' as const, 'applying' as const, 'ready' as const, 'failed' as const),
      }),
      fc.record({
        kind: fc.constantFrom('same-entry-copy' as const, 'connect' as const, 'disconnect' as const),
        cluster,
      }),
      fc.record({ kind: fc.constantFrom('remove' as const, 'add' as const), cluster }),
      fc.record({ kind: fc.constant('facts' as const), cluster, lastSeen: fc.constantFrom('t1', 't2') }),
    );
    fc.assert(
      fc.property(fc.array(change, { maxLength: 30 }), (changes) => {
        const live = rolloutOnTwoClusters();
        const connected = new Set<string>(['a']);
        // Records kept by identity, as KnownClusters keeps them between reloads.
        const records = new Map(['a', 'b', 'c'].map((name) => [name, clusterRecord(name)]));
        const known: ClusterFacts = { get: (name) => records.get(name), isConnected: (name) => connected.has(name) };
        const shown = (): string => {
          const { statusVersion: _v, updatedAt: _t, ...rest } = statusViewOf(live, true, known);
          return JSON.stringify(rest);
        };
        let key = viewKeyOf(live, known);
        let view = shown();
        for (const c of changes) {
          const entries = live.record.progress.clusters;
          const entry = entries[c.cluster];
          if (c.kind === 'phase' && entry !== undefined) entries[c.cluster] = { ...entry, phase: c.phase };
          else if (c.kind === 'same-entry-copy' && entry !== undefined) entries[c.cluster] = { ...entry };
          else if (c.kind === 'connect') connected.add(c.cluster);
          else if (c.kind === 'disconnect') connected.delete(c.cluster);
          else if (c.kind === 'remove') delete entries[c.cluster];
          else if (c.kind === 'add' && entry === undefined) entries[c.cluster] = { wave: 1, phase: 'waiting' };
          else if (c.kind === 'facts') records.set(c.cluster, { ...clusterRecord(c.cluster), lastSeen: c.lastSeen });
          const nextKey = viewKeyOf(live, known);
          const nextView = shown();
          expect(nextKey !== key).toBe(nextView !== view);
          key = nextKey;
          view = nextView;
        }
      }),
      { numRuns: 300 },
    );
  });
});
