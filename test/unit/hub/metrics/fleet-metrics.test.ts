import { describe, expect, it } from 'vitest';
import type { ClusterView } from '../../../../src/hub/contract/views.js';
import { clusterSample, renderFleetMetrics } from '../../../../src/hub/metrics/fleet-metrics.js';

/** A cluster as `hub clusters list` shows it; health as its agent would report it. */
function view(name: string, extra: Partial<ClusterView> = {}): ClusterView {
  return {
    name,
    labels: { env: 'prod' },
    state: 'Connected',
    lastSeen: '2026-11-29T10:00:00.000Z',
    registeredAt: '2026-01-01T00:00:00.000Z',
    certNotAfter: '2027-01-01T00:00:00.000Z',
    ...extra,
  };
}

const seconds = (iso: string): number => Date.parse(iso) / 1000;

/** The value of one series in the text, or undefined when it is not there. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('clusterSample', () => {
  it('reads connected, held, last seen and nodes from the view', () => {
    const shop = clusterSample(
      view('store-042', {
        state: 'Disconnected',
        lastSeen: '2026-11-29T09:58:30.500Z',
        hold: { by: 'alice', since: '2026-11-28T00:00:00.000Z', reason: 'till broken' },
        health: {
          reportedAt: '2026-11-29T09:58:00.000Z',
          nodes: { total: 3, ready: 2, notReady: ['till-2'] },
          certificates: [],
        },
      }),
    );
    expect(shop).toMatchObject({
      cluster: 'store-042',
      isConnected: false,
      isHeld: true,
      lastSeenSeconds: seconds('2026-11-29T09:58:30.500Z'),
      nodes: { total: 3, ready: 2 },
    });
  });

  it('leaves out what is not known: never seen, no health report', () => {
    const fresh = clusterSample(view('store-043', { state: 'Disconnected', lastSeen: undefined }));
    expect(fresh.lastSeenSeconds).toBeUndefined();
    expect(fresh.nodes).toBeUndefined();
    expect([...fresh.certificateExpirySeconds.keys()]).toEqual(['hub-client']);
  });

  it("takes the earliest expiry of each kind, the hub's record of the agent's certificate among them", () => {
    const shop = clusterSample(
      view('store-044', {
        certNotAfter: '2027-03-01T00:00:00.000Z',
        health: {
          reportedAt: '2026-11-29T09:58:00.000Z',
          certificates: [
            { kind: 'cluster-ca', subject: 'CN=kubernetes', notAfter: '2035-01-01T00:00:00.000Z' },
            { kind: 'apiserver-serving', subject: 'CN=kube-apiserver', notAfter: '2026-12-20T00:00:00.000Z' },
            { kind: 'apiserver-serving', subject: 'CN=kube-apiserver', notAfter: '2026-12-10T00:00:00.000Z' },
            // The agent still holds an older client certificate than the hub last signed.
            { kind: 'hub-client', subject: 'CN=store-044', notAfter: '2027-01-15T00:00:00.000Z' },
            { kind: 'cluster-ca', subject: 'CN=unreadable', notAfter: 'not a date' },
          ],
        },
      }),
    );
    expect(Object.fromEntries(shop.certificateExpirySeconds)).toEqual({
      'hub-client': seconds('2027-01-15T00:00:00.000Z'),
      'cluster-ca': seconds('2035-01-01T00:00:00.000Z'),
      'apiserver-serving': seconds('2026-12-10T00:00:00.000Z'),
    });
  });
});

describe('renderFleetMetrics', () => {
  it('names each cluster in a label of every per-cluster series', async () => {
    const text = await renderFleetMetrics({
      clusters: [
        view('store-042', {
          health: {
            reportedAt: '2026-11-29T09:58:00.000Z',
            nodes: { total: 3, ready: 2, notReady: ['till-2'] },
            certificates: [{ kind: 'cluster-ca', subject: 'CN=kubernetes', notAfter: '2035-01-01T00:00:00.000Z' }],
          },
        }),
        view('store-043', { state: 'Disconnected', lastSeen: '2026-11-29T09:00:00.000Z' }),
      ],
      rollouts: [],
    });
    expect(sample(text, 'edgeadm_hub_cluster_connected{cluster="store-042"}')).toBe(1);
    expect(sample(text, 'edgeadm_hub_cluster_connected{cluster="store-043"}')).toBe(0);
    expect(sample(text, 'edgeadm_hub_cluster_last_seen_seconds{cluster="store-043"}')).toBe(
      seconds('2026-11-29T09:00:00.000Z'),
    );
    expect(sample(text, 'edgeadm_hub_cluster_nodes{cluster="store-042"}')).toBe(3);
    expect(sample(text, 'edgeadm_hub_cluster_nodes_ready{cluster="store-042"}')).toBe(2);
    // No report, no node series: "no nodes" would read as a cluster with none.
    expect(sample(text, 'edgeadm_hub_cluster_nodes{cluster="store-043"}')).toBeUndefined();
    expect(sample(text, 'edgeadm_hub_cluster_held{cluster="store-043"}')).toBe(0);
    expect(sample(text, 'edgeadm_hub_certificate_expiry_seconds{cluster="store-042",kind="cluster-ca"}')).toBe(
      seconds('2035-01-01T00:00:00.000Z'),
    );
    expect(sample(text, 'edgeadm_hub_certificate_expiry_seconds{cluster="store-043",kind="hub-client"}')).toBe(
      seconds('2027-01-01T00:00:00.000Z'),
    );
    expect(text).toMatch(/^# TYPE edgeadm_hub_cluster_connected gauge$/m);
  });

  it('says 1 for a halted rollout and 0 for one that is not', async () => {
    const text = await renderFleetMetrics({
      clusters: [],
      rollouts: [
        { name: 'web', state: 'halted' },
        { name: 'pos', state: 'progressing' },
        { name: 'old', state: 'complete' },
      ],
    });
    expect(sample(text, 'edgeadm_hub_rollout_halted{rollout="web"}')).toBe(1);
    expect(sample(text, 'edgeadm_hub_rollout_halted{rollout="pos"}')).toBe(0);
    expect(sample(text, 'edgeadm_hub_rollout_halted{rollout="old"}')).toBe(0);
  });

  it('keeps nothing between scrapes: a cluster gone from the views has no series left', async () => {
    const both = await renderFleetMetrics({ clusters: [view('store-042'), view('store-043')], rollouts: [] });
    const one = await renderFleetMetrics({ clusters: [view('store-042')], rollouts: [] });
    expect(both).toContain('cluster="store-043"');
    expect(one).not.toContain('cluster="store-043"');
    expect(one).toContain('cluster="store-042"');
  });
});
