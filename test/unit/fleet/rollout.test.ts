import { describe, expect, it } from 'vitest';
import { PreflightError } from '../../../src/errors.js';
import {
  parseCountSpec,
  planWaves,
  resolveCountSpec,
  runRollout,
  type RolloutEvent,
  type RolloutOptions,
} from '../../../src/fleet/rollout.js';
import { newRunState, resumeRunState, type RunState } from '../../../src/fleet/run-state.js';

const hosts = (count: number): string[] => Array.from({ length: count }, (_, i) => `h${i + 1}`);

function stateFor(names: string[]): RunState {
  return newRunState({ command: 'check', inventory: 'inv.yaml', hosts: names, now: new Date(0), id: 'run-1' });
}

/** Runs the rollout recording events and the most hosts running at once. */
async function rollout(
  options: Omit<RolloutOptions, 'task'> & { failing?: Set<string>; failTimes?: Map<string, number> },
) {
  const events: RolloutEvent[] = [];
  const started: string[] = [];
  let running = 0;
  let peak = 0;
  const sleeps: number[] = [];
  const calls = new Map<string, number>();
  const state = await runRollout({
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    now: () => 0,
    ...options,
    onEvent: (event) => {
      events.push(event);
    },
    task: async (host, context) => {
      started.push(host);
      running++;
      peak = Math.max(peak, running);
      calls.set(host, (calls.get(host) ?? 0) + 1);
      context.setPhase('check');
      await new Promise((resolve) => setImmediate(resolve));
      running--;
      if (options.failing?.has(host)) throw Object.assign(new Error(`${host} is broken`), { code: 'E_BROKEN' });
      const failTimes = options.failTimes?.get(host) ?? 0;
      if ((calls.get(host) ?? 0) <= failTimes) throw new Error('flaky');
    },
  });
  return { state, events, started, peak, sleeps };
}

describe('count specs and waves', () => {
  it('parses counts and percentages and refuses the rest', () => {
    expect(parseCountSpec('3', '--canary')).toEqual({ count: 3 });
    expect(parseCountSpec('20%', '--wave-size')).toEqual({ percent: 20 });
    expect(() => parseCountSpec('x', '--wave-size')).toThrow(/expected a number or a percentage/);
    expect(() => parseCountSpec('150%', '--max-failures')).toThrow();
    expect(resolveCountSpec({ percent: 25 }, 10)).toBe(2);
  });

  it('puts the canary first, then waves of the given size', () => {
    expect(planWaves(hosts(7), { canary: 1, waveSize: { count: 3 } })).toEqual([
      ['h1'],
      ['h2', 'h3', 'h4'],
      ['h5', 'h6', 'h7'],
    ]);
    expect(planWaves(hosts(10), { waveSize: { percent: 50 } })).toEqual([hosts(10).slice(0, 5), hosts(10).slice(5)]);
    expect(planWaves(hosts(3), {})).toEqual([hosts(3)]);
  });
});

