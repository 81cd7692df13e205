/**
 * The hub's HTTPS routes other than the kube proxy:
 *
 * - `/healthz`, `/readyz`, `/metrics`;
 * - the discovery document (`cluster-info`, signed for every usable hub token);
 * - registration (`POST /hub/v1/register`, hub token) and renewal
 *   (`POST /hub/v1/renew`, the cluster's client certificate);
 * - the operator API (admin bearer token): tokens, clusters, users;
 * - rollouts, cluster holds and properties (any hub user, within their
 *   clusters: rollout-api.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { CLUSTER_INFO_PATH } from '../../trust/cluster-info.js';
import type { HubContext } from './hub-context.js';
import { authenticateUser } from '../identity/authenticate.js';
import { tokenLabelLimitProblem } from '../identity/token-labels.js';
import { hashUserToken, newHubToken, newUserToken, formatHubToken } from '../identity/hub-tokens.js';
import { HttpError, readJsonBody, sendJson } from '../http/http-replies.js';
import { matchesSelector, parseLabelSelector } from '../../kube/label-selector.js';
import { isClusterName } from '../../kube/names.js';
import { MAX_API_BODY_BYTES, MAX_API_TTL_MS, MAX_HUB_TOKEN_USAGES } from '../limits.js';
import { serveRolloutApi } from './rollout-api.js';
import { PEER_REPLICA_PATH, servePeerReplica, serveReplicas } from './replicas-api.js';
import type { ClusterRecord, UserRecord } from '../store/store.js';
import type { ClusterView } from '../contract/views.js';
import { discovery, register, renew } from './registration-api.js';

/** A user or group name: no spaces or control characters (they end up in HTTP headers). */
export const SUBJECT_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._@:+-]{0,252}$/;

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
  return view;
}

async function requireAdmin(context: HubContext, req: IncomingMessage): Promise<UserRecord> {
  const user = await authenticateUser(context, req);
  if (user === undefined) {
    context.metrics.unauthorizedRequests += 1;
    throw new HttpError(401, 'E_HUB_UNAUTHORIZED', 'a valid hub admin token is required');
  }
  if (!user.isAdmin) throw new HttpError(403, 'E_HUB_FORBIDDEN', `user "${user.name}" is not a hub admin`);
  return user;
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

function hubEndpoint(context: HubContext): string {
  return new URL(context.advertiseUrl).host;
}

/**
 * An optional whole number field of an API body, within `[min, max]`. JSON
 * numbers are doubles: `1e308`, `1.5` and `-0.0` all parse, and each would
 * reach a date or the store as something else, so anything that is not a
 * safe integer in range is a 400 here, with the field named.
 */
function optionalInteger(
  body: Record<string, unknown>,
  key: string,
  range: { min: number; max: number },
): number | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < range.min || value > range.max) {
    throw new HttpError(
      400,
      'E_HUB_BAD_REQUEST',
      `${key} must be a whole number from ${range.min} to ${range.max}, not ${JSON.stringify(value)}`,
    );
  }
  return value;
}

/** A token's label limit from a request (`labels`: keys to values or `*`), if it has one. */
function tokenLabelLimitOf(value: unknown): Record<string, string> | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value) || Object.keys(value).length === 0) {
    throw new HttpError(400, 'E_HUB_BAD_REQUEST', 'labels must be a JSON object of label keys to label values or "*"');
  }
  const problem = tokenLabelLimitProblem(value as Record<string, unknown>);
  if (problem !== undefined) throw new HttpError(400, 'E_LABELS_INVALID', `labels: ${problem}`);
  return { ...(value as Record<string, string>) };
}

/**
 * Decodes a percent-encoded path segment. A malformed escape (`%E0%A4%A`)
 * or bytes that are not UTF-8 are the client's mistake: a 400, not a throw.
 */
function decodePathSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(
      400,
      'E_HUB_BAD_REQUEST',
      `the path segment ${JSON.stringify(segment)} is not valid percent-encoded UTF-8`,
    );
  }
}

