/**
 * `GET /metrics` as the hub's request handler serves it, against the real
 * store (SQLite in memory) and the real rollout controller (with a fake
 * delivery): the hub's own metrics for anyone, the fleet's per-cluster
 * series only for a hub user and only for the clusters their selector
 * reaches, and a halted rollout named.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { HubContext } from '../../../../src/hub/api/hub-context.js';
import { serveApi } from '../../../../src/hub/api/operator-api.js';
import { HttpError } from '../../../../src/hub/http/http-replies.js';
import { HUB_ADMIN_USER } from '../../../../src/hub/identity/authenticate.js';
import type { HubPki } from '../../../../src/hub/identity/hub-pki.js';
import { hashUserToken, newUserToken } from '../../../../src/hub/identity/hub-tokens.js';
import { HubMetrics } from '../../../../src/hub/metrics/hub-metrics.js';
import { RolloutController } from '../../../../src/hub/rollouts/rollout-controller.js';
import { SqliteHubStore } from '../../../../src/hub/store/sqlite-store.js';
import { silentLogger } from '../../../../src/log/run-log.js';
import type { HubTunnel } from '../../../../src/tunnel/hub-tunnel.js';
import { FakeDelivery } from '../rollouts/controller-fakes.js';
import { parseRollout } from '../../../../src/rollout/spec.js';
import { rolloutDocument } from '../../rollout/fixtures.js';

let store: SqliteHubStore;
let controller: RolloutController;
let delivery: FakeDelivery;
let context: HubContext;
const adminToken = newUserToken();
const admin = { user: HUB_ADMIN_USER, groups: [], clustersSelector: '', isAdmin: true };
/** A user scoped to the eu shops. */
const euToken = newUserToken();

/** One request as the hub's handler serves it: the status and the text answered (an HttpError as its status). */
async function scrape(token?: string): Promise<{ status: number; contentType?: string | undefined; text: string }> {
  const req = Object.assign(Readable.from([]), {
    method: 'GET',
    url: '/metrics',
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    socket: {},
  }) as unknown as IncomingMessage;
  const answer: { status: number; contentType?: string | undefined; text: string } = { status: 0, text: '' };
  const res = {
    headersSent: false,
    writeHead(status: number, headers: Record<string, string>) {
      answer.status = status;
      answer.contentType = headers['content-type'];
      return res;
    },
    end(text?: string) {
      answer.text = text ?? '';
    },
  } as unknown as ServerResponse;
  try {
    expect(await serveApi(context, req, res)).toBe(true);
  } catch (error) {
    if (!(error instanceof HttpError)) throw error;
    answer.status = error.status;
  }
  return answer;
}

/** Applies the rollout `web` (placed on env=prod) as the admin; us-1's agent cannot take its copy, which halts it. */
async function applyHaltingRollout(): Promise<void> {
  delivery.failing.set('us-1', 'the registry is unreachable');
  const document = rolloutDocument({ strategy: { waves: ['100%'], maxUnavailable: '100%', failureBudget: 0 } });
  await controller.apply(document, parseRollout(document), admin);
  await controller.settled();
}

function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

async function addCluster(name: string, labels: Record<string, string>): Promise<void> {
  await store.addCluster({
    name,
    labels,
    certSerial: name,
    certNotAfter: '2027-01-01T00:00:00.000Z',
    registeredAt: '2026-01-01T00:00:00.000Z',
    lastSeen: '2026-11-29T09:00:00.000Z',
  });
}

