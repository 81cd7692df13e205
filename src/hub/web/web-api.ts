/**
 * The web view's JSON API under `/ui/api/`: sign-in and out, the fleet and
 * its clusters (as the kube proxy would let the user reach them), those
 * that need attention (attention-route.ts), a
 * cluster's page with its nodes read live, rollouts (as the operator API
 * would show them) with pause, resume and abort, and the event stream.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HubContext } from '../api/hub-context.js';
import { authenticateUser, userByTokenHash } from '../identity/authenticate.js';
import { HttpError } from '../http/http-replies.js';
import { clusterReach, mayReachCluster } from '../api/proxy-admission.js';
import { clustersHeldElsewhere, isHeldElsewhere, viewOf } from '../api/operator-api.js';
import type { ClusterView } from '../contract/views.js';
import type { RolloutController } from '../rollouts/rollout-controller.js';
import { refuseRolloutChange, rolloutActorOf } from '../rollouts/rollout-permissions.js';
import type { ClusterRecord, UserRecord } from '../store/store.js';
import { SECURITY_HEADERS } from './assets.js';
import { fleetSummary, parseClusterQuery, queryClusters } from './cluster-query.js';
import { serveEventStream, type FleetChange } from './events.js';
import { MAX_EVENT_STREAMS, MAX_EVENT_STREAMS_PER_SESSION, MAX_EVENT_STREAMS_PER_USER } from './limits.js';
import { readNodes } from './live-read.js';
import { clearedSessionCookie, cookieValue, SESSION_COOKIE, sessionCookie, type WebSession } from './sessions.js';
import { checkCsrf, header, sendWebJson } from './web-request.js';
import { changeClusterHold, holdReasonOf } from '../api/cluster-holds.js';
import type { WebState } from './web-state.js';
import { serveAttention } from './attention-route.js';

/** The path prefix of the view's API. */
export const API_PREFIX = '/ui/api/';

/** The signed-in session and its user, or a 401. */
async function signedIn(
  context: HubContext,
  state: WebState,
  req: IncomingMessage,
): Promise<{ session: WebSession; user: UserRecord }> {
  const session = state.sessions.get(cookieValue(header(req, 'cookie'), SESSION_COOKIE));
  const user = session === undefined ? undefined : await userByTokenHash(context, session.tokenHash);
  if (session === undefined || user === undefined || user.name !== session.userName) {
    context.metrics.unauthorizedRequests.inc();
    throw new HttpError(401, 'E_WEB_UNAUTHORIZED', 'sign in to the hub first (or again: the session has ended)');
  }
  return { session, user };
}

function controllerOf(context: HubContext): RolloutController | undefined {
  return context.rollouts;
}

/**
 * A cluster as the operator API shows it (connected when a tunnel is open
 * here or another replica claims it), with `lastSeen` no older than the
 * last moment the view's watcher saw its tunnel open (the store is written
 * a moment after a disconnect, and a page may ask in between).
 */
function clusterView(context: HubContext, state: WebState, record: ClusterRecord, isElsewhere: boolean): ClusterView {
  // Connected as the operator API decides it: a tunnel open here, or another replica's claim.
  const view = viewOf(context, record, isElsewhere);
  const openAt = view.state === 'Disconnected' ? state.watcher.lastOpenAt(record.name) : undefined;
  if (openAt !== undefined && (view.lastSeen === undefined || Date.parse(view.lastSeen) < openAt)) {
    view.lastSeen = new Date(openAt).toISOString();
  }
  return view;
}

/** The clusters a user may reach, as the operator API shows them. */
async function reachableClusters(context: HubContext, state: WebState, user: UserRecord): Promise<ClusterView[]> {
  const mayReach = clusterReach(user);
  const [all, elsewhere] = await Promise.all([state.clusters.list(), clustersHeldElsewhere(context)]);
  return all.filter(mayReach).map((cluster) => clusterView(context, state, cluster, elsewhere.has(cluster.name)));
}

