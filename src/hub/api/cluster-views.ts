/**
 * A registered cluster as the operator API and the web view show it: the
 * store's record, connected when a tunnel is open here or another replica
 * claims it, and with the health its agent last reported.
 */
import type { ClusterView } from '../contract/views.js';
import type { ClusterRecord } from '../store/store.js';
import type { HubContext } from './hub-context.js';

/**
 * A cluster as shown. Connected when this replica holds its open tunnel, or
 * when `isHeldElsewhere` (another replica's claim): liveness is never
 * written to the store, so a connected cluster is shown as seen now.
 */
export function viewOf(context: HubContext, cluster: ClusterRecord, isHeldElsewhere = false): ClusterView {
  const tunnel = context.tunnels.get(cluster.name);
  const isConnected = tunnel?.isOpen === true || isHeldElsewhere;
  const view: ClusterView = {
    name: cluster.name,
    labels: cluster.labels,
    state: isConnected ? 'Connected' : 'Disconnected',
    registeredAt: cluster.registeredAt,
    certNotAfter: cluster.certNotAfter,
  };
  const lastSeen = isConnected ? new Date().toISOString() : cluster.lastSeen;
  if (lastSeen !== undefined) view.lastSeen = lastSeen;
  const version = tunnel?.hello.kubernetesVersion ?? cluster.kubernetesVersion;
  if (version !== undefined) view.kubernetesVersion = version;
  const nodeCount = tunnel?.hello.nodeCount ?? cluster.nodeCount;
  if (nodeCount !== undefined) view.nodeCount = nodeCount;
  if (cluster.hold !== undefined) view.hold = cluster.hold;
  if (cluster.properties !== undefined) view.properties = cluster.properties;
  const health = context.clusterHealth?.get(cluster.name);
  if (health !== undefined) view.health = health;
  return view;
}

/**
 * Whether another replica holds the cluster's tunnel (its claim). Asked only
 * for clusters whose tunnel is not open here; a single replica answers from
 * memory.
 */
export async function isHeldElsewhere(context: HubContext, cluster: string): Promise<boolean> {
  const coordination = context.coordination;
  if (coordination === undefined || context.tunnels.get(cluster)?.isOpen === true) return false;
  const holder = await coordination.tunnelHolder(cluster);
  return holder !== undefined && holder.id !== coordination.self.id;
}

/**
 * The clusters whose tunnels another live replica holds, for a list of many
 * clusters: two reads of the coordination (the claims and the live replicas),
 * whatever the number of clusters. Asking {@link isHeldElsewhere} per cluster
 * costs two store reads each, which at 10,000 clusters overran the store's
 * read deadline and failed the whole list. A single replica answers from
 * memory (nothing is held elsewhere).
 */
export async function clustersHeldElsewhere(context: HubContext): Promise<ReadonlySet<string>> {
  const coordination = context.coordination;
  if (coordination === undefined) return new Set();
  const [claims, replicas] = await Promise.all([coordination.listClaims(), coordination.listReplicas()]);
  const live = new Set(replicas.map((replica) => replica.id));
  const elsewhere = new Set<string>();
  for (const [cluster, holder] of claims) {
    if (holder !== coordination.self.id && live.has(holder) && context.tunnels.get(cluster)?.isOpen !== true) {
      elsewhere.add(cluster);
    }
  }
  return elsewhere;
}
