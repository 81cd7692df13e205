/** What the rollout controller knows of the clusters (src/hub/rollouts/known-clusters.ts). */
import { describe, expect, it } from 'vitest';
import { KnownClusters } from '../../../../src/hub/rollouts/known-clusters.js';
import { clusterRecord, storeWith } from './controller-fakes.js';

describe('the known clusters', () => {
  it('reads the registered clusters, and tells the core which are connected and held', async () => {
    const store = await storeWith(['a', 'b']);
    await store.setClusterHold('b', {
      reason: 'maintenance',
      since: '2026-01-01T00:00:00.000Z',
      by: 'edgeadm-hub-admin',
    });
    const clusters = new KnownClusters(['a']);
    const before = await clusters.reload(store);
    expect(before.size).toBe(0);
    expect(clusters.observed()).toEqual([
      { name: 'a', labels: { env: 'prod', region: 'eu' }, properties: {}, isConnected: true, isHeld: false },
      { name: 'b', labels: { env: 'prod', region: 'eu' }, properties: {}, isConnected: false, isHeld: true },
    ]);
    expect([clusters.isHeld('a'), clusters.isHeld('b'), clusters.has('c')]).toEqual([false, true, false]);
    await store.addCluster(clusterRecord('c'));
    const previous = await clusters.reload(store);
    expect([...previous.keys()]).toEqual(['a', 'b']);
    expect(clusters.records().map((cluster) => cluster.name)).toEqual(['a', 'b', 'c']);
    await store.close();
  });

  it('counts a lost delivery against the tunnel it was sent on only, not a newer one', () => {
    const clusters = new KnownClusters();
    clusters.connect('a');
    const first = clusters.connectionOf('a');
    clusters.connect('a');
    clusters.lostConnection('a', first);
    expect(clusters.isConnected('a')).toBe(true);
    clusters.lostConnection('a', clusters.connectionOf('a'));
    expect(clusters.isConnected('a')).toBe(false);
    clusters.connect('a');
    clusters.disconnect('a');
    expect(clusters.connected()).toEqual([]);
  });
});