beforeEach(async () => {
  store = await SqliteHubStore.open(':memory:');
  const createdAt = new Date().toISOString();
  await store.putUser({
    name: HUB_ADMIN_USER,
    tokenHash: hashUserToken(adminToken),
    clustersSelector: '',
    groups: [],
    isAdmin: true,
    createdAt,
  });
  await store.putUser({
    name: 'prometheus-eu',
    tokenHash: hashUserToken(euToken),
    clustersSelector: 'env=prod,region=eu',
    groups: [],
    isAdmin: false,
    createdAt,
  });
  await addCluster('eu-1', { env: 'prod', region: 'eu' });
  await addCluster('eu-2', { env: 'prod', region: 'eu' });
  await addCluster('us-1', { env: 'prod', region: 'us' });
  await store.setClusterHold('eu-2', { by: HUB_ADMIN_USER, since: createdAt, reason: 'till broken' });
  delivery = new FakeDelivery();
  for (const cluster of ['eu-1', 'us-1']) delivery.connected.add(cluster);
  controller = await RolloutController.start({
    store,
    delivery,
    logger: silentLogger,
    passIntervalMs: 0,
    connected: ['eu-1', 'us-1'],
  });
  context = {
    store,
    pki: {} as HubPki,
    metrics: new HubMetrics(),
    logger: silentLogger,
    now: () => new Date(),
    advertiseUrl: 'https://127.0.0.1:9443',
    // eu-1's agent has its tunnel open here (viewOf reads no more of a tunnel than this).
    tunnels: new Map([['eu-1', { isOpen: true, hello: {} } as unknown as HubTunnel]]),
    closeTunnel: () => {},
    rollouts: controller,
  };
});

afterEach(async () => {
  await controller.stop();
  await store.close();
});

describe('GET /metrics', () => {
  it("serves the hub's own metrics without a token, and no cluster's name", async () => {
    const answer = await scrape();
    expect(answer.status).toBe(200);
    expect(answer.contentType).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(sample(answer.text, 'edgeadm_hub_connected_agents')).toBe(0);
    expect(answer.text).not.toContain('edgeadm_hub_cluster_');
    expect(answer.text).not.toContain('eu-1');
  });

  it("adds every cluster's series for a hub admin", async () => {
    const { status, text } = await scrape(adminToken);
    expect(status).toBe(200);
    expect(sample(text, 'edgeadm_hub_connected_agents')).toBe(0);
    expect(sample(text, 'edgeadm_hub_cluster_connected{cluster="eu-1"}')).toBe(1);
    expect(sample(text, 'edgeadm_hub_cluster_connected{cluster="eu-2"}')).toBe(0);
    expect(sample(text, 'edgeadm_hub_cluster_connected{cluster="us-1"}')).toBe(0);
    expect(sample(text, 'edgeadm_hub_cluster_last_seen_seconds{cluster="us-1"}')).toBe(
      Date.parse('2026-11-29T09:00:00.000Z') / 1000,
    );
    expect(sample(text, 'edgeadm_hub_cluster_held{cluster="eu-2"}')).toBe(1);
    expect(sample(text, 'edgeadm_hub_cluster_held{cluster="eu-1"}')).toBe(0);
    expect(sample(text, 'edgeadm_hub_certificate_expiry_seconds{cluster="us-1",kind="hub-client"}')).toBe(
      Date.parse('2027-01-01T00:00:00.000Z') / 1000,
    );
  });

  it("shows a scoped user only the clusters their selector reaches, and not an admin's rollout", async () => {
    await applyHaltingRollout();
    const { status, text } = await scrape(euToken);
    expect(status).toBe(200);
    expect(sample(text, 'edgeadm_hub_cluster_connected{cluster="eu-1"}')).toBe(1);
    expect(sample(text, 'edgeadm_hub_cluster_held{cluster="eu-2"}')).toBe(1);
    expect(text).not.toContain('us-1');
    expect(text).not.toContain('rollout="web"');
  });

  it('names a halted rollout, and says 0 once it is resumed', async () => {
    await applyHaltingRollout();
    expect(sample((await scrape(adminToken)).text, 'edgeadm_hub_rollout_halted{rollout="web"}')).toBe(1);

    delivery.failing.delete('us-1');
    await controller.command('web', 'resume', admin);
    expect(sample((await scrape(adminToken)).text, 'edgeadm_hub_rollout_halted{rollout="web"}')).toBe(0);
  });

  it('refuses a token that is no hub user with 401, and counts it', async () => {
    expect((await scrape(newUserToken())).status).toBe(401);
    expect(sample((await scrape()).text, 'edgeadm_hub_unauthorized_requests_total')).toBe(1);
  });
});
