/**
 * Every write on a cluster as the user whose action caused it (issue #30,
 * finding 1), end to end: `hub serve`, a real agent, and an edge cluster
 * whose API server (the SIMULATED one, which enforces RBAC and records each
 * request's impersonated user) lets alice only read ConfigMaps. Alice can
 * see the admin's rollout but not delete it, and the admin's objects stay;
 * when a rollout is deleted, the agent removes its objects as the user who
 * deleted it, whoever owned it.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadHubConfig } from '../../../src/hub/contract/hub-config.js';
import { HUB_ADMIN_USER } from '../../../src/hub/identity/authenticate.js';
import type { RolloutStatusView } from '../../../src/rollout/api.js';
import { runCli } from '../../support/cli.js';
import type { KubeObject } from '../../support/sim-apiserver/store.js';
import {
  createHubToken,
  hubRequest,
  registerAndRun,
  startEdgeCluster,
  startHubProcess,
  waitFor,
  type EdgeCluster,
  type HubProcess,
} from './hub-fixture.js';

let hub: HubProcess;
let edge: EdgeCluster;
let adminToken: string;
let aliceToken: string;

function binding(
  name: string,
  user: string,
  roleRef: { kind: 'Role' | 'ClusterRole'; name: string },
  namespace?: string,
): KubeObject {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: namespace === undefined ? 'ClusterRoleBinding' : 'RoleBinding',
    metadata: { name, ...(namespace === undefined ? {} : { namespace }) },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', ...roleRef },
    subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: user }],
  };
}

beforeAll(async () => {
  hub = await startHubProcess();
  edge = await startEdgeCluster('dev1');
  edge.api.setObject(binding('hub-admin', HUB_ADMIN_USER, { kind: 'ClusterRole', name: 'cluster-admin' }));
  // Alice may read ConfigMaps in default, and write them only in her own namespace.
  edge.api.setObject({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: 'configmap-reader', namespace: 'default' },
    rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
  });
  edge.api.setObject(binding('alice-reads', 'alice', { kind: 'Role', name: 'configmap-reader' }, 'default'));
  edge.api.setObject({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'alice' } });
  edge.api.setObject(binding('alice-edits', 'alice', { kind: 'ClusterRole', name: 'edit' }, 'alice'));
  edge.api.setObject({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'edit' },
    rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }],
  });
  adminToken = loadHubConfig(hub.adminConfig).token;
  await registerAndRun({ hub, token: await createHubToken(hub), cluster: edge, labels: 'env=dev' });
  const aliceConfig = join(mkdtempSync(join(tmpdir(), 'alice-')), 'alice.yaml');
  const created = await runCli([
    'hub',
    'user',
    'create',
    'alice',
    '--clusters-selector',
    'env=dev',
    '--output',
    aliceConfig,
    '--hub-config',
    hub.adminConfig,
  ]);
  expect(created.exitCode, created.stderr).toBe(0);
  aliceToken = loadHubConfig(aliceConfig).token;
}, 120_000);

afterAll(async () => {
  await edge?.agent?.stop();
  await hub?.stop();
  await edge?.api.stop();
});

function rolloutBody(name: string, namespace: string): string {
  return JSON.stringify({
    apiVersion: 'edgeadm.io/v1alpha1',
    kind: 'Rollout',
    metadata: { name },
    spec: {
      resources: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data: { owner: name } }],
      placement: { clusterSelector: 'env=dev' },
      strategy: { waves: ['100%'], soakSeconds: 0 },
    },
  });
}

async function applyAndWait(name: string, namespace: string, token: string): Promise<void> {
  const applied = await hubRequest({
    hub,
    path: `/hub/v1/rollouts/${name}`,
    method: 'PUT',
    token,
    body: rolloutBody(name, namespace),
  });
  expect(applied.status, applied.body).toBe(201);
  await waitFor(`rollout ${name} to complete`, async () => {
    const answer = await hubRequest({ hub, path: `/hub/v1/rollouts/${name}`, token });
    const view = JSON.parse(answer.body) as RolloutStatusView;
    if (view.state === 'halted') throw new Error(`rollout ${name} halted: ${answer.body}`);
    return view.state === 'complete' ? view : undefined;
  });
}

function configMap(name: string, namespace: string) {
  return edge.api.getObject({ apiVersion: 'v1', kind: 'ConfigMap', namespace, name });
}

/** The DELETE requests for a ConfigMap that reached the cluster, as whom. */
function deletesOf(name: string): (string | undefined)[] {
  return edge.api.requests
    .filter((request) => request.verb === 'delete' && request.resource === 'configmaps' && request.name === name)
    .map((request) => request.impersonatedUser);
}

describe('rollouts write as the user who caused the write', { timeout: 240_000 }, () => {
  it("refuses alice the deletion of the admin's rollout she can see, and the admin's ConfigMap stays", async () => {
    await applyAndWait('web', 'default', adminToken);
    expect(configMap('web', 'default')).toBeDefined();
    expect((await hubRequest({ hub, path: '/hub/v1/rollouts/web', token: aliceToken })).status).toBe(200);
    const refused = await hubRequest({ hub, path: '/hub/v1/rollouts/web', method: 'DELETE', token: aliceToken });
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body)).toMatchObject({ code: 'E_ROLLOUT_NOT_OWNER' });
    expect(configMap('web', 'default')).toBeDefined();
    expect(deletesOf('web')).toEqual([]);
  });

  it('removes a rollout as whoever deleted it: alice her own, the admin the one of alice it deletes', async () => {
    await applyAndWait('mine', 'alice', aliceToken);
    await applyAndWait('hers', 'alice', aliceToken);
    expect(configMap('mine', 'alice')).toBeDefined();
    const own = await hubRequest({ hub, path: '/hub/v1/rollouts/mine', method: 'DELETE', token: aliceToken });
    expect(JSON.parse(own.body)).toMatchObject({ removed: ['dev1'] });
    const byAdmin = await hubRequest({ hub, path: '/hub/v1/rollouts/hers', method: 'DELETE', token: adminToken });
    expect(JSON.parse(byAdmin.body)).toMatchObject({ removed: ['dev1'] });
    await waitFor('both ConfigMaps to be removed', () =>
      configMap('mine', 'alice') === undefined && configMap('hers', 'alice') === undefined ? true : undefined,
    );
    expect(deletesOf('mine')).toEqual(['alice']);
    expect(deletesOf('hers')).toEqual([HUB_ADMIN_USER]);
  });
});
