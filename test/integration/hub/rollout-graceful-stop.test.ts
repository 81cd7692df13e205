/**
 * A wave that meets an agent's graceful stop (issue #30): the real agent
 * (`register-cloud --foreground`) is sent SIGTERM, as its systemd unit does,
 * and drains its tunnel for up to 10 s; a Rollout applied in that window
 * must leave the cluster offline-pending (never applying, never failed at
 * its deadline), and the agent started again must be sent the revision and
 * converge. States are read from the status view until they hold; no
 * assertion depends on how long anything took.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadHubConfig } from '../../../src/hub/contract/hub-config.js';
import { HUB_ADMIN_USER } from '../../../src/hub/identity/authenticate.js';
import type { RolloutStatusView } from '../../../src/rollout/api.js';
import {
  createHubToken,
  hubRequest,
  registerAndRun,
  startCli,
  startEdgeCluster,
  startHubProcess,
  waitFor,
  waitForState,
  type BackgroundCli,
  type EdgeCluster,
  type HubProcess,
} from './hub-fixture.js';

let hub: HubProcess;
let edge: EdgeCluster;
let restarted: BackgroundCli | undefined;

beforeAll(async () => {
  hub = await startHubProcess();
  edge = await startEdgeCluster('shop-1');
  // The cluster's RBAC lets the hub admin, whose rollout this is, write there.
  edge.api.setObject({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'hub-admin' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
    subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: HUB_ADMIN_USER }],
  });
  await registerAndRun({ hub, token: await createHubToken(hub), cluster: edge, labels: 'env=test' });
}, 120_000);

afterAll(async () => {
  await restarted?.stop();
  await edge?.agent?.stop();
  await hub?.stop();
  await edge?.api.stop();
});

async function clusterRow(token: string): Promise<{ phase: string; state: string }> {
  const answer = await hubRequest({ hub, path: '/hub/v1/rollouts/site?clusters=true', token });
  const view = JSON.parse(answer.body) as RolloutStatusView;
  return { phase: view.clusters?.[0]?.phase ?? 'none', state: view.state };
}

describe('rollouts: an agent stopped gracefully while a wave is due', { timeout: 240_000 }, () => {
  it('keeps the cluster offline-pending while the agent drains, and sends it the revision when it returns', async () => {
    const token = loadHubConfig(hub.adminConfig).token;
    const agent = edge.agent!;
    agent.process.kill('SIGTERM');
    await waitForState(hub, 'shop-1', 'Disconnected');
    const document = {
      apiVersion: 'edgeadm.io/v1alpha1',
      kind: 'Rollout',
      metadata: { name: 'site' },
      spec: {
        resources: [
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: 'site', namespace: 'default' },
            data: { at: '${cluster.name}' },
          },
        ],
        placement: { clusterSelector: 'env=test' },
        strategy: { waves: ['100%'], maxUnavailable: 1, failureBudget: 0, soakSeconds: 0, deadlineSeconds: 3 },
      },
    };
    const applied = await hubRequest({
      hub,
      path: '/hub/v1/rollouts/site',
      method: 'PUT',
      token,
      body: JSON.stringify(document),
    });
    expect(applied.status, applied.body).toBe(201);
    // The wave is due while the agent drains: the cluster is offline, not handed a copy it cannot take.
    const settled = await waitFor('the cluster to be offline-pending or failed', async () => {
      const row = await clusterRow(token);
      return row.phase === 'offline-pending' || row.phase === 'failed' ? row : undefined;
    });
    expect(settled).toEqual({ phase: 'offline-pending', state: 'progressing' });
    await agent.process;
    // And it stays so once the agent has exited: nothing was handed to it that a deadline could fail.
    expect(await clusterRow(token)).toEqual({ phase: 'offline-pending', state: 'progressing' });

    restarted = startCli(['agent', 'tunnel', '--data-dir', edge.dataDir]);
    await waitForState(hub, 'shop-1', 'Connected', restarted);
    const done = await waitFor('the rollout to complete or halt', async () => {
      const row = await clusterRow(token);
      return row.state === 'complete' || row.state === 'halted' ? row : undefined;
    });
    expect(done).toEqual({ phase: 'ready', state: 'complete' });
  });
});
