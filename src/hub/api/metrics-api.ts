/**
 * `GET /metrics`. The hub's own metrics go to anyone who reaches its port,
 * as they always have. The fleet's series (fleet-metrics.ts) go only to a
 * hub user, for the clusters their selector reaches and the rollouts they
 * may see: the port faces the agents' internet, and the names of every
 * site, which ones are offline and when their certificates expire are not
 * for whoever finds it. A request with a token that is no user's is a 401,
 * so a Prometheus with a stale token is told, not silently shown less.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { METRICS_CONTENT_TYPE } from '../../metrics/metrics-registry.js';
import { renderFleetMetrics, type FleetSnapshot } from '../metrics/fleet-metrics.js';
import { rolloutActorOf } from '../rollouts/rollout-permissions.js';
import type { ClusterView } from '../contract/views.js';
import type { UserRecord } from '../store/store.js';
import { requireUser } from './api-input.js';
import type { HubContext } from './hub-context.js';

/** The clusters a user reaches, as `hub clusters list` shows them (operator-api.ts's, passed in to keep one definition). */
export type ReachableClusterViews = (context: HubContext, user: UserRecord) => Promise<ClusterView[]>;

/**
 * What `user` is shown of the fleet: the clusters they reach and the
 * rollouts they may see (none on a replica that does not run the rollout
 * controller: the leader's scrape has them).
 */
export async function fleetSnapshotFor(
  context: HubContext,
  user: UserRecord,
  clusterViews: ReachableClusterViews,
): Promise<FleetSnapshot> {
  return {
    clusters: await clusterViews(context, user),
    rollouts: context.rollouts?.list(rolloutActorOf(user)) ?? [],
  };
}

/** Answers `GET /metrics`: the hub's own metrics, and the fleet's for a hub user. */
export async function serveMetrics(
  context: HubContext,
  req: IncomingMessage,
  res: ServerResponse,
  clusterViews: ReachableClusterViews,
): Promise<void> {
  const user = req.headers.authorization === undefined ? undefined : await requireUser(context, req);
  const [own, fleet] = await Promise.all([
    context.metrics.render(),
    user === undefined ? '' : fleetSnapshotFor(context, user, clusterViews).then(renderFleetMetrics),
  ]);
  res.writeHead(200, { 'content-type': METRICS_CONTENT_TYPE }).end(own + fleet);
}
