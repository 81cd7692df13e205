/**
 * What travels over the tunnel, besides HTTP/2 itself.
 *
 * The agent dials the hub (TLS, ALPN {@link TUNNEL_ALPN_PROTOCOL}, client
 * certificate), then the roles reverse: the agent serves HTTP/2 on that
 * socket and the hub is the HTTP/2 client. Each kube request is one stream
 * with its own flow-control window.
 *
 * - Control streams, hub to agent: `GET /.edgeadm/hello` (the agent answers
 *   with the cluster it serves), then `POST /.edgeadm/welcome` or
 *   `POST /.edgeadm/refuse` with the reason; after the welcome, the routes
 *   the agent serves for others (the rollout copies of rollout/wire.ts:
 *   `/.edgeadm/rollout/apply`, `/remove`, `/reports`). A control stream carries no
 *   identity headers; every user stream carries them (the hub drops any the
 *   user sent and sets its own), so the agent tells the two apart by
 *   something no user can forge, never by the path alone: a user's
 *   `/.edgeadm/hello` is an ordinary API path (see {@link controlPathOf}).
 * - Plain kube requests: method, path and headers as the user sent them,
 *   minus credentials, identity claims and hop-by-hop headers, plus the
 *   identity headers. The path is one that `parseApiPath` accepts.
 * - Upgrades (exec, attach, port-forward): a `CONNECT` stream; the original
 *   HTTP/1.1 request line and headers travel in {@link REQUEST_HEADER}, and
 *   after the agent answers 200 the stream carries raw bytes both ways.
 *
 * Pure functions only: encoding and filtering, tested without sockets.
 */
import { parseApiPath } from '../kube/api-path.js';
import { GROUPS_CACHE_MAX_ENTRIES } from './limits.js';

/** Path prefix of the control streams (the hub's kube proxy refuses user paths under it). */
export const CONTROL_PATH_PREFIX = '/.edgeadm/';
/** The hub asks who the agent is. */
export const HELLO_PATH = '/.edgeadm/hello';
/** The hub accepts the agent. */
export const WELCOME_PATH = '/.edgeadm/welcome';
/** The hub refuses the agent; the body says why. */
export const REFUSE_PATH = '/.edgeadm/refuse';
/**
 * The hub asks the agent to move its tunnel to another replica (body
 * `{"to": "https://host:port"}`, a replica's address): to spread the
 * agents over the replicas again after one came back. The agent answers
 * 204, drains this tunnel and dials that replica next if it is one of its
 * own hub addresses (else its next address, as after any closed tunnel).
 */
export const MOVE_PATH = '/.edgeadm/move';

/** A move request's body. */
export interface MoveRequest {
  to: string;
}
/** The `:authority` of upgrade streams (the agent knows its one upstream). */
export const UPGRADE_AUTHORITY = 'kube-apiserver.edgeadm.invalid';

/** The user the agent impersonates for this stream. Set only by the hub. */
export const USER_HEADER = 'edgeadm-impersonate-user';
/** The groups the agent impersonates, as a JSON array. Set only by the hub. */
export const GROUPS_HEADER = 'edgeadm-impersonate-groups';
/** The encoded HTTP/1.1 request of an upgrade stream. */
export const REQUEST_HEADER = 'edgeadm-upgrade-request';

/** What an agent says in its hello. */
export interface AgentHello {
  cluster: string;
  kubernetesVersion?: string;
  nodeCount?: number;
}

/** An HTTP/1.1 request head carried by an upgrade stream. */
export interface UpgradeRequest {
  method: string;
  path: string;
  /** Header name and value pairs, in order; repeated names stay repeated. */
  headers: [string, string][];
}

/** The identity a stream acts as downstream. */
export interface StreamIdentity {
  user: string;
  groups: string[];
}

/**
 * Headers that belong to one HTTP/1.1 connection and must not cross the
 * tunnel (RFC 9110 §7.6.1, RFC 9113 §8.2.2), plus `host`, which HTTP/2
 * carries as `:authority` and the agent sets for its own upstream.
 */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
  'http2-settings',
  'host',
]);

