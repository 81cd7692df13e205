/**
 * `GET /hub/v1/attention` (src/hub/api/attention-api.ts), called as the
 * hub's request handler calls it, against the real store (SQLite in
 * memory) and the real rollout controller (its delivery refused by one
 * cluster, so that the rollout halts): what an admin and a scoped user see,
 * the health the agents reported (as the hub stores it), and 400s that name
 * the parameter.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { HubContext } from '../../../../src/hub/api/hub-context.js';
import type { AttentionPage } from '../../../../src/hub/contract/attention.js';
import { HUB_ADMIN_USER } from '../../../../src/hub/identity/authenticate.js';
import type { HubPki } from '../../../../src/hub/identity/hub-pki.js';
import { hashUserToken, newUserToken } from '../../../../src/hub/identity/hub-tokens.js';
import { HubMetrics } from '../../../../src/hub/metrics/hub-metrics.js';
import { RolloutController } from '../../../../src/hub/rollouts/rollout-controller.js';
import type { DeliveryOutcome } from '../../../../src/hub/rollouts/rollout-delivery.js';
import { SqliteHubStore } from '../../../../src/hub/store/sqlite-store.js';
import type { HubTunnel } from '../../../../src/tunnel/hub-tunnel.js';
import { silentLogger } from '../../../../src/log/run-log.js';
import { rolloutDocument } from '../../rollout/fixtures.js';
import { callApi } from './operator-api-harness.js';

const NOW = new Date('2026-03-01T10:00:00.000Z');
const adminToken = newUserToken();
/** A user scoped to the eu shops. */
const euToken = newUserToken();

let store: SqliteHubStore;
let controller: RolloutController | undefined;
let context: HubContext;

async function addCluster(name: string, labels: Record<string, string>, lastSeen?: string): Promise<void> {
  await store.addCluster({
    name,
    labels,
    certSerial: name,
    certNotAfter: '2026-03-25T00:00:00.000Z',
    registeredAt: '2026-01-01T00:00:00.000Z',
    ...(lastSeen === undefined ? {} : { lastSeen }),
  });
}

/** An open tunnel, as far as a cluster's view reads one. */
function openTunnel(): HubTunnel {
  return { isOpen: true, hello: {} } as unknown as HubTunnel;
}

async function attention(token: string | undefined, query = ''): Promise<{ status: number; page: AttentionPage }> {
  const answer = await callApi(context, 'GET', `/hub/v1/attention${query}`, token === undefined ? {} : { token });
  return { status: answer.status, page: answer.json as unknown as AttentionPage };
}

const reasonsByCluster = (page: AttentionPage): Record<string, string[]> =>
  Object.fromEntries(page.rows.map((row) => [row.cluster.name, row.reasons.map((reason) => reason.kind)]));

beforeEach(async () => {
  store = await SqliteHubStore.open(':memory:');
  const createdAt = NOW.toISOString();
  await store.putUser({
    name: HUB_ADMIN_USER,
    tokenHash: hashUserToken(adminToken),
    clustersSelector: '',
    groups: [],
    isAdmin: true,
    createdAt,
  });
  await store.putUser({
    name: 'eve',
    tokenHash: hashUserToken(euToken),
    clustersSelector: 'region=eu',
    groups: [],
    isAdmin: false,
    createdAt,
  });
  await addCluster('eu-1', { env: 'prod', region: 'eu' });
  await addCluster('eu-2', { env: 'prod', region: 'eu' });
  await addCluster('eu-3', { env: 'dev', region: 'eu' }, '2026-03-01T09:00:00.000Z');
  await addCluster('us-1', { env: 'prod', region: 'us' }, '2026-02-28T10:00:00.000Z');
  controller = undefined;
  context = {
    store,
    pki: {} as HubPki,
    metrics: new HubMetrics(),
    logger: silentLogger,
    now: () => NOW,
    advertiseUrl: 'https://127.0.0.1:9443',
    tunnels: new Map([
      ['eu-1', openTunnel()],
      ['eu-2', openTunnel()],
    ]),
    closeTunnel: () => {},
  };
});

afterEach(async () => {
  await controller?.stop();
  await store.close();
});

