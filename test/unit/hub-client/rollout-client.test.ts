/**
 * The hub client's rollout, hold and property calls against a FAKE of the
 * operator API (test/support/fake-operator-api.ts: real HTTPS with a test
 * CA on 127.0.0.1, the contract's routes). The real hub's side is tested in
 * the hub's own suites and in test/integration/hub/rollout-example.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EdgeadmError } from '../../../src/errors.js';
import { callHub, HubClient, type RolloutDocument } from '../../../src/hub-client/hub-client.js';
import { WATCH_RECONNECT_DELAY_MS, WATCH_RECONNECT_WINDOW_MS } from '../../../src/hub-client/limits.js';
import type { RolloutStatusView } from '../../../src/rollout/api.js';
import { startFakeOperatorApi, zeroCounts, type FakeOperatorApi } from '../../support/fake-operator-api.js';

function document(name: string, data: Record<string, string> = { site: '${cluster.name}' }): RolloutDocument {
  return {
    apiVersion: 'edgeadm.io/v1alpha1',
    kind: 'Rollout',
    metadata: { name },
    spec: {
      placement: { clusterSelector: 'env=prod' },
      resources: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'site', namespace: 'shop' }, data }],
    },
  };
}

let fake: FakeOperatorApi;
let client: HubClient;

beforeAll(async () => {
  fake = await startFakeOperatorApi({ longPollMs: 50 });
  client = new HubClient(fake.hubConfig);
});
afterAll(() => fake.close());

describe('the hub client for rollouts', () => {
  it('applies a document under its name: created, unchanged, then a new revision', async () => {
    expect(await client.applyRollout(document('apply-me'))).toMatchObject({ revision: 1, isCreated: true });
    expect(await client.applyRollout(document('apply-me'))).toMatchObject({ revision: 1, isUnchanged: true });
    expect(await client.applyRollout(document('apply-me', { site: 'x' }))).toMatchObject({
      revision: 2,
      isUnchanged: false,
    });
    expect(fake.requests.filter((r) => r.method === 'PUT').map((r) => r.path)).toContain('/hub/v1/rollouts/apply-me');
  });

  it('asks for a dry run with ?dryRun=true and stores nothing', async () => {
    const result = await client.applyRollout(document('dry'), { dryRun: true });
    expect(result.dryRun?.waves).toEqual(fake.dryRunPlan.waves);
    expect(fake.rollouts.has('dry')).toBe(false);
    expect(fake.requests.at(-1)?.path).toBe('/hub/v1/rollouts/dry?dryRun=true');
  });

  it('sends a Rollout of more than 10 MiB', async () => {
    const big = 'x'.repeat(11 * 1024 * 1024);
    await client.applyRollout(document('big', { big }));
    expect(fake.requests.at(-1)?.bodyBytes).toBeGreaterThan(11 * 1024 * 1024);
    expect((await client.getRolloutDocument('big')).document.spec['resources']).toHaveLength(1);
  });

  it('turns a refusal into a typed error with the hub code', async () => {
    const refused = await new HubClient({ ...fake.hubConfig, token: 'edgeadm-hub-wrong' })
      .listRollouts()
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(EdgeadmError);
    expect((refused as EdgeadmError).code).toBe('E_HUB_UNAUTHORIZED');
    const missing = await client.rolloutStatus('nope').catch((e: unknown) => e);
    expect((missing as EdgeadmError).code).toBe('E_ROLLOUT_NOT_FOUND');
  });

  it('pauses, resumes, aborts, undoes, deletes, lists and asks for the per-cluster rows', async () => {
    await client.applyRollout(document('ops'));
    await client.applyRollout(document('ops', { site: 'v2' }));
    expect((await client.pauseRollout('ops')).state).toBe('paused');
    expect((await client.resumeRollout('ops')).state).toBe('progressing');
    expect((await client.undoRollout('ops')).revision).toBe(3);
    expect((await client.getRolloutDocument('ops')).document).toEqual(document('ops'));
    expect((await client.abortRollout('ops')).state).toBe('aborted');
    expect((await client.listRollouts()).map((r) => r.name)).toContain('ops');
    fake.setStatus('ops', { clusters: [{ cluster: 'store-1', wave: 0, phase: 'ready' }] });
    expect((await client.rolloutStatus('ops')).clusters).toBeUndefined();
    expect((await client.rolloutStatus('ops', { clusters: true })).clusters).toHaveLength(1);
    expect(await client.deleteRollout('ops')).toEqual({
      name: 'ops',
      removed: ['store-1'],
      pendingRemovals: ['store-2'],
    });
    expect(fake.rollouts.has('ops')).toBe(false);
  });

  it('holds, releases and sets properties on a cluster', async () => {
    expect((await client.holdCluster('store-7', 'opening hours')).hold?.reason).toBe('opening hours');
    expect(fake.holds.get('store-7')?.reason).toBe('opening hours');
    await client.releaseCluster('store-7');
    expect(fake.holds.has('store-7')).toBe(false);
    await client.setClusterProperties('store-7', { tag: '1.4.3' });
    expect(fake.properties.get('store-7')).toEqual({ tag: '1.4.3' });
  });
});

describe('watching a rollout', () => {
  it('yields the current view, then each change (not the unchanged long-poll answers), and ends when it completes', async () => {
    await client.applyRollout(document('watched'));
    const watch = client.watchRollout('watched');
    const first = await watch.next();
    expect(first.value).toMatchObject({ state: 'progressing', statusVersion: 1 });
    let isSecondSettled = false;
    const second = watch.next().finally(() => (isSecondSettled = true));
    // Let the long poll run out unchanged at least twice before anything changes (a watch that
    // yielded those unchanged answers settles `second` early, and the assertion below names it).
    while (!isSecondSettled && fake.requests.filter((r) => r.path.includes('watched?waitForChangeFrom=1')).length < 3) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    fake.setStatus('watched', { counts: { ...zeroCounts(), ready: 1 } });
    expect((await second).value).toMatchObject({ statusVersion: 2, counts: { ready: 1 } });
    fake.setStatus('watched', { state: 'complete' });
    expect((await watch.next()).value).toMatchObject({ state: 'complete' });
    expect((await watch.next()).done).toBe(true);
  });

  it('ends after a halted or aborted view', async () => {
    for (const state of ['halted', 'aborted'] as const) {
      const name = `watch-${state}`;
      await client.applyRollout(document(name));
      const seen: RolloutStatusView[] = [];
      const watch = (async () => {
        for await (const view of client.watchRollout(name, { clusters: true })) {
          seen.push(view);
          if (seen.length === 1) fake.setStatus(name, { state });
        }
      })();
      await watch;
      expect(seen.map((view) => view.state)).toEqual(['progressing', state]);
      expect(fake.requests.some((r) => r.path === `/hub/v1/rollouts/${name}?waitForChangeFrom=1&clusters=true`)).toBe(
        true,
      );
    }
  });

  it('ends at once when its signal aborts, dropping the pending long poll', async () => {
    await client.applyRollout(document('stopped'));
    const stop = new AbortController();
    const watch = client.watchRollout('stopped', { signal: stop.signal });
    expect((await watch.next()).value).toMatchObject({ statusVersion: 1 });
    const pending = watch.next();
    while (!fake.requests.some((r) => r.path === '/hub/v1/rollouts/stopped?waitForChangeFrom=1')) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    stop.abort();
    // A long poll still open would now answer with this change and the watch would yield it.
    fake.setStatus('stopped', { state: 'paused' });
    expect(await pending).toEqual({ done: true, value: undefined });
  });

  it('reconnects to a hub that went away and came back, and gives up after its window', async () => {
    await client.applyRollout(document('restart'));
    const watch = client.watchRollout('restart', {
      sleep: async () => {
        await fake.listenAgain();
      },
    });
    expect((await watch.next()).value).toMatchObject({ state: 'progressing' });
    await fake.stopListening();
    fake.setStatus('restart', { state: 'complete' });
    expect((await watch.next()).value).toMatchObject({ state: 'complete' });

    // Nothing ever answers: the watch tries for its window on the injected clock, then fails.
    let clock = 0;
    const sleeps: number[] = [];
    await fake.stopListening();
    const gone = client.watchRollout('restart', {
      now: () => clock,
      sleep: (ms) => {
        sleeps.push(ms);
        clock += ms;
        return Promise.resolve();
      },
    });
    const error = await gone.next().catch((e: unknown) => e);
    await fake.listenAgain();
    expect((error as EdgeadmError).code).toBe('E_HUB_UNREACHABLE');
    expect(sleeps.length).toBe(WATCH_RECONNECT_WINDOW_MS / WATCH_RECONNECT_DELAY_MS);
  });
});

describe('one hub call', () => {
  it('gives up on a silent hub after the timeout the call asks for (the watch asks for more than the long poll)', async () => {
    // The fake answers the long poll after 5 s: a call that ignored its 100 ms timeout would succeed then.
    const silent = await startFakeOperatorApi({ longPollMs: 5_000 });
    try {
      await new HubClient(silent.hubConfig).applyRollout(document('quiet'));
      const error = await callHub({
        server: silent.url,
        caPem: silent.caPem,
        token: silent.hubConfig.token,
        method: 'GET',
        path: '/hub/v1/rollouts/quiet?waitForChangeFrom=1',
        timeoutMs: 100,
      }).catch((e: unknown) => e);
      expect((error as EdgeadmError).code).toBe('E_HUB_UNREACHABLE');
      expect((error as EdgeadmError).message).toContain('did not answer in time');
    } finally {
      await silent.close();
    }
  });

  it('refuses an answer larger than its bound with a code of its own', async () => {
    const big = 'x'.repeat(2 * 1024 * 1024);
    await client.applyRollout(document('large-answer', { big }));
    const error = await callHub({
      server: fake.url,
      caPem: fake.caPem,
      token: fake.hubConfig.token,
      method: 'GET',
      path: '/hub/v1/rollouts/large-answer/document',
      maxResponseBytes: 1024 * 1024,
    }).catch((e: unknown) => e);
    expect((error as EdgeadmError).code).toBe('E_HUB_ANSWER_TOO_LARGE');
  });
});
