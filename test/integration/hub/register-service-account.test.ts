/**
 * `register-cloud --create-service-account`: from an admin kubeconfig,
 * edgeadm creates the agent's own ServiceAccount (impersonation rights
 * only) on the edge cluster and the agent runs as it. The edge cluster is
 * the SIMULATED API server, whose RBAC decides impersonation and whose
 * simulated token controller fills ServiceAccount token Secrets.
 */
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { runCli } from '../../support/cli.js';
import {
  createHubToken,
  hubJson,
  kubectlVia,
  registerArgs,
  startCli,
  startEdgeCluster,
  startHubProcess,
  waitForState,
  type EdgeCluster,
  type HubProcess,
} from './hub-fixture.js';
import { printedBy } from '../../support/run-output.js';

const SA_USER = 'system:serviceaccount:kube-system:edgeadm-tunnel-agent';
const RBAC = 'rbac.authorization.k8s.io/v1';

describe('register-cloud --create-service-account', { timeout: 180_000 }, () => {
  let hub: HubProcess;
  let edge: EdgeCluster;
  let opsConfig: string;

  beforeAll(async () => {
    ensureCliBuilt('index.js', ['src']);
    hub = await startHubProcess();
    edge = await startEdgeCluster('sa-1');
    const token = await createHubToken(hub);
    for (const name of ['shop-node-1', 'shop-node-2']) {
      edge.api.setObject({ apiVersion: 'v1', kind: 'Node', metadata: { name } });
    }
    edge.agent = startCli([
      ...registerArgs({ hub, token, cluster: edge, labels: 'env=sa' }),
      '--create-service-account',
      '--foreground',
    ]);
    await waitForState(hub, 'sa-1', 'Connected', edge.agent);
    opsConfig = join(mkdtempSync(join(tmpdir(), 'hub-user-')), 'ops.yaml');
    const created = await runCli([
      'hub',
      'user',
      'create',
      'ops',
      '--clusters-selector',
      'env=sa',
      '--groups',
      'ops-team',
      '--output',
      opsConfig,
      '--hub-config',
      hub.adminConfig,
    ]);
    expect(created.exitCode, printedBy(created)).toBe(0);
  });

  afterAll(async () => {
    await edge?.agent?.stop();
    await hub?.stop();
    await edge?.api.stop();
  });

  it('creates a ServiceAccount that may impersonate users and groups, list nodes and keep rollout inventories, nothing more', () => {
    const role = edge.api.getObject({ apiVersion: RBAC, kind: 'ClusterRole', name: 'edgeadm-tunnel-agent' });
    expect(role?.['rules']).toEqual([
      { apiGroups: [''], resources: ['users', 'groups'], verbs: ['impersonate'] },
      { apiGroups: [''], resources: ['nodes'], verbs: ['list'] },
    ]);
    const binding = edge.api.getObject({ apiVersion: RBAC, kind: 'ClusterRoleBinding', name: 'edgeadm-tunnel-agent' });
    expect(binding?.['subjects']).toEqual([
      { kind: 'ServiceAccount', name: 'edgeadm-tunnel-agent', namespace: 'kube-system' },
    ]);
    // And, in kube-system only, the ConfigMaps where it keeps the rollout inventories as itself.
    const inventoryRole = edge.api.getObject({
      apiVersion: RBAC,
      kind: 'Role',
      namespace: 'kube-system',
      name: 'edgeadm-tunnel-agent',
    });
    expect(inventoryRole?.['rules']).toEqual([
      { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'create', 'patch', 'update', 'delete'] },
    ]);
    const inventoryBinding = edge.api.getObject({
      apiVersion: RBAC,
      kind: 'RoleBinding',
      namespace: 'kube-system',
      name: 'edgeadm-tunnel-agent',
    });
    expect(inventoryBinding?.['roleRef']).toEqual({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: 'edgeadm-tunnel-agent',
    });
    expect(inventoryBinding?.['subjects']).toEqual([
      { kind: 'ServiceAccount', name: 'edgeadm-tunnel-agent', namespace: 'kube-system' },
    ]);
    const secret = edge.api.getObject({
      apiVersion: 'v1',
      kind: 'Secret',
      namespace: 'kube-system',
      name: 'edgeadm-tunnel-agent-token',
    });
    expect(secret?.['type']).toBe('kubernetes.io/service-account-token');
  });

  it('tells the hub how many nodes the cluster has, listed as the ServiceAccount', async () => {
    const cluster = await hubJson<{ nodeCount?: number }>(['hub', 'clusters', 'get', 'sa-1'], hub.adminConfig);
    expect(cluster.nodeCount).toBe(2);
    const lists = edge.api.requests.filter((r) => r.resource === 'nodes' && r.verb === 'list');
    expect(lists.length).toBeGreaterThan(0);
    expect(new Set(lists.map((r) => r.user))).toEqual(new Set([SA_USER]));
  });

  it('runs the agent as the ServiceAccount, impersonating the hub user and groups', async () => {
    edge.api.clearRequests();
    const whoami = await kubectlVia(opsConfig, 'sa-1', ['auth', 'whoami', '-o', 'json']);
    expect(whoami.exitCode, printedBy(whoami)).toBe(0);
    const review = JSON.parse(whoami.stdout) as { status: { userInfo: { username: string; groups: string[] } } };
    expect(review.status.userInfo.username).toBe('ops');
    expect(review.status.userInfo.groups).toContain('ops-team');
    const reached = edge.api.requests.find((r) => r.impersonatedUser === 'ops');
    expect(reached?.user).toBe(SA_USER);
    expect(reached?.impersonatedGroups).toEqual(['ops-team']);
  });

  it('stores the ServiceAccount token (mode 0600), never the admin credential', () => {
    const settings = load(readFileSync(join(edge.dataDir, 'agent.yaml'), 'utf8')) as { kubeconfig: string };
    expect(settings.kubeconfig).toBe(join(edge.dataDir, 'upstream.kubeconfig'));
    expect(statSync(settings.kubeconfig).mode & 0o777).toBe(0o600);
    const kubeconfig = readFileSync(settings.kubeconfig, 'utf8');
    expect(kubeconfig).not.toContain(edge.api.adminToken);
    const secret = edge.api.getObject({
      apiVersion: 'v1',
      kind: 'Secret',
      namespace: 'kube-system',
      name: 'edgeadm-tunnel-agent-token',
    });
    const token = Buffer.from(String((secret?.['data'] as Record<string, string>)['token']), 'base64').toString();
    expect(kubeconfig).toContain(token);
  });

  it('changes nothing on the cluster when run again', async () => {
    const versions = (): (string | undefined)[] =>
      [
        { apiVersion: 'v1', kind: 'ServiceAccount', namespace: 'kube-system', name: 'edgeadm-tunnel-agent' },
        { apiVersion: RBAC, kind: 'ClusterRole', name: 'edgeadm-tunnel-agent' },
        { apiVersion: RBAC, kind: 'ClusterRoleBinding', name: 'edgeadm-tunnel-agent' },
        { apiVersion: 'v1', kind: 'Secret', namespace: 'kube-system', name: 'edgeadm-tunnel-agent-token' },
      ].map((ref) => edge.api.getObject(ref)?.metadata.resourceVersion);
    const before = versions();
    const kubeconfigBefore = readFileSync(join(edge.dataDir, 'upstream.kubeconfig'), 'utf8');
    const token = await createHubToken(hub);
    const again = await runCli([
      ...registerArgs({ hub, token, cluster: edge, labels: 'env=sa' }),
      '--create-service-account',
      '--register-only',
    ]);
    expect(again.exitCode, printedBy(again)).toBe(0);
    expect(again.stderr + again.stdout).toMatch(/already in place/);
    expect(versions()).toEqual(before);
    expect(readFileSync(join(edge.dataDir, 'upstream.kubeconfig'), 'utf8')).toBe(kubeconfigBefore);
  });

  it('refuses, before using the hub token, an identity that may not impersonate groups', async () => {
    const limited = await startEdgeCluster('limited-1');
    try {
      // A user allowed to impersonate users but not groups.
      limited.api.addToken('limited-token', { user: 'limited-agent' });
      limited.api.setObject({
        apiVersion: RBAC,
        kind: 'ClusterRole',
        metadata: { name: 'impersonate-users-only' },
        rules: [{ apiGroups: [''], resources: ['users'], verbs: ['impersonate'] }],
      });
      limited.api.setObject({
        apiVersion: RBAC,
        kind: 'ClusterRoleBinding',
        metadata: { name: 'impersonate-users-only' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'impersonate-users-only' },
        subjects: [{ kind: 'User', name: 'limited-agent' }],
      });
      writeFileSync(limited.kubeconfigPath, limited.api.kubeconfig({ token: 'limited-token' }), { mode: 0o600 });
      const token = await createHubToken(hub, ['--usages', '1']);
      const refused = await runCli([
        ...registerArgs({ hub, token, cluster: limited, labels: 'env=sa' }),
        '--register-only',
      ]);
      expect(refused.exitCode).toBe(3);
      expect(refused.stderr).toContain('E_AGENT_RBAC');
      expect(refused.stderr).toMatch(/may not impersonate groups/);
      const listed = await hubJson<{ clusters: { name: string }[] }>(['hub', 'clusters', 'list'], hub.adminConfig);
      expect(listed.clusters.map((c) => c.name)).not.toContain('limited-1');
      // The token was not spent: with the right RBAC the same one-use token registers the cluster.
      limited.api.setObject({
        apiVersion: RBAC,
        kind: 'ClusterRole',
        metadata: { name: 'impersonate-users-only' },
        rules: [{ apiGroups: [''], resources: ['users', 'groups'], verbs: ['impersonate'] }],
      });
      const accepted = await runCli([
        ...registerArgs({ hub, token, cluster: limited, labels: 'env=sa' }),
        '--register-only',
      ]);
      expect(accepted.exitCode, printedBy(accepted)).toBe(0);
    } finally {
      await limited.api.stop();
    }
  });

  it('refuses --create-service-account with a kubeconfig that is not an admin', async () => {
    const limited = await startEdgeCluster('limited-2');
    try {
      limited.api.addToken('nobody-token', { user: 'nobody' });
      writeFileSync(limited.kubeconfigPath, limited.api.kubeconfig({ token: 'nobody-token' }), { mode: 0o600 });
      const token = await createHubToken(hub);
      const refused = await runCli([
        ...registerArgs({ hub, token, cluster: limited, labels: 'env=sa' }),
        '--create-service-account',
        '--register-only',
      ]);
      expect(refused.exitCode).toBe(3);
      expect(refused.stderr).toContain('E_AGENT_SERVICE_ACCOUNT');
      expect(refused.stderr).toMatch(/cluster-admin kubeconfig/);
    } finally {
      await limited.api.stop();
    }
  });
});
