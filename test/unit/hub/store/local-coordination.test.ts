/**
 * A hub that is its only replica: it holds the tunnels it claimed, always
 * leads, and hears its own changes, announced by its store after each
 * write succeeded (store-changes.ts), as an etcd watch would.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { StoreChange } from '../../../../src/hub/store/coordination.js';
import { LocalCoordination } from '../../../../src/hub/store/local-coordination.js';
import { SqliteHubStore } from '../../../../src/hub/store/sqlite-store.js';
import { announcingStore } from '../../../../src/hub/store/store-changes.js';

const self = { id: 'r1', peerUrl: 'https://127.0.0.1:1', advertiseUrl: 'https://127.0.0.1:1', startedAt: '' };
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

describe('LocalCoordination', () => {
  it('holds what it claimed, counts it, and leads at once', async () => {
    const coordination = new LocalCoordination(self);
    await coordination.claimTunnel('site-1');
    await coordination.claimTunnel('site-2');
    await coordination.releaseTunnel('site-2');
    expect(await coordination.tunnelHolder('site-1')).toEqual(self);
    expect(await coordination.tunnelHolder('site-2')).toBeUndefined();
    expect(await coordination.tunnelCounts()).toEqual(new Map([['r1', 1]]));
    const leads: boolean[] = [];
    coordination.lead('controllers', (isLeader) => leads.push(isLeader));
    expect(leads).toEqual([true]);
  });

  it('hears the changes its store made, and only those that happened', async () => {
    const coordination = new LocalCoordination(self);
    const sqlite = await SqliteHubStore.open(join(mkdtempSync(join(tmpdir(), 'edgeadm-local-')), 'hub.db'));
    cleanups.push(() => sqlite.close());
    const store = announcingStore(sqlite, (change) => coordination.announce(change));
    const heard: StoreChange[] = [];
    coordination.watch((change) => heard.push(change));
    const cluster = { name: 'site-1', labels: {}, certSerial: 'AB01', certNotAfter: '', registeredAt: '' };
    await store.addCluster(cluster);
    expect(await store.deleteCluster('site-1')).toBeDefined();
    expect(await store.deleteCluster('site-1')).toBeUndefined();
    await store.revokeCertificate('AB01', 'cluster deleted');
    await store.putUser({
      name: 'ops',
      tokenHash: 'x',
      clustersSelector: '',
      groups: [],
      isAdmin: false,
      createdAt: '',
    });
    expect(heard).toEqual([
      { kind: 'clusters-changed', cluster: 'site-1' },
      { kind: 'cluster-deleted', cluster: 'site-1' },
      { kind: 'certificate-revoked', serial: 'ab01' },
      { kind: 'users-changed' },
    ]);
  });
});