/**
 * Request headers that carry or claim identity. The hub drops them from
 * every user request, and the agent drops them again: the user's
 * credentials stay at the hub, and a user cannot choose whom the edge API
 * server takes the request for. Besides credentials and impersonation:
 * the authenticating front-proxy headers (Kubernetes' `--requestheader-*`
 * defaults `X-Remote-User`, `-Group`, `-Uid`, `-Extra-*`, which the API
 * server trusts only from a front-proxy client certificate, but a cluster
 * may be configured otherwise), the names common auth proxies use for the
 * same (`Remote-User`, `X-Forwarded-User`/`-Groups`/`-Email`/`-Access-Token`,
 * `X-Auth-Request-*`, `X-WebAuth-*`), client certificates passed on by a
 * TLS-terminating proxy, and claims about the client's address
 * (`Forwarded`, `X-Forwarded-*`, `X-Real-IP`), which an edge audit log would
 * otherwise record as the user chose.
 */
const IDENTITY_HEADER = new RegExp(
  '^(' +
    [
      'authorization',
      'proxy-authorization',
      'cookie',
      'impersonate-.*',
      'edgeadm-.*',
      'x-remote-.*',
      'remote-user',
      'remote-groups?',
      'x-user(-.*)?',
      'x-groups?',
      'x-email',
      'x-forwarded-.*',
      'forwarded',
      'x-real-ip',
      'x-client-ip',
      'x-auth-request-.*',
      'x-webauth-.*',
      'x-ssl-client-.*',
      'ssl-client-.*',
      'x-client-cert.*',
      'x-client-verify',
    ].join('|') +
    ')$',
  'i',
);

/**
 * The WebSocket subprotocol prefix by which a browser-style client sends a
 * bearer token to the Kubernetes API server (`Sec-WebSocket-Protocol:
 * base64url.bearer.authorization.k8s.io.TOKEN`): a credential in a header
 * that is not an identity header by name.
 */
const BEARER_SUBPROTOCOL_PREFIX = 'base64url.bearer.authorization.k8s.io.';

/** True for a header that must not cross the tunnel. */
export function isHopByHopHeader(name: string): boolean {
  return HOP_BY_HOP.has(name.toLowerCase()) || name.startsWith(':');
}

/** True for a header that carries the caller's identity or credentials. */
export function isIdentityHeader(name: string): boolean {
  return IDENTITY_HEADER.test(name);
}

/**
 * A `Sec-WebSocket-Protocol` value without the bearer-token subprotocols;
 * undefined when nothing is left.
 */
export function withoutCredentialSubprotocols(value: string): string | undefined {
  const kept = value
    .split(',')
    .map((protocol) => protocol.trim())
    .filter((protocol) => protocol !== '' && !protocol.toLowerCase().startsWith(BEARER_SUBPROTOCOL_PREFIX));
  return kept.length === 0 ? undefined : kept.join(', ');
}

/**
 * One request header as it may travel on, or undefined when it must not:
 * credentials, identity claims and hop-by-hop headers are dropped, and
 * bearer tokens are taken out of `Sec-WebSocket-Protocol`.
 */
function forwardableRequestHeader(name: string, value: string): string | undefined {
  const lower = name.toLowerCase();
  if (isHopByHopHeader(lower) || isIdentityHeader(lower)) return undefined;
  return lower === 'sec-websocket-protocol' ? withoutCredentialSubprotocols(value) : value;
}

/**
 * The headers of a user's request that may travel to the agent: no
 * credentials, no identity claims, no hop-by-hop headers.
 */
export function forwardableRequestHeaders(
  headers: Readonly<Record<string, string | string[] | undefined>>,
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const kept = (Array.isArray(value) ? value : [value])
      .map((one) => forwardableRequestHeader(name, one))
      .filter((one): one is string => one !== undefined);
    if (kept.length === 0) continue;
    out[name.toLowerCase()] = Array.isArray(value) ? kept : (kept[0] as string);
  }
  return out;
}

