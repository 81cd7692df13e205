/**
 * The fleet's series on a real hub's `/metrics` (issue #38): `hub serve` and
 * two clusters' real agents (`register-cloud --foreground`, each against a
 * simulated API server). The hub's own metrics for anyone; every cluster,
 * named, for the admin; a scoped user's clusters only for that user; and a
 * cluster whose agent goes silent (stopped: it neither pings nor closes its
 * connection, as behind a cut link) read as disconnected, with the time it
 * was last seen, while the other stays connected.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadHubConfig } from '../../../src/hub/contract/hub-config.js';
import type { AttentionPage } from '../../../src/hub/contract/attention.js';
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
let adminToken: string;
const clusters: EdgeCluster[] = [];

/** The value of one series, or undefined when the text does not have it. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

async function scrape(token?: string): Promise<string> {
  const answer = await hubRequest({ hub, path: '/metrics', ...(token === undefined ? {} : { token }) });
  expect(answer.status, answer.body).toBe(200);
  return answer.body;
}

beforeAll(async () => {
  hub = await startHubProcess();
  adminToken = loadHubConfig(hub.adminConfig).token;
  const token = await createHubToken(hub, ['--usages', '2']);
  for (const [name, region] of [
    ['store-042', 'eu'],
    ['store-043', 'us'],
  ] as const) {
    const cluster = await startEdgeCluster(name);
    clusters.push(cluster);
    await registerAndRun({ hub, token, cluster, labels: `env=prod,region=${region}` });
  }
});

afterAll(async () => {
  for (const cluster of clusters) {
    cluster.agent?.process.kill('SIGCONT');
    await cluster.agent?.stop();
    await cluster.api.stop();
  }
  await hub?.stop();
});

describe("a real hub's /metrics", () => {
  it("serves the hub's own metrics without a token, naming no cluster", async () => {
    const text = await scrape();
    expect(sample(text, 'edgeadm_hub_connected_agents')).toBe(2);
    expect(text).not.toContain('store-042');
    expect(text).not.toContain('edgeadm_hub_cluster_connected');
  });

  it('names every cluster for the admin, with its client certificate expiry', async () => {
    const text = await scrape(adminToken);
    expect(sample(text, 'edgeadm_hub_cluster_connected{cluster="store-042"}')).toBe(1);
    expect(sample(text, 'edgeadm_hub_cluster_connected{cluster="store-043"}')).toBe(1);
    expect(sample(text, 'edgeadm_hub_cluster_held{cluster="store-042"}')).toBe(0);
    const expiry = sample(text, 'edgeadm_hub_certificate_expiry_seconds{cluster="store-042",kind="hub-client"}');
    expect(expiry).toBeGreaterThan(Date.now() / 1000);
  });

  it("shows a user scoped to region=eu only that region's cluster", async () => {
    const created = await hubRequest({
      hub,
      path: '/hub/v1/users',
      method: 'POST',
      token: adminToken,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'prometheus-eu', clustersSelector: 'region=eu', groups: [] }),
    });
    expect(created.status, created.body).toBe(201);
    const text = await scrape((JSON.parse(created.body) as { token: string }).token);
    expect(sample(text, 'edgeadm_hub_cluster_connected{cluster="store-042"}')).toBe(1);
    expect(text).not.toContain('store-043');
  });

  it('reads a cluster whose agent went silent as disconnected, with when it was last seen', async () => {
    const silent = clusters[1] as EdgeCluster;
    const stoppedAt = Date.now() / 1000;
    silent.agent?.process.kill('SIGSTOP');
    // The hub closes a tunnel within two heartbeats of its last frame (agents ping every 10 s); the bound is a safety net.
    const text = await waitFor('store-043 to read as disconnected in /metrics', async () => {
      const now = await scrape(adminToken);
      return sample(now, 'edgeadm_hub_cluster_connected{cluster="store-043"}') === 0 ? now : undefined;
    });
    expect(sample(text, 'edgeadm_hub_cluster_connected{cluster="store-042"}')).toBe(1);
    const lastSeen = sample(text, 'edgeadm_hub_cluster_last_seen_seconds{cluster="store-043"}');
    expect(lastSeen).toBeGreaterThan(stoppedAt - 60);
    expect(lastSeen).toBeLessThan(Date.now() / 1000);
    // The attention list names it, offline since that moment, and not the cluster still connected.
    const answer = await hubRequest({ hub, path: '/hub/v1/attention', token: adminToken });
    expect(answer.status, answer.body).toBe(200);
    const page = JSON.parse(answer.body) as AttentionPage;
    expect(page.rows.map((row) => [row.cluster.name, row.reasons.map((reason) => reason.kind)])).toEqual([
      ['store-043', ['offline']],
    ]);
    expect(Date.parse(page.rows[0]!.since!) / 1000).toBeCloseTo(lastSeen!, -1);
    silent.agent?.process.kill('SIGCONT');
  });
});
