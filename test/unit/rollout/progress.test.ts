import { describe, expect, it } from 'vitest';
import {
  newProgress,
  recordReport,
  stepRollout,
  type ObservedCluster,
  type RolloutProgress,
  type StepOutput,
} from '../../../src/rollout/progress.js';
import type { RolloutSpec } from '../../../src/rollout/spec.js';
import { rollout } from './fixtures.js';

const SOAK_MS = 60_000;
const DEADLINE_MS = 300_000;

function fleet(n: number, overrides: Partial<ObservedCluster> = {}): ObservedCluster[] {
  return Array.from({ length: n }, (_, i) => ({
    name: `store-${String(i).padStart(3, '0')}`,
    labels: { env: 'prod', region: 'eu' },
    properties: {},
    isConnected: true,
    isHeld: false,
    ...overrides,
  }));
}

/** A small world: the clock, the clusters, and the last step's output, advanced by hand. */
class World {
  now = 1_000_000;
  progress: RolloutProgress = newProgress(1);
  last: StepOutput = { progress: this.progress, deliveries: [], removals: [] };
  constructor(
    readonly spec: RolloutSpec,
    public clusters: ObservedCluster[],
  ) {}

  step(): StepOutput {
    this.last = stepRollout({ spec: this.spec, progress: this.progress, clusters: this.clusters, now: this.now });
    this.progress = this.last.progress;
    return this.last;
  }

  delivered(): string[] {
    return this.last.deliveries.map((d) => d.cluster);
  }

  /** Each named cluster reports its target copy as ready (or as told). */
  report(names: string[], readiness: 'ready' | 'progressing' | 'failed' = 'ready', revision?: string): void {
    for (const cluster of names) {
      const target = this.progress.clusters[cluster]?.targetRevision ?? 'none';
      this.progress = recordReport(this.progress, { cluster, revision: revision ?? target, readiness });
    }
  }

  phaseOf(name: string): string | undefined {
    return this.progress.clusters[name]?.phase;
  }

  set(name: string, change: Partial<ObservedCluster>): void {
    this.clusters = this.clusters.map((c) => (c.name === name ? { ...c, ...change } : c));
  }
}

const spec = (strategy: Record<string, unknown> = {}) =>
  rollout({
    strategy: {
      waves: [1, '50%', '100%'],
      maxUnavailable: '100%',
      failureBudget: 0,
      soakSeconds: 60,
      deadlineSeconds: 300,
      ...strategy,
    },
  });