function sessionView(session: WebSession, user: UserRecord): unknown {
  return {
    user: user.name,
    isAdmin: user.isAdmin,
    clustersSelector: user.clustersSelector,
    csrfToken: session.csrfToken,
    expiresAt: new Date(session.expiresAt).toISOString(),
  };
}

/** `POST|GET|DELETE /ui/api/session`: sign in (bearer token), who am I, sign out. */
async function serveSession(context: HubContext, state: WebState, req: IncomingMessage, res: ServerResponse) {
  const method = req.method ?? 'GET';
  if (method === 'POST') {
    checkCsrf(req, undefined);
    const user = await authenticateUser(context, req);
    if (user === undefined) {
      context.metrics.unauthorizedRequests.inc();
      throw new HttpError(401, 'E_WEB_UNAUTHORIZED', 'that token is not a valid hub user token');
    }
    const { id, session } = state.sessions.create(user);
    context.logger.info(`web view: ${user.name} signed in`);
    sendWebJson(res, 201, sessionView(session, user), {
      'set-cookie': sessionCookie(id, session.expiresAt, context.now().getTime()),
    });
    return;
  }
  if (method === 'GET') {
    const { session, user } = await signedIn(context, state, req);
    sendWebJson(res, 200, sessionView(session, user));
    return;
  }
  if (method === 'DELETE') {
    const { session, user } = await signedIn(context, state, req);
    checkCsrf(req, session);
    state.sessions.delete(session);
    context.logger.info(`web view: ${user.name} signed out`);
    sendWebJson(res, 200, { isSignedOut: true }, { 'set-cookie': clearedSessionCookie() });
    return;
  }
  throw new HttpError(405, 'E_WEB_METHOD', `${method} is not allowed on the session`);
}

const FAILING_FIRST: Record<string, number> = {
  failed: 0,
  'offline-pending': 1,
  held: 2,
  applying: 3,
  progressing: 4,
  waiting: 5,
  ready: 6,
};

/** A rollout's status for the view: per-cluster rows failing first, limited to clusters the user may reach. */
function rolloutView(controller: RolloutController, name: string, user: UserRecord): unknown {
  const status = controller.status(name, rolloutActorOf(user), true);
  const rows = [...(status.clusters ?? [])].sort(
    (a, b) => (FAILING_FIRST[a.phase] ?? 9) - (FAILING_FIRST[b.phase] ?? 9) || (a.cluster < b.cluster ? -1 : 1),
  );
  // Its owner or an admin may pause, resume and abort it (rollout-permissions.ts, the controller's rule).
  const canChange = refuseRolloutChange(rolloutActorOf(user), { name, owner: status.owner }, 'change') === undefined;
  return { ...status, clusters: rows, canChange };
}

/** `/ui/api/clusters/NAME[/nodes]`. */
async function serveCluster(
  context: HubContext,
  state: WebState,
  user: UserRecord,
  res: ServerResponse,
  rest: string[],
) {
  const [encoded = '', sub, ...extra] = rest;
  let name: string;
  try {
    name = decodeURIComponent(encoded);
  } catch {
    throw new HttpError(400, 'E_WEB_BAD_QUERY', 'the cluster name is not valid percent-encoding');
  }
  if (extra.length > 0 || (sub !== undefined && sub !== 'nodes')) {
    throw new HttpError(404, 'E_WEB_NOT_FOUND', 'no such page of a cluster');
  }
  if (sub === 'nodes') {
    sendWebJson(res, 200, await readNodes(context, user, name));
    return;
  }
  const record = await context.store.getCluster(name);
  // As the kube proxy: a cluster outside the user's reach is not told apart from one that does not exist.
  if (record === undefined || !mayReachCluster(user, record)) {
    throw new HttpError(404, 'E_WEB_CLUSTER_NOT_FOUND', `no cluster named "${name}" that you may see`);
  }
  const controller = controllerOf(context);
  const rollouts = [];
  for (const item of controller?.list(rolloutActorOf(user)) ?? []) {
    const row = controller?.status(item.name, rolloutActorOf(user), true).clusters?.find((r) => r.cluster === name);
    if (row !== undefined) {
      rollouts.push({ name: item.name, state: item.state, revision: item.revision, ...row });
    }
  }
  sendWebJson(res, 200, {
    cluster: clusterView(context, state, record, await isHeldElsewhere(context, record.name)),
    rollouts,
    // Whether the page offers Hold and Release (the hub decides again on each).
    mayHold: user.isAdmin,
  });
}

