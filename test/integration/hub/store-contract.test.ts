/**
 * One contract for every HubStore: the same suite runs against node:sqlite
 * and against the etcd store on a REAL three-member etcd (Debian's
 * etcd-server, test/support/etcd-cluster.ts), so a hub behaves the same on
 * either. "Another replica" is a second etcd connection on the same key
 * prefix; a hub on SQLite has one replica, so there it is the same handle.
 * A replica hears another's changes through etcd's watch (milliseconds
 * later): reads of what another replica may have cached poll.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encryptionKeysFrom } from '../../../src/hub/store/etcd/encryption.js';
import { EtcdConnection } from '../../../src/hub/store/etcd/etcd-client.js';
import { EtcdHubStore } from '../../../src/hub/store/etcd/etcd-store.js';
import { SqliteHubStore } from '../../../src/hub/store/sqlite-store.js';
import type { ClusterRecord, HubStore, RolloutRecord } from '../../../src/hub/store/store.js';
import { newProgress } from '../../../src/rollout/progress.js';
import {
  etcdConnectionOptionsFor,
  freshEtcdPrefix,
  startEtcdCluster,
  type EtcdTestCluster,
} from '../../support/etcd-cluster.js';

/** Opens one store over some state, and more handles on that same state. */
interface StoreWorld {
  store: HubStore;
  /** Another handle on the same state (another replica; after a restart). */
  another(): Promise<HubStore>;
  close(): Promise<void>;
}

interface StoreKind {
  name: string;
  open(): Promise<StoreWorld>;
}

let etcd: EtcdTestCluster | undefined;
const etcdKeys = encryptionKeysFrom([randomBytes(32)]);

const kinds: StoreKind[] = [
  {
    name: 'sqlite',
    open: async () => {
      const path = join(mkdtempSync(join(tmpdir(), 'hub-store-contract-')), 'hub.db');
      const store = await SqliteHubStore.open(path);
      return { store, another: async () => store, close: () => store.close() };
    },
  },
  {
    name: 'etcd',
    open: async () => {
      const prefix = freshEtcdPrefix();
      const connections: EtcdConnection[] = [];
      const stores: HubStore[] = [];
      const openOne = async (): Promise<HubStore> => {
        const connection = await EtcdConnection.open(etcdConnectionOptionsFor(etcd!, prefix));
        connections.push(connection);
        const store = await EtcdHubStore.open(connection, etcdKeys);
        stores.push(store);
        return store;
      };
      return {
        store: await openOne(),
        another: openOne,
        close: async () => {
          for (const store of stores) await store.close();
          for (const connection of connections) connection.close();
        },
      };
    },
  },
];

beforeAll(async () => {
  etcd = await startEtcdCluster();
});
afterAll(async () => {
  await etcd?.stop();
});

function cluster(name: string, extra: Partial<ClusterRecord> = {}): ClusterRecord {
  return {
    name,
    labels: { env: 'prod' },
    certSerial: `serial-${name}`,
    certNotAfter: '2027-01-01T00:00:00.000Z',
    registeredAt: '2026-01-01T00:00:00.000Z',
    ...extra,
  };
}

function rollout(name: string, revision: number): RolloutRecord {
  const progress = newProgress(revision);
  progress.clusters['shop-1'] = { wave: 0, phase: 'applying', targetRevision: `${revision}-abc`, deliveredAt: 5 };
  return {
    name,
    owner: { user: 'alice', groups: ['ops'], clustersSelector: 'env=prod' },
    revision,
    progress,
    statusVersion: 3,
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-02T00:00:00.000Z',
  };
}

const now = new Date('2026-06-01T00:00:00.000Z');