/**
 * {@link forwardableRequestHeaders} as a flat list of lower-case names and
 * values (`[name, value, name, value, …]`, a repeated header once per
 * value), appended to `into`: the form node:http2 and node:http take
 * without copying the headers into objects of their own first, which is a
 * share of the tunnel's CPU per request. The same headers are kept and
 * dropped, by the same rule.
 */
export function forwardableRequestHeaderList(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  into: string[] = [],
): string[] {
  const names = Object.keys(headers);
  for (let i = 0; i < names.length; i += 1) {
    const name = names[i] as string;
    const value = headers[name];
    if (value === undefined) continue;
    const lower = name.toLowerCase();
    if (typeof value === 'string') {
      const kept = forwardableRequestHeader(lower, value);
      if (kept !== undefined) into.push(lower, kept);
      continue;
    }
    for (const one of value) {
      const kept = forwardableRequestHeader(lower, one);
      if (kept !== undefined) into.push(lower, kept);
    }
  }
  return into;
}

/**
 * The headers of an upgrade request that may travel on, as name and value
 * pairs in order (repeated names stay repeated): no credentials, no identity
 * claims, no bearer subprotocol, no `Host` (the agent writes its API
 * server's). The other hop-by-hop headers stay: the request head is written
 * as it came onto a fresh HTTP/1.1 connection, whose upgrade they describe.
 */
export function forwardableUpgradeHeaders(headers: readonly (readonly [string, string])[]): [string, string][] {
  const out: [string, string][] = [];
  for (const [name, value] of headers) {
    const lower = name.toLowerCase();
    if (lower === 'host' || isIdentityHeader(lower)) continue;
    const kept = lower === 'sec-websocket-protocol' ? withoutCredentialSubprotocols(value) : value;
    if (kept !== undefined) out.push([name, kept]);
  }
  return out;
}

/**
 * Which control message a stream from the hub is, or undefined for a user
 * stream. A control stream carries no identity headers at all: the hub's
 * kube proxy sets them on every user stream (after dropping any `edgeadm-*`
 * header the user sent), so a user cannot make a stream without them, at
 * this hub version or an older one. The path and method must also be those
 * of a control message (the tunnel's own, or one of `extraRoutes`, which
 * the agent serves for others); anything else is forwarded (and, lacking an
 * identity, refused) like any user stream.
 */
export function controlPathOf(
  headers: Readonly<Record<string, unknown>>,
  extraRoutes: readonly ControlRouteKey[] = [],
): string | undefined {
  if (headers[USER_HEADER] !== undefined || headers[GROUPS_HEADER] !== undefined) return undefined;
  const method = headers[':method'];
  const path = headers[':path'];
  if (method === 'GET' && path === HELLO_PATH) return HELLO_PATH;
  if (method === 'POST' && (path === WELCOME_PATH || path === REFUSE_PATH || path === MOVE_PATH)) return path;
  const extra = extraRoutes.find((route) => route.method === method && route.path === path);
  return extra?.path;
}

/**
 * A control message served besides the tunnel's own (the rollout copies,
 * `rollout/wire.ts`): one method and one path under {@link CONTROL_PATH_PREFIX},
 * told from user streams by the same rule as the others.
 */
export interface ControlRouteKey {
  method: 'GET' | 'POST';
  path: string;
}

/** Response headers that may travel back through the tunnel and to the user. */
export function forwardableResponseHeaders(
  headers: Readonly<Record<string, string | string[] | number | undefined>>,
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const lower = name.toLowerCase();
    if (isHopByHopHeader(lower)) continue;
    out[lower] = typeof value === 'number' ? String(value) : value;
  }
  return out;
}

/** The identity headers the hub adds to a stream. */
export function identityHeaders(identity: StreamIdentity): Record<string, string> {
  return { [USER_HEADER]: identity.user, [GROUPS_HEADER]: JSON.stringify(identity.groups) };
}

/** True when `text` holds a control character: never part of a user or group name, and would break a request head. */
function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i += 1) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

/**
 * Reads the identity the hub set on a stream; undefined when it is missing
 * or malformed (also a name with a control character, which would split the
 * upgrade request head), in which case the agent refuses the stream rather
 * than act as itself.
 */
