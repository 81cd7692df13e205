/**
 * The operator API for rollouts and cluster holds (the routes of
 * src/rollout/api.ts). Any hub user may call it with their bearer token;
 * what they see and change is bounded as the kube proxy bounds them: an
 * admin sees every rollout, a scoped user only rollouts whose placement
 * stays within their clusters selector (placementOutsideScope decides). Who
 * may change a rollout, hold a cluster or set its properties, and as whom
 * the resulting writes run, is rollout-permissions.ts: owners and admins
 * change rollouts, admins alone hold clusters and set properties. A rollout
 * the user may not see is answered 404, as if it did not exist.
 *
 * Bodies are bounded ({@link MAX_ROLLOUT_BODY_BYTES} for a Rollout, the
 * operator API's own bound for the rest), and every mistake in a Rollout is
 * a 400 naming the field (parseRollout's message).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { EdgeadmError } from '../../errors.js';
import { parseLabelSelector } from '../../kube/label-selector.js';
import { STATUS_LONG_POLL_MS, type DryRunPlan } from '../../rollout/api.js';
import { placedClusters, wavesOf } from '../../rollout/placement.js';
import { renderCopy } from '../../rollout/render.js';
import { parseRollout, type RolloutSpec } from '../../rollout/spec.js';
import type { HubContext } from './hub-context.js';
import { requireUser } from './api-input.js';
import { HttpError, readJsonBody, sendJson } from '../http/http-replies.js';
import {
  MAX_API_BODY_BYTES,
  MAX_CLUSTER_PROPERTIES,
  MAX_CLUSTER_PROPERTY_VALUE_LENGTH,
  MAX_DRY_RUN_OBJECT_BYTES,
  MAX_ROLLOUT_BODY_BYTES,
} from '../limits.js';
import type { RolloutController } from '../rollouts/rollout-controller.js';
import type { RolloutActor } from '../rollouts/rollout-permissions.js';
import { refuseClusterFactChange, rolloutActorOf } from '../rollouts/rollout-permissions.js';
import type { ClusterRecord } from '../store/store.js';
import { changeClusterHold, holdReasonOf, reachableCluster } from './cluster-holds.js';

const ROLLOUTS_PREFIX = '/hub/v1/rollouts';
const ROLLOUT_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** A property key: what `${property:KEY}` can name (no `|` or `}`), as a label key is spelled. */
const PROPERTY_KEY = /^[A-Za-z0-9]([A-Za-z0-9._/-]{0,252})$/;

/** Renders a cluster for the operator API (operator-api.ts's view, passed in to keep one definition). */
export type ClusterViewer = (context: HubContext, cluster: ClusterRecord) => unknown;

function controllerOf(context: HubContext): RolloutController {
  if (context.rollouts === undefined) {
    // A replica of several that does not lead runs no rollout controller: say where it runs.
    const message =
      context.coordination === undefined
        ? 'this hub does not run rollouts'
        : `hub replica ${context.coordination.self.id} does not run the rollout controller; another replica leads ` +
          '(see "edgeadm hub replicas list") and serves rollouts at its address';
    throw new HttpError(503, 'E_HUB_ROLLOUTS_UNAVAILABLE', message);
  }
  return context.rollouts;
}

function rolloutName(segment: string): string {
  let name: string;
  try {
    name = decodeURIComponent(segment);
  } catch {
    name = segment;
  }
  if (name.length > 63 || !ROLLOUT_NAME.test(name)) {
    throw new HttpError(
      400,
      'E_ROLLOUT_NAME',
      `${JSON.stringify(name)} is not a rollout name (a DNS label: a-z, 0-9, -; at most 63)`,
    );
  }
  return name;
}

/** Parses a Rollout body, naming the field of any mistake. */
function parseBody(body: unknown, name: string): RolloutSpec {
  let spec: RolloutSpec;
  try {
    spec = parseRollout(body);
  } catch (error) {
    if (error instanceof EdgeadmError) throw new HttpError(400, error.code, error.message);
    throw error;
  }
  if (spec.name !== name) {
    throw new HttpError(
      400,
      'E_ROLLOUT_INVALID',
      `Rollout metadata.name: "${spec.name}" does not match the name in the path ("${name}")`,
    );
  }
  return spec;
}

