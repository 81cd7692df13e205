/**
 * The simulated node lifecycle (test/support/sim-apiserver/node-lifecycle.ts,
 * not kube-controller-manager) on a fake clock: a node that stops
 * heartbeating becomes Unknown after the grace period and is tainted
 * unreachable:NoExecute; its pods are evicted after their tolerationSeconds
 * (the DefaultTolerationSeconds admission gives pods without one 300 s),
 * and not before; a pod tolerating for ever stays; a toleration raised
 * after the eviction was scheduled does not postpone it (upstream's
 * taint eviction keeps the first schedule); a heartbeat removes the taint
 * and cancels what was scheduled; the API refuses a toleration change
 * other than its seconds. Each rule names its Kubernetes source in the
 * module.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KubeApiError, KubeClient } from '../../../src/kube/client.js';
import { startSimApiServer, type KubeObject, type SimApiServer } from '../../support/sim-apiserver/index.js';
import {
  DEFAULT_NODE_MONITOR_GRACE_PERIOD_MS,
  DEFAULT_NODE_MONITOR_PERIOD_MS,
  type SimClock,
} from '../../support/sim-apiserver/node-lifecycle.js';

/** A clock that moves only when told, firing due timers in order. */
class FakeClock implements SimClock {
  #now = Date.parse('2026-01-01T00:00:00Z');
  #timers: Array<{ at: number; run: () => void; seq: number }> = [];
  #seq = 0;
  now(): number {
    return this.#now;
  }
  setTimer(run: () => void, ms: number): () => void {
    const timer = { at: this.#now + ms, run, seq: this.#seq++ };
    this.#timers.push(timer);
    return () => {
      this.#timers = this.#timers.filter((t) => t !== timer);
    };
  }
  /** Moves time on by `ms`, running every timer due on the way. */
  advance(ms: number): void {
    const end = this.#now + ms;
    for (;;) {
      this.#timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.#timers[0];
      if (next === undefined || next.at > end) break;
      this.#timers.shift();
      this.#now = next.at;
      next.run();
    }
    this.#now = end;
  }
}

const SECOND = 1_000;
let clock: FakeClock;
let server: SimApiServer;
let client: KubeClient;

function heartbeat(name: string): void {
  const at = new Date(clock.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const node = server.getObject({ apiVersion: 'v1', kind: 'Node', name }) ?? {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name },
  };
  server.setObject({
    ...node,
    status: {
      conditions: [{ type: 'Ready', status: 'True', lastHeartbeatTime: at, lastTransitionTime: at }],
    },
  });
}

function node(name: string): KubeObject {
  return server.getObject({ apiVersion: 'v1', kind: 'Node', name })!;
}

function pod(name: string): KubeObject | undefined {
  return server.getObject({ apiVersion: 'v1', kind: 'Pod', namespace: 'default', name });
}

async function createPod(name: string, nodeName: string, tolerations?: unknown[]): Promise<KubeObject> {
  return client.create('/api/v1/namespaces/default/pods', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: { nodeName, containers: [{ name: 'main', image: 'app' }], ...(tolerations ? { tolerations } : {}) },
  });
}

function taintsOf(name: string): Array<{ key: string; effect: string; timeAdded?: string }> {
  return ((node(name)['spec'] as { taints?: [] } | undefined)?.taints ?? []) as [];
}

function readyOf(name: string): string | undefined {
  const conditions = (node(name)['status'] as { conditions?: Array<{ type: string; status: string }> }).conditions;
  return conditions?.find((c) => c.type === 'Ready')?.status;
}

/** Keeps `names` heartbeating every 10 s while `ms` pass. */
function passWithHeartbeats(ms: number, names: string[]): void {
  for (let left = ms; left > 0; left -= 10 * SECOND) {
    clock.advance(Math.min(10 * SECOND, left));
    for (const name of names) heartbeat(name);
  }
}

beforeEach(async () => {
  clock = new FakeClock();
  server = await startSimApiServer({ nodeLifecycle: { clock } });
  client = new KubeClient({ server: server.url, caPem: server.caPem, token: server.adminToken, contextName: 'sim' });
  heartbeat('cut');
  heartbeat('alive');
});

afterEach(async () => {
  await server.stop();
});

