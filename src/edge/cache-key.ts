/**
 * How a request maps to a cache entry — pure functions, no I/O.
 *
 * An entry is keyed by (identity, representation, path, relevant query).
 * The identity part is a keyed hash (HMAC-SHA256 with a per-install random
 * key kept in the cache directory), so bearer tokens never reach the disk
 * and nobody can precompute which entry belongs to which token. Only the
 * query parameters that change the answer are kept (`labelSelector`,
 * `fieldSelector`, `includeObject`); `timeoutSeconds`, `limit`,
 * `resourceVersion` and `watch` do not.
 */
import { createHash, createHmac } from 'node:crypto';

/** Query parameters that select which objects (or which columns) an answer holds. */
export const RELEVANT_QUERY_PARAMS: readonly string[] = ['fieldSelector', 'includeObject', 'labelSelector'];
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
  /** The list or object path (legacy `/watch/` segments removed). */
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

/** Reads method, URL and Accept into what the cache needs. */
export function classifyRequest(method: string, url: string, accept: string | undefined): ClassifiedRequest {
  const parsed = new URL(url, 'https://edge-proxy.invalid');
  let path = parsed.pathname.replace(/\/+$/, '') || '/';
  const isLegacyWatch = /^\/(api\/v1|apis\/[^/]+\/[^/]+)\/watch(\/|$)/.test(path);
  if (isLegacyWatch) path = path.replace(/^(\/api\/v1|\/apis\/[^/]+\/[^/]+)\/watch/, '$1');
  const kept = RELEVANT_QUERY_PARAMS.flatMap((name) =>
    parsed.searchParams.getAll(name).map((value) => `${name}=${encodeURIComponent(value)}`),
  );
  const query = kept.join('&');
  const representation = representationOf(accept);
  const isApiPath = /^\/(api|apis|version)(\/|$)/.test(path);
  let verb: RequestVerb = 'other';
  if (method === 'GET' && isApiPath) {
    if (isLegacyWatch || isTrue(parsed.searchParams.get('watch'))) verb = 'watch';
    else if (!parsed.searchParams.has('continue') && !isTrue(parsed.searchParams.get('follow'))) verb = 'read';
  }
  return { verb, path, query, representation };
}

/** The cache key of a read (or of the list a watch keeps current). */
export function cacheKeyOf(identityKey: string, request: ClassifiedRequest): string {
  return `${identityKey} ${request.representation ?? '-'} ${request.path}?${request.query}`;
}

/** The file name of an entry: a hash of its key, so paths and selectors never need escaping. */
export function entryFileNameOf(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}