/** The dry run's plan: the waves and each placed cluster's rendered copy, nothing stored. */
function dryRunPlan(
  controller: RolloutController,
  spec: RolloutSpec,
  actor: RolloutActor,
  revision: number,
): DryRunPlan {
  const observed = controller.observedClusters();
  const placed = placedClusters(spec.placement, observed, parseLabelSelector(actor.clustersSelector));
  const byName = new Map(observed.map((cluster) => [cluster.name, cluster]));
  let budget = MAX_DRY_RUN_OBJECT_BYTES;
  const copies = placed.map((cluster) => {
    const rendered = renderCopy(spec, revision, byName.get(cluster)!);
    if (!rendered.ok) return { cluster, error: `${rendered.failure.field}: ${rendered.failure.message}` };
    const size = Buffer.byteLength(JSON.stringify(rendered.copy.objects));
    if (size > budget) return { cluster, revision: rendered.copy.revision };
    budget -= size;
    return { cluster, revision: rendered.copy.revision, objects: rendered.copy.objects };
  });
  return { waves: wavesOf(spec.strategy, placed), copies };
}

/** `PUT /hub/v1/rollouts/NAME`. */
async function applyRollout(
  context: HubContext,
  req: IncomingMessage,
  res: ServerResponse,
  name: string,
  url: URL,
): Promise<void> {
  const user = await requireUser(context, req);
  const controller = controllerOf(context);
  const body = await readJsonBody(req, MAX_ROLLOUT_BODY_BYTES);
  const spec = parseBody(body, name);
  const actor = rolloutActorOf(user);
  if (!user.isAdmin) {
    const reason = controller.outsideScope(spec, user.clustersSelector);
    if (reason !== undefined)
      throw new HttpError(403, 'E_HUB_FORBIDDEN', `user "${user.name}" cannot apply: ${reason}`);
  }
  if (url.searchParams.get('dryRun') === 'true') {
    const preview = controller.preview(body, spec, actor);
    sendJson(res, 200, { ...preview, dryRun: dryRunPlan(controller, spec, actor, preview.revision) });
    return;
  }
  const result = await controller.apply(body, spec, actor);
  sendJson(res, result.isCreated ? 201 : 200, result);
}

/** `GET /hub/v1/rollouts/NAME`, a long poll with `waitForChangeFrom`. */
async function rolloutStatus(
  context: HubContext,
  req: IncomingMessage,
  res: ServerResponse,
  name: string,
  url: URL,
): Promise<void> {
  const actor = rolloutActorOf(await requireUser(context, req));
  const controller = controllerOf(context);
  const withClusters = url.searchParams.get('clusters') === 'true';
  const first = controller.status(name, actor, withClusters);
  const from = url.searchParams.get('waitForChangeFrom');
  if (from !== null) {
    const version = Number(from);
    if (!/^\d{1,15}$/.test(from) || !Number.isSafeInteger(version)) {
      throw new HttpError(400, 'E_HUB_BAD_REQUEST', `waitForChangeFrom must be a status version (a whole number)`);
    }
    if (version === first.statusVersion) {
      const gone = new AbortController();
      res.once('close', () => gone.abort());
      await controller.waitForChange(name, version, STATUS_LONG_POLL_MS, gone.signal);
      if (gone.signal.aborted) return;
      sendJson(res, 200, controller.status(name, actor, withClusters));
      return;
    }
  }
  sendJson(res, 200, first);
}

