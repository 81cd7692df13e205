/**
 * The clusters a signed-in user may reach, as the web view shows them: the
 * operator API's view of each (cluster-views.ts), read from the view's
 * cached list of the store, with a last-seen time no older than the
 * watcher saw the tunnel open.
 */
import { clustersHeldElsewhere, viewOf } from '../api/cluster-views.js';
import type { HubContext } from '../api/hub-context.js';
import { clusterReach } from '../api/proxy-admission.js';
import type { ClusterView } from '../contract/views.js';
import type { ClusterRecord, UserRecord } from '../store/store.js';
import type { WebState } from './web-state.js';

/**
 * A cluster as the operator API shows it (connected when a tunnel is open
 * here or another replica claims it), with `lastSeen` no older than the
 * last moment the view's watcher saw its tunnel open (the store is written
 * a moment after a disconnect, and a page may ask in between).
 */
export function clusterView(
  context: HubContext,
  state: WebState,
  record: ClusterRecord,
  isElsewhere: boolean,
): ClusterView {
  // Connected as the operator API decides it: a tunnel open here, or another replica's claim.
  const view = viewOf(context, record, isElsewhere);
  const openAt = view.state === 'Disconnected' ? state.watcher.lastOpenAt(record.name) : undefined;
  if (openAt !== undefined && (view.lastSeen === undefined || Date.parse(view.lastSeen) < openAt)) {
    view.lastSeen = new Date(openAt).toISOString();
  }
  return view;
}

/** The clusters a user may reach, as the operator API shows them. */
export async function reachableClusters(
  context: HubContext,
  state: WebState,
  user: UserRecord,
): Promise<ClusterView[]> {
  const mayReach = clusterReach(user);
  const [all, elsewhere] = await Promise.all([state.clusters.list(), clustersHeldElsewhere(context)]);
  return all.filter(mayReach).map((cluster) => clusterView(context, state, cluster, elsewhere.has(cluster.name)));
}
