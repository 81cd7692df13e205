/**
 * The store's rollout state: records, documents per revision, reported
 * copies, pending removals, cluster holds and properties. Everything must
 * survive closing and reopening the file (a hub restart loses nothing).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteHubStore } from '../../../../src/hub/store/sqlite-store.js';
import type { RolloutRecord } from '../../../../src/hub/store/store.js';
import { newProgress } from '../../../../src/rollout/progress.js';

const cluster = {
  name: 'shop-1',
  labels: { env: 'prod' },
  certSerial: 'ab12',
  certNotAfter: '2027-01-01T00:00:00.000Z',
  registeredAt: '2026-01-01T00:00:00.000Z',
};

function record(revision: number): RolloutRecord {
  const progress = newProgress(revision);
  progress.clusters['shop-1'] = { wave: 0, phase: 'applying', targetRevision: `${revision}-abc`, deliveredAt: 5 };
  return {
    name: 'web',
    owner: { user: 'alice', groups: ['ops'], clustersSelector: 'env=prod' },
    revision,
    progress,
    statusVersion: 3,
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-02T00:00:00.000Z',
  };
}

function tempPath(): string {
  return join(mkdtempSync(join(tmpdir(), 'hub-store-rollouts-')), 'hub.db');
}

describe('SqliteHubStore rollouts', () => {
  it('keeps rollouts, their documents, reports and pending removals across a reopen', async () => {
    const path = tempPath();
    const store = await SqliteHubStore.open(path);
    await store.putRollout(record(1), {
      name: 'web',
      revision: 1,
      document: { kind: 'Rollout', n: 1 },
      appliedBy: 'alice',
      appliedAt: 'x',
    });
    await store.putRollout(record(2), {
      name: 'web',
      revision: 2,
      document: { kind: 'Rollout', n: 2 },
      appliedBy: 'alice',
      appliedAt: 'y',
    });
    await store.putReportedCopies([
      {
        rollout: 'web',
        cluster: 'shop-1',
        revision: '2-abc',
        objects: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'a' }],
      },
    ]);
    await store.addPendingRemovals([{ rollout: 'old', cluster: 'shop-2', owner: { user: 'alice', groups: [] } }]);
    await store.close();

    const reopened = await SqliteHubStore.open(path);
    expect(await reopened.getRollout('web')).toEqual(record(2));
    expect(await reopened.listRollouts()).toEqual([record(2)]);
    expect(await reopened.listRolloutRevisions('web')).toEqual([1, 2]);
    expect((await reopened.getRolloutRevision('web', 1))?.document).toEqual({ kind: 'Rollout', n: 1 });
    expect(await reopened.listReportedCopies('web')).toEqual([
      {
        rollout: 'web',
        cluster: 'shop-1',
        revision: '2-abc',
        objects: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'a' }],
      },
    ]);
    expect(await reopened.listPendingRemovals()).toEqual([
      { rollout: 'old', cluster: 'shop-2', owner: { user: 'alice', groups: [] } },
    ]);
    await reopened.deletePendingRemoval('old', 'shop-2');
    expect(await reopened.listPendingRemovals()).toEqual([]);
    await reopened.close();
  });

  it('keeps only the newest documents it is told to keep', async () => {
    const store = await SqliteHubStore.open(':memory:');
    for (let revision = 1; revision <= 5; revision += 1) {
      await store.putRollout(
        record(revision),
        { name: 'web', revision, document: { revision }, appliedBy: 'a', appliedAt: 'b' },
        3,
      );
    }
    expect(await store.listRolloutRevisions('web')).toEqual([3, 4, 5]);
    await store.close();
  });

  it('deletes a rollout with its documents and reports, and records the removals it owes in the same step', async () => {
    const store = await SqliteHubStore.open(':memory:');
    await store.putRollout(record(1), { name: 'web', revision: 1, document: {}, appliedBy: 'a', appliedAt: 'b' });
    await store.putReportedCopies([{ rollout: 'web', cluster: 'shop-1', revision: '1-abc', objects: [] }]);
    const owed = [{ rollout: 'web', cluster: 'shop-1', owner: { user: 'alice', groups: ['ops'] } }];
    expect(await store.deleteRollout('web', owed)).toBe(true);
    expect(await store.getRollout('web')).toBeUndefined();
    expect(await store.listRolloutRevisions('web')).toEqual([]);
    expect(await store.listReportedCopies('web')).toEqual([]);
    expect(await store.listPendingRemovals()).toEqual(owed);
    expect(await store.deleteRollout('web', [])).toBe(false);
    await store.close();
  });

  it('keeps a cluster hold and properties across a reopen, shows them with the cluster, and forgets them with it', async () => {
    const path = tempPath();
    const store = await SqliteHubStore.open(path);
    await store.addCluster(cluster);
    const hold = { reason: 'opening hours', since: '2026-01-03T00:00:00.000Z', by: 'alice' };
    expect(await store.setClusterHold('shop-1', hold)).toBe(true);
    expect(await store.setClusterProperties('shop-1', { tag: '1.2' })).toBe(true);
    expect(await store.setClusterHold('nosuch', hold)).toBe(false);
    expect(await store.setClusterProperties('nosuch', {})).toBe(false);
    await store.close();

    const reopened = await SqliteHubStore.open(path);
    expect(await reopened.getCluster('shop-1')).toEqual({ ...cluster, hold, properties: { tag: '1.2' } });
    expect(await reopened.listClusters()).toEqual([{ ...cluster, hold, properties: { tag: '1.2' } }]);
    // Releasing the hold keeps the properties (and the cached read sees the change).
    expect(await reopened.setClusterHold('shop-1', undefined)).toBe(true);
    expect(await reopened.getCluster('shop-1')).toEqual({ ...cluster, properties: { tag: '1.2' } });
    await reopened.deleteCluster('shop-1');
    await reopened.addCluster(cluster);
    expect(await reopened.getCluster('shop-1')).toEqual(cluster);
    await reopened.close();
  });
});
