import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { newHubToken } from '../../../../src/hub/identity/hub-tokens.js';
import { SqliteHubStore } from '../../../../src/hub/store/sqlite-store.js';
import { STORE_LIST_PAGE_ROWS } from '../../../../src/hub/limits.js';

const cluster = {
  name: 'store-1',
  labels: { env: 'dev' },
  certSerial: 'ab12',
  certNotAfter: '2027-01-01T00:00:00.000Z',
  registeredAt: '2026-01-01T00:00:00.000Z',
};

describe('SqliteHubStore', () => {
  it('keeps clusters, tokens and revocations across a reopen, in a 0600 file', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'hub-store-')), 'hub.db');
    const store = await SqliteHubStore.open(path);
    expect(await store.addCluster(cluster)).toBe(true);
    expect(await store.addCluster(cluster)).toBe(false);
    await store.revokeCertificate('AB12', 'test');
    expect(statSync(`${path}-wal`).mode & 0o777).toBe(0o600);
    await store.close();
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const reopened = await SqliteHubStore.open(path);
    expect(await reopened.getCluster('store-1')).toEqual(cluster);
    expect(await reopened.isCertificateRevoked('ab12')).toBe(true);
    await reopened.close();
  });

  it('lists every cluster in name order across the pages it reads, with their health reports', async () => {
    const store = await SqliteHubStore.open(':memory:');
    const names = Array.from({ length: STORE_LIST_PAGE_ROWS * 2 + 37 }, (_, i) => `site-${String(i).padStart(5, '0')}`);
    for (const name of [...names].reverse()) await store.addCluster({ ...cluster, name });
    const health = { reportedAt: '2030-01-01T00:00:00.000Z', certificates: [] };
    await store.updateClusterHealth(names[STORE_LIST_PAGE_ROWS]!, health);
    const listed = await store.listClusters();
    expect(listed.map((c) => c.name)).toEqual(names);
    expect(listed.filter((c) => c.health !== undefined).map((c) => c.name)).toEqual([names[STORE_LIST_PAGE_ROWS]]);
    await store.close();
  });

  it('uses a limited token exactly as often as allowed, and never an expired one', async () => {
    const store = await SqliteHubStore.open(':memory:');
    const now = new Date();
    const limited = newHubToken({ ttlMs: 60_000, usages: 2, now }).record;
    const expired = newHubToken({ ttlMs: 1, now: new Date(now.getTime() - 1000) }).record;
    await store.addToken(limited);
    await store.addToken(expired);
    expect([
      await store.useToken(limited.id, now),
      await store.useToken(limited.id, now),
      await store.useToken(limited.id, now),
    ]).toEqual(['used', 'used', 'spent']);
    expect(await store.useToken(expired.id, now)).toBe('expired');
    expect(await store.useToken('nosuch', now)).toBe('unknown');
    await store.close();
  });

  it('updates status and deletes clusters', async () => {
    const store = await SqliteHubStore.open(':memory:');
    await store.addCluster(cluster);
    await store.updateClusterStatus('store-1', {
      lastSeen: '2026-02-01T00:00:00.000Z',
      kubernetesVersion: 'v1.30.4',
      nodeCount: 3,
    });
    expect(await store.getCluster('store-1')).toMatchObject({ kubernetesVersion: 'v1.30.4', nodeCount: 3 });
    expect(await store.deleteCluster('store-1')).toMatchObject({ name: 'store-1' });
    expect(await store.listClusters()).toEqual([]);
    await store.close();
  });

  it('answers repeated lookups from memory, never with what a later write changed', async () => {
    const store = await SqliteHubStore.open(':memory:');
    await store.addCluster(cluster);
    const user = {
      name: 'ops',
      tokenHash: 'a'.repeat(64),
      clustersSelector: '',
      groups: ['g'],
      isAdmin: false,
      createdAt: 'now',
    };
    await store.putUser(user);
    expect(await store.findUserByTokenHash(user.tokenHash)).toMatchObject({ name: 'ops' });
    expect(await store.getCluster('store-1')).toMatchObject({ certSerial: 'ab12' });
    // The same user again with a new token: the old token finds nobody.
    await store.putUser({ ...user, tokenHash: 'b'.repeat(64) });
    expect(await store.findUserByTokenHash(user.tokenHash)).toBeUndefined();
    expect(await store.findUserByTokenHash('b'.repeat(64))).toMatchObject({ name: 'ops' });
    await store.updateClusterCertificate('store-1', 'cd34', '2027-06-01T00:00:00.000Z');
    expect(await store.getCluster('store-1')).toMatchObject({ certSerial: 'cd34' });
    await store.updateClusterStatus('store-1', { lastSeen: 'then', nodeCount: 5 });
    expect(await store.getCluster('store-1')).toMatchObject({ lastSeen: 'then', nodeCount: 5 });
    await store.deleteCluster('store-1');
    expect(await store.getCluster('store-1')).toBeUndefined();
    await store.addCluster({ ...cluster, labels: { env: 'prod' } });
    expect(await store.getCluster('store-1')).toMatchObject({ labels: { env: 'prod' } });
    await store.close();
  });

  it('commits status updates made together, and on close the ones still waiting', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'hub-store-')), 'hub.db');
    const store = await SqliteHubStore.open(path);
    const names = Array.from({ length: 500 }, (_, i) => `store-${i}`);
    for (const name of names) await store.addCluster({ ...cluster, name });
    await Promise.all(names.map((name, i) => store.updateClusterStatus(name, { lastSeen: 'seen', nodeCount: i })));
    expect((await store.listClusters()).filter((c) => c.lastSeen === 'seen')).toHaveLength(names.length);
    expect(await store.getCluster('store-499')).toMatchObject({ nodeCount: 499 });
    // Not awaited: the update is still waiting for its commit when the store closes.
    const late = store.updateClusterStatus('store-7', { lastSeen: 'late', kubernetesVersion: 'v1.31.0' });
    await store.close();
    await late;
    const reopened = await SqliteHubStore.open(path);
    expect(await reopened.getCluster('store-7')).toMatchObject({ lastSeen: 'late', kubernetesVersion: 'v1.31.0' });
    await reopened.close();
  });
});
