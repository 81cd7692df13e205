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
 *   `POST /.edgeadm/refuse` with the reason.
 * - Plain kube requests: method, path and headers as the user sent them,
 *   minus credentials and hop-by-hop headers, plus the identity headers.
 * - Upgrades (exec, attach, port-forward): a `CONNECT` stream; the original
 *   HTTP/1.1 request line and headers travel in {@link REQUEST_HEADER}, and
 *   after the agent answers 200 the stream carries raw bytes both ways.
 *
 * Pure functions only: encoding and filtering, tested without sockets.
 */

/** Path prefix of the control streams: never forwarded to the API server. */
export const CONTROL_PATH_PREFIX = '/.edgeadm/';
/** The hub asks who the agent is. */
export const HELLO_PATH = '/.edgeadm/hello';
/** The hub accepts the agent. */
export const WELCOME_PATH = '/.edgeadm/welcome';
/** The hub refuses the agent; the body says why. */
export const REFUSE_PATH = '/.edgeadm/refuse';
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
 * every user request: the user's credentials stay at the hub, and a user
 * cannot choose whom the agent impersonates.
 */
const IDENTITY_HEADER = /^(authorization|proxy-authorization|cookie|impersonate-.*|edgeadm-.*)$/i;

/** True for a header that must not cross the tunnel. */
export function isHopByHopHeader(name: string): boolean {
  return HOP_BY_HOP.has(name.toLowerCase()) || name.startsWith(':');
}

/** True for a header that carries the caller's identity or credentials. */
export function isIdentityHeader(name: string): boolean {
  return IDENTITY_HEADER.test(name);
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
    const lower = name.toLowerCase();
    if (isHopByHopHeader(lower) || isIdentityHeader(lower)) continue;
    out[lower] = value;
  }
  return out;
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

/**
 * Reads the identity the hub set on a stream; undefined when it is missing
 * or malformed, in which case the agent refuses the stream rather than act
 * as itself.
 */
export function readIdentity(headers: Readonly<Record<string, unknown>>): StreamIdentity | undefined {
  const user = headers[USER_HEADER];
  const groupsText = headers[GROUPS_HEADER];
  if (typeof user !== 'string' || user === '' || typeof groupsText !== 'string') return undefined;
  try {
    const groups = JSON.parse(groupsText) as unknown;
    if (!Array.isArray(groups) || !groups.every((g) => typeof g === 'string')) return undefined;
    return { user, groups: groups as string[] };
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
 */
export function renderUpgradeRequestHead(options: {
  request: UpgradeRequest;
  host: string;
  authorization?: string;
  identity: StreamIdentity;
}): string {
  const lines = [`${options.request.method} ${options.request.path} HTTP/1.1`, `Host: ${options.host}`];
  for (const [name, value] of options.request.headers) {
    const lower = name.toLowerCase();
    if (lower === 'host' || isIdentityHeader(lower)) continue;
    lines.push(`${name}: ${value}`);
  }
  if (options.authorization !== undefined) lines.push(`Authorization: ${options.authorization}`);
  lines.push(`Impersonate-User: ${options.identity.user}`);
  for (const group of options.identity.groups) lines.push(`Impersonate-Group: ${group}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}
