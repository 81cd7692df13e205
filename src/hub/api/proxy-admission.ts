/**
 * Who may reach which cluster through the hub, and where their request
 * goes: the user's clusters selector against the cluster's labels (the one
 * rule, for the kube proxy and the web view's live reads), then the tunnel
 * this replica holds, or the replica that holds it. A request another
 * replica forwarded is admitted only from a replica certificate.
 */
import type { IncomingMessage } from 'node:http';
import type { HubTunnel } from '../../tunnel/hub-tunnel.js';
import { type StreamIdentity } from '../../tunnel/protocol.js';
import type { HubContext } from './hub-context.js';
import { authenticateUser } from '../identity/authenticate.js';
import { HttpError } from '../http/http-replies.js';
import { matchesSelector, parseLabelSelector } from '../../kube/label-selector.js';
import { HTTP_STREAM_IDLE_TIMEOUT_MS } from '../limits.js';
import type { TLSSocket } from 'node:tls';
import { peerIdentityOf, replicaOfConnection, type PeerForward } from '../replicas/peer-link.js';
import type { UserRecord } from '../store/store.js';
import type { ProxyTarget } from './proxy-target.js';

/** Where an admitted request goes: a tunnel this replica holds, or the replica that holds it. */
export type Admitted = { tunnel: HubTunnel; identity: StreamIdentity } | { forward: PeerForward };

/** The cluster's tunnel on this replica, if open. */
function localTunnel(context: HubContext, cluster: string): HubTunnel | undefined {
  const tunnel = context.tunnels.get(cluster);
  return tunnel?.isOpen ? tunnel : undefined;
}

/**
 * Admits a request another replica forwarded: only a replica certificate
 * may send one, and only to the replica holding the tunnel (never forwarded
 * again). What is trusted and why: peer-link.ts.
 */
async function admitForwarded(
  context: HubContext,
  req: IncomingMessage,
  target: { cluster: string },
): Promise<Admitted> {
  const replica = replicaOfConnection(req.socket as TLSSocket, context.now());
  if (replica === undefined) {
    context.metrics.unauthorizedRequests.inc();
    throw new HttpError(403, 'E_HUB_PEER_FORBIDDEN', 'only hub replicas may use the forwarded path');
  }
  const identity = peerIdentityOf(req);
  if (typeof identity === 'string') throw new HttpError(400, 'E_HUB_PEER_BAD_REQUEST', identity);
  if ((await context.store.getCluster(target.cluster)) === undefined) {
    throw new HttpError(403, 'E_HUB_FORBIDDEN', `cluster "${target.cluster}" is not registered`);
  }
  const tunnel = localTunnel(context, target.cluster);
  if (tunnel === undefined) {
    throw new HttpError(
      503,
      'E_HUB_CLUSTER_DISCONNECTED',
      `cluster "${target.cluster}" is not connected to hub replica ${context.coordination?.self.id ?? ''}`,
    );
  }
  context.logger.debug(`kube proxy: request for ${target.cluster} forwarded by replica ${replica}`);
  return { tunnel, identity };
}

/**
 * Authenticates and authorizes a proxy request, and finds the tunnel: held
 * here, or held by another replica (then the request is forwarded to it).
 *
 * @throws {HttpError} 401 (no or bad credentials), 403 (selector does not
 * match or the cluster does not exist: the answer does not tell which), 503
 * (not connected).
 */
export async function admit(context: HubContext, req: IncomingMessage, target: ProxyTarget): Promise<Admitted> {
  if (target.isForwarded) return admitForwarded(context, req, target);
  const user = await authenticateUser(context, req);
  if (user === undefined) {
    context.metrics.unauthorizedRequests.inc();
    throw new HttpError(401, 'E_HUB_UNAUTHORIZED', 'Unauthorized');
  }
  return admitUser(context, user, target);
}

/**
 * Whether a user may reach a cluster through the hub: their clusters
 * selector matches its labels. The one rule, for the kube proxy and the web
 * view alike.
 */
export function mayReachCluster(user: UserRecord, cluster: { labels: Record<string, string> }): boolean {
  return clusterReach(user)(cluster);
}

/** {@link mayReachCluster} for many clusters: the user's selector parsed once. */
export function clusterReach(user: UserRecord): (cluster: { labels: Record<string, string> }) => boolean {
  const selector = parseLabelSelector(user.clustersSelector);
  return (cluster) => matchesSelector(selector, cluster.labels);
}

/**
 * Authorizes an authenticated user for a cluster and finds its tunnel: the
 * kube proxy's check, also used by the web view's live reads.
 *
 * @throws {HttpError} 403 (selector does not match or the cluster does not
 * exist: the answer does not tell which), 503 (not connected).
 */
export async function admitUser(
  context: HubContext,
  user: UserRecord,
  target: { cluster: string; path?: string },
): Promise<Admitted> {
  const cluster = await context.store.getCluster(target.cluster);
  const isAllowed = cluster !== undefined && mayReachCluster(user, cluster);
  if (!isAllowed) {
    context.logger.info(`kube proxy: user ${user.name} may not reach cluster ${target.cluster}`);
    throw new HttpError(
      403,
      'E_HUB_FORBIDDEN',
      `user "${user.name}" cannot reach cluster "${target.cluster}" through the hub`,
    );
  }
  const identity = { user: user.name, groups: user.groups };
  const tunnel = localTunnel(context, target.cluster);
  if (tunnel !== undefined) return { tunnel, identity };
  const holder = await context.coordination?.tunnelHolder(target.cluster);
  if (
    holder !== undefined &&
    holder.id !== context.coordination?.self.id &&
    context.peerCredentials !== undefined &&
    'path' in target &&
    target.path !== undefined
  ) {
    return {
      forward: {
        holder,
        credentials: context.peerCredentials,
        cluster: target.cluster,
        path: target.path,
        identity,
        idleMs: HTTP_STREAM_IDLE_TIMEOUT_MS,
      },
    };
  }
  throw new HttpError(
    503,
    'E_HUB_CLUSTER_DISCONNECTED',
    `cluster "${target.cluster}" is not connected to the hub (no hub replica holds its tunnel)`,
  );
}