/** `POST /hub/v1/tokens`. */
async function createToken(context: HubContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  await requireAdmin(context, req);
  const body = await readJsonBody(req, MAX_API_BODY_BYTES);
  const ttlMs = optionalInteger(body, 'ttlMs', { min: 0, max: MAX_API_TTL_MS }) ?? 0;
  const usages = optionalInteger(body, 'usages', { min: 1, max: MAX_HUB_TOKEN_USAGES });
  const labels = tokenLabelLimitOf(body.labels);
  const { record } = newHubToken({ ttlMs, now: context.now(), ...(usages === undefined ? {} : { usages }) });
  if (labels !== undefined) record.labels = labels;
  await context.store.addToken(record);
  context.logger.info(`created hub token ${record.id}`);
  sendJson(res, 201, {
    token: formatHubToken(record),
    id: record.id,
    ...(record.expiresAt === undefined ? {} : { expiresAt: record.expiresAt }),
    ...(record.usagesLeft === undefined ? {} : { usages: record.usagesLeft }),
    ...(record.labels === undefined ? {} : { labels: record.labels }),
    hub: hubEndpoint(context),
    caCertHash: context.pki.caPin,
  });
}

/** `POST /hub/v1/users`. */
async function createUser(context: HubContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  await requireAdmin(context, req);
  const body = await readJsonBody(req, MAX_API_BODY_BYTES);
  const { name, clustersSelector } = body;
  const groups = body.groups ?? [];
  if (typeof name !== 'string' || !SUBJECT_NAME_PATTERN.test(name)) {
    throw new HttpError(400, 'E_HUB_USER_NAME', 'the user name may hold letters, digits and . _ @ : + - only');
  }
  if (typeof clustersSelector !== 'string')
    throw new HttpError(400, 'E_HUB_BAD_REQUEST', 'clustersSelector is missing');
  try {
    parseLabelSelector(clustersSelector);
  } catch (error) {
    throw new HttpError(400, 'E_SELECTOR_INVALID', (error as Error).message);
  }
  if (!Array.isArray(groups) || !groups.every((g) => typeof g === 'string' && SUBJECT_NAME_PATTERN.test(g))) {
    throw new HttpError(400, 'E_HUB_BAD_REQUEST', 'groups must be names of letters, digits and . _ @ : + -');
  }
  const existing = (await context.store.listUsers()).find((user) => user.name === name);
  if (existing?.isAdmin) throw new HttpError(409, 'E_HUB_USER_EXISTS', `"${name}" is the hub admin`);
  const ttlMs = optionalInteger(body, 'ttlMs', { min: 0, max: MAX_API_TTL_MS }) ?? 0;
  const token = newUserToken();
  const now = context.now();
  const user: UserRecord = {
    name,
    tokenHash: hashUserToken(token),
    clustersSelector,
    groups: groups as string[],
    isAdmin: false,
    createdAt: now.toISOString(),
  };
  if (ttlMs > 0) user.expiresAt = new Date(now.getTime() + ttlMs).toISOString();
  await context.store.putUser(user);
  context.logger.info(`created hub user ${name} for clusters "${clustersSelector}"`);
  sendJson(res, 201, {
    name,
    token,
    clustersSelector,
    groups: user.groups,
    ...(user.expiresAt === undefined ? {} : { expiresAt: user.expiresAt }),
    server: context.advertiseUrl,
    caPem: context.pki.ca.certPem,
  });
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
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(context.metrics.render());
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
    case 'POST /hub/v1/tokens':
      await createToken(context, req, res);
      return true;
    case 'POST /hub/v1/users':
      await createUser(context, req, res);
      return true;
    case 'GET /hub/v1/replicas':
      await requireAdmin(context, req);
      await serveReplicas(context, res);
      return true;
    case `GET ${PEER_REPLICA_PATH}`:
      servePeerReplica(context, req, res);
      return true;
  }
  // Rollouts, and the holds and properties of clusters (open to scoped users, within their clusters).
  if (await serveRolloutApi(context, req, res, url, viewOf)) return true;
  if (url.pathname === '/hub/v1/clusters' || url.pathname.startsWith('/hub/v1/clusters/')) {
    await clusters(context, req, res, url);
    return true;
  }
  return false;
}