describe('simulated node lifecycle', () => {
  it('gives pods without tolerations the DefaultTolerationSeconds ones, and leaves a pod that has its own', async () => {
    const plain = await createPod('plain', 'cut');
    expect((plain['spec'] as { tolerations: unknown[] }).tolerations).toEqual([
      { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
    ]);
    const everything = await createPod('everything', 'cut', [{ operator: 'Exists' }]);
    expect((everything['spec'] as { tolerations: unknown[] }).tolerations).toEqual([{ operator: 'Exists' }]);
  });

  it('marks a silent node Unknown after the grace period, taints it, and evicts its pods after their 300 s, not before', async () => {
    await createPod('web', 'cut');
    await createPod('forever', 'cut', [
      { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' },
    ]);
    await createPod('other', 'alive');
    passWithHeartbeats(DEFAULT_NODE_MONITOR_GRACE_PERIOD_MS - 10 * SECOND, ['alive']);
    expect(readyOf('cut')).toBe('True');
    expect(taintsOf('cut')).toEqual([]);
    passWithHeartbeats(20 * SECOND + 2 * DEFAULT_NODE_MONITOR_PERIOD_MS, ['alive']);
    expect(readyOf('cut')).toBe('Unknown');
    const noExecute = taintsOf('cut').find((t) => t.effect === 'NoExecute');
    expect(noExecute?.key).toBe('node.kubernetes.io/unreachable');
    expect(taintsOf('cut').map((t) => `${t.key}:${t.effect}`)).toContain('node.kubernetes.io/unreachable:NoSchedule');
    // MarkPodsNotReady: the cut-off node's pods are no longer Ready (their endpoints go).
    const ready = (pod('web')!['status'] as { conditions: Array<{ type: string; status: string }> }).conditions;
    expect(ready.find((c) => c.type === 'Ready')?.status).toBe('False');
    const taintedAt = Date.parse(noExecute!.timeAdded!);
    passWithHeartbeats(taintedAt + 299 * SECOND - clock.now(), ['alive']);
    expect(pod('web')).toBeDefined();
    passWithHeartbeats(2 * SECOND, ['alive']);
    expect(pod('web')).toBeUndefined();
    expect(pod('forever')).toBeDefined();
    expect(pod('other')).toBeDefined();
    expect(taintsOf('alive')).toEqual([]);
  });

  it('keeps an eviction scheduled before the toleration was raised', async () => {
    await createPod('late', 'cut');
    passWithHeartbeats(DEFAULT_NODE_MONITOR_GRACE_PERIOD_MS + 3 * DEFAULT_NODE_MONITOR_PERIOD_MS, ['alive']);
    expect(taintsOf('cut').some((t) => t.effect === 'NoExecute')).toBe(true);
    passWithHeartbeats(10 * SECOND, ['alive']);
    // Raising tolerationSeconds now does not postpone the eviction already scheduled.
    const late = pod('late')!;
    const tolerations = (late['spec'] as { tolerations: Array<{ tolerationSeconds?: number }> }).tolerations.map(
      (t) => ({ ...t, tolerationSeconds: 86_400 }),
    );
    await client.mergePatch('/api/v1/namespaces/default/pods/late', { spec: { tolerations } });
    passWithHeartbeats(301 * SECOND, ['alive']);
    expect(pod('late')).toBeUndefined();
  });

  it('removes the taint and cancels the evictions when the node heartbeats again within the window', async () => {
    await createPod('stays', 'cut');
    passWithHeartbeats(DEFAULT_NODE_MONITOR_GRACE_PERIOD_MS + 3 * DEFAULT_NODE_MONITOR_PERIOD_MS, ['alive']);
    expect(taintsOf('cut').some((t) => t.effect === 'NoExecute')).toBe(true);
    passWithHeartbeats(100 * SECOND, ['alive']);
    heartbeat('cut');
    passWithHeartbeats(400 * SECOND, ['alive', 'cut']);
    expect(taintsOf('cut')).toEqual([]);
    expect(pod('stays')).toBeDefined();
  });

  it('stops tainting when no node at all is Ready (master disruption mode)', async () => {
    await createPod('lonely', 'cut');
    clock.advance(DEFAULT_NODE_MONITOR_GRACE_PERIOD_MS + 400 * SECOND);
    expect(readyOf('cut')).toBe('Unknown');
    expect(readyOf('alive')).toBe('Unknown');
    expect(taintsOf('cut').filter((t) => t.effect === 'NoExecute')).toEqual([]);
    expect(pod('lonely')).toBeDefined();
  });

  it('refuses a pod update that changes a toleration other than by its seconds, as the API server does', async () => {
    await createPod('strict', 'cut', [{ key: 'dedicated', operator: 'Equal', value: 'a', effect: 'NoSchedule' }]);
    const tolerations = (pod('strict')!['spec'] as { tolerations: unknown[] }).tolerations;
    // Seconds may change: the unreachable toleration to a day.
    await client.mergePatch('/api/v1/namespaces/default/pods/strict', {
      spec: {
        tolerations: tolerations.map((t) =>
          (t as { key: string }).key === 'node.kubernetes.io/unreachable'
            ? { ...(t as object), tolerationSeconds: 86_400 }
            : t,
        ),
      },
    });
    const error = await client
      .mergePatch('/api/v1/namespaces/default/pods/strict', {
        spec: {
          tolerations: tolerations.map((t) =>
            (t as { key: string }).key === 'dedicated' ? { ...(t as object), value: 'b' } : t,
          ),
        },
      })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(KubeApiError);
    expect((error as KubeApiError).status).toBe(422);
    expect((error as Error).message).toContain('existing toleration can not be modified except its tolerationSeconds');
  });

  it('leaves a node that has not posted status yet alone until its startup grace period ends', async () => {
    server.setObject({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'new' } });
    await createPod('early', 'new');
    passWithHeartbeats(55 * SECOND, ['alive', 'cut']);
    expect(taintsOf('new')).toEqual([]);
    expect(pod('early')).toBeDefined();
    passWithHeartbeats(15 * SECOND, ['alive', 'cut']);
    expect(readyOf('new')).toBe('Unknown');
    expect(taintsOf('new').map((t) => `${t.key}:${t.effect}`)).toContain('node.kubernetes.io/unreachable:NoExecute');
  });
});