describe.each(kinds)('HubStore contract on $name', (kind) => {
  async function withWorld(test: (world: StoreWorld) => Promise<void>): Promise<void> {
    const world = await kind.open();
    try {
      await test(world);
    } finally {
      await world.close();
    }
  }

  it('adds, reads, lists (in name order), updates and deletes clusters; a taken name is refused', () =>
    withWorld(async ({ store, another }) => {
      expect(await store.addCluster(cluster('b'))).toBe(true);
      expect(await store.addCluster(cluster('a'))).toBe(true);
      expect(await store.addCluster(cluster('a', { labels: {} }))).toBe(false);
      expect((await store.listClusters()).map((c) => c.name)).toEqual(['a', 'b']);
      await store.updateClusterStatus('a', { lastSeen: now.toISOString(), kubernetesVersion: 'v1.31.2', nodeCount: 3 });
      await store.updateClusterCertificate('a', 'new-serial', '2028-01-01T00:00:00.000Z');
      const other = await another();
      expect(await other.getCluster('a')).toEqual(
        cluster('a', {
          lastSeen: now.toISOString(),
          kubernetesVersion: 'v1.31.2',
          nodeCount: 3,
          certSerial: 'new-serial',
          certNotAfter: '2028-01-01T00:00:00.000Z',
        }),
      );
      expect((await store.deleteCluster('a'))?.name).toBe('a');
      expect(await store.deleteCluster('a')).toBeUndefined();
      await expect.poll(() => other.getCluster('a')).toBeUndefined();
      expect((await other.listClusters()).map((c) => c.name)).toEqual(['b']);
    }));

  it('keeps a hold and properties with the cluster, each without losing the other, and refuses them for no cluster', () =>
    withWorld(async ({ store, another }) => {
      await store.addCluster(cluster('shop-1'));
      const hold = { reason: 'maintenance', by: 'alice', since: now.toISOString() };
      expect(await store.setClusterHold('shop-1', hold)).toBe(true);
      expect(await store.setClusterProperties('shop-1', { region: 'eu' })).toBe(true);
      expect(await store.setClusterHold('nope', hold)).toBe(false);
      expect(await store.setClusterProperties('nope', {})).toBe(false);
      const other = await another();
      expect(await other.getCluster('shop-1')).toMatchObject({ hold, properties: { region: 'eu' } });
      expect(await store.setClusterHold('shop-1', undefined)).toBe(true);
      await expect.poll(async () => (await other.getCluster('shop-1'))?.hold).toBeUndefined();
      expect((await other.getCluster('shop-1'))?.properties).toEqual({ region: 'eu' });
    }));

  it('keeps tokens with their secrets, lists them oldest first, and uses a limited one exactly as often as allowed', () =>
    withWorld(async ({ store, another }) => {
      await store.addToken({ id: 'late', secret: 's-late', createdAt: '2026-02-01T00:00:00.000Z' });
      await store.addToken({ id: 'once', secret: 's-once', createdAt: '2026-01-01T00:00:00.000Z', usagesLeft: 1 });
      await store.addToken({
        id: 'old',
        secret: 's-old',
        createdAt: '2026-01-02T00:00:00.000Z',
        expiresAt: '2026-03-01T00:00:00.000Z',
      });
      const other = await another();
      expect((await other.listTokens()).map((t) => [t.id, t.secret])).toEqual([
        ['once', 's-once'],
        ['old', 's-old'],
        ['late', 's-late'],
      ]);
      expect(await store.useToken('nope', now)).toBe('unknown');
      expect(await store.useToken('old', now)).toBe('expired');
      expect(await store.useToken('late', now)).toBe('used');
      expect(await store.useToken('once', now)).toBe('used');
      expect(await other.useToken('once', now)).toBe('spent');
      expect((await other.getToken('once'))?.usagesLeft).toBe(0);
      expect((await other.getToken('late'))?.usagesLeft).toBeUndefined();
      // A token's label limit is kept with it.
      await store.addToken({
        id: 'dev',
        secret: 's-dev',
        createdAt: now.toISOString(),
        labels: { env: 'dev', site: '*' },
      });
      expect((await other.getToken('dev'))?.labels).toEqual({ env: 'dev', site: '*' });
      expect((await other.listTokens()).find((t) => t.id === 'dev')?.labels).toEqual({ env: 'dev', site: '*' });
      expect((await other.getToken('late'))?.labels).toBeUndefined();
    }));

  it('takes a limited token no more often than allowed when two replicas race for it', () =>
    withWorld(async ({ store, another }) => {
      const other = await another();
      await store.addToken({ id: 'five', secret: 's', createdAt: now.toISOString(), usagesLeft: 5 });
      const uses = await Promise.all(
        Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? store : other).useToken('five', now)),
      );
      expect(uses.filter((use) => use === 'used')).toHaveLength(5);
      expect(uses.filter((use) => use === 'spent')).toHaveLength(7);
    }));

  it('registers with a token in one step: the use and the cluster together, or neither', () =>
    withWorld(async ({ store, another }) => {
      const other = await another();
      await store.addToken({ id: 'two', secret: 's', createdAt: now.toISOString(), usagesLeft: 2 });
      expect(await store.useTokenToAddCluster('two', now, cluster('a'))).toBe('added');
      // The name is taken: no use is taken.
      expect(await other.useTokenToAddCluster('two', now, cluster('a'))).toBe('exists');
      expect((await store.getToken('two'))?.usagesLeft).toBe(1);
      expect(await store.useTokenToAddCluster('nope', now, cluster('x'))).toBe('unknown');
      expect(await store.getCluster('x')).toBeUndefined();
      // Two replicas race for the last use with different names: one cluster is added.
      const results = await Promise.all([
        store.useTokenToAddCluster('two', now, cluster('b')),
        other.useTokenToAddCluster('two', now, cluster('c')),
      ]);
      expect(results.sort()).toEqual(['added', 'spent']);
      expect((await store.listClusters()).map((c) => c.name)).toHaveLength(2);
      expect(await store.useTokenToAddCluster('two', now, cluster('d'))).toBe('spent');
    }));

  it('finds users by their token hash, forgets a replaced token at once, and lists users by name', () =>
    withWorld(async ({ store, another }) => {
      const other = await another();
      const bob = {
        name: 'bob',
        tokenHash: 'h1',
        clustersSelector: 'env=prod',
        groups: ['ops'],
        isAdmin: false,
        createdAt: now.toISOString(),
      };
      await store.putUser(bob);
      await store.putUser({ ...bob, name: 'alice', tokenHash: 'h0', isAdmin: true });
      expect((await other.findUserByTokenHash('h1'))?.name).toBe('bob');
      await store.putUser({ ...bob, tokenHash: 'h2' });
      // What `other` cached must not outlive the change (the SQLite handle reads the file, etcd's follows the watch).
      await expect.poll(() => other.findUserByTokenHash('h1')).toBeUndefined();
      expect((await other.findUserByTokenHash('h2'))?.groups).toEqual(['ops']);
      expect((await other.listUsers()).map((u) => u.name)).toEqual(['alice', 'bob']);
    }));

  it('deletes tokens and users: gone for every handle, a deleted user found by their token hash no more', () =>
    withWorld(async ({ store, another }) => {
      const other = await another();
      await store.addToken({ id: 'keep', secret: 's-keep', createdAt: now.toISOString() });
      await store.addToken({ id: 'drop', secret: 's-drop', createdAt: now.toISOString(), labels: { env: 'dev' } });
      expect(await store.deleteToken('drop')).toBe(true);
      expect(await store.deleteToken('drop')).toBe(false);
      expect(await other.getToken('drop')).toBeUndefined();
      expect(await other.useToken('drop', now)).toBe('unknown');
      expect((await other.listTokens()).map((t) => t.id)).toEqual(['keep']);
      // A token made again under a deleted id has no leftover label limit.
      await store.addToken({ id: 'drop', secret: 's-new', createdAt: now.toISOString() });
      expect((await other.getToken('drop'))?.labels).toBeUndefined();
      const dave = {
        name: 'dave',
        tokenHash: 'hd',
        clustersSelector: 'env=dev',
        groups: [],
        isAdmin: false,
        createdAt: now.toISOString(),
      };
      await store.putUser(dave);
      await store.putUser({ ...dave, name: 'erin', tokenHash: 'he' });
      expect((await other.findUserByTokenHash('hd'))?.name).toBe('dave');
      expect(await store.deleteUser('dave')).toBe(true);
      expect(await store.deleteUser('dave')).toBe(false);
      await expect.poll(() => other.findUserByTokenHash('hd')).toBeUndefined();
      expect((await other.listUsers()).map((u) => u.name)).toEqual(['erin']);
      expect((await other.findUserByTokenHash('he'))?.name).toBe('erin');
    }));

  it('revokes certificate serials whatever their case', () =>
    withWorld(async ({ store, another }) => {
      await store.revokeCertificate('AB12', 'cluster deleted');
      await store.revokeCertificate('ab12', 'again');
      const other = await another();
      expect(await other.isCertificateRevoked('ab12')).toBe(true);
      expect(await other.isCertificateRevoked('AB12')).toBe(true);
      expect(await other.isCertificateRevoked('cd34')).toBe(false);
    }));

  it('keeps rollouts with their newest documents, reports and pending removals, and deletes one with all it owns', () =>
    withWorld(async ({ store, another }) => {
      for (const revision of [1, 2, 3]) {
        await store.putRollout(
          rollout('web', revision),
          { name: 'web', revision, document: { n: revision }, appliedBy: 'alice', appliedAt: 'x' },
          2,
        );
      }
      await store.putRollout(rollout('webapp', 1), {
        name: 'webapp',
        revision: 1,
        document: {},
        appliedBy: 'a',
        appliedAt: 'x',
      });
      await store.putRollouts([{ record: rollout('api', 1) }, { record: { ...rollout('web', 3), statusVersion: 9 } }]);
      await store.putReportedCopies([
        { rollout: 'web', cluster: 'shop-2', revision: '3-abc', objects: [] },
        {
          rollout: 'web',
          cluster: 'shop-1',
          revision: '3-abc',
          objects: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'a' }],
        },
        { rollout: 'webapp', cluster: 'shop-1', revision: '1-abc', objects: [] },
      ]);
      const other = await another();
      expect(await other.listRolloutRevisions('web')).toEqual([2, 3]);
      expect((await other.getRolloutRevision('web', 3))?.document).toEqual({ n: 3 });
      expect(await other.getRolloutRevision('web', 1)).toBeUndefined();
      expect((await other.listRollouts()).map((r) => r.name)).toEqual(['api', 'web', 'webapp']);
      expect((await other.getRollout('web'))?.statusVersion).toBe(9);
      expect((await other.listReportedCopies('web')).map((r) => r.cluster)).toEqual(['shop-1', 'shop-2']);
      await store.deleteReportedCopy('web', 'shop-2');
      expect((await other.listReportedCopies('web')).map((r) => r.cluster)).toEqual(['shop-1']);

      const owner = { user: 'alice', groups: [] };
      expect(await store.deleteRollout('web', [{ rollout: 'web', cluster: 'shop-9', owner }])).toBe(true);
      expect(await store.deleteRollout('web', [])).toBe(false);
      expect(await other.getRollout('web')).toBeUndefined();
      expect(await other.listRolloutRevisions('web')).toEqual([]);
      expect(await other.listReportedCopies('web')).toEqual([]);
      // A rollout whose name starts like the deleted one's keeps everything.
      expect(await other.listRolloutRevisions('webapp')).toEqual([1]);
      expect(await other.listReportedCopies('webapp')).toHaveLength(1);
      expect(await other.listPendingRemovals()).toEqual([{ rollout: 'web', cluster: 'shop-9', owner }]);
    }));

  it("writes a pass's changed clusters alone, and a whole write replaces every cluster's progress", () =>
    withWorld(async ({ store, another }) => {
      const record = rollout('web', 2);
      const clusters = record.progress.clusters;
      for (const name of ['shop-2', 'shop-3']) clusters[name] = { wave: 0, phase: 'waiting' };
      await store.putRollout(record);
      await store.putRollout(rollout('webapp', 1));
      const other = await another();
      expect(Object.keys((await other.getRollout('web'))!.progress.clusters).sort()).toEqual([
        'shop-1',
        'shop-2',
        'shop-3',
      ]);

      // A pass: shop-1 ready, shop-4 placed, shop-3 left; shop-2's entry changed in memory but is not named,
      // so what is stored of it is what was written before.
      clusters['shop-1'] = { ...clusters['shop-1']!, phase: 'ready' };
      clusters['shop-2'] = { wave: 0, phase: 'applying' };
      clusters['shop-4'] = { wave: 1, phase: 'waiting' };
      delete clusters['shop-3'];
      record.progress.currentWave = 1;
      await store.putRollouts([{ record, changedClusters: ['shop-1', 'shop-3', 'shop-4'] }]);
      const read = (await other.getRollout('web'))!;
      expect(read.progress.currentWave).toBe(1);
      expect(read.progress.clusters).toEqual({
        'shop-1': { ...clusters['shop-1'] },
        'shop-2': { wave: 0, phase: 'waiting' },
        'shop-4': { wave: 1, phase: 'waiting' },
      });
      expect((await other.listRollouts()).find((r) => r.name === 'web')?.progress.clusters).toEqual(
        read.progress.clusters,
      );

      // A whole write (a new revision's fresh progress) leaves no cluster of the old one behind.
      await store.putRollouts([{ record: { ...record, revision: 3, progress: newProgress(3) } }]);
      expect((await other.getRollout('web'))!.progress.clusters).toEqual({});
      // Another rollout whose name starts like this one's kept its clusters.
      expect(Object.keys((await other.getRollout('webapp'))!.progress.clusters)).toEqual(['shop-1']);
      await store.putRollout({ ...record, revision: 4 });
      expect(await store.deleteRollout('web', [])).toBe(true);
      await store.putRollout(rollout('web', 5));
      expect(Object.keys((await other.getRollout('web'))!.progress.clusters)).toEqual(['shop-1']);
    }));

  it('lists pending removals by cluster then rollout, replaces one for the same pair, and deletes one', () =>
    withWorld(async ({ store }) => {
      const owner = { user: 'alice', groups: [] };
      await store.addPendingRemovals([
        { rollout: 'b', cluster: 'shop-1', owner },
        { rollout: 'a', cluster: 'shop-2', owner },
        { rollout: 'a', cluster: 'shop-1', owner },
      ]);
      await store.addPendingRemovals([{ rollout: 'a', cluster: 'shop-1', owner: { user: 'bob', groups: [] } }]);
      expect((await store.listPendingRemovals()).map((r) => `${r.cluster}/${r.rollout}/${r.owner.user}`)).toEqual([
        'shop-1/a/bob',
        'shop-1/b/alice',
        'shop-2/a/alice',
      ]);
      await store.deletePendingRemoval('b', 'shop-1');
      expect(await store.listPendingRemovals()).toHaveLength(2);
    }));

  it('handles fleets larger than one read page or one transaction (1,300 removals owed by one deleted rollout)', () =>
    withWorld(async ({ store, another }) => {
      const owner = { user: 'alice', groups: [] };
      await store.putRollout(rollout('big', 1));
      const removals = Array.from({ length: 1300 }, (_, i) => ({
        rollout: 'big',
        cluster: `shop-${String(i).padStart(4, '0')}`,
        owner,
      }));
      expect(await store.deleteRollout('big', removals)).toBe(true);
      const listed = await (await another()).listPendingRemovals();
      expect(listed).toHaveLength(1300);
      expect(listed.map((r) => r.cluster)).toEqual(removals.map((r) => r.cluster));
    }));
});
