/**
 * `upgrade node`'s drain (src/cluster/upgrade/drain.ts) against the
 * SIMULATED API server (test/support/sim-apiserver, not kube-apiserver),
 * whose eviction subresource holds PodDisruptionBudgets as kube-apiserver
 * does: kubectl drain's rules for which Pods go, a budget's refusal stopping
 * the drain at its deadline (time injected, no waiting), and --force.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { classifyPod, cordonNode, drainNode, uncordonNode, type DrainPod } from '../../../src/cluster/upgrade/drain.js';
import { KubeClient } from '../../../src/kube/client.js';
import { startSimApiServer, type SimApiServer } from '../../support/sim-apiserver/index.js';

let server: SimApiServer;
let client: KubeClient;

beforeAll(async () => {
  server = await startSimApiServer();
  client = new KubeClient({ server: server.url, caPem: server.caPem, token: server.adminToken, contextName: 'sim' });
});

afterAll(async () => {
  await server.stop();
});

const owner = (kind: string, name: string, apiVersion = 'apps/v1') => [
  { apiVersion, kind, name, controller: true, uid: name },
];

function pod(
  name: string,
  extra: {
    labels?: Record<string, string>;
    owners?: unknown[];
    annotations?: Record<string, string>;
    emptyDir?: boolean;
    node?: string;
  },
): void {
  server.setObject({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'default',
      labels: extra.labels ?? {},
      ...(extra.owners ? { ownerReferences: extra.owners } : {}),
      ...(extra.annotations ? { annotations: extra.annotations } : {}),
    },
    spec: {
      nodeName: extra.node ?? 'n1',
      containers: [{ name: 'c', image: 'registry.example/app:1' }],
      ...(extra.emptyDir ? { volumes: [{ name: 'scratch', emptyDir: {} }] } : {}),
    },
  } as never);
}

const podsOn = async (node: string): Promise<string[]> =>
  (await client.list<DrainPod>('/api/v1/pods', { fieldSelector: `spec.nodeName=${node}` }))
    .map((p) => p.metadata.name)
    .sort();

/** A clock that a sleep moves on, so deadlines pass without waiting. */
function fakeTime(): { now: () => number; sleep: (ms: number) => Promise<void>; slept: number[] } {
  let time = 0;
  const slept: number[] = [];
  return {
    now: () => time,
    sleep: async (ms) => {
      slept.push(ms);
      time += ms;
    },
    slept,
  };
}