async function serveRollouts(context: HubContext, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const rest = url.pathname.slice(ROLLOUTS_PREFIX.length).replace(/^\//, '');
  const method = req.method ?? 'GET';
  if (rest === '') {
    if (method !== 'GET') throw new HttpError(405, 'E_HUB_METHOD', 'only GET lists rollouts');
    const actor = rolloutActorOf(await requireUser(context, req));
    const controller = controllerOf(context);
    sendJson(res, 200, { rollouts: controller.list(actor), quarantined: controller.quarantined(actor) });
    return;
  }
  const [segment = '', action, ...extra] = rest.split('/');
  const name = rolloutName(segment);
  if (extra.length > 0) throw new HttpError(404, 'E_HUB_NOT_FOUND', `${url.pathname} is not served by the hub`);
  if (action === undefined) {
    if (method === 'PUT') return applyRollout(context, req, res, name, url);
    if (method === 'GET') return rolloutStatus(context, req, res, name, url);
    if (method === 'DELETE') {
      const actor = rolloutActorOf(await requireUser(context, req));
      sendJson(res, 200, await controllerOf(context).delete(name, actor));
      return;
    }
    throw new HttpError(405, 'E_HUB_METHOD', `${method} is not allowed on a rollout`);
  }
  if (action === 'document' && method === 'GET') {
    const actor = rolloutActorOf(await requireUser(context, req));
    sendJson(res, 200, await controllerOf(context).document(name, actor));
    return;
  }
  if ((action === 'pause' || action === 'resume' || action === 'abort' || action === 'undo') && method === 'POST') {
    const actor = rolloutActorOf(await requireUser(context, req));
    const controller = controllerOf(context);
    const view = action === 'undo' ? await controller.undo(name, actor) : await controller.command(name, action, actor);
    sendJson(res, 200, view);
    return;
  }
  throw new HttpError(404, 'E_HUB_NOT_FOUND', `${method} ${url.pathname} is not served by the hub`);
}

function propertiesOf(body: Record<string, unknown>): Record<string, string> {
  const value = body['properties'];
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new HttpError(400, 'E_HUB_BAD_REQUEST', 'properties must be a JSON object of names to string values');
  }
  const entries = Object.entries(value);
  if (entries.length > MAX_CLUSTER_PROPERTIES) {
    throw new HttpError(400, 'E_HUB_BAD_REQUEST', `properties: at most ${MAX_CLUSTER_PROPERTIES} per cluster`);
  }
  for (const [key, item] of entries) {
    if (!PROPERTY_KEY.test(key)) {
      throw new HttpError(
        400,
        'E_HUB_BAD_REQUEST',
        `properties.${key}: a property name holds letters, digits and . _ / - (at most 253)`,
      );
    }
    if (typeof item !== 'string' || item.length > MAX_CLUSTER_PROPERTY_VALUE_LENGTH) {
      throw new HttpError(
        400,
        'E_HUB_BAD_REQUEST',
        `properties.${key}: must be a string of at most ${MAX_CLUSTER_PROPERTY_VALUE_LENGTH} characters`,
      );
    }
  }
  return Object.fromEntries(entries);
}

/** `PUT|DELETE /hub/v1/clusters/NAME/hold`, `PUT /hub/v1/clusters/NAME/properties`. */
async function serveClusterFacts(
  context: HubContext,
  req: IncomingMessage,
  res: ServerResponse,
  name: string,
  fact: 'hold' | 'properties',
  clusterView: ClusterViewer,
): Promise<void> {
  const method = req.method ?? 'GET';
  const isAllowed = fact === 'hold' ? method === 'PUT' || method === 'DELETE' : method === 'PUT';
  if (!isAllowed) throw new HttpError(405, 'E_HUB_METHOD', `${method} is not allowed on a cluster's ${fact}`);
  const user = await requireUser(context, req);
  const body = method === 'PUT' ? await readJsonBody(req, MAX_API_BODY_BYTES) : {};
  let updated: ClusterRecord;
  if (fact === 'hold') {
    updated = await changeClusterHold(context, user, name, method === 'PUT' ? holdReasonOf(body['reason']) : undefined);
  } else {
    const cluster = await reachableCluster(context, user, name);
    const refusal = refuseClusterFactChange(rolloutActorOf(user), fact);
    if (refusal !== undefined) throw new HttpError(403, 'E_HUB_FORBIDDEN', refusal);
    await context.store.setClusterProperties(cluster.name, propertiesOf(body));
    context.logger.info(`cluster ${cluster.name}: properties set by ${user.name}`);
    context.rollouts?.clustersChanged();
    const stored = await context.store.getCluster(cluster.name);
    if (stored === undefined) throw new HttpError(404, 'E_HUB_CLUSTER_NOT_FOUND', `no cluster named "${name}"`);
    updated = stored;
  }
  sendJson(res, 200, clusterView(context, updated));
}

/**
 * Serves a rollout or cluster-hold route; returns false when the path is
 * not one of them.
 */
export async function serveRolloutApi(
  context: HubContext,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  clusterView: ClusterViewer,
): Promise<boolean> {
  if (url.pathname === ROLLOUTS_PREFIX || url.pathname.startsWith(`${ROLLOUTS_PREFIX}/`)) {
    await serveRollouts(context, req, res, url);
    return true;
  }
  const fact = /^\/hub\/v1\/clusters\/([^/]+)\/(hold|properties)$/.exec(url.pathname);
  if (fact === null) return false;
  let name: string;
  try {
    name = decodeURIComponent(fact[1] as string);
  } catch {
    throw new HttpError(400, 'E_HUB_BAD_REQUEST', `the cluster name in ${url.pathname} is not valid percent-encoding`);
  }
  await serveClusterFacts(context, req, res, name, fact[2] as 'hold' | 'properties', clusterView);
  return true;
}
