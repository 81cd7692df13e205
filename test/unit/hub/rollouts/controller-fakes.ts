/**
 * Fakes the rollout controller's part tests share: a clock that moves only
 * when told, a delivery that records what it is handed, a store in a fresh
 * SQLite file, and a live rollout built from a fixture document.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LiveRollout } from '../../../../src/hub/rollouts/live-rollouts.js';
import type { RolloutClock } from '../../../../src/hub/rollouts/rollout-clock.js';
import type { DeliveryOutcome, RolloutDelivery } from '../../../../src/hub/rollouts/rollout-delivery.js';
import { SqliteHubStore } from '../../../../src/hub/store/sqlite-store.js';
import type { ClusterRecord, RolloutRecord } from '../../../../src/hub/store/store.js';
import { newProgress } from '../../../../src/rollout/progress.js';
import { parseRollout } from '../../../../src/rollout/spec.js';
import type { CopyMessage, RemoveMessage } from '../../../../src/rollout/wire.js';
import { rolloutDocument } from '../../rollout/fixtures.js';

/** A clock that moves only when told, firing due timers in order. */
export class FakeClock implements RolloutClock {
  time = 1_000_000;
  #timers: { at: number; callback: () => void; id: number }[] = [];
  #next = 0;
  now(): number {
    return this.time;
  }
  setTimeout(callback: () => void, ms: number): unknown {
    const id = (this.#next += 1);
    this.#timers.push({ at: this.time + ms, callback, id });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.#timers = this.#timers.filter((timer) => timer.id !== handle);
  }
  /** Timers not yet fired. */
  get pending(): number {
    return this.#timers.length;
  }
  advance(ms: number): void {
    this.time += ms;
    const due = this.#timers.filter((timer) => timer.at <= this.time).sort((a, b) => a.at - b.at);
    this.#timers = this.#timers.filter((timer) => timer.at > this.time);
    for (const timer of due) timer.callback();
  }
}

/** Records copies and removals; a cluster not in `connected` answers as a closed tunnel would. */
export class FakeDelivery implements RolloutDelivery {
  readonly connected = new Set<string>();
  readonly copies: { cluster: string; message: CopyMessage }[] = [];
  readonly removals: { cluster: string; message: RemoveMessage }[] = [];
  failing = new Map<string, string>();
  async sendCopy(cluster: string, message: CopyMessage): Promise<DeliveryOutcome> {
    if (!this.connected.has(cluster)) return { status: 'disconnected' };
    const failure = this.failing.get(cluster);
    if (failure !== undefined) return { status: 'failed', message: failure };
    this.copies.push({ cluster, message });
    return { status: 'delivered' };
  }
  async sendRemove(cluster: string, message: RemoveMessage): Promise<DeliveryOutcome> {
    if (!this.connected.has(cluster)) return { status: 'disconnected' };
    this.removals.push({ cluster, message });
    return { status: 'delivered' };
  }
}

/** A store in a fresh SQLite file, with `clusters` registered (labels env=prod). */
export async function storeWith(clusters: readonly string[]): Promise<SqliteHubStore> {
  const store = await SqliteHubStore.open(join(mkdtempSync(join(tmpdir(), 'rollout-parts-')), 'hub.db'));
  for (const name of clusters) await store.addCluster(clusterRecord(name));
  return store;
}

/** A registered cluster's record. */
export function clusterRecord(name: string, extra: Partial<ClusterRecord> = {}): ClusterRecord {
  return {
    name,
    labels: { env: 'prod', region: 'eu' },
    certSerial: name,
    certNotAfter: '2030-01-01T00:00:00.000Z',
    registeredAt: '2026-01-01T00:00:00.000Z',
    ...extra,
  };
}

/** A live rollout at revision 1 of the fixture document, owned by the admin, with no cluster yet. */
export function liveRollout(name = 'web', strategy: Record<string, unknown> = {}): LiveRollout {
  const document = rolloutDocument({
    strategy: {
      waves: [1, '100%'],
      maxUnavailable: '100%',
      failureBudget: 0,
      soakSeconds: 60,
      deadlineSeconds: 600,
      ...strategy,
    },
  });
  (document.metadata as { name: string }).name = name;
  const spec = parseRollout(document);
  const record: RolloutRecord = {
    name,
    owner: { user: 'edgeadm-hub-admin', groups: [], clustersSelector: '' },
    revision: 1,
    progress: newProgress(1),
    statusVersion: 1,
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
  };
  return {
    record,
    spec,
    documentText: JSON.stringify(document),
    reports: new Map(),
    unconfirmed: new Set(),
    viewKey: '',
  };
}
