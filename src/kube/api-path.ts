/**
 * The one rule for a Kubernetes API request path that edgeadm forwards:
 * the hub's kube proxy, the tunnel agent and the edge-proxy all take a
 * request target from a client and send it on to an API server. Each of
 * them once parsed it with the WHATWG URL parser, which resolves `..`,
 * turns `\` into `/` and reads `//host` as another origin, while the API
 * server (or a backend behind it) reads the raw bytes. Two readers of one
 * string is how a request reached another host with the agent's token, and
 * how the edge-proxy's cache key and the upstream came to see different
 * paths.
 *
 * So a request path is accepted only when there is exactly one reading of
 * it: it starts with one `/`, has no empty segment (so no `//`), no `.` or
 * `..` segment written plainly or percent-encoded, no `\` and no encoded
 * `/` or `\`, no control character, space or `#`, and every `%` starts a
 * valid escape. The query is kept as it came, under the same character
 * rules. What passes is sent upstream byte for byte, never re-parsed, and
 * is the path the edge-proxy keys its cache by. Pure: no I/O.
 */

/** Why a request path was refused (stable words for tests and logs). */
export type ApiPathProblem =
  | 'not-absolute'
  | 'empty-segment'
  | 'dot-segment'
  | 'backslash'
  | 'encoded-separator'
  | 'bad-character'
  | 'bad-escape'
  | 'too-long';

/** A request target that passed {@link parseApiPath}. */
export interface ApiPath {
  /** The path, exactly as received: `/api/v1/namespaces/default/pods`. */
  readonly path: string;
  /** The query without its `?`, exactly as received; empty when there is none. */
  readonly query: string;
  /** `path` plus `?query` when there is a query: what is sent upstream. */
  readonly target: string;
}

/** The outcome of {@link parseApiPath}. */
export type ApiPathResult = { ok: true; value: ApiPath } | { ok: false; problem: ApiPathProblem; message: string };

/** The longest request target accepted (the API server's own limit is in this range). */
export const MAX_API_PATH_LENGTH = 8 * 1024;

/**
 * Characters allowed anywhere in the target: RFC 3986 `pchar`, `/` and `?`
 * (unreserved, sub-delims, `:`, `@`, `%` for escapes). Everything else
 * (controls, space, `"`, `<`, `>`, `\`, `^`, `` ` ``, `{`, `|`, `}`, `#`,
 * non-ASCII) is refused rather than guessed at.
 */
const ALLOWED_CHARACTERS = /^[A-Za-z0-9\-._~!$&'()*+,;=:@%/?]*$/;
/** A `%` not followed by two hex digits. */
const BAD_ESCAPE = /%(?![0-9A-Fa-f]{2})/;
/** Percent-encoded `/` or `\`. */
const ENCODED_SEPARATOR = /%(2f|5c)/i;

function refuse(problem: ApiPathProblem, message: string): ApiPathResult {
  return { ok: false, problem, message };
}

/** A segment that some reader would take for `.` or `..` (plain or with `%2e`). */
function isDotSegment(segment: string): boolean {
  const decoded = segment.replace(/%2e/gi, '.');
  return decoded === '.' || decoded === '..';
}

/**
 * Checks a request target (path and optional query) against the one rule.
 * `/` alone is accepted; every other path has non-empty segments.
 */
export function parseApiPath(target: string): ApiPathResult {
  if (target.length > MAX_API_PATH_LENGTH) {
    return refuse('too-long', `the request path is longer than ${MAX_API_PATH_LENGTH} characters`);
  }
  if (target.includes('\\')) return refuse('backslash', 'the request path holds a backslash');
  if (!ALLOWED_CHARACTERS.test(target)) {
    return refuse('bad-character', 'the request path holds a character that must be percent-encoded');
  }
  if (BAD_ESCAPE.test(target)) return refuse('bad-escape', 'the request path holds a malformed percent escape');
  const queryAt = target.indexOf('?');
  const path = queryAt === -1 ? target : target.slice(0, queryAt);
  const query = queryAt === -1 ? '' : target.slice(queryAt + 1);
  if (!path.startsWith('/')) return refuse('not-absolute', 'the request path does not start with "/"');
  if (ENCODED_SEPARATOR.test(path)) {
    return refuse('encoded-separator', 'the request path holds an encoded "/" or "\\"');
  }
  if (path !== '/') {
    const segments = path.slice(1).split('/');
    if (segments.some((segment) => segment === '')) {
      return refuse('empty-segment', 'the request path holds an empty segment ("//" or a trailing "/")');
    }
    if (segments.some(isDotSegment)) return refuse('dot-segment', 'the request path holds a "." or ".." segment');
  }
  return { ok: true, value: { path, query, target } };
}