describe('runRollout', () => {
  it('runs every host, no more than --concurrency at once, wave after wave', async () => {
    const { state, events, peak } = await rollout({
      state: stateFor(hosts(6)),
      concurrency: 2,
      canary: 1,
      waveSize: { count: 5 },
    });
    expect(Object.values(state.hosts).every((host) => host.status === 'done' && host.attempts === 1)).toBe(true);
    expect(state.hosts.h1!.phase).toBe('check');
    expect(peak).toBe(2);
    const waves = events.filter((event) => event.type === 'wave');
    expect(waves.map((wave) => (wave as { hosts: string[] }).hosts)).toEqual([['h1'], ['h2', 'h3', 'h4', 'h5', 'h6']]);
    // The second wave starts only after the canary finished.
    const order = events.map((event) => `${event.type}:${'host' in event ? event.host : ''}`);
    expect(order.indexOf('done:h1')).toBeLessThan(order.indexOf('start:h2'));
    expect(state.stopReason).toBeUndefined();
  });

  it('starts no host once --max-failures is exceeded, and marks the rest skipped', async () => {
    const { state, started, events } = await rollout({
      state: stateFor(hosts(5)),
      concurrency: 1,
      maxFailures: { count: 1 },
      failing: new Set(['h1', 'h2', 'h3']),
    });
    expect(started).toEqual(['h1', 'h2']);
    expect(state.stopReason).toBe('max-failures');
    expect(state.hosts.h2).toMatchObject({ status: 'failed', error: { code: 'E_BROKEN', message: 'h2 is broken' } });
    for (const name of ['h3', 'h4', 'h5']) {
      expect(state.hosts[name]).toMatchObject({
        status: 'skipped',
        attempts: 0,
        error: { code: 'E_FLEET_NOT_STARTED' },
      });
    }
    expect(events.at(-1)).toEqual({ type: 'stopped', reason: 'max-failures', skipped: ['h3', 'h4', 'h5'] });
  });

  it('lets running hosts finish when the budget is spent at higher concurrency', async () => {
    const { state, started } = await rollout({
      state: stateFor(hosts(6)),
      concurrency: 3,
      maxFailures: { count: 0 },
      failing: new Set(['h1']),
    });
    expect(started).toEqual(['h1', 'h2', 'h3']);
    expect(state.hosts.h2!.status).toBe('done');
    expect(state.hosts.h3!.status).toBe('done');
    expect(state.hosts.h4!.status).toBe('skipped');
  });

  it('retries with exponential backoff, then gives up', async () => {
    const { state, sleeps } = await rollout({
      state: stateFor(['a', 'b']),
      concurrency: 1,
      retries: 2,
      backoff: { initialMs: 100, maxMs: 150 },
      failTimes: new Map([['a', 1]]),
      failing: new Set(['b']),
    });
    expect(state.hosts.a).toMatchObject({ status: 'done', attempts: 2 });
    expect(state.hosts.a!.error).toBeUndefined();
    expect(state.hosts.b).toMatchObject({ status: 'failed', attempts: 3 });
    expect(sleeps).toEqual([100, 100, 150]);
  });

  it('does not retry preflight failures', async () => {
    const state = await runRollout({
      state: stateFor(['a']),
      concurrency: 1,
      retries: 3,
      task: async () => {
        throw new PreflightError('not fit', { code: 'E_PREFLIGHT' });
      },
    });
    expect(state.hosts.a).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'E_PREFLIGHT' } });
  });

  it('stops starting hosts when cancelled, lets the running one finish, and resume completes the rest', async () => {
    const controller = new AbortController();
    const names = hosts(4);
    const first = await runRollout({
      state: stateFor(names),
      concurrency: 1,
      signal: controller.signal,
      task: async (host) => {
        if (host === 'h2') controller.abort();
        await new Promise((resolve) => setImmediate(resolve));
      },
    });
    expect(first.stopReason).toBe('cancelled');
    expect(names.map((name) => first.hosts[name]!.status)).toEqual(['done', 'done', 'skipped', 'skipped']);

    const ran: string[] = [];
    const resumed = await runRollout({
      state: resumeRunState(JSON.parse(JSON.stringify(first)) as RunState),
      concurrency: 2,
      task: async (host) => {
        ran.push(host);
      },
    });
    expect(ran.sort()).toEqual(['h3', 'h4']);
    expect(Object.values(resumed.hosts).every((host) => host.status === 'done')).toBe(true);
    expect(resumed.stopReason).toBeUndefined();
  });

  it('on resume retries failed hosts and keeps counting their attempts', async () => {
    const { state } = await rollout({ state: stateFor(['a', 'b']), concurrency: 2, failing: new Set(['b']) });
    expect(state.hosts.b).toMatchObject({ status: 'failed', attempts: 1 });
    const ran: string[] = [];
    const resumed = await runRollout({
      state: resumeRunState(state),
      concurrency: 2,
      task: async (host) => {
        ran.push(host);
      },
    });
    expect(ran).toEqual(['b']);
    expect(resumed.hosts.b).toMatchObject({ status: 'done', attempts: 2 });
    expect(resumed.hosts.a).toMatchObject({ status: 'done', attempts: 1 });
  });
});

describe('a rollout over part of the state (one stage of a run)', () => {
  it('runs only its hosts, counts the budget and the waves over them, and stops with the reason given', async () => {
    const state = stateFor(['cp2', 'cp3', 'cp4', 'n1', 'n2']);
    const { started, events } = await rollout({
      state,
      hosts: ['cp2', 'cp3', 'cp4'],
      concurrency: 1,
      firstWave: 2,
      maxFailures: { count: 0 },
      budgetStop: { reason: 'control-plane-failed', message: 'not started: an earlier control plane did not join' },
      failing: new Set(['cp3']),
    });
    expect(started).toEqual(['cp2', 'cp3']);
    expect(events[0]).toEqual({ type: 'wave', wave: 2, hosts: ['cp2', 'cp3', 'cp4'] });
    expect(state.stopReason).toBe('control-plane-failed');
    expect(state.hosts.cp4).toMatchObject({
      status: 'skipped',
      error: { code: 'E_FLEET_NOT_STARTED', message: 'not started: an earlier control plane did not join' },
    });
    expect(events.at(-1)).toEqual({ type: 'stopped', reason: 'control-plane-failed', skipped: ['cp4'] });
    // The other stage's hosts are not this rollout's: untouched.
    expect([state.hosts.n1!.status, state.hosts.n2!.status]).toEqual(['pending', 'pending']);
  });
});
