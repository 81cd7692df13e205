/**
 * The hub's rollout controller against the real store (SQLite) with a fake
 * delivery (it records what would cross the tunnels) and a fake clock:
 * tests move time by hand and wait for the controller to settle, never for
 * real time.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RolloutController } from '../../../../src/hub/rollouts/rollout-controller.js';
import { type RolloutActor } from '../../../../src/hub/rollouts/rollout-permissions.js';
import { type DeliveryOutcome, type RolloutDelivery } from '../../../../src/hub/rollouts/rollout-delivery.js';
import { SqliteHubStore } from '../../../../src/hub/store/sqlite-store.js';
import { silentLogger } from '../../../../src/log/run-log.js';
import { parseRollout } from '../../../../src/rollout/spec.js';
import type { CopyMessage, RemoveMessage, ReportMessage } from '../../../../src/rollout/wire.js';
import { rolloutDocument } from '../../rollout/fixtures.js';
import { FakeClock } from './controller-fakes.js';

/** Records copies and removals; a cluster not in `connected` answers as a closed tunnel would. */
class FakeDelivery implements RolloutDelivery {
  readonly connected = new Set<string>();
  readonly copies: CopyMessage[] = [];
  readonly removals: { cluster: string; message: RemoveMessage }[] = [];
  failing = new Map<string, string>();
  /** While set, every send waits for it: a slow link. */
  gate: Promise<void> | undefined;
  async sendCopy(cluster: string, message: CopyMessage): Promise<DeliveryOutcome> {
    await this.gate;
    if (!this.connected.has(cluster)) return { status: 'disconnected' };
    const failure = this.failing.get(cluster);
    if (failure !== undefined) return { status: 'failed', message: failure };
    this.copies.push(message);
    return { status: 'delivered' };
  }
  async sendRemove(cluster: string, message: RemoveMessage): Promise<DeliveryOutcome> {
    if (!this.connected.has(cluster)) return { status: 'disconnected' };
    this.removals.push({ cluster, message });
    return { status: 'delivered' };
  }
  /** Which clusters got a copy, with its revision. */
  delivered(): string[] {
    return this.copies.map((copy) => `${copy.copy.revision.split('-')[0]}:${copyCluster(copy)}`);
  }
}

/** The cluster a copy was rendered for (its ConfigMap carries `${cluster.name}`). */
function copyCluster(message: CopyMessage): string {
  const configMap = message.copy.objects.find((object) => object.kind === 'ConfigMap') as
    { data: { site: string } } | undefined;
  return configMap?.data.site ?? '?';
}

const admin: RolloutActor = { user: 'edgeadm-hub-admin', groups: [], clustersSelector: '', isAdmin: true };
const SOAK_S = 60;

function documentOf(strategy: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): unknown {
  return rolloutDocument({
    strategy: {
      waves: [1, '100%'],
      maxUnavailable: '100%',
      failureBudget: 0,
      soakSeconds: SOAK_S,
      deadlineSeconds: 600,
      ...strategy,
    },
    ...extra,
  });
}

interface World {
  store: SqliteHubStore;
  clock: FakeClock;
  delivery: FakeDelivery;
  controller: RolloutController;
  path: string;
}

const worlds: World[] = [];
afterEach(async () => {
  for (const world of worlds.splice(0)) {
    await world.controller.stop();
    await world.store.close();
  }
});

async function world(clusters: string[], options: { offline?: string[] } = {}): Promise<World> {
  const path = join(mkdtempSync(join(tmpdir(), 'rollout-controller-')), 'hub.db');
  const store = await SqliteHubStore.open(path);
  for (const name of clusters) {
    await store.addCluster({
      name,
      labels: { env: 'prod', region: 'eu' },
      certSerial: name,
      certNotAfter: '2030-01-01T00:00:00.000Z',
      registeredAt: '2026-01-01T00:00:00.000Z',
    });
  }
  const clock = new FakeClock();
  const delivery = new FakeDelivery();
  const online = clusters.filter((name) => !options.offline?.includes(name));
  for (const name of online) delivery.connected.add(name);
  const controller = await RolloutController.start({
    store,
    delivery,
    logger: silentLogger,
    clock,
    passIntervalMs: 0,
    connected: online,
  });
  const created = { store, clock, delivery, controller, path };
  worlds.push(created);
  await controller.settled();
  return created;
}

