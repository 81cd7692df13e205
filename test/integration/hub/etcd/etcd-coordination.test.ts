/**
 * Replica coordination on a REAL three-member etcd: tunnel claims live and
 * die with their replica's lease, one leader per role, one etcd member lost
 * changes nothing, quorum lost makes the store unavailable (writes refused
 * with E_HUB_STORE_UNAVAILABLE naming etcd, the leader steps down, cached
 * reads still answered), and quorum back recovers by itself.
 */
import { randomBytes } from 'node:crypto';
import { execa } from 'execa';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { StoreHealth } from '../../../../src/hub/store/coordination.js';
import { encryptionKeysFrom } from '../../../../src/hub/store/etcd/encryption.js';
import { EtcdConnection } from '../../../../src/hub/store/etcd/etcd-client.js';
import { EtcdReplicaCoordination } from '../../../../src/hub/store/etcd/etcd-coordination.js';
import { EtcdHubStore } from '../../../../src/hub/store/etcd/etcd-store.js';
import { ETCD_KEYS } from '../../../../src/hub/store/etcd/etcd-keyspace.js';
import { REPO_ROOT } from '../../../support/cli.js';
import {
  etcdConnectionOptionsFor,
  freshEtcdPrefix,
  startEtcdCluster,
  type EtcdTestCluster,
} from '../../../support/etcd-cluster.js';

/** A replica that claims shop-1 under a 3 s lease and waits to be killed. */
const DYING_REPLICA = `
import { EtcdConnection } from './lib/hub/store/etcd/etcd-client.js';
import { EtcdHubStore } from './lib/hub/store/etcd/etcd-store.js';
import { EtcdReplicaCoordination } from './lib/hub/store/etcd/etcd-coordination.js';
import { encryptionKeysFrom } from './lib/hub/store/etcd/encryption.js';
const connection = await EtcdConnection.open(JSON.parse(process.argv[1]));
const store = await EtcdHubStore.open(connection, encryptionKeysFrom([Buffer.alloc(32)]));
const self = { id: 'dying', peerUrl: 'https://dying:9444', advertiseUrl: 'https://dying:9443', startedAt: 'x' };
const coordination = new EtcdReplicaCoordination({ store, self, leaseTtlS: 3 });
await coordination.join();
await coordination.claimTunnel('shop-1');
console.log('claimed');
setInterval(() => undefined, 60_000);
`;

/** Bound of every wait for an event (a safety net on busy CI, not a timing assertion). */
const EVENT_WAIT_MS = 30_000;
const keys = encryptionKeysFrom([randomBytes(32)]);

let etcd: EtcdTestCluster;
beforeAll(async () => {
  etcd = await startEtcdCluster();
});
afterAll(async () => {
  await etcd?.stop();
});
// A test that fails while members are down must not fail the next ones with it.
afterEach(async () => {
  await etcd?.restoreQuorum();
});

interface Replica {
  id: string;
  connection: EtcdConnection;
  store: EtcdHubStore;
  coordination: EtcdReplicaCoordination;
}

async function startReplica(prefix: string, id: string, leaseTtlS = 10): Promise<Replica> {
  const connection = await EtcdConnection.open(etcdConnectionOptionsFor(etcd, prefix));
  const store = await EtcdHubStore.open(connection, keys);
  const coordination = new EtcdReplicaCoordination({
    store,
    self: {
      id,
      peerUrl: `https://${id}:9444`,
      advertiseUrl: `https://${id}:9443`,
      startedAt: new Date().toISOString(),
    },
    leaseTtlS,
  });
  await coordination.join();
  return { id, connection, store, coordination };
}

async function stopReplica(replica: Replica): Promise<void> {
  await replica.coordination.close();
  await replica.store.close();
}

/**
 * Resolves when the store's watch reports a put of `relative`. The read cache
 * drops a key when its watch event arrives, so a read meant to fill the cache
 * waits for the event of the write before it (else the event, arriving after
 * the read, empties the cache again).
 */
