/** Long polls on a rollout's status (src/hub/rollouts/status-waiters.ts). */
import { describe, expect, it } from 'vitest';
import { StatusWaiters } from '../../../../src/hub/rollouts/status-waiters.js';
import { FakeClock } from './controller-fakes.js';

describe('the status waiters', () => {
  it("wakes a rollout's waiters only, and forgets them once woken", async () => {
    const clock = new FakeClock();
    const waiters = new StatusWaiters(clock);
    const woken: string[] = [];
    const web = waiters.wait('web', 60_000).then(() => woken.push('web'));
    void waiters.wait('api', 60_000).then(() => woken.push('api'));
    expect(waiters.size).toBe(2);
    waiters.wake('web');
    await web;
    expect(woken).toEqual(['web']);
    expect(waiters.size).toBe(1);
    expect(clock.pending).toBe(1);
  });

  it('ends a wait at its timeout, at its signal, and at wakeAll', async () => {
    const clock = new FakeClock();
    const waiters = new StatusWaiters(clock);
    const timedOut = waiters.wait('web', 1_000);
    clock.advance(1_000);
    await timedOut;
    const controller = new AbortController();
    const aborted = waiters.wait('web', 60_000, controller.signal);
    controller.abort();
    await aborted;
    const stopped = Promise.all([waiters.wait('web', 60_000), waiters.wait('api', 60_000)]);
    waiters.wakeAll();
    await stopped;
    expect([waiters.size, clock.pending]).toEqual([0, 0]);
  });
});