async function apply(w: World, document: unknown, actor: RolloutActor = admin): Promise<number> {
  const result = await w.controller.apply(document, parseRollout(document), actor);
  await w.controller.settled();
  return result.revision;
}

/** Each named cluster reports the copy it was last sent (or `revision`) as `readiness`. */
async function report(
  w: World,
  clusters: string[],
  readiness: 'ready' | 'progressing' | 'failed' = 'ready',
  options: { revision?: string; objects?: CopyMessage['copy']['objects'] } = {},
): Promise<void> {
  for (const cluster of clusters) {
    const last = [...w.delivery.copies].reverse().find((copy) => copyCluster(copy) === cluster);
    const revision = options.revision ?? last?.copy.revision ?? 'none';
    w.controller.report(cluster, {
      kind: 'copy',
      rollout: 'web',
      cluster,
      revision,
      readiness,
      objects: (options.objects ?? []).map((object) => ({
        apiVersion: object.apiVersion,
        kind: object.kind,
        name: object.metadata.name,
        ...(typeof object['status'] === 'object' ? { status: object['status'] as Record<string, unknown> } : {}),
      })),
    });
  }
  await w.controller.settled();
}

function phases(w: World): Record<string, string> {
  const view = w.controller.status('web', admin, true);
  return Object.fromEntries((view.clusters ?? []).map((row) => [row.cluster, row.phase]));
}