export function readIdentity(
  headers: Readonly<Record<string, unknown>>,
  groupsCache?: GroupsCache,
): StreamIdentity | undefined {
  const user = headers[USER_HEADER];
  const groupsText = headers[GROUPS_HEADER];
  if (typeof user !== 'string' || user === '' || typeof groupsText !== 'string') return undefined;
  if (hasControlCharacter(user)) return undefined;
  const known = groupsCache?.get(groupsText);
  if (known !== undefined) return { user, groups: known as string[] };
  const groups = parseGroups(groupsText);
  if (groups === undefined) return undefined;
  if (groupsCache !== undefined) {
    // Bounded: a peer sending ever new group lists costs a parse each, never memory.
    if (groupsCache.size >= GROUPS_CACHE_MAX_ENTRIES) groupsCache.clear();
    groupsCache.set(groupsText, Object.freeze(groups));
  }
  return { user, groups };
}

/**
 * Group lists already read by {@link readIdentity}, by the header's exact
 * text (only lists that passed its checks, frozen): the same few users send
 * the same groups on every request, and parsing and checking them again was
 * a visible share of the agent's CPU per request.
 */
export type GroupsCache = Map<string, readonly string[]>;

/** The groups header's JSON array of names; undefined when it is not one, or a name holds a control character. */
function parseGroups(groupsText: string): string[] | undefined {
  try {
    const groups = JSON.parse(groupsText) as unknown;
    if (!Array.isArray(groups) || !groups.every((g) => typeof g === 'string' && !hasControlCharacter(g))) {
      return undefined;
    }
    return groups as string[];
  } catch {
    return undefined;
  }
}

/** Encodes an upgrade request head into one header value. */
export function encodeUpgradeRequest(request: UpgradeRequest): string {
  return Buffer.from(JSON.stringify(request), 'utf8').toString('base64url');
}

/** Decodes {@link encodeUpgradeRequest}; undefined when the value is not one. */
export function decodeUpgradeRequest(value: unknown): UpgradeRequest | undefined {
  if (typeof value !== 'string') return undefined;
  try {
    const parsed = JSON.parse(Buffer.from(value, 'base64url').toString('utf8')) as Partial<UpgradeRequest>;
    if (typeof parsed.method !== 'string' || !/^[A-Z]+$/.test(parsed.method)) return undefined;
    if (typeof parsed.path !== 'string' || !parsed.path.startsWith('/') || /[\s]/.test(parsed.path)) return undefined;
    if (!Array.isArray(parsed.headers)) return undefined;
    const headers: [string, string][] = [];
    for (const pair of parsed.headers) {
      if (!Array.isArray(pair) || typeof pair[0] !== 'string' || typeof pair[1] !== 'string') return undefined;
      if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(pair[0]) || /[\r\n]/.test(pair[1])) return undefined;
      headers.push([pair[0], pair[1]]);
    }
    return { method: parsed.method, path: parsed.path, headers };
  } catch {
    return undefined;
  }
}

/**
 * The HTTP/1.1 request head the agent writes to its API server for an
 * upgrade: the user's headers without credentials or identity claims, then
 * the agent's own credentials and the impersonation headers.
 *
 * @throws {Error} when the path is not one `parseApiPath` accepts: the head
 * would carry the agent's credentials, so it is never written for a target
 * that some reader could take for another place.
 */
export function renderUpgradeRequestHead(options: {
  request: UpgradeRequest;
  host: string;
  authorization?: string | undefined;
  identity: StreamIdentity;
}): string {
  const checked = parseApiPath(options.request.path);
  if (!checked.ok) throw new Error(`refusing to send an upgrade for an unsafe path: ${checked.message}`);
  const lines = [`${options.request.method} ${checked.value.target} HTTP/1.1`, `Host: ${options.host}`];
  for (const [name, value] of forwardableUpgradeHeaders(options.request.headers)) {
    lines.push(`${name}: ${value}`);
  }
  if (options.authorization !== undefined) lines.push(`Authorization: ${options.authorization}`);
  lines.push(`Impersonate-User: ${options.identity.user}`);
  for (const group of options.identity.groups) lines.push(`Impersonate-Group: ${group}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}
