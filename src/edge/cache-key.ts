/**
 * How a request maps to a cache entry — pure functions, no I/O.
 *
 * An entry is keyed by (identity, representation, path, relevant query).
 * The identity part is a keyed hash (HMAC-SHA256 with a per-install random
 * key kept in the cache directory), so bearer tokens never reach the disk
 * and nobody can precompute which entry belongs to which token.
 *
 * **One path, one key.** The path part of the key is exactly the path sent
 * upstream, as {@link parseApiPath} accepted it: never re-parsed or
 * normalised, so an answer is only ever stored or read under the entry of
 * the path it was the answer to (issue #22: `configmaps\cm1` and
 * `%2e%2e` segments once reached the entry of another path). The one
 * deliberate mapping is the legacy `/watch/` prefix, which names the same
 * list as the path without it.
 *
 * **Query parameters.** Those that select which objects an answer holds
 * (`labelSelector`, `fieldSelector`, `includeObject`) are part of the key.
 * Those that leave a current answer as it is (`timeoutSeconds`, `timeout`,
 * `pretty`, `watch`, `allowWatchBookmarks`, `sendInitialEvents`, and
 * `limit`/`resourceVersion` as clients use them) are not. Any other
 * parameter makes the request uncacheable (forwarded, never stored), since
 * the proxy cannot know what it changes. Two readings of `resourceVersion`
 * ask for history rather than the current state, and are not cached either
 * (API concepts, "Semantics for get and list"; KEP-2523):
 * `resourceVersionMatch=Exact`, and a LIST with `limit` and a non-zero
 * `resourceVersion` but no `resourceVersionMatch` (legacy Exact). What
 * the kubelet's reflectors send — `resourceVersion=0&limit=500` — is the
 * "Any" semantic: the API server answers from its watch cache and ignores
 * `limit` (KEP-4988), so it stays cacheable. A `limit` without
 * `continue` that yields a partial page carries `metadata.continue`, and
 * such an answer is never stored (edge-proxy.ts), so `limit` cannot put a
 * partial list into the key of the whole one.
 */
import { createHash, createHmac } from 'node:crypto';
import type { ApiPath } from '../kube/api-path.js';

/** Query parameters that select which objects (or which columns) an answer holds: part of the key. */
export const RELEVANT_QUERY_PARAMS: readonly string[] = ['fieldSelector', 'includeObject', 'labelSelector'];
/**
 * Query parameters that leave a cacheable answer as it is (`limit` and
 * `resourceVersion` only as {@link readsHistory} allows). Any parameter in
 * neither list makes a request uncacheable.
 */
export const NEUTRAL_QUERY_PARAMS: readonly string[] = [
  'allowWatchBookmarks',
  'limit',
  'pretty',
  'resourceVersion',
  'resourceVersionMatch',
  'sendInitialEvents',
  'timeout',
  'timeoutSeconds',
  'watch',
];
/** Hex characters of the identity hash kept in keys (128 bits). */
const IDENTITY_KEY_HEX_LENGTH = 32;

/** Who a request acts as, as far as the upstream will see it. */
export interface RequestIdentity {
  /** `token:<bearer>`, `cert:<CN>` or `anonymous`. Holds a secret: never log or store it. */
  principal: string;
  /** `Impersonate-*` headers, which change who the upstream answers for. */
  impersonation: readonly string[];
}

/** What a request is, for the cache. */
export type RequestVerb = 'read' | 'watch' | 'other';

/** The cache-relevant reading of one request. */
export interface ClassifiedRequest {
  verb: RequestVerb;
  /** The request as received and checked: what is sent upstream, byte for byte. */
  target: ApiPath;
  /**
   * Whether the cache takes part: a read is stored and served offline, a
   * watch keeps its list current and is held through an outage. False for
   * answers the key cannot tell apart (unknown query parameters, history,
   * a backend behind a `proxy` subresource).
   */
  isCacheable: boolean;
  /** The list or object path: `target.path`, with a legacy `/watch/` prefix removed. */
  path: string;
  /** The relevant query, sorted, URL-encoded. */
  query: string;
  /** The answer's form: `json`, or the raw `Accept` for server-side forms (Tables, discovery documents). */
  representation: string | undefined;
}

/** Keyed hash of an identity: equal identities give equal keys, and the key reveals nothing without the install key. */
export function identityKeyOf(installKey: Buffer, identity: RequestIdentity): string {
  const material = [identity.principal, ...[...identity.impersonation].sort()].join('\n');
  return createHmac('sha256', installKey).update(material).digest('hex').slice(0, IDENTITY_KEY_HEX_LENGTH);
}

