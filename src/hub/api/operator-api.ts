/**
 * The hub's HTTPS routes other than the kube proxy:
 *
 * - `/healthz`, `/readyz`, `/metrics` (metrics-api.ts);
 * - the discovery document (`cluster-info`, signed for every usable hub token);
 * - registration (`POST /hub/v1/register`, hub token) and renewal
 *   (`POST /hub/v1/renew`, the cluster's client certificate);
 * - the operator API (admin bearer token): clusters here; tokens and users
 *   in access-api.ts;
 * - rollouts, cluster holds and properties (any hub user, within their
 *   clusters: rollout-api.ts);
 * - the attention list (any hub user, within their clusters: attention-api.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { CLUSTER_INFO_PATH } from '../../trust/cluster-info.js';
import type { HubContext } from './hub-context.js';
import { HttpError, sendJson } from '../http/http-replies.js';
import { matchesSelector, parseLabelSelector } from '../../kube/label-selector.js';
import { isClusterName } from '../../kube/names.js';
import { serveRolloutApi } from './rollout-api.js';
import { PEER_REPLICA_PATH, servePeerReplica, serveReplicas } from './replicas-api.js';
import type { ClusterRecord, UserRecord } from '../store/store.js';
import type { ClusterView } from '../contract/views.js';
import { discovery, register, renew } from './registration-api.js';
import { serveAccessApi } from './access-api.js';
import { serveMetrics } from './metrics-api.js';
import { serveAttentionApi } from './attention-api.js';
import { clusterReach } from './proxy-admission.js';
import { decodePathSegment, requireAdmin } from './api-input.js';

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
  // The health stream's count is the freshest (read every heartbeat); the hello's, of the connection.
  const health = context.health?.get(cluster.name) ?? cluster.health;
  const nodeCount = (isConnected ? health?.nodes?.total : undefined) ?? tunnel?.hello.nodeCount ?? cluster.nodeCount;
  if (nodeCount !== undefined) view.nodeCount = nodeCount;
  if (cluster.hold !== undefined) view.hold = cluster.hold;
  if (cluster.properties !== undefined) view.properties = cluster.properties;
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

/** The clusters `user`'s selector reaches, as shown: one (shared) store read and one read of the claims, whatever their number. */
export async function reachableClusterViews(context: HubContext, user: UserRecord): Promise<ClusterView[]> {
  const mayReach = clusterReach(user);
  const [records, elsewhere] = await Promise.all([
    context.clusterList?.list() ?? context.store.listClusters(),
    clustersHeldElsewhere(context),
  ]);
  return records.filter(mayReach).map((record) => viewOf(context, record, elsewhere.has(record.name)));
}

async function clusters(context: HubContext, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  await requireAdmin(context, req);
  const name = decodePathSegment(url.pathname.slice('/hub/v1/clusters'.length).replace(/^\//, ''));
  if (name === '') {
    if (req.method !== 'GET') throw new HttpError(405, 'E_HUB_METHOD', 'only GET lists clusters');
    let selector;
    try {
      selector = parseLabelSelector(url.searchParams.get('selector') ?? '');
    } catch (error) {
      throw new HttpError(400, 'E_SELECTOR_INVALID', (error as Error).message);
    }
    const all = (await context.store.listClusters()).filter((c) => matchesSelector(selector, c.labels));
    const elsewhere = await clustersHeldElsewhere(context);
    sendJson(res, 200, { clusters: all.map((c) => viewOf(context, c, elsewhere.has(c.name))) });
    return;
  }
  if (!isClusterName(name)) {
    throw new HttpError(
      400,
      'E_HUB_CLUSTER_NAME',
      `${JSON.stringify(name)} is not a cluster name (a DNS label: a-z, 0-9, -; at most 63)`,
    );
  }
  if (req.method === 'GET') {
    const cluster = await context.store.getCluster(name);
    if (!cluster) throw new HttpError(404, 'E_HUB_CLUSTER_NOT_FOUND', `no cluster named "${name}"`);
    sendJson(res, 200, viewOf(context, cluster, await isHeldElsewhere(context, name)));
    return;
  }
  if (req.method === 'DELETE') {
    const removed = await context.store.deleteCluster(name);
    if (!removed) throw new HttpError(404, 'E_HUB_CLUSTER_NOT_FOUND', `no cluster named "${name}"`);
    await context.store.revokeCertificate(removed.certSerial, 'cluster deleted');
    context.closeTunnel(name);
    context.rollouts?.clustersChanged();
    context.logger.info(`deleted cluster ${name}: certificate revoked, tunnel closed`);
    sendJson(res, 200, { name, isDeleted: true });
    return;
  }
  throw new HttpError(405, 'E_HUB_METHOD', `${req.method} is not allowed here`);
}

/**
 * Serves a non-proxy request; returns false when the path is not one of
 * these routes.
 */
export async function serveApi(context: HubContext, req: IncomingMessage, res: ServerResponse): Promise<boolean> {
  let url: URL;
  try {
    url = new URL(req.url ?? '/', 'https://hub.invalid');
  } catch {
    throw new HttpError(400, 'E_HUB_BAD_REQUEST', 'the request target is not a valid path');
  }
  const route = `${req.method} ${url.pathname}`;
  switch (route) {
    case 'GET /healthz':
    case 'GET /livez':
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      return true;
    case 'GET /readyz': {
      // Not ready when the coordination knows the store refuses changes (etcd without quorum):
      // said at once, without waiting for a read to time out; else a read proves the store answers.
      const health = context.coordination?.health() ?? { state: 'ok' };
      if (health.state !== 'ok') {
        sendJson(res, 503, {
          code: 'E_HUB_STORE_UNAVAILABLE',
          message: `the hub's store refuses changes since ${health.since}: ${health.cause}`,
        });
        return true;
      }
      await context.store.listTokens();
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      return true;
    }
    case 'GET /metrics':
      await serveMetrics(context, req, res, reachableClusterViews);
      return true;
    case `GET ${CLUSTER_INFO_PATH}`:
      await discovery(context, res);
      return true;
    case 'POST /hub/v1/register':
      await register(context, req, res);
      return true;
    case 'POST /hub/v1/renew':
      await renew(context, req, res);
      return true;
    case 'GET /hub/v1/replicas':
      await requireAdmin(context, req);
      await serveReplicas(context, res);
      return true;
    case `GET ${PEER_REPLICA_PATH}`:
      servePeerReplica(context, req, res);
      return true;
  }
  // Hub tokens and users (admin only).
  if (await serveAccessApi(context, req, res, url)) return true;
  // Rollouts, and the holds and properties of clusters (open to scoped users, within their clusters).
  if (await serveRolloutApi(context, req, res, url, viewOf)) return true;
  // Which clusters need attention (open to scoped users, within their clusters).
  if (await serveAttentionApi(context, req, res, url, reachableClusterViews)) return true;
  if (url.pathname === '/hub/v1/clusters' || url.pathname.startsWith('/hub/v1/clusters/')) {
    await clusters(context, req, res, url);
    return true;
  }
  return false;
}
