/**
 * The simulated eviction subresource refuses what kube-apiserver's eviction
 * handler refuses (pkg/registry/core/pod/storage/eviction.go): a Pod its
 * PodDisruptionBudget protects (429 with the budget's cause), a body whose
 * name is not the Pod's, a Pod under two budgets; and evicts what it
 * evicts: an unprotected Pod, a Pod its budget can spare, a finished Pod
 * whatever its budget says.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSimApiServer, type SimApiServer } from '../../support/sim-apiserver/index.js';
import { call } from './http-client.js';

let server: SimApiServer;

beforeAll(async () => {
  server = await startSimApiServer();
});

afterAll(async () => {
  await server.stop();
});

function pod(name: string, labels: Record<string, string>, status?: Record<string, unknown>): void {
  server.setObject({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels },
    spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'registry.example/app:1' }] },
    ...(status === undefined ? {} : { status }),
  } as never);
}

function budget(name: string, spec: Record<string, unknown>): void {
  server.setObject({
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name, namespace: 'default' },
    spec,
  } as never);
}

function evict(name: string, bodyName = name): ReturnType<typeof call> {
  return call(server, {
    method: 'POST',
    path: `/api/v1/namespaces/default/pods/${name}/eviction`,
    body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: bodyName, namespace: 'default' } },
  });
}

const exists = (name: string): boolean =>
  server.getObject({ apiVersion: 'v1', kind: 'Pod', namespace: 'default', name }) !== undefined;

beforeEach(() => {
  for (const name of ['a', 'b', 'c', 'done'])
    server.deleteObject({ apiVersion: 'v1', kind: 'Pod', namespace: 'default', name });
  for (const name of ['one', 'two'])
    server.deleteObject({ apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', namespace: 'default', name });
});

describe('the eviction subresource (simulated)', () => {
  it('evicts a Pod no budget selects: 201 Success, and the Pod is gone', async () => {
    pod('a', { app: 'web' });
    const res = await evict('a');
    expect(res.status).toBe(201);
    expect(res.json).toMatchObject({ kind: 'Status', status: 'Success' });
    expect(exists('a')).toBe(false);
  });

  it('refuses with 429 when the budget allows no disruption, naming the budget, and keeps the Pod', async () => {
    pod('a', { app: 'web' });
    pod('b', { app: 'web' });
    budget('one', { minAvailable: 2, selector: { matchLabels: { app: 'web' } } });
    const res = await evict('a');
    expect(res.status).toBe(429);
    expect(res.json).toMatchObject({
      reason: 'TooManyRequests',
      message: "Cannot evict pod as it would violate the pod's disruption budget.",
      details: {
        causes: [
          { reason: 'DisruptionTarget', message: 'The disruption budget one needs 2 healthy pods and has 2 currently' },
        ],
      },
    });
    expect(exists('a')).toBe(true);
  });

  it('evicts while the budget can spare a Pod, then refuses the next (maxUnavailable 1)', async () => {
    for (const name of ['a', 'b', 'c']) pod(name, { app: 'web' });
    budget('one', {
      maxUnavailable: 1,
      selector: { matchExpressions: [{ key: 'app', operator: 'In', values: ['web'] }] },
    });
    expect((await evict('a')).status).toBe(201);
    // Two Pods left, both needed now that the budget counts the Pods it selects.
    expect((await evict('b')).status).toBe(429);
  });

  it('deletes a finished Pod without asking its budget', async () => {
    pod('done', { app: 'web' }, { phase: 'Succeeded' });
    budget('one', { minAvailable: 5, selector: { matchLabels: { app: 'web' } } });
    expect((await evict('done')).status).toBe(201);
    expect(exists('done')).toBe(false);
  });

  it('ignores a budget with an empty selector, and refuses a Pod under two budgets with a 500', async () => {
    pod('a', { app: 'web' });
    budget('one', { minAvailable: 1, selector: {} });
    expect((await evict('a')).status).toBe(201);
    pod('b', { app: 'web' });
    budget('one', { minAvailable: 0, selector: { matchLabels: { app: 'web' } } });
    budget('two', { minAvailable: 0, selector: { matchLabels: { app: 'web' } } });
    const res = await evict('b');
    expect(res.status).toBe(500);
    expect(res.json.message).toContain('more than one PodDisruptionBudget');
    expect(exists('b')).toBe(true);
  });

  it('refuses a body naming another Pod (400), and a missing Pod is 404', async () => {
    pod('a', { app: 'web' });
    expect((await evict('a', 'b')).status).toBe(400);
    expect((await evict('nope')).status).toBe(404);
    expect(exists('a')).toBe(true);
  });

  it('cordons: spec.unschedulable set by a merge patch is kept', async () => {
    server.setObject({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' } } as never);
    const res = await call(server, {
      method: 'PATCH',
      path: '/api/v1/nodes/n1',
      contentType: 'application/merge-patch+json',
      body: { spec: { unschedulable: true } },
    });
    expect(res.status).toBe(200);
    expect(res.json.spec.unschedulable).toBe(true);
  });
});
