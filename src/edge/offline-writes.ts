/**
 * Which writes the edge-proxy answers while the upstream is away — the
 * policy, as pure functions.
 *
 * Every write is refused with 503 and a Status naming the outage, except
 * one: **node registration** (`POST /api/v1/nodes`) for a node whose object
 * this identity has cached. After an offline reboot the kubelet registers
 * again before anything else; a refusal keeps it in its registration loop
 * (superedge#386). The API server's own answer for an already-registered
 * node is 409 AlreadyExists, after which the kubelet reads its Node (served
 * from the cache) and carries on. The proxy gives exactly that answer, and
 * only for a valid node name (a DNS-1123 subdomain, as the API server
 * requires) that it has seen, so it never claims a node exists that the API
 * server does not know. The name is checked before it is looked up: a name
 * such as `../namespaces/kube-system/secrets/x` would otherwise be read as
 * a path and reveal whether some other entry is cached (issue #22).
 *
 * Node status patches, Lease renewals and Events are refused. Faking them
 * would hand the kubelet resourceVersions the API server never issued (409s
 * on reconnection), and would not stop a cut-off node from being evicted
 * (superedge#433): eviction is decided in the cloud, from heartbeats that
 * never arrive; a local fake cannot change that. What keeps the pods is
 * in the cloud: Kubernetes still marks the node Unknown and taints it
 * unreachable, and edgeadm's autonomy controller has given every pod on an
 * edge node a toleration of that taint for the node's autonomy duration
 * (`--autonomy-duration`, 24 h by default; src/edge/autonomy.ts), so the
 * taint evicts nothing until the node has been gone that long. The kubelet
 * retries these writes on its own schedule, and the first one after the
 * link returns brings the cloud up to date. TokenRequests are refused too:
 * the proxy never signs tokens (it holds no signing key).
 */
import { apiStatus, type ApiStatus } from './api-status.js';
import type { KubeObjectLike } from './list-patch.js';

/** The longest DNS-1123 subdomain (RFC 1123; the API server's limit for node names). */
export const MAX_DNS_SUBDOMAIN_LENGTH = 253;
/** Dot-separated labels of lower-case letters, digits and inner `-` (the API server's `IsDNS1123Subdomain`). */
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Whether `name` is a valid node name: a DNS-1123 subdomain. */
export function isDnsSubdomainName(name: string): boolean {
  return name.length <= MAX_DNS_SUBDOMAIN_LENGTH && DNS_SUBDOMAIN.test(name);
}

/** What to answer to a write while offline. */
export type OfflineWriteAnswer = { kind: 'refuse'; status: ApiStatus } | { kind: 'already-exists'; status: ApiStatus };

/** Whether a request is a node registration, whose body the proxy must read to answer offline. */
export function isNodeRegistration(method: string, path: string): boolean {
  return method === 'POST' && path === '/api/v1/nodes';
}

/** The 503 for a write the proxy cannot do offline. */
export function offlineRefusal(method: string, path: string): ApiStatus {
  return apiStatus(
    503,
    'ServiceUnavailable',
    `edge-proxy: the API server is unreachable, so ${method} ${path} cannot be done now; reads are served from the node's cache until the link returns`,
  );
}

/** The name of the Node a registration body carries, if it parses. */
export function registeredNodeName(body: string): string | undefined {
  try {
    const name = (JSON.parse(body) as KubeObjectLike | null)?.metadata?.name;
    return typeof name === 'string' && name !== '' ? name : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Decides the answer to a node registration made offline.
 *
 * @param name - the Node's name from the request body, if any.
 * @param isNodeKnown - whether this identity's cache holds a Node of that name
 *   (only ever looked up for a name that passes {@link isDnsSubdomainName}).
 */
export function answerOfflineNodeRegistration(name: string | undefined, isNodeKnown: boolean): OfflineWriteAnswer {
  if (name !== undefined && isDnsSubdomainName(name) && isNodeKnown) {
    return {
      kind: 'already-exists',
      status: apiStatus(409, 'AlreadyExists', `nodes "${name}" already exists`, { name, kind: 'nodes' }),
    };
  }
  return { kind: 'refuse', status: offlineRefusal('POST', '/api/v1/nodes') };
}