/**
 * `POST /ui/api/clusters/NAME/hold?reason=…` and `…/release`: the cluster
 * page's buttons, for hub admins (as `hub clusters hold`); the reason rides
 * in the query, since no route of the view takes a body.
 */
async function serveHoldChange(
  context: HubContext,
  state: WebState,
  res: ServerResponse,
  user: UserRecord,
  encoded: string,
  reason: string | null,
) {
  let name: string;
  try {
    name = decodeURIComponent(encoded);
  } catch {
    throw new HttpError(400, 'E_WEB_BAD_QUERY', 'the cluster name is not valid percent-encoding');
  }
  const isHold = reason !== null;
  const updated = await changeClusterHold(context, user, name, isHold ? holdReasonOf(reason) : undefined);
  context.logger.info(`web view: ${user.name} ${isHold ? 'held' : 'released'} cluster ${name}`);
  sendWebJson(res, 200, { cluster: clusterView(context, state, updated, await isHeldElsewhere(context, name)) });
}

/** `/ui/api/rollouts[/NAME[/pause|resume|abort]]`. */
async function serveRollouts(
  context: HubContext,
  req: IncomingMessage,
  res: ServerResponse,
  signed: { session: WebSession; user: UserRecord },
  rest: string[],
) {
  const controller = controllerOf(context);
  const method = req.method ?? 'GET';
  const { user } = signed;
  if (rest.length === 0) {
    if (method !== 'GET') throw new HttpError(405, 'E_WEB_METHOD', 'only GET lists rollouts');
    sendWebJson(res, 200, { rollouts: controller?.list(rolloutActorOf(user)) ?? [] });
    return;
  }
  if (controller === undefined) throw new HttpError(404, 'E_ROLLOUT_NOT_FOUND', 'this hub runs no rollouts');
  const [name = '', action, ...extra] = rest;
  if (extra.length > 0) throw new HttpError(404, 'E_WEB_NOT_FOUND', 'no such rollout page');
  if (action === undefined) {
    if (method !== 'GET') throw new HttpError(405, 'E_WEB_METHOD', `${method} is not allowed on a rollout`);
    sendWebJson(res, 200, rolloutView(controller, name, user));
    return;
  }
  if ((action === 'pause' || action === 'resume' || action === 'abort') && method === 'POST') {
    checkCsrf(req, signed.session);
    await controller.command(name, action, rolloutActorOf(user));
    context.logger.info(`web view: ${user.name} ${action}d rollout ${name}`);
    sendWebJson(res, 200, rolloutView(controller, name, user));
    return;
  }
  throw new HttpError(404, 'E_WEB_NOT_FOUND', `${method} ${action} is not served for rollouts`);
}