describe('rollout controller', () => {
  it('settles a report only once its progress is in the store, and refuses it when the store refuses the write', async () => {
    const w = await world(['a']);
    await apply(w, documentOf());
    const write = w.store.putRollouts.bind(w.store);
    let written: string[] = [];
    let refusal: string | undefined;
    vi.spyOn(w.store, 'putRollouts').mockImplementation(async (writes) => {
      if (refusal !== undefined) throw new Error(refusal);
      await write(writes);
      written = writes.map(({ record }) => `${record.name}:${record.progress.clusters['a']?.phase ?? '-'}`);
    });
    const line = (readiness: 'ready' | 'progressing'): ReportMessage => ({
      kind: 'copy',
      rollout: 'web',
      cluster: 'a',
      revision: w.delivery.copies[0]!.copy.revision,
      readiness,
      objects: [],
    });
    // Settled after the write that holds it: what the agent is acknowledged is what a next leader loads.
    await w.controller.report('a', line('ready'));
    expect(written).toEqual(['web:ready']);
    refusal = 'etcd has no quorum';
    await expect(w.controller.report('a', line('progressing'))).rejects.toThrow('no quorum');
    refusal = undefined;
  });

  it('delivers the canary first and the next wave only once the canary is ready and has soaked', async () => {
    const w = await world(['a', 'b', 'c']);
    await apply(w, documentOf());
    expect(w.delivery.delivered()).toEqual(['1:a']);
    await report(w, ['a'], 'progressing');
    w.clock.advance(SOAK_S * 1000 * 2);
    await w.controller.settled();
    expect(w.delivery.delivered()).toEqual(['1:a']);
    await report(w, ['a']);
    expect(phases(w)).toEqual({ a: 'ready', b: 'waiting', c: 'waiting' });
    w.clock.advance(SOAK_S * 1000 - 1);
    await w.controller.settled();
    expect(w.delivery.delivered()).toEqual(['1:a']);
    // The soak ends: the controller's own timer starts the next wave.
    w.clock.advance(1);
    await w.controller.settled();
    expect(w.delivery.delivered()).toEqual(['1:a', '1:b', '1:c']);
    await report(w, ['b', 'c']);
    w.clock.advance(SOAK_S * 1000);
    await w.controller.settled();
    expect(w.controller.status('web', admin, false).state).toBe('complete');
  });

  it('ignores a report quoting an earlier revision: the wave does not advance on stale status', async () => {
    const w = await world(['a', 'b']);
    await apply(w, documentOf());
    await report(w, ['a']);
    const staleRevision = w.delivery.copies[0]?.copy.revision as string;
    await apply(w, documentOf({}, { customization: { patches: [] }, status: { summaries: [] } }));
    expect(w.delivery.copies.at(-1)?.copy.revision.startsWith('2-')).toBe(true);
    await report(w, ['a'], 'ready', { revision: staleRevision });
    w.clock.advance(SOAK_S * 1000 * 2);
    await w.controller.settled();
    expect(phases(w)['a']).toBe('applying');
    expect(w.delivery.delivered()).toEqual(['1:a', '2:a']);
  });

  it('leaves a held cluster alone and shows it held, not failed', async () => {
    const w = await world(['a', 'b']);
    await w.store.setClusterHold('a', { reason: 'opening hours', since: 'now', by: 'alice' });
    w.controller.clustersChanged();
    await apply(w, documentOf({ waves: ['100%'] }));
    expect(w.delivery.delivered()).toEqual(['1:b']);
    expect(phases(w)).toEqual({ a: 'held', b: 'applying' });
    await w.store.setClusterHold('a', undefined);
    w.controller.clustersChanged();
    await w.controller.settled();
    expect(w.delivery.delivered()).toEqual(['1:b', '1:a']);
  });

  it('takes in a cluster registered later that the placement matches', async () => {
    const w = await world(['a']);
    await apply(w, documentOf({ waves: ['100%'] }));
    expect(w.delivery.delivered()).toEqual(['1:a']);
    await w.store.addCluster({
      name: 'b',
      labels: { env: 'prod', region: 'eu' },
      certSerial: 'b',
      certNotAfter: '2030-01-01T00:00:00.000Z',
      registeredAt: '2026-01-02T00:00:00.000Z',
    });
    w.delivery.connected.add('b');
    w.controller.clustersChanged();
    w.controller.clusterConnected('b');
    await w.controller.settled();
    expect(w.delivery.delivered()).toEqual(['1:a', '1:b']);
  });

  it('sends a fresh copy to a cluster whose properties change what it runs, and to no other', async () => {
    const w = await world(['a', 'b']);
    await apply(w, documentOf({ waves: ['100%'] }));
    await report(w, ['a', 'b']);
    await w.store.setClusterProperties('a', { tag: '2.0' });
    await w.store.setClusterProperties('b', { unused: 'x' });
    w.controller.clustersChanged();
    await w.controller.settled();
    expect(w.delivery.delivered()).toEqual(['1:a', '1:b', '1:a']);
    expect(JSON.stringify(w.delivery.copies.at(-1)?.copy.objects)).toContain('registry.local/web:2.0');
    expect(phases(w)).toEqual({ a: 'applying', b: 'ready' });
  });

  it('sends nothing to a cluster held while its copy waited for its tunnel, and sends it once released', async () => {
    const w = await world(['a']);
    w.delivery.connected.delete('a');
    await apply(w, documentOf({ waves: ['100%'] }));
    w.controller.clusterDisconnected('a');
    await w.store.setClusterHold('a', { reason: 'opening hours', since: 'now', by: 'alice' });
    w.controller.clustersChanged();
    w.delivery.connected.add('a');
    w.controller.clusterConnected('a');
    await w.controller.settled();
    expect(w.delivery.delivered()).toEqual([]);
    expect(phases(w)).toEqual({ a: 'held' });
    await w.store.setClusterHold('a', undefined);
    w.controller.clustersChanged();
    await w.controller.settled();
    expect(w.delivery.delivered()).toEqual(['1:a']);
  });

  it('gives a cluster offline through several revisions only the latest when it reconnects', async () => {
    const w = await world(['a', 'b'], { offline: ['b'] });
    await apply(w, documentOf({ waves: ['100%'] }));
    await apply(w, documentOf({ waves: ['100%'], soakSeconds: 1 }));
    await apply(w, documentOf({ waves: ['100%'], soakSeconds: 2 }));
    expect(phases(w)['b']).toBe('offline-pending');
    expect(w.delivery.delivered().filter((entry) => entry.endsWith(':b'))).toEqual([]);
    w.delivery.connected.add('b');
    w.controller.clusterConnected('b');
    await w.controller.settled();
    expect(w.delivery.delivered().filter((entry) => entry.endsWith(':b'))).toEqual(['3:b']);
  });

  it('sends a cluster only its current copy: copies of revisions replaced while queued are dropped', async () => {
    const w = await world(['a']);
    let open!: () => void;
    w.delivery.gate = new Promise((resolve) => (open = resolve));
    // One copy is on its (slow) way while three more revisions are applied: each queues a copy behind it.
    for (const soakSeconds of [1, 2, 3, 4]) {
      const document = documentOf({ waves: ['100%'], soakSeconds });
      await w.controller.apply(document, parseRollout(document), admin);
      // The pass that hands out the revision's copy changes the view (the cluster is applying).
      await w.controller.waitForChange('web', w.controller.status('web', admin, false).statusVersion, 60_000);
    }
    open();
    await w.controller.settled();
    // The one in flight, then only the latest: the queued copies of revisions 2 and 3 never go out.
    expect(w.delivery.delivered()).toEqual(['1:a', '4:a']);
  });

  it('says of a ready cluster that is offline now that its state is its last known one', async () => {
    const w = await world(['a']);
    await apply(w, documentOf({ waves: ['100%'] }));
    await report(w, ['a']);
    const version = w.controller.status('web', admin, false).statusVersion;
    w.delivery.connected.delete('a');
    w.controller.clusterDisconnected('a');
    await w.controller.settled();
    const view = w.controller.status('web', admin, true);
    expect(view.clusters?.[0]).toMatchObject({ phase: 'ready', message: expect.stringContaining('not connected') });
    expect(view.statusVersion).toBeGreaterThan(version);
    w.delivery.connected.add('a');
    w.controller.clusterConnected('a');
    await w.controller.settled();
    expect(w.controller.status('web', admin, true).clusters?.[0]?.message).toBeUndefined();
  });

  it('sends a copy handed out while the tunnel dropped again when the cluster returns', async () => {
    const w = await world(['a']);
    w.delivery.connected.delete('a'); // the tunnel is gone, the controller does not know yet
    await apply(w, documentOf({ waves: ['100%'] }));
    expect(w.delivery.delivered()).toEqual([]);
    w.controller.clusterDisconnected('a');
    w.delivery.connected.add('a');
    w.controller.clusterConnected('a');
    await w.controller.settled();
    expect(w.delivery.delivered()).toEqual(['1:a']);
  });

  it('leaves a cluster whose copy its draining tunnel did not take offline-pending, never failed, and sends it on return (issue #30)', async () => {
    const w = await world(['a', 'b']);
    // The agent began a graceful stop: its tunnel takes no new stream, the controller is not told yet.
    w.delivery.connected.delete('a');
    await apply(w, documentOf({ waves: ['100%'], deadlineSeconds: 30, failureBudget: 0 }));
    expect(w.delivery.delivered()).toEqual(['1:b']);
    w.controller.clusterDisconnected('a');
    await report(w, ['b']);
    w.clock.advance(31_000);
    await w.controller.settled();
    expect(phases(w)).toEqual({ a: 'offline-pending', b: 'ready' });
    expect(w.controller.status('web', admin, false).counts['offline-pending']).toBe(1);
    w.delivery.connected.add('a');
    w.controller.clusterConnected('a');
    await w.controller.settled();
    expect(w.delivery.delivered()).toEqual(['1:b', '1:a']);
  });

  it('sends the current copy to a returning cluster that failed its deadline while away without ever running it (issue #30)', async () => {
    const w = await world(['a']);
    let open: () => void = () => undefined;
    w.delivery.gate = new Promise((resolve) => (open = resolve));
    const document = documentOf({ waves: ['100%'], deadlineSeconds: 30 });
    await w.controller.apply(document, parseRollout(document), admin);
    await vi.waitFor(() => expect(phases(w)).toEqual({ a: 'applying' })); // The copy is on its way when the tunnel goes; the deadline passes while the cluster is away.
    w.delivery.connected.delete('a');
    w.controller.clusterDisconnected('a');
    w.clock.advance(31_000);
    await vi.waitFor(() => expect(phases(w)).toEqual({ a: 'failed' }));
    open();
    w.delivery.gate = undefined;
    await w.controller.settled();
    expect(w.delivery.delivered()).toEqual([]);
    w.delivery.connected.add('a');
    w.controller.clusterConnected('a');
    await w.controller.settled();
    expect(w.delivery.delivered()).toEqual(['1:a']);
    await report(w, ['a']);
    expect(phases(w)).toEqual({ a: 'ready' });
  });

  it('resumes mid-wave after a restart: nothing delivered twice, the next wave after the soak', async () => {
    const w = await world(['a', 'b', 'c']);
    await apply(w, documentOf());
    await report(w, ['a']);
    await w.controller.stop();
    await w.store.close();
    worlds.splice(worlds.indexOf(w), 1);

    const store = await SqliteHubStore.open(w.path);
    const delivery = new FakeDelivery();
    const clock = w.clock;
    const controller = await RolloutController.start({
      store,
      delivery,
      logger: silentLogger,
      clock,
      passIntervalMs: 0,
    });
    const restarted: World = { ...w, store, delivery, controller };
    worlds.push(restarted);
    await controller.settled();
    expect(phases(restarted)).toEqual({ a: 'ready', b: 'waiting', c: 'waiting' });
    for (const name of ['a', 'b', 'c']) {
      delivery.connected.add(name);
      controller.clusterConnected(name);
    }
    await controller.settled();
    expect(delivery.delivered()).toEqual([]);
    clock.advance(SOAK_S * 1000);
    await controller.settled();
    expect(delivery.delivered()).toEqual(['1:b', '1:c']);
  });

  it('resends a copy still being applied at a restart when its cluster connects again', async () => {
    const w = await world(['a']);
    await apply(w, documentOf({ waves: ['100%'] }));
    await w.controller.stop();
    await w.store.close();
    worlds.splice(worlds.indexOf(w), 1);
    const store = await SqliteHubStore.open(w.path);
    const delivery = new FakeDelivery();
    const controller = await RolloutController.start({
      store,
      delivery,
      logger: silentLogger,
      clock: w.clock,
      passIntervalMs: 0,
    });
    worlds.push({ ...w, store, delivery, controller });
    delivery.connected.add('a');
    controller.clusterConnected('a');
    await controller.settled();
    expect(delivery.delivered()).toEqual(['1:a']);
  });

  it('removes a deleted rollout from connected clusters now and from offline ones when they return, across a restart', async () => {
    const w = await world(['a', 'b']);
    await apply(w, documentOf({ waves: ['100%'] }));
    expect(w.delivery.delivered()).toEqual(['1:a', '1:b']);
    w.delivery.connected.delete('b');
    w.controller.clusterDisconnected('b');
    const result = await w.controller.delete('web', admin);
    expect(result).toEqual({ name: 'web', removed: ['a'], pendingRemovals: ['b'] });
    expect(w.delivery.removals.map((removal) => removal.cluster)).toEqual(['a']);
    expect(w.delivery.removals[0]?.message).toEqual({
      rollout: 'web',
      owner: { user: 'edgeadm-hub-admin', groups: [] },
    });

    await w.controller.stop();
    await w.store.close();
    worlds.splice(worlds.indexOf(w), 1);
    const store = await SqliteHubStore.open(w.path);
    const delivery = new FakeDelivery();
    const controller = await RolloutController.start({
      store,
      delivery,
      logger: silentLogger,
      clock: w.clock,
      passIntervalMs: 0,
    });
    worlds.push({ ...w, store, delivery, controller });
    delivery.connected.add('b');
    controller.clusterConnected('b');
    await controller.settled();
    expect(delivery.removals.map((removal) => removal.cluster)).toEqual(['b']);
    expect(await store.listPendingRemovals()).toEqual([]);
  });

  it('keeps a removal from a held cluster until it is released', async () => {
    const w = await world(['a', 'b']);
    await apply(w, documentOf({ waves: ['100%'] }));
    await w.store.setClusterHold('b', { reason: 'opening hours', since: 'now', by: 'alice' });
    w.controller.clustersChanged();
    await w.controller.settled();
    expect(await w.controller.delete('web', admin)).toEqual({ name: 'web', removed: ['a'], pendingRemovals: ['b'] });
    expect(w.delivery.removals.map((removal) => removal.cluster)).toEqual(['a']);
    await w.store.setClusterHold('b', undefined);
    w.controller.clustersChanged();
    await w.controller.settled();
    await vi.waitFor(() => expect(w.delivery.removals.map((removal) => removal.cluster)).toEqual(['a', 'b']));
    await vi.waitFor(async () => expect(await w.store.listPendingRemovals()).toEqual([]));
  });

  it('forgets the removals owed to a cluster deleted from the hub', async () => {
    const w = await world(['a', 'b']);
    await apply(w, documentOf({ waves: ['100%'] }));
    w.delivery.connected.delete('b');
    w.controller.clusterDisconnected('b');
    expect((await w.controller.delete('web', admin)).pendingRemovals).toEqual(['b']);
    await w.store.deleteCluster('b');
    w.controller.clustersChanged();
    await w.controller.settled();
    expect(await w.store.listPendingRemovals()).toEqual([]);
  });

  it('answers a delete even when the store cannot forget a removal the agent took', async () => {
    const w = await world(['a']);
    await apply(w, documentOf({ waves: ['100%'] }));
    w.store.deletePendingRemoval = async () => {
      throw new Error('disk full');
    };
    const result = await w.controller.delete('web', admin);
    expect(result).toEqual({ name: 'web', removed: ['a'], pendingRemovals: [] });
  });

  it('removes the copy from a cluster that a new revision no longer places', async () => {
    const w = await world(['a', 'b']);
    await apply(w, documentOf({ waves: ['100%'] }));
    await apply(w, documentOf({ waves: ['100%'] }, { placement: { clusters: ['a'] } }));
    expect(w.delivery.removals.map((removal) => removal.cluster)).toEqual(['b']);
    expect(Object.keys(phases(w))).toEqual(['a']);
  });

  it('marks a cluster failed, with the reason, when its agent cannot take the copy; the failure budget halts', async () => {
    const w = await world(['a', 'b']);
    w.delivery.failing.set('a', 'the agent of cluster "a" does not serve rollouts (its edgeadm is older than the hub)');
    await apply(w, documentOf());
    const view = w.controller.status('web', admin, true);
    expect(view.clusters?.find((row) => row.cluster === 'a')).toMatchObject({
      phase: 'failed',
      message: expect.stringContaining('does not serve rollouts'),
    });
    expect(view.state).toBe('halted');
    expect(w.delivery.delivered()).toEqual([]);
  });

  it('fails a cluster not ready by the deadline, on its own timer', async () => {
    const w = await world(['a']);
    await apply(w, documentOf({ deadlineSeconds: 30, failureBudget: 1 }));
    await report(w, ['a'], 'progressing');
    w.clock.advance(30_000);
    await w.controller.settled();
    expect(phases(w)['a']).toBe('progressing');
    w.clock.advance(1);
    await w.controller.settled();
    expect(phases(w)['a']).toBe('failed');
  });

  it('resumes a halted rollout as its help says: its failed clusters are sent their copy again (issue #30)', async () => {
    const w = await world(['a', 'b']);
    w.delivery.failing.set('a', 'the registry is unreachable');
    await apply(w, documentOf());
    expect(w.controller.status('web', admin, false).state).toBe('halted');
    w.delivery.failing.delete('a');
    const resumed = await w.controller.command('web', 'resume', admin);
    expect(resumed.state).toBe('progressing');
    expect(resumed.haltReason).toBeUndefined();
    await w.controller.settled();
    expect(w.delivery.delivered()).toEqual(['1:a']);
    await report(w, ['a']);
    w.clock.advance(SOAK_S * 1000);
    await w.controller.settled();
    expect(w.delivery.delivered()).toEqual(['1:a', '1:b']);
  });

  it('shows a held cluster’s hold and an offline cluster’s last-seen time in its row (issue #30)', async () => {
    const w = await world(['a', 'b', 'c'], { offline: ['b', 'c'] });
    await w.store.setClusterHold('a', { reason: 'opening hours', since: '2026-03-01T09:00:00.000Z', by: 'ops' });
    await w.store.updateClusterStatus('b', { lastSeen: '2026-03-01T08:00:00.000Z' });
    w.controller.clustersChanged();
    await apply(w, documentOf({ waves: ['100%'] }));
    const rows = Object.fromEntries(
      (w.controller.status('web', admin, true).clusters ?? []).map((row) => [row.cluster, row]),
    );
    expect(rows['a']).toMatchObject({
      phase: 'held',
      hold: { reason: 'opening hours', by: 'ops' },
      message: 'held by ops since 2026-03-01T09:00:00.000Z: opening hours',
    });
    expect(rows['b']).toMatchObject({
      phase: 'offline-pending',
      lastSeen: '2026-03-01T08:00:00.000Z',
      message: 'last seen 2026-03-01T08:00:00.000Z',
    });
    expect(rows['c']).toMatchObject({ phase: 'offline-pending', message: 'never seen by the hub' });
  });

  it('rolls the clusters a failing canary updated back to the previous revision, in the pass that halts it (onFailure: rollback)', async () => {
    const w = await world(['a', 'b', 'c']);
    const strategy = { waves: [1, '100%'], failureBudget: 0, onFailure: 'rollback' };
    const good = documentOf(strategy);
    await apply(w, good);
    await report(w, ['a']);
    w.clock.advance(SOAK_S * 1000);
    await w.controller.settled();
    await report(w, ['b', 'c']);
    w.clock.advance(SOAK_S * 1000);
    await w.controller.settled();
    expect(w.controller.status('web', admin, false).state).toBe('complete');

    const bad = documentOf(strategy, {
      customization: { patches: [{ clusterSelector: '', patch: { data: { bad: 'yes' } } }] },
    });
    await apply(w, bad);
    expect(w.delivery.delivered()).toEqual(['1:a', '1:b', '1:c', '2:a']);
    const haltedAt = w.clock.now();
    // The canary fails its gate: no time passes before the rollback's copy goes out.
    await report(w, ['a'], 'failed');
    expect(w.clock.now()).toBe(haltedAt);
    expect(w.delivery.delivered()).toEqual(['1:a', '1:b', '1:c', '2:a', '3:a']);
    const view = w.controller.status('web', admin, true);
    expect(view).toMatchObject({
      revision: 3,
      state: 'progressing',
      owner: admin.user,
      rollbackOf: { revision: 2, reason: expect.stringMatching(/1 clusters failed/) },
    });
    expect((await w.controller.document('web', admin)).document).toEqual(good);
    // The copy the canary gets back is the first revision's, and it is written as the owner.
    const rolledBack = w.delivery.copies.at(-1)!;
    expect(rolledBack.owner).toEqual({ user: admin.user, groups: [] });
    expect(rolledBack.copy.objects).toEqual(
      w.delivery.copies[0]!.copy.objects.map((object) => ({
        ...object,
        metadata: { ...object.metadata, annotations: expect.anything() },
      })),
    );
    // A rollback that fails in turn halts; it is not rolled back again.
    await report(w, ['a'], 'failed');
    expect(w.controller.status('web', admin, false)).toMatchObject({ revision: 3, state: 'halted' });
  });

  it('halts and says why when there is nothing to roll back to', async () => {
    const w = await world(['a']);
    await apply(w, documentOf({ waves: ['100%'], failureBudget: 0, onFailure: 'rollback' }));
    await report(w, ['a'], 'failed');
    expect(w.controller.status('web', admin, false)).toMatchObject({
      revision: 1,
      state: 'halted',
      haltReason: expect.stringMatching(/not rolled back: there is no earlier revision/),
    });
  });

  it('pauses, resumes, aborts and undoes', async () => {
    const w = await world(['a', 'b']);
    await apply(w, documentOf());
    await report(w, ['a']);
    expect((await w.controller.command('web', 'pause', admin)).state).toBe('paused');
    w.clock.advance(SOAK_S * 1000);
    await w.controller.settled();
    expect(w.delivery.delivered()).toEqual(['1:a']);
    expect((await w.controller.command('web', 'resume', admin)).state).toBe('progressing');
    await w.controller.settled();
    expect(w.delivery.delivered()).toEqual(['1:a', '1:b']);
    await apply(w, documentOf({ soakSeconds: 5 }));
    expect((await w.controller.command('web', 'abort', admin)).state).toBe('aborted');
    await expect(w.controller.command('web', 'resume', admin)).rejects.toMatchObject({ status: 409 });
    const undone = await w.controller.undo('web', admin);
    expect(undone).toMatchObject({ revision: 3, state: 'progressing' });
    expect((await w.controller.document('web', admin)).document).toEqual(documentOf());
  });

  it('pauses a complete rollout: its next revision waits until it is resumed', async () => {
    const w = await world(['a']);
    await apply(w, documentOf({ waves: ['100%'], soakSeconds: 0 }));
    await report(w, ['a']);
    expect(w.controller.status('web', admin, false).state).toBe('complete');
    expect((await w.controller.command('web', 'pause', admin)).state).toBe('paused');
    await apply(w, documentOf({ waves: ['100%'], soakSeconds: 0, maxUnavailable: 1 }));
    expect(w.controller.status('web', admin, false)).toMatchObject({ revision: 2, state: 'paused' });
    expect(w.delivery.delivered()).toEqual(['1:a']);
    expect((await w.controller.command('web', 'resume', admin)).state).toBe('progressing');
    await w.controller.settled();
    expect(w.delivery.delivered()).toEqual(['1:a', '2:a']);
  });

  it('bumps the status version on every visible change, wakes a waiting watcher, and keeps summaries across a restart', async () => {
    const w = await world(['a', 'b']);
    await apply(
      w,
      documentOf(
        { waves: ['100%'] },
        { status: { summaries: [{ name: 'available', reduce: 'min', field: '.status.availableReplicas' }] } },
      ),
    );
    const before = w.controller.status('web', admin, false).statusVersion;
    const woken = w.controller.waitForChange('web', before, 20_000);
    const deployment = (status: Record<string, unknown>) => [
      { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' }, status },
    ];
    await report(w, ['a'], 'ready', { objects: deployment({ availableReplicas: 3 }) });
    await woken;
    await report(w, ['b'], 'ready', { objects: deployment({ availableReplicas: 2 }) });
    const view = w.controller.status('web', admin, false);
    expect(view.statusVersion).toBeGreaterThan(before);
    expect(view.summaries).toEqual([{ name: 'available', value: 2, reporting: 2 }]);
    await w.controller.stop();
    await w.store.close();
    worlds.splice(worlds.indexOf(w), 1);
    const store = await SqliteHubStore.open(w.path);
    const controller = await RolloutController.start({
      store,
      delivery: new FakeDelivery(),
      logger: silentLogger,
      clock: w.clock,
      passIntervalMs: 0,
    });
    worlds.push({ ...w, store, controller });
    await controller.settled();
    expect(controller.status('web', admin, false).summaries).toEqual([{ name: 'available', value: 2, reporting: 2 }]);
  });

  it('answers a status watcher with the unchanged view when its wait ends', async () => {
    const w = await world(['a']);
    await apply(w, documentOf());
    const version = w.controller.status('web', admin, false).statusVersion;
    let isWoken = false;
    const waiting = w.controller.waitForChange('web', version, 20_000).then(() => (isWoken = true));
    await w.controller.settled();
    expect(isWoken).toBe(false);
    w.clock.advance(20_000);
    await waiting;
    expect(w.controller.status('web', admin, false).statusVersion).toBe(version);
  });

  it('steps each rollout once for a burst of reconnects, not once per cluster', async () => {
    const names = Array.from({ length: 200 }, (_, i) => `s-${i}`);
    const w = await world(names, { offline: names });
    await apply(w, documentOf({ waves: ['100%'] }));
    let reads = 0;
    const listClusters = w.store.listClusters.bind(w.store);
    w.store.listClusters = async () => {
      reads += 1;
      return listClusters();
    };
    const puts: number[] = [];
    const putRollouts = w.store.putRollouts.bind(w.store);
    w.store.putRollouts = async (records) => {
      puts.push(records.length);
      return putRollouts(records);
    };
    for (const name of names) {
      w.delivery.connected.add(name);
      w.controller.clusterConnected(name);
    }
    await w.controller.settled();
    expect(w.delivery.copies).toHaveLength(200);
    expect(puts.length).toBeLessThanOrEqual(2);
    expect(reads).toBe(0);
  });
});
