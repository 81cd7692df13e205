/**
 * Rollouts through the real hub (`startHub`, in this process): the operator
 * API over HTTPS, registration with `registerCluster`, and agents that are
 * stand-ins speaking the rollout contract (test/support/rollout-agent-stand-in.ts;
 * the real agent's side is tested with it elsewhere). What the hub itself
 * must do: a cluster offline at apply gets its copy when its tunnel
 * connects; a hub restart mid-rollout keeps the revision, the progress and
 * the reports, and delivers nothing twice; a delete reaches the offline
 * cluster when it returns. Waits are on events (long polls, copies), not
 * on time.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HUB_ADMIN_USER } from '../../../src/hub/identity/authenticate.js';
import { startHub, type RunningHub } from '../../../src/hub/server/hub-server.js';
import { silentLogger } from '../../../src/log/run-log.js';
import { registerCluster } from '../../../src/registration/registration.js';
import type { RolloutStatusView } from '../../../src/rollout/api.js';
import type { AgentState } from '../../../src/registration/agent-state.js';
import { connectRolloutStandIn, type RolloutStandIn } from '../../support/rollout-agent-stand-in.js';
import { startSimApiServer, type SimApiServer } from '../../support/sim-apiserver/index.js';

describe('hub: rollouts', { timeout: 120_000 }, () => {
  const root = mkdtempSync(join(tmpdir(), 'hub-rollouts-'));
  const dataDir = join(root, 'hub');
  let hub: RunningHub;
  let sim: SimApiServer;
  let kubeconfig: string;
  let adminToken: string;
  const sites = new Map<string, AgentState>();
  const agents: RolloutStandIn[] = [];

  const api = (options: {
    method?: string;
    path: string;
    body?: unknown;
  }): Promise<{ status: number; json: Record<string, unknown> }> =>
    new Promise((resolve, reject) => {
      const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
      const req = request(
        `${hub.url}${options.path}`,
        {
          method: options.method ?? 'GET',
          ca: readFileSync(join(dataDir, 'pki', 'ca.crt'), 'utf8'),
          headers: { Authorization: `Bearer ${adminToken}`, 'Content-Type': 'application/json' },
        },
        (res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => (body += chunk.toString()));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              json: body === '' ? {} : (JSON.parse(body) as Record<string, unknown>),
            }),
          );
        },
      );
      req.on('error', reject);
      req.end(payload);
    });

  async function register(cluster: string): Promise<void> {
    const created = await api({ method: 'POST', path: '/hub/v1/tokens', body: { ttlMs: 600_000 } });
    const { state } = await registerCluster({
      hub: new URL(hub.url).host,
      token: created.json.token as string,
      caCertHashes: [hub.caPin],
      cluster,
      labels: { env: 'prod', region: 'eu' },
      kubeconfig,
      createServiceAccount: false,
      dataDir: join(root, cluster),
      discoveryTimeout: 30_000,
      logger: silentLogger,
    });
    sites.set(cluster, state);
  }

  async function connect(cluster: string): Promise<RolloutStandIn> {
    const state = sites.get(cluster) as AgentState;
    const agent = await connectRolloutStandIn({
      port: hub.port,
      caPem: state.hubCaPem,
      certPem: state.certPem,
      keyPem: state.keyPem,
      cluster,
    });
    agents.push(agent);
    await agent.reportsOpened;
    return agent;
  }

  /** Long-polls the status until `done` holds. */
  async function until(done: (view: RolloutStatusView) => boolean): Promise<RolloutStatusView> {
    let view = (await api({ path: '/hub/v1/rollouts/web?clusters=true' })).json as unknown as RolloutStatusView;
    while (!done(view)) {
      view = (await api({ path: `/hub/v1/rollouts/web?clusters=true&waitForChangeFrom=${view.statusVersion}` }))
        .json as unknown as RolloutStatusView;
    }
    return view;
  }

  const phases = (view: RolloutStatusView): Record<string, string> =>
    Object.fromEntries((view.clusters ?? []).map((row) => [row.cluster, row.phase]));

  const startTheHub = async (): Promise<void> => {
    hub = await startHub({ listen: '127.0.0.1:0', dataDir, logger: silentLogger });
    adminToken = /^token: (\S+)$/m.exec(readFileSync(hub.adminConfigPath, 'utf8'))?.[1] ?? '';
  };

  beforeAll(async () => {
    sim = await startSimApiServer({ gitVersion: 'v1.30.4+sim' });
    kubeconfig = join(root, 'edge.kubeconfig');
    writeFileSync(kubeconfig, sim.kubeconfig(), { mode: 0o600 });
    await startTheHub();
  });

  afterAll(async () => {
    for (const agent of agents) agent.close();
    await hub?.close();
    await sim?.stop();
  });

  it('takes a Rollout of 10 MiB of manifests over HTTPS', async () => {
    const blob = 'x'.repeat(1024 * 1024);
    const document = {
      apiVersion: 'edgeadm.io/v1alpha1',
      kind: 'Rollout',
      metadata: { name: 'big' },
      spec: {
        resources: Array.from({ length: 10 }, (_, i) => ({
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: `big-${i}`, namespace: 'default' },
          data: { blob },
        })),
        placement: { clusters: ['nowhere'] },
      },
    };
    expect(Buffer.byteLength(JSON.stringify(document))).toBeGreaterThan(10 * 1024 * 1024);
    const applied = await api({ method: 'PUT', path: '/hub/v1/rollouts/big', body: document });
    expect(applied).toMatchObject({ status: 201, json: { name: 'big', revision: 1 } });
    const stored = await api({ path: '/hub/v1/rollouts/big/document' });
    expect(JSON.stringify(stored.json['document'])).toBe(JSON.stringify(document));
    expect((await api({ method: 'DELETE', path: '/hub/v1/rollouts/big' })).status).toBe(200);
  });

  it('delivers on connect, survives a restart mid-rollout without delivering twice, and removes from a returning cluster', async () => {
    await register('shop-1');
    await register('shop-2');
    const document = {
      apiVersion: 'edgeadm.io/v1alpha1',
      kind: 'Rollout',
      metadata: { name: 'web' },
      spec: {
        resources: [
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: 'site', namespace: 'default' },
            data: { site: '${cluster.name}' },
          },
        ],
        placement: { clusterSelector: 'env=prod' },
        strategy: { waves: ['100%'], maxUnavailable: '100%', soakSeconds: 0 },
      },
    };
    expect((await api({ method: 'PUT', path: '/hub/v1/rollouts/web', body: document })).json).toMatchObject({
      revision: 1,
      isCreated: true,
    });
    expect(phases(await until((view) => Object.keys(phases(view)).length === 2))).toEqual({
      'shop-1': 'offline-pending',
      'shop-2': 'offline-pending',
    });

    // shop-1 comes online: its copy goes out on connect, as the owner.
    const first = await connect('shop-1');
    const [copy] = await first.waitForCopies(1);
    expect(copy?.owner).toEqual({ user: HUB_ADMIN_USER, groups: [] });
    expect(copy?.copy.objects[0]?.['data']).toEqual({ site: 'shop-1' });
    first.report({
      kind: 'copy',
      rollout: 'web',
      cluster: 'shop-1',
      revision: copy?.copy.revision as string,
      readiness: 'ready',
      objects: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'site', namespace: 'default' }],
    });
    const before = await until((view) => phases(view)['shop-1'] === 'ready');

    // The hub restarts mid-rollout.
    await hub.close();
    // The hub closed the report stream itself (NO_ERROR) so that the tunnel could drain at once; left
    // open, the stream is cancelled (CANCEL) only when the drain times out, 10 s into the shutdown.
    expect(await first.reportsClosed).toBe(0);
    await first.closed;
    await startTheHub();
    const after = (await api({ path: '/hub/v1/rollouts/web?clusters=true' })).json as unknown as RolloutStatusView;
    expect(after).toMatchObject({ revision: 1, state: 'progressing', statusVersion: before.statusVersion });
    expect(phases(after)).toEqual({ 'shop-1': 'ready', 'shop-2': 'offline-pending' });

    // Both return: shop-2 gets its copy; shop-1, ready at the current revision, gets nothing again.
    const again = await connect('shop-1');
    const second = await connect('shop-2');
    expect((await second.waitForCopies(1))[0]?.copy.objects[0]?.['data']).toEqual({ site: 'shop-2' });
    expect(again.copies).toEqual([]);

    // Deleted while shop-2 is offline: shop-1 is cleaned now, shop-2 when it returns.
    second.close();
    await second.closed;
    const deleted = (await api({ method: 'DELETE', path: '/hub/v1/rollouts/web' })).json;
    expect(deleted).toEqual({ name: 'web', removed: ['shop-1'], pendingRemovals: ['shop-2'] });
    expect(again.removals).toEqual([{ rollout: 'web', owner: { user: HUB_ADMIN_USER, groups: [] } }]);
    const returned = await connect('shop-2');
    expect(await returned.waitForRemovals(1)).toEqual([
      { rollout: 'web', owner: { user: HUB_ADMIN_USER, groups: [] } },
    ]);
  });
});
