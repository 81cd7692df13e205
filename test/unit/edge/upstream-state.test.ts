import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/log/run-log.js';
import { UpstreamStateMachine } from '../../../src/edge/upstream-state.js';

/** A probe answered by the test, one call at a time. */
function manualProbe() {
  const pending: ((isOnline: boolean) => void)[] = [];
  return {
    calls: () => pending.length,
    answer: (isOnline: boolean) => pending.shift()!(isOnline),
    probe: () => new Promise<boolean>((resolve) => pending.push(resolve)),
  };
}

describe('UpstreamStateMachine', () => {
  it('goes offline on a reported failure and back online on a passing probe, waking the watches that wait', async () => {
    const probe = manualProbe();
    const state = new UpstreamStateMachine(probe, 60_000, silentLogger);
    state.stop(); // no probe loop: the test drives every probe
    expect(state.isOnline).toBe(true);
    const woken: string[] = [];
    state.onceOnline(() => woken.push('a'));
    const cancel = state.onceOnline(() => woken.push('cancelled'));
    cancel();
    state.markUnreachable('connect ECONNREFUSED');
    expect(state.isOnline).toBe(false);

    const first = state.checkNow();
    const second = state.checkNow();
    expect(probe.calls()).toBe(1); // one probe at a time, shared
    probe.answer(false);
    expect(await first).toBe(false);
    expect(await second).toBe(false);
    expect(woken).toEqual([]);

    const third = state.checkNow();
    probe.answer(true);
    expect(await third).toBe(true);
    expect(state.isOnline).toBe(true);
    expect(woken).toEqual(['a']);

    // A waiter is called once only.
    state.markUnreachable('reset');
    const fourth = state.checkNow();
    probe.answer(true);
    await fourth;
    expect(woken).toEqual(['a']);
  });
});