describe('GET /hub/v1/attention', () => {
  it('asks for a hub user token, takes GET only, and answers a bad parameter with a 400 naming it', async () => {
    expect((await attention(undefined)).status).toBe(401);
    expect((await callApi(context, 'POST', '/hub/v1/attention', { token: adminToken })).status).toBe(405);
    const bad = await callApi(context, 'GET', '/hub/v1/attention?certsWithin=soon', { token: adminToken });
    expect(bad.status).toBe(400);
    expect(bad.json).toMatchObject({ code: 'E_ATTENTION_BAD_QUERY', message: expect.stringMatching(/^certsWithin/) });
  });

  it('lists the disconnected clusters and the nodes not Ready the agents reported, with the thresholds', async () => {
    // As the hub keeps an agent's report (health/health-book.ts): in the store, shown in the cluster's view.
    await store.updateClusterHealth('eu-2', {
      reportedAt: '2026-03-01T09:59:50.000Z',
      nodes: { total: 3, ready: 2, notReady: ['eu-2-b'] },
      certificates: [{ kind: 'apiserver-serving', subject: 'CN=kube-apiserver', notAfter: '2026-03-10T00:00:00.000Z' }],
    });
    const { status, page } = await attention(adminToken);
    expect(status).toBe(200);
    expect(reasonsByCluster(page)).toEqual({
      'us-1': ['offline'],
      'eu-3': ['offline'],
      'eu-2': ['nodes-not-ready', 'certificate-expiring'],
    });
    expect(page.rows.map((row) => row.cluster.name)).toEqual(['us-1', 'eu-3', 'eu-2']);
    expect(page.rows[2]?.cluster.health?.nodes?.notReady).toEqual(['eu-2-b']);
    expect(page).toMatchObject({ total: 3, offlineForSeconds: 0, certsWithinDays: 30, now: NOW.toISOString() });
    // eu-3 has been away an hour, us-1 a day.
    expect(reasonsByCluster((await attention(adminToken, '?offlineFor=7200')).page)).toEqual({
      'us-1': ['offline'],
      'eu-2': ['nodes-not-ready', 'certificate-expiring'],
    });
  });

  it('shows a scoped user only the clusters their selector reaches', async () => {
    const { page } = await attention(euToken);
    expect(reasonsByCluster(page)).toEqual({ 'eu-3': ['offline'] });
    expect(page.counts.offline).toBe(1);
    // A selector of their own narrows it; it never widens it.
    expect((await attention(euToken, '?selector=region%3Dus')).page.total).toBe(0);
  });

  it('names the halted rollout on the clusters it places, for those who may see it', async () => {
    const refusing = async (cluster: string): Promise<DeliveryOutcome> =>
      cluster === 'eu-1' ? { status: 'failed', message: 'the registry is unreachable' } : { status: 'delivered' };
    controller = await RolloutController.start({
      store,
      delivery: { sendCopy: refusing, sendRemove: async () => ({ status: 'delivered' }) },
      logger: silentLogger,
      passIntervalMs: 0,
      connected: ['eu-1', 'eu-2'],
    });
    context.rollouts = controller;
    const document = rolloutDocument({
      placement: { clusterSelector: 'env=prod,region=eu' },
      strategy: { waves: ['100%'], maxUnavailable: '100%', soakSeconds: 0 },
    });
    expect((await callApi(context, 'PUT', '/hub/v1/rollouts/web', { token: adminToken, body: document })).status).toBe(
      201,
    );
    await controller.settled();
    const { page } = await attention(adminToken, '?reason=rollout-halted');
    expect(page.rows.map((row) => [row.cluster.name, row.reasons[0]])).toEqual([
      ['eu-1', { kind: 'rollout-halted', since: expect.any(String), rollouts: [{ rollout: 'web', phase: 'failed' }] }],
      [
        'eu-2',
        {
          kind: 'rollout-halted',
          since: expect.any(String),
          rollouts: [{ rollout: 'web', phase: expect.any(String) }],
        },
      ],
    ]);
    expect(page.haltedRollouts).toEqual([
      { name: 'web', haltReason: expect.any(String), since: expect.any(String), clusters: 2 },
    ]);
    expect(page.isRolloutStateKnown).toBe(true);
    // The rollout lies within eve's clusters: she sees it too.
    expect((await attention(euToken)).page.counts['rollout-halted']).toBe(2);
  });

  it('says the rollouts are unknown on a replica without the rollout controller', async () => {
    expect((await attention(adminToken)).page).toMatchObject({ isRolloutStateKnown: false, haltedRollouts: [] });
  });
});
