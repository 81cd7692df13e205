/**
 * The fleet's series on the hub's `/metrics` (issue #38): per cluster,
 * whether it is connected, when it was last seen, its nodes and how many
 * are Ready, whether it is held, and when each of its certificates expires;
 * per rollout, whether it is halted. Alert rules name the site from the
 * `cluster` label (assets/prometheus/edgeadm-hub-rules.yaml).
 *
 * Computed at each scrape from what `hub clusters list` shows (the cluster
 * views) and the rollout list, in a registry made for that scrape: nothing
 * is kept between scrapes, so a deleted cluster leaves no series behind,
 * and each caller gets the clusters their own selector reaches (one shared
 * registry filled by prom-client's collect() would need scrapes of
 * different users serialized).
 *
 * Pure: no I/O.
 */
import type { RolloutListItem } from '../../rollout/api.js';
import { MetricsRegistry } from '../../metrics/metrics-registry.js';
import type { CertificateKind, ClusterView } from '../contract/views.js';

/** What one scrape of the fleet reads. */
export interface FleetSnapshot {
  clusters: readonly ClusterView[];
  rollouts: ReadonlyArray<Pick<RolloutListItem, 'name' | 'state'>>;
}

/** One cluster's values as the series show them; absent: not known (never seen, no health report). */
export interface ClusterSample {
  cluster: string;
  isConnected: boolean;
  isHeld: boolean;
  /** Unix seconds. */
  lastSeenSeconds?: number;
  nodes?: { total: number; ready: number };
  /** The earliest expiry (unix seconds) of each kind of certificate. */
  certificateExpirySeconds: Map<CertificateKind, number>;
}

function unixSeconds(iso: string | undefined): number | undefined {
  const ms = iso === undefined ? Number.NaN : Date.parse(iso);
  return Number.isNaN(ms) ? undefined : ms / 1000;
}

/**
 * A cluster's sample. Its agent's client certificate counts as a
 * `hub-client` certificate as the hub recorded it (`certNotAfter`) and as
 * the agent reported it, whichever expires first: a renewal the hub signed
 * but the agent never stored leaves the agent with the older one.
 */
export function clusterSample(view: ClusterView): ClusterSample {
  const sample: ClusterSample = {
    cluster: view.name,
    isConnected: view.state === 'Connected',
    isHeld: view.hold !== undefined,
    certificateExpirySeconds: new Map(),
  };
  const lastSeen = unixSeconds(view.lastSeen);
  if (lastSeen !== undefined) sample.lastSeenSeconds = lastSeen;
  const nodes = view.health?.nodes;
  if (nodes !== undefined) sample.nodes = { total: nodes.total, ready: nodes.ready };
  const certificates = [
    { kind: 'hub-client' as const, notAfter: view.certNotAfter },
    ...(view.health?.certificates ?? []),
  ];
  for (const { kind, notAfter } of certificates) {
    const seconds = unixSeconds(notAfter);
    const earliest = sample.certificateExpirySeconds.get(kind);
    if (seconds !== undefined && (earliest === undefined || seconds < earliest)) {
      sample.certificateExpirySeconds.set(kind, seconds);
    }
  }
  return sample;
}

/** The fleet's series in the text exposition format. */
export function renderFleetMetrics(snapshot: FleetSnapshot): Promise<string> {
  const registry = new MetricsRegistry();
  const perCluster = (name: string, help: string) => registry.gauge({ name, help, labelNames: ['cluster'] });
  const connected = perCluster(
    'edgeadm_hub_cluster_connected',
    "Whether the cluster's agent has a tunnel open (1) or not (0).",
  );
  const lastSeen = perCluster(
    'edgeadm_hub_cluster_last_seen_seconds',
    'When the cluster was last connected (unix seconds; now while it is connected).',
  );
  const nodes = perCluster('edgeadm_hub_cluster_nodes', "The cluster's nodes, as its agent last reported them.");
  const nodesReady = perCluster(
    'edgeadm_hub_cluster_nodes_ready',
    "The cluster's nodes that were Ready in that report.",
  );
  const held = perCluster('edgeadm_hub_cluster_held', "Whether an operator's hold keeps rollouts off the cluster (1).");
  const expiry = registry.gauge({
    name: 'edgeadm_hub_certificate_expiry_seconds',
    help: "When the cluster's certificate of this kind expires (unix seconds, the earliest if several).",
    labelNames: ['cluster', 'kind'],
  });
  const halted = registry.gauge({
    name: 'edgeadm_hub_rollout_halted',
    help: 'Whether the rollout is halted (1): it starts no wave until resumed.',
    labelNames: ['rollout'],
  });
  for (const view of snapshot.clusters) {
    const sample = clusterSample(view);
    const labels = { cluster: sample.cluster };
    connected.set(labels, sample.isConnected ? 1 : 0);
    held.set(labels, sample.isHeld ? 1 : 0);
    if (sample.lastSeenSeconds !== undefined) lastSeen.set(labels, sample.lastSeenSeconds);
    if (sample.nodes !== undefined) {
      nodes.set(labels, sample.nodes.total);
      nodesReady.set(labels, sample.nodes.ready);
    }
    for (const [kind, seconds] of sample.certificateExpirySeconds)
      expiry.set({ cluster: sample.cluster, kind }, seconds);
  }
  for (const rollout of snapshot.rollouts) halted.set({ rollout: rollout.name }, rollout.state === 'halted' ? 1 : 0);
  return registry.render();
}
