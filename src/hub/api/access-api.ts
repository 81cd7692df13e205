/**
 * The operator API's access routes, for hub admins only: hub tokens (which
 * let `register-cloud` register clusters) and hub users (who may call the
 * hub, and reach which clusters). Each can be created, listed without its
 * secret, and deleted: a deleted token registers no more clusters and
 * leaves the discovery document at once; a deleted user's token stops
 * working at the next request. The admin made at the hub's first start is
 * never replaced or deleted here.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseLabelSelector } from '../../kube/label-selector.js';
import type { HubTokenView, HubUserView } from '../contract/views.js';
import { HttpError, readJsonBody, sendJson } from '../http/http-replies.js';
import { formatHubToken, hashUserToken, newHubToken, newUserToken } from '../identity/hub-tokens.js';
import { tokenLabelLimitProblem } from '../identity/token-labels.js';
import { MAX_API_BODY_BYTES, MAX_API_TTL_MS, MAX_HUB_TOKEN_USAGES } from '../limits.js';
import { hubTokenState } from '../store/hub-token-state.js';
import type { HubTokenRecord, UserRecord } from '../store/store.js';
import { decodePathSegment, optionalInteger, requireAdmin } from './api-input.js';
import type { HubContext } from './hub-context.js';

const TOKENS_PATH = '/hub/v1/tokens';
const USERS_PATH = '/hub/v1/users';

function hubEndpoint(context: HubContext): string {
  return new URL(context.advertiseUrl).host;
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

/** A user or group name: no spaces or control characters (they end up in HTTP headers). */
export const SUBJECT_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._@:+-]{0,252}$/;

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

function tokenView(token: HubTokenRecord, now: Date): HubTokenView {
  return {
    id: token.id,
    createdAt: token.createdAt,
    ...(token.expiresAt === undefined ? {} : { expiresAt: token.expiresAt }),
    ...(token.usagesLeft === undefined ? {} : { usagesLeft: token.usagesLeft }),
    ...(token.labels === undefined ? {} : { labels: token.labels }),
    state: hubTokenState(token, now),
  };
}

function userView(user: UserRecord, now: Date): HubUserView {
  const isExpired = user.expiresAt !== undefined && Date.parse(user.expiresAt) <= now.getTime();
  return {
    name: user.name,
    clustersSelector: user.clustersSelector,
    groups: user.groups,
    isAdmin: user.isAdmin,
    createdAt: user.createdAt,
    ...(user.expiresAt === undefined ? {} : { expiresAt: user.expiresAt }),
    state: isExpired ? 'expired' : 'active',
  };
}

/** `DELETE /hub/v1/tokens/ID`. */
async function deleteToken(context: HubContext, res: ServerResponse, id: string): Promise<void> {
  if (!(await context.store.deleteToken(id))) {
    throw new HttpError(404, 'E_HUB_TOKEN_NOT_FOUND', `no hub token with the id "${id}"`);
  }
  context.logger.info(`deleted hub token ${id}`);
  sendJson(res, 200, { id, isDeleted: true });
}

/** `DELETE /hub/v1/users/NAME`: never an admin (the hub would have no one to run it). */
async function deleteUser(context: HubContext, res: ServerResponse, name: string): Promise<void> {
  const user = (await context.store.listUsers()).find((candidate) => candidate.name === name);
  if (user === undefined) throw new HttpError(404, 'E_HUB_USER_NOT_FOUND', `no hub user named "${name}"`);
  if (user.isAdmin) {
    throw new HttpError(409, 'E_HUB_USER_ADMIN', `"${name}" is the hub admin, made at the hub's first start`);
  }
  if (!(await context.store.deleteUser(name))) {
    throw new HttpError(404, 'E_HUB_USER_NOT_FOUND', `no hub user named "${name}"`);
  }
  context.logger.info(`deleted hub user ${name}: their token stops working`);
  sendJson(res, 200, { name, isDeleted: true });
}

/**
 * Serves the token and user routes; false when the path is not one of
 * them. Every one of them is for hub admins.
 */
export async function serveAccessApi(
  context: HubContext,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<boolean> {
  const base = [TOKENS_PATH, USERS_PATH].find((path) => url.pathname === path || url.pathname.startsWith(`${path}/`));
  if (base === undefined) return false;
  const name = decodePathSegment(url.pathname.slice(base.length).replace(/^\//, ''));
  const route = `${req.method} ${base}${name === '' ? '' : '/NAME'}`;
  switch (route) {
    case `POST ${TOKENS_PATH}`:
      await createToken(context, req, res);
      return true;
    case `POST ${USERS_PATH}`:
      await createUser(context, req, res);
      return true;
  }
  await requireAdmin(context, req);
  const now = context.now();
  switch (route) {
    case `GET ${TOKENS_PATH}`:
      sendJson(res, 200, { tokens: (await context.store.listTokens()).map((token) => tokenView(token, now)) });
      return true;
    case `GET ${USERS_PATH}`:
      sendJson(res, 200, { users: (await context.store.listUsers()).map((user) => userView(user, now)) });
      return true;
    case `DELETE ${TOKENS_PATH}/NAME`:
      await deleteToken(context, res, name);
      return true;
    case `DELETE ${USERS_PATH}/NAME`:
      await deleteUser(context, res, name);
      return true;
  }
  throw new HttpError(405, 'E_HUB_METHOD', `${req.method} is not allowed on ${url.pathname}`);
}
