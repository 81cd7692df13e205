/**
 * Turns a request's method and path into what the API server's authorizer
 * and handlers reason about: resource request or not, verb, API group,
 * version, namespace, resource, name and subresource. The path rules are the
 * API server's: `/api/v1/...` and `/apis/<group>/<version>/...`, the
 * `namespaces/<ns>/` prefix, the legacy `watch/` prefix, and the namespace
 * object's own subresources (`status`, `finalize`).
 */

/** What a request asks of the API server. */
export interface RequestInfo {
  isResourceRequest: boolean;
  /** The request path without the query string. */
  path: string;
  /** Lower-case verb: get, list, watch, create, update, patch, delete, deletecollection (non-resource: the HTTP method). */
  verb: string;
  apiGroup: string;
  apiVersion: string;
  namespace: string;
  resource: string;
  subresource: string;
  name: string;
}

const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);

function isWatchParam(value: string | null): boolean {
  return value === 'true' || value === '1';
}

/** Parses a request the way the API server's request-info factory does. */
export function parseRequestInfo(method: string, url: URL): RequestInfo {
  const path = url.pathname;
  const nonResource: RequestInfo = {
    isResourceRequest: false,
    path,
    verb: method.toLowerCase(),
    apiGroup: '',
    apiVersion: '',
    namespace: '',
    resource: '',
    subresource: '',
    name: '',
  };
  const segments = path.split('/').filter((p) => p.length > 0);
  // /api and /api/v1 (and /apis, /apis/<g>, /apis/<g>/<v>) are discovery, not resources.
  const isCore = segments[0] === 'api' && segments.length >= 3;
  const isGroup = segments[0] === 'apis' && segments.length >= 4;
  if (!isCore && !isGroup) return nonResource;
  const apiGroup = isGroup ? (segments[1] ?? '') : '';
  const apiVersion = isGroup ? (segments[2] ?? '') : (segments[1] ?? '');
  let parts = segments.slice(isGroup ? 3 : 2);

  let verb: string;
  let isLegacyWatch = false;
  if (parts[0] === 'watch') {
    isLegacyWatch = true;
    parts = parts.slice(1);
  }

  let namespace = '';
  if (parts[0] === 'namespaces' && parts.length > 1) {
    namespace = parts[1] ?? '';
    // /namespaces/<ns>/<resource>/... is a namespaced request; /namespaces/<ns>[/status] is the namespace itself.
    if (parts.length > 2 && !NAMESPACE_SUBRESOURCES.has(parts[2] ?? '')) parts = parts.slice(2);
  }
  const resource = parts[0] ?? '';
  const name = parts[1] ?? '';
  const subresource = parts[2] ?? '';

  switch (method.toUpperCase()) {
    case 'POST':
      verb = 'create';
      break;
    case 'PUT':
      verb = 'update';
      break;
    case 'PATCH':
      verb = 'patch';
      break;
    case 'DELETE':
      verb = name ? 'delete' : 'deletecollection';
      break;
    case 'GET':
    case 'HEAD':
      verb = name ? 'get' : 'list';
      if (isLegacyWatch || isWatchParam(url.searchParams.get('watch'))) verb = 'watch';
      break;
    default:
      verb = method.toLowerCase();
  }
  // A watch of one object by name is authorized as a watch with that name, as the real server does.
  return {
    isResourceRequest: true,
    path,
    verb,
    apiGroup,
    apiVersion,
    namespace,
    resource,
    subresource,
    name,
  };
}