describe('stepRollout', () => {
  it('delivers the canary first, and the next wave only after the canary is ready and has soaked', () => {
    const world = new World(spec(), fleet(4));
    expect(world.step().deliveries.map((d) => d.cluster)).toEqual(['store-000']);
    world.now += 2 * SOAK_MS;
    expect(world.step().deliveries).toEqual([]); // not ready: no soak, however long
    world.report(['store-000']);
    world.step();
    world.now += SOAK_MS - 1;
    expect(world.step().deliveries).toEqual([]);
    world.now += 1;
    world.step(); // the wave advances
    expect(world.progress.currentWave).toBe(1);
    expect(world.step().deliveries.map((d) => d.cluster)).toEqual(['store-001']);
  });

  it('never advances on a report for another copy revision (stale status)', () => {
    const world = new World(spec(), fleet(4));
    world.step();
    world.report(['store-000'], 'ready', '0-0123456789ab');
    world.now += 2 * SOAK_MS;
    world.step();
    expect(world.phaseOf('store-000')).toBe('applying');
    expect(world.progress.currentWave).toBe(0);
  });

  it('halts when the canary fails and leaves the later clusters untouched', () => {
    const world = new World(spec(), fleet(4));
    world.step();
    world.report(['store-000'], 'failed');
    world.now += 2 * SOAK_MS;
    const out = world.step();
    expect(out.progress.state).toBe('halted');
    expect(out.progress.haltReason).toContain('1 clusters failed, more than the failure budget of 0');
    expect(out.deliveries).toEqual([]);
    expect(['store-001', 'store-002', 'store-003'].map((n) => world.phaseOf(n))).toEqual([
      'waiting',
      'waiting',
      'waiting',
    ]);
  });

  it('fails a cluster that is not ready within the deadline', () => {
    const world = new World(spec({ failureBudget: 5 }), fleet(2));
    world.step();
    world.report(['store-000'], 'progressing');
    world.now += DEADLINE_MS + 1;
    world.step();
    expect(world.phaseOf('store-000')).toBe('failed');
    expect(world.progress.clusters['store-000']?.message).toContain('not ready within 300 s of delivery');
  });

  it('keeps at most maxUnavailable clusters in flight', () => {
    const world = new World(spec({ waves: ['100%'], maxUnavailable: 2 }), fleet(5));
    expect(world.step().deliveries).toHaveLength(2);
    expect(world.step().deliveries).toHaveLength(0);
    world.report(['store-000']);
    expect(world.step().deliveries.map((d) => d.cluster)).toEqual(['store-002']);
  });

  it('marks an offline cluster offline-pending, and delivers the latest revision when it returns', () => {
    const world = new World(spec({ waves: ['100%'], maxUnavailable: 1 }), fleet(2));
    world.set('store-000', { isConnected: false });
    world.step();
    expect(world.phaseOf('store-000')).toBe('offline-pending');
    world.report(['store-001']);
    world.set('store-000', { isConnected: true });
    const out = world.step();
    expect(out.deliveries.map((d) => d.cluster)).toEqual(['store-000']);
    expect(out.deliveries[0]?.revision).toMatch(/^1-/);
  });

  it('a wave with offline clusters within maxUnavailable completes; beyond it, it waits for them', () => {
    const world = new World(spec({ waves: [2, '100%'], maxUnavailable: 1, soakSeconds: 0 }), fleet(4));
    world.set('store-001', { isConnected: false });
    expect(world.step().deliveries.map((d) => d.cluster)).toEqual(['store-000']); // one update in flight despite the offline one
    world.report(['store-000']);
    world.step();
    expect(world.progress.currentWave).toBe(1);
    expect(world.phaseOf('store-001')).toBe('offline-pending');

    const strict = new World(spec({ waves: [3, '100%'], maxUnavailable: 1, soakSeconds: 0 }), fleet(4));
    strict.set('store-001', { isConnected: false });
    strict.set('store-002', { isConnected: false });
    strict.step();
    strict.report(['store-000']);
    strict.step();
    expect(strict.progress.currentWave).toBe(0);
    strict.set('store-002', { isConnected: true });
    expect(strict.step().deliveries.map((d) => d.cluster)).toEqual(['store-002']);
    strict.report(['store-002']);
    strict.step();
    expect(strict.progress.currentWave).toBe(1);
  });

  it('leaves a held cluster alone without counting it as failed, and delivers once it is released', () => {
    const world = new World(spec({ waves: ['100%'] }), fleet(2));
    world.set('store-001', { isHeld: true });
    expect(world.step().deliveries.map((d) => d.cluster)).toEqual(['store-000']);
    expect(world.phaseOf('store-001')).toBe('held');
    world.report(['store-000']);
    world.step();
    world.now += SOAK_MS;
    expect(world.step().progress.state).toBe('complete');
    world.set('store-001', { isHeld: false });
    const out = world.step();
    expect(out.progress.state).toBe('progressing');
    expect(out.deliveries.map((d) => d.cluster)).toEqual(['store-001']);
  });

  it('fails a cluster whose customization cannot be rendered, before anything is sent to it', () => {
    const world = new World(spec({ waves: ['100%'], failureBudget: 1 }), fleet(2));
    world.set('store-001', { labels: { env: 'prod' } }); // no region label for ${label:region}
    const out = world.step();
    expect(out.deliveries.map((d) => d.cluster)).toEqual(['store-000']);
    expect(world.phaseOf('store-001')).toBe('failed');
    expect(world.progress.clusters['store-001']?.message).toContain('spec.resources[1].data.region');
  });

  it('does nothing new while paused, and a cluster that no longer matches has its copy removed', () => {
    const world = new World(spec({ waves: ['100%'] }), fleet(2));
    world.step();
    world.progress = { ...world.progress, state: 'paused' };
    world.set('store-000', { labels: { env: 'dev', region: 'eu' } });
    const out = world.step();
    expect(out.deliveries).toEqual([]);
    expect(out.removals).toEqual(['store-000']);
  });

  it('takes up a cluster registered after the rollout completed', () => {
    const world = new World(spec({ waves: ['100%'], soakSeconds: 0 }), fleet(1));
    world.step();
    world.report(['store-000']);
    expect(world.step().progress.state).toBe('complete');
    world.clusters = fleet(2);
    expect(world.step().deliveries.map((d) => d.cluster)).toEqual(['store-001']);
  });

  it('gives a cluster that was offline through several revisions only the latest', () => {
    const world = new World(spec({ waves: ['100%'] }), fleet(1));
    world.set('store-000', { isConnected: false });
    world.step();
    world.progress = newProgress(2, world.progress);
    world.step();
    world.progress = newProgress(3, world.progress);
    world.step();
    world.set('store-000', { isConnected: true });
    const out = world.step();
    expect(out.deliveries).toHaveLength(1);
    expect(out.deliveries[0]?.revision).toMatch(/^3-/);
  });

  it('keeps the entry of every cluster whose progress did not change (the hub writes only replaced entries)', () => {
    const clusters = [
      ...fleet(3),
      ...fleet(2, { isConnected: false }).map((c, i) => ({ ...c, name: `offline-${i}` })),
      ...fleet(2, { isHeld: true }).map((c, i) => ({ ...c, name: `held-${i}` })),
    ];
    const world = new World(spec({ waves: ['100%'], maxUnavailable: 1 }), clusters);
    world.step();
    world.step();
    const before = world.progress.clusters;
    world.now += 1_000;
    const after = world.step().progress.clusters;
    const replaced = Object.keys(after).filter((name) => after[name] !== before[name]);
    // Waiting, offline-pending and held clusters stay as they were; nothing is delivered while one is in flight.
    expect(world.delivered()).toEqual([]);
    expect(replaced).toEqual([]);
    world.clusters = world.clusters.map((c) => (c.name === 'offline-0' ? { ...c, isConnected: true } : c));
    const next = world.step().progress.clusters;
    expect(Object.keys(next).filter((name) => next[name] !== after[name])).toEqual(['offline-0']);
  });
});