function watchHearsPut(store: EtcdHubStore, relative: string): Promise<void> {
  return new Promise((resolve) => {
    const stop = store.onKeyEvent((event) => {
      if (event.type === 'put' && event.key === relative) {
        stop();
        resolve();
      }
    });
  });
}

/** Resolves when `health` reaches `state`. */
function healthReaches(connection: EtcdConnection, state: StoreHealth['state']): Promise<StoreHealth> {
  return new Promise((resolve) => {
    if (connection.health().state === state) return resolve(connection.health());
    const stop = connection.onHealth((health) => {
      if (health.state === state) {
        stop();
        resolve(health);
      }
    });
  });
}

describe('replica coordination on etcd', () => {
  it('shows each replica and its tunnel claims to the others, and drops them when the replica stops', async () => {
    const prefix = freshEtcdPrefix();
    const a = await startReplica(prefix, 'a');
    const b = await startReplica(prefix, 'b');
    expect((await b.coordination.listReplicas()).map((r) => r.id).sort()).toEqual(['a', 'b']);
    await a.coordination.claimTunnel('shop-1');
    await a.coordination.claimTunnel('shop-2');
    await b.coordination.claimTunnel('shop-3');
    expect((await b.coordination.tunnelHolder('shop-1'))?.advertiseUrl).toBe('https://a:9443');
    expect(await b.coordination.tunnelCounts()).toEqual(
      new Map([
        ['a', 2],
        ['b', 1],
      ]),
    );
    // shop-2 reconnects to b: b's claim replaces a's, and a's late release does not delete b's.
    await b.coordination.claimTunnel('shop-2');
    await a.coordination.releaseTunnel('shop-2');
    expect((await a.coordination.tunnelHolder('shop-2'))?.id).toBe('b');
    await stopReplica(a);
    expect(await b.coordination.tunnelHolder('shop-1')).toBeUndefined();
    expect((await b.coordination.listReplicas()).map((r) => r.id)).toEqual(['b']);
    expect((await b.coordination.tunnelHolder('shop-2'))?.id).toBe('b');
    await stopReplica(b);
  });

  it("lets a dead replica's claims expire with its lease (nobody revokes it)", async () => {
    const prefix = freshEtcdPrefix();
    const b = await startReplica(prefix, 'b');
    // A replica in a process of its own (the built lib/), SIGKILLed: its lease is never revoked.
    const dying = execa(
      process.execPath,
      ['--input-type=module', '-e', DYING_REPLICA, JSON.stringify(etcdConnectionOptionsFor(etcd, prefix))],
      {
        cwd: REPO_ROOT,
        reject: false,
      },
    );
    let printed = '';
    await new Promise<void>((resolve, reject) => {
      dying.stdout?.on('data', (chunk: Buffer) => {
        printed += chunk.toString('utf8');
        if (printed.includes('claimed')) resolve();
      });
      void dying.then((result) => reject(new Error(`the replica exited: ${String(result.stderr)}`)));
    });
    expect((await b.coordination.tunnelHolder('shop-1'))?.id).toBe('dying');
    dying.kill('SIGKILL');
    await dying;
    await expect
      .poll(() => b.coordination.tunnelHolder('shop-1'), { timeout: EVENT_WAIT_MS, interval: 200 })
      .toBeUndefined();
    expect((await b.coordination.listReplicas()).map((r) => r.id)).toEqual(['b']);
    await stopReplica(b);
  });

  it('has one leader per role, and another takes over when it stops', async () => {
    const prefix = freshEtcdPrefix();
    const replicas = await Promise.all(['a', 'b', 'c'].map((id) => startReplica(prefix, id)));
    const leading = new Set<string>();
    let changes = 0;
    const changed: (() => void)[] = [];
    const stops = replicas.map((replica) =>
      replica.coordination.lead('controllers', (isLeader) => {
        if (isLeader) leading.add(replica.id);
        else leading.delete(replica.id);
        changes += 1;
        for (const wake of changed.splice(0)) wake();
      }),
    );
    const until = async (check: () => boolean): Promise<void> => {
      const deadline = Date.now() + EVENT_WAIT_MS;
      while (!check() && Date.now() < deadline) await new Promise<void>((resolve) => changed.push(resolve));
    };
    await until(() => leading.size === 1);
    expect(leading.size).toBe(1);
    const first = [...leading][0]!;
    const index = replicas.findIndex((r) => r.id === first);
    stops[index]!();
    await stopReplica(replicas[index]!);
    leading.delete(first);
    await until(() => leading.size === 1);
    expect([...leading]).toHaveLength(1);
    expect([...leading][0]).not.toBe(first);
    expect(changes).toBeGreaterThanOrEqual(2);
    for (const stop of stops) stop();
    await Promise.all(replicas.filter((_, i) => i !== index).map(stopReplica));
  });

  it('campaigns again after a failed attempt, with no further event to wake it', async () => {
    const prefix = freshEtcdPrefix();
    const a = await startReplica(prefix, 'a');
    const b = await startReplica(prefix, 'b');
    // b hears a's leadership before it campaigns, so no late event of it wakes b later.
    const bHeardTheLeader = watchHearsPut(b.store, 'leaders/controllers');
    let stopLeadOfA: () => void = () => undefined;
    await new Promise<void>((resolve) => {
      stopLeadOfA = a.coordination.lead('controllers', (isLeader) => isLeader && resolve());
    });
    await bHeardTheLeader;
    // b's writes: its first campaign (lost to a) passes; the first one after a hands the role
    // over fails as on a busy etcd, and nothing about the role changes after that.
    const write = b.connection.write.bind(b.connection);
    const attempts: Promise<unknown>[] = [];
    let failNext = false;
    b.connection.write = (<T>(work: () => Promise<T>): Promise<T> => {
      const attempt = failNext ? Promise.reject(new Error('deadline exceeded (injected)')) : write(work);
      failNext = false;
      attempts.push(attempt.catch(() => undefined));
      return attempt;
    }) as typeof b.connection.write;
    const leadsOfB: boolean[] = [];
    const changed: (() => void)[] = [];
    b.coordination.lead('controllers', (isLeader) => {
      leadsOfB.push(isLeader);
      for (const wake of changed.splice(0)) wake();
    });
    await attempts[0];
    expect(leadsOfB).toEqual([]);
    failNext = true;
    stopLeadOfA();
    await stopReplica(a);
    const deadline = Date.now() + EVENT_WAIT_MS;
    while (!leadsOfB.includes(true) && Date.now() < deadline) {
      await Promise.race([
        new Promise<void>((resolve) => changed.push(resolve)),
        new Promise((r) => setTimeout(r, 500)),
      ]);
    }
    expect(attempts.length).toBeGreaterThanOrEqual(3);
    expect(leadsOfB).toEqual([true]);
    await stopReplica(b);
  });

  it('changes nothing when one member dies, refuses writes without quorum naming etcd, and recovers when quorum returns', async () => {
    const prefix = freshEtcdPrefix();
    const a = await startReplica(prefix, 'a');
    let isLeader = false;
    const leads: boolean[] = [];
    const stopLead = a.coordination.lead('controllers', (next) => {
      isLeader = next;
      leads.push(next);
    });
    await expect.poll(() => isLeader, { timeout: EVENT_WAIT_MS }).toBe(true);
    await a.store.addCluster({
      name: 'shop-1',
      labels: {},
      certSerial: 'ab',
      certNotAfter: '2030-01-01T00:00:00.000Z',
      registeredAt: '2026-01-01T00:00:00.000Z',
    });
    expect((await a.store.getCluster('shop-1'))?.name).toBe('shop-1');

    // One member dies (a follower: the leader's death costs an election of about a second, during
    // which etcd takes no write): writes, reads, leadership and health as before.
    const follower = await etcd.followerIndex();
    await etcd.kill(follower);
    await a.coordination.claimTunnel('shop-1');
    const heard = watchHearsPut(a.store, `${ETCD_KEYS.clusters}shop-1`);
    expect(await a.store.setClusterProperties('shop-1', { region: 'eu' })).toBe(true);
    await heard;
    // Read as the kube proxy reads it on every request (and cached: read again without quorum below).
    expect((await a.store.getCluster('shop-1'))?.properties).toEqual({ region: 'eu' });
    expect(await a.connection.probeOnce()).toEqual({ state: 'ok' });
    expect(a.coordination.health()).toEqual({ state: 'ok' });
    expect(leads).toEqual([true]);
    await etcd.restart(follower);

    // A store used without coordination (as hub migrate uses one) also notices etcd's return.
    const plainConnection = await EtcdConnection.open(etcdConnectionOptionsFor(etcd, prefix));
    const plain = await EtcdHubStore.open(plainConnection, keys);

    // Quorum lost.
    await etcd.loseQuorum();
    const unavailable = await healthReaches(a.connection, 'unavailable');
    expect(unavailable).toMatchObject({ state: 'unavailable', cause: expect.stringContaining('etcd') });
    expect(a.coordination.health().state).toBe('unavailable');
    await expect(a.store.addToken({ id: 'tok', secret: 's', createdAt: 'x' })).rejects.toMatchObject({
      code: 'E_HUB_STORE_UNAVAILABLE',
      message: expect.stringContaining('etcd'),
    });
    await expect(plain.addToken({ id: 'tok2', secret: 's', createdAt: 'x' })).rejects.toMatchObject({
      code: 'E_HUB_STORE_UNAVAILABLE',
    });
    await expect.poll(() => isLeader, { timeout: EVENT_WAIT_MS }).toBe(false);
    // What the replica holds still answers: the kube proxy's lookups of its clusters.
    expect((await a.store.getCluster('shop-1'))?.properties).toEqual({ region: 'eu' });

    // Quorum back: healthy, writable and leading again, by itself.
    await etcd.restoreQuorum();
    await healthReaches(a.connection, 'ok');
    await a.store.addToken({ id: 'tok', secret: 's', createdAt: 'x' });
    expect((await a.store.getToken('tok'))?.secret).toBe('s');
    await expect.poll(() => isLeader, { timeout: EVENT_WAIT_MS }).toBe(true);
    expect((await a.coordination.tunnelHolder('shop-1'))?.id).toBe('a');
    await healthReaches(plainConnection, 'ok');
    await plain.addToken({ id: 'tok2', secret: 's', createdAt: 'x' });
    await plain.close();
    stopLead();
    await stopReplica(a);
  });

  it('turns changes made through any replica into store changes', async () => {
    const prefix = freshEtcdPrefix();
    const a = await startReplica(prefix, 'a');
    const b = await startReplica(prefix, 'b');
    const heard: string[] = [];
    const stop = b.coordination.watch((change) => heard.push(JSON.stringify(change)));
    const cluster = { name: 'shop-1', labels: {}, certSerial: 'AB', certNotAfter: 'x', registeredAt: 'x' };
    await a.store.addCluster(cluster);
    await a.store.revokeCertificate('AB', 'deleted');
    await a.store.deleteCluster('shop-1');
    await a.store.addToken({ id: 'tok', secret: 's', createdAt: 'x' });
    await a.store.putUser({
      name: 'u',
      tokenHash: 'h',
      clustersSelector: '',
      groups: [],
      isAdmin: false,
      createdAt: 'x',
    });
    await expect.poll(() => heard.length, { timeout: EVENT_WAIT_MS }).toBeGreaterThanOrEqual(5);
    expect(heard).toEqual(
      expect.arrayContaining([
        JSON.stringify({ kind: 'clusters-changed', cluster: 'shop-1' }),
        JSON.stringify({ kind: 'certificate-revoked', serial: 'ab' }),
        JSON.stringify({ kind: 'cluster-deleted', cluster: 'shop-1' }),
        JSON.stringify({ kind: 'tokens-changed' }),
        JSON.stringify({ kind: 'users-changed' }),
      ]),
    );
    stop();
    await stopReplica(a);
    await stopReplica(b);
  });
});