/**
 * The form of answer an `Accept` header asks for: `json` for plain JSON
 * (also when JSON is one of several accepted types, such as a Go client's
 * `protobuf,json`), the header itself when it asks for a server-side form
 * (`as=Table`, aggregated discovery), `undefined` when the client accepts
 * no JSON at all (such answers are forwarded, never cached).
 */
export function representationOf(accept: string | undefined): string | undefined {
  if (accept === undefined || accept.trim() === '' || accept.trim() === '*/*') return 'json';
  if (/;\s*as=/.test(accept)) return accept.replace(/\s+/g, '');
  const types = accept.split(',').map((part) => part.split(';')[0]!.trim().toLowerCase());
  return types.some((type) => type === 'application/json' || type === '*/*' || type === 'application/*')
    ? 'json'
    : undefined;
}

/** Whether an `Accept` header also takes plain JSON (kubectl's Table and discovery requests end with it). */
export function acceptsPlainJson(accept: string | undefined): boolean {
  if (accept === undefined || accept.trim() === '') return true;
  return accept.split(',').some((part) => {
    const [type, ...params] = part.split(';').map((piece) => piece.trim().toLowerCase());
    return (type === 'application/json' || type === '*/*') && !params.some((param) => param.startsWith('as='));
  });
}

function isTrue(value: string | null): boolean {
  return value === 'true' || value === '1';
}

/**
 * Whether a LIST asks for the collection as it was at some resourceVersion
 * rather than as it is now: `resourceVersionMatch=Exact`, or (legacy)
 * `limit` with a non-zero `resourceVersion` and no `resourceVersionMatch`.
 */
export function readsHistory(query: URLSearchParams): boolean {
  const match = query.get('resourceVersionMatch');
  if (match === 'Exact') return true;
  const version = query.get('resourceVersion');
  const limit = query.get('limit');
  const hasVersion = version !== null && version !== '' && version !== '0';
  return match === null && hasVersion && limit !== null && limit !== '' && limit !== '0';
}

/**
 * Whether a path reaches a backend through the API server (`…/pods/p/proxy/…`,
 * `…/services/s/proxy/…`, `…/nodes/n/proxy/…`, legacy `/api/v1/proxy/…`):
 * such answers are a backend's, not API objects, and are never cached.
 */
export function isBackendProxyPath(path: string): boolean {
  const match = /^\/(?:api\/v1|apis\/[^/]+\/[^/]+)\/(.+)$/.exec(path);
  if (!match) return false;
  let parts = match[1]!.split('/');
  if (parts[0] === 'proxy') return true;
  if (parts[0] === 'namespaces' && parts.length > 2) parts = parts.slice(2);
  return parts[2] === 'proxy';
}

/** Reads a checked request target, method and Accept into what the cache needs. Never normalises the path. */
export function classifyRequest(method: string, target: ApiPath, accept: string | undefined): ClassifiedRequest {
  const params = new URLSearchParams(target.query);
  let path = target.path;
  const isLegacyWatch = /^\/(api\/v1|apis\/[^/]+\/[^/]+)\/watch(\/|$)/.test(path);
  if (isLegacyWatch) path = path.replace(/^(\/api\/v1|\/apis\/[^/]+\/[^/]+)\/watch/, '$1');
  const kept = RELEVANT_QUERY_PARAMS.flatMap((name) =>
    params.getAll(name).map((value) => `${name}=${encodeURIComponent(value)}`),
  );
  const query = kept.join('&');
  const representation = representationOf(accept);
  const isApiPath = /^\/(api|apis|version)(\/|$)/.test(path);
  let verb: RequestVerb = 'other';
  if (method === 'GET' && isApiPath) {
    if (isLegacyWatch || isTrue(params.get('watch'))) verb = 'watch';
    else if (!params.has('continue') && !isTrue(params.get('follow'))) verb = 'read';
  }
  const hasOnlyKnownParams = [...params.keys()].every(
    (name) => RELEVANT_QUERY_PARAMS.includes(name) || NEUTRAL_QUERY_PARAMS.includes(name),
  );
  const isCacheable =
    verb !== 'other' && hasOnlyKnownParams && !isBackendProxyPath(path) && (verb === 'watch' || !readsHistory(params));
  return { verb, target, isCacheable, path, query, representation };
}

/** The cache key of a read (or of the list a watch keeps current). */
export function cacheKeyOf(identityKey: string, request: ClassifiedRequest): string {
  return `${identityKey} ${request.representation ?? '-'} ${request.path}?${request.query}`;
}

/** The file name of an entry: a hash of its key, so paths and selectors never need escaping. */
export function entryFileNameOf(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}