beforeEach(async () => {
  for (const p of await client.list<DrainPod>('/api/v1/pods')) {
    server.deleteObject({
      apiVersion: 'v1',
      kind: 'Pod',
      namespace: p.metadata.namespace ?? 'default',
      name: p.metadata.name,
    });
  }
  server.deleteObject({ apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', namespace: 'default', name: 'web' });
  server.setObject({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' } } as never);
});

describe('drain (against the simulated API server)', () => {
  it('evicts replicated Pods, leaves DaemonSet and static Pods, and touches no other node', async () => {
    server.setObject({
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'agent', namespace: 'default' },
      spec: {
        selector: { matchLabels: { a: 'b' } },
        template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'x' }] } },
      },
    } as never);
    pod('web-1', { owners: owner('ReplicaSet', 'web-abc') });
    pod('agent-1', { owners: owner('DaemonSet', 'agent') });
    pod('static-1', { annotations: { 'kubernetes.io/config.mirror': 'hash' }, owners: owner('Node', 'n1', 'v1') });
    pod('web-2', { owners: owner('ReplicaSet', 'web-abc'), node: 'n2' });
    const result = await drainNode({
      client,
      nodeName: 'n1',
      isForced: false,
      timeoutMs: 10_000,
      onLine: () => undefined,
    });
    expect(result.evicted).toEqual(['default/web-1']);
    expect(result.skipped.sort()).toEqual(['default/agent-1', 'default/static-1']);
    expect(await podsOn('n1')).toEqual(['agent-1', 'static-1']);
    expect(await podsOn('n2')).toEqual(['web-2']);
  });

  it('refuses a bare Pod before evicting anything (E_DRAIN_REFUSED), and --force evicts it', async () => {
    pod('web-1', { owners: owner('ReplicaSet', 'web-abc') });
    pod('bare', {});
    await expect(
      drainNode({ client, nodeName: 'n1', isForced: false, timeoutMs: 10_000, onLine: () => undefined }),
    ).rejects.toMatchObject({
      code: 'E_DRAIN_REFUSED',
      message: expect.stringContaining('default/bare declares no controller'),
    });
    expect(await podsOn('n1')).toEqual(['bare', 'web-1']);
    const forced = await drainNode({
      client,
      nodeName: 'n1',
      isForced: true,
      timeoutMs: 10_000,
      onLine: () => undefined,
    });
    expect(forced.evicted.sort()).toEqual(['default/bare', 'default/web-1']);
    expect(await podsOn('n1')).toEqual([]);
  });

  it('stops at the deadline when a PodDisruptionBudget keeps refusing (E_DRAIN_DISRUPTION_BUDGET), asking every 5 s', async () => {
    pod('web-1', { labels: { app: 'web' }, owners: owner('ReplicaSet', 'web-abc') });
    pod('web-2', { labels: { app: 'web' }, owners: owner('ReplicaSet', 'web-abc'), node: 'n2' });
    server.setObject({
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: 'web', namespace: 'default' },
      spec: { minAvailable: 2, selector: { matchLabels: { app: 'web' } } },
    } as never);
    const time = fakeTime();
    await expect(
      drainNode({ client, nodeName: 'n1', isForced: false, timeoutMs: 20_000, onLine: () => undefined, ...time }),
    ).rejects.toMatchObject({
      code: 'E_DRAIN_DISRUPTION_BUDGET',
      message: expect.stringContaining('The disruption budget web needs 2 healthy pods and has 2 currently'),
    });
    // Asked at 0, 5, 10, 15 and 20 s; the next would be past the 20 s deadline.
    expect(time.slept).toEqual([5_000, 5_000, 5_000, 5_000]);
    expect(await podsOn('n1')).toEqual(['web-1']);
    const forced = await drainNode({
      client,
      nodeName: 'n1',
      isForced: true,
      timeoutMs: 20_000,
      onLine: () => undefined,
      ...fakeTime(),
    });
    expect(forced.deletedPastBudget).toEqual(['default/web-1']);
    expect(await podsOn('n1')).toEqual([]);
  });

  it('cordons (saying whether it already was) and uncordons', async () => {
    expect(await cordonNode(client, 'n1')).toBe(false);
    expect(await cordonNode(client, 'n1')).toBe(true);
    await uncordonNode(client, 'n1');
    const node = await client.get<{
      metadata: { name: string };
      spec?: { unschedulable?: boolean };
      apiVersion: string;
      kind: string;
    }>('/api/v1/nodes/n1');
    expect(node?.spec?.unschedulable).toBeUndefined();
  });
});

describe('classifyPod (kubectl drain rules)', () => {
  const arbitraryPod = fc.record({
    phase: fc.constantFrom('Running', 'Pending', 'Succeeded', 'Failed', undefined),
    controller: fc.constantFrom(undefined, 'ReplicaSet', 'DaemonSet', 'StatefulSet'),
    isMirror: fc.boolean(),
    hasEmptyDir: fc.boolean(),
    hasDaemonSet: fc.boolean(),
  });
  const build = (p: {
    phase: string | undefined;
    controller: string | undefined;
    isMirror: boolean;
    hasEmptyDir: boolean;
  }): DrainPod => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'p',
      ...(p.controller
        ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: p.controller, name: 'c', controller: true }] }
        : {}),
      ...(p.isMirror ? { annotations: { 'kubernetes.io/config.mirror': 'x' } } : {}),
    },
    spec: p.hasEmptyDir ? { volumes: [{ name: 'v', emptyDir: {} }] } : {},
    ...(p.phase ? { status: { phase: p.phase } } : {}),
  });

  it('never evicts, without --force, a running Pod that nothing would recreate or whose data would be lost', () => {
    fc.assert(
      fc.property(arbitraryPod, (p) => {
        const verdict = classifyPod(build(p), { isForced: false, hasDaemonSet: p.hasDaemonSet });
        const isFinished = p.phase === 'Succeeded' || p.phase === 'Failed';
        if (verdict.action === 'evict' && !isFinished) {
          expect(p.controller).toBeDefined();
          expect(p.hasEmptyDir).toBe(false);
          expect(p.controller === 'DaemonSet' || p.isMirror).toBe(false);
        }
      }),
    );
  });

  it('with --force refuses nothing, and still leaves running DaemonSet Pods whose DaemonSet exists', () => {
    fc.assert(
      fc.property(arbitraryPod, (p) => {
        const verdict = classifyPod(build(p), { isForced: true, hasDaemonSet: p.hasDaemonSet });
        expect(verdict.action).not.toBe('refuse');
        const isFinished = p.phase === 'Succeeded' || p.phase === 'Failed';
        if (p.controller === 'DaemonSet' && p.hasDaemonSet && !isFinished)
          expect(verdict).toEqual({ action: 'skip', why: 'daemonset' });
      }),
    );
  });
});