/** `GET /ui/api/events`: the live-update stream of a session. */
async function serveEvents(
  context: HubContext,
  state: WebState,
  res: ServerResponse,
  signed: { session: WebSession; user: UserRecord },
) {
  const { session, user } = signed;
  const userStreams = state.streamsByUser.get(user.name) ?? 0;
  if (
    session.streams >= MAX_EVENT_STREAMS_PER_SESSION ||
    userStreams >= MAX_EVENT_STREAMS_PER_USER ||
    state.streams >= MAX_EVENT_STREAMS
  ) {
    throw new HttpError(429, 'E_WEB_TOO_MANY_STREAMS', 'too many live-update streams are open; close a tab');
  }
  session.streams += 1;
  state.streams += 1;
  state.streamsByUser.set(user.name, userStreams + 1);
  const scope = async (change: FleetChange): Promise<FleetChange> => {
    const clusters = [];
    for (const item of change.clusters) {
      const record = await context.store.getCluster(item.name);
      if (record !== undefined && mayReachCluster(user, record)) clusters.push(item);
    }
    const visible = new Set((controllerOf(context)?.list(rolloutActorOf(user)) ?? []).map((item) => item.name));
    // A deleted rollout is no longer listed; its name is passed on only to admins, who could see every rollout.
    const rollouts = change.rollouts.filter((name) => visible.has(name) || user.isAdmin);
    return { clusters, rollouts };
  };
  serveEventStream({
    res,
    watcher: state.watcher,
    headers: SECURITY_HEADERS,
    isSessionLive: () => state.sessions.isLive(session),
    scope,
    onClose: () => {
      session.streams -= 1;
      state.streams -= 1;
      const left = (state.streamsByUser.get(user.name) ?? 1) - 1;
      if (left > 0) state.streamsByUser.set(user.name, left);
      else state.streamsByUser.delete(user.name);
    },
  });
}

/** Serves a request under `/ui/api/`. */
export async function serveApiRoute(context: HubContext, state: WebState, req: IncomingMessage, res: ServerResponse) {
  const url = new URL(req.url ?? '/', 'https://hub.invalid');
  const parts = url.pathname
    .slice(API_PREFIX.length)
    .split('/')
    .filter((part) => part !== '');
  const [resource, ...rest] = parts;
  if (resource === 'session' && rest.length === 0) {
    await serveSession(context, state, req, res);
    return;
  }
  const signed = await signedIn(context, state, req);
  const method = req.method ?? 'GET';
  switch (resource) {
    case 'fleet':
      if (method !== 'GET') throw new HttpError(405, 'E_WEB_METHOD', 'only GET reads the fleet');
      sendWebJson(
        res,
        200,
        fleetSummary(await reachableClusters(context, state, signed.user), context.now().getTime()),
      );
      return;
    case 'clusters':
      if (method === 'POST' && rest.length === 2 && (rest[1] === 'hold' || rest[1] === 'release')) {
        checkCsrf(req, signed.session);
        await serveHoldChange(context, state, res, signed.user, rest[0] ?? '', url.searchParams.get('reason'));
        return;
      }
      if (method !== 'GET') throw new HttpError(405, 'E_WEB_METHOD', 'only GET reads clusters');
      if (rest.length === 0) {
        const query = parseClusterQuery(url.searchParams);
        const clusters = await reachableClusters(context, state, signed.user);
        sendWebJson(res, 200, queryClusters(clusters, query, context.now().getTime()));
        return;
      }
      await serveCluster(context, state, signed.user, res, rest);
      return;
    case 'attention':
      if (rest.length > 0) throw new HttpError(404, 'E_WEB_NOT_FOUND', `${url.pathname} is not part of the list`);
      if (method !== 'GET') throw new HttpError(405, 'E_WEB_METHOD', 'only GET reads the attention list');
      serveAttention(context, res, url.searchParams, {
        user: signed.user,
        clusters: await reachableClusters(context, state, signed.user),
      });
      return;
    case 'rollouts':
      await serveRollouts(context, req, res, signed, rest);
      return;
    case 'events':
      if (method !== 'GET' || rest.length > 0) throw new HttpError(404, 'E_WEB_NOT_FOUND', 'no such stream');
      await serveEvents(context, state, res, signed);
      return;
    default:
      throw new HttpError(404, 'E_WEB_NOT_FOUND', `${url.pathname} is not part of the web view's API`);
  }
}
