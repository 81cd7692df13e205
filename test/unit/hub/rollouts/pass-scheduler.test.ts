/** When the rollout controller passes, and with what (src/hub/rollouts/pass-scheduler.ts). */
import { describe, expect, it } from 'vitest';
import { PassScheduler, type PassMarks } from '../../../../src/hub/rollouts/pass-scheduler.js';
import { silentLogger } from '../../../../src/log/run-log.js';
import { FakeClock } from './controller-fakes.js';

/** A scheduler whose passes record the marks they took; each pass takes `passMs` of the clock's time. */
function scheduler(
  intervalMs: number,
  options: { maxShare?: number; passMs?: number } = {},
): { scheduler: PassScheduler; clock: FakeClock; passes: PassMarks[] } {
  const clock = new FakeClock();
  const passes: PassMarks[] = [];
  const created: PassScheduler = new PassScheduler({
    clock,
    intervalMs,
    ...(options.maxShare === undefined ? {} : { maxShare: options.maxShare }),
    logger: silentLogger,
    isDrained: () => true,
    pass: async () => {
      passes.push(created.takeMarks());
      clock.time += options.passMs ?? 0;
    },
  });
  return { scheduler: created, clock, passes };
}

describe('the pass scheduler', () => {
  it('gathers the marks of many events into one pass', async () => {
    const { scheduler: passes, passes: taken } = scheduler(0);
    passes.mark('web');
    passes.mark('api');
    passes.connected('shop-1');
    await passes.settled();
    expect(taken).toEqual([{ isAll: true, names: ['web', 'api'], justConnected: ['shop-1'] }]);
  });

  it('starts passes at most once per interval, and only for the marks left', async () => {
    const { scheduler: passes, clock, passes: taken } = scheduler(200);
    passes.mark('web');
    await new Promise((resolve) => setImmediate(resolve));
    expect(taken).toHaveLength(1);
    passes.mark('api');
    passes.disconnected('shop-1');
    await new Promise((resolve) => setImmediate(resolve));
    expect(taken).toHaveLength(1);
    clock.advance(200);
    await passes.settled();
    expect(taken.at(-1)).toEqual({ isAll: true, names: ['api'], justConnected: [] });
  });

  it('rests after a long pass in proportion to its cost, so passes take at most their share of the time', async () => {
    const { scheduler: passes, clock, passes: taken } = scheduler(200, { maxShare: 0.25, passMs: 100 });
    passes.mark('web');
    await new Promise((resolve) => setImmediate(resolve));
    expect(taken).toHaveLength(1);
    // The pass took 100 ms: at a quarter of the time, the next starts 300 ms after its end, not 200 ms after its start.
    passes.connected('shop-1');
    clock.advance(199);
    await new Promise((resolve) => setImmediate(resolve));
    expect(taken).toHaveLength(1);
    clock.advance(200);
    await new Promise((resolve) => setImmediate(resolve));
    expect(taken).toHaveLength(2);
    // A cheap pass rests only the interval.
    const cheap = scheduler(200, { maxShare: 0.25, passMs: 10 });
    cheap.scheduler.mark('web');
    await new Promise((resolve) => setImmediate(resolve));
    cheap.scheduler.mark('api');
    cheap.clock.advance(200);
    await cheap.scheduler.settled();
    expect(cheap.passes).toHaveLength(2);
  });

  it('asks for the clusters to be read again once, and wakes everything at the due time', async () => {
    const { scheduler: passes, clock, passes: taken } = scheduler(0);
    passes.clustersChanged();
    expect([passes.takeClusterReload(), passes.takeClusterReload()]).toEqual([true, false]);
    await passes.settled();
    passes.wakeAt(clock.now() + 5_000);
    passes.wakeAt(clock.now() + 1_000);
    expect(clock.pending).toBe(1);
    clock.advance(1_000);
    await passes.settled();
    expect(taken).toHaveLength(2);
    passes.wakeAt(Number.POSITIVE_INFINITY);
    expect(clock.pending).toBe(0);
  });

  it('runs exclusive work one at a time, and no pass after stop', async () => {
    const { scheduler: passes, passes: taken } = scheduler(0);
    const order: string[] = [];
    const gate = Promise.withResolvers<void>();
    const first = passes.exclusive(async () => {
      await gate.promise;
      order.push('first');
    });
    const second = passes.exclusive(async () => {
      order.push('second');
    });
    gate.resolve();
    await Promise.all([first, second]);
    expect(order).toEqual(['first', 'second']);
    passes.stop();
    passes.mark('web');
    await new Promise((resolve) => setImmediate(resolve));
    expect(taken).toEqual([]);
  });
});
