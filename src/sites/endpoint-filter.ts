/**
 * Traffic stays in the site: the EndpointSlices of a grid's Service, as a
 * node of site S sees them, hold only the endpoints in S. The edge-proxy
 * applies this to what it relays and serves (from its cache too) to the
 * node's kube-proxy, so the node's Service rules send a grid's traffic to
 * its own site's pods only: enforced on the node, and kept while the site
 * is cut off (OpenYurt's yurthub filters endpoints the same way).
 *
 * An endpoint's site is its `zone`: Kubernetes' EndpointSlice controller
 * copies it from the node's `topology.kubernetes.io/zone`, which `join
 * --site` sets to the site. A grid's Service is recognised by the labels
 * Kubernetes copies from the Service onto its slices: `edgeadm.io/site-grid`
 * without `edgeadm.io/site` (the per-site Services carry both and are
 * left whole). Pure: no I/O.
 */
import { SITE_GRID_LABEL } from './site-grid.js';
import { SITE_LABEL } from './site-label.js';

/** An EndpointSlice, as far as the filter reads it. */
export interface EndpointSliceLike {
  kind?: string;
  metadata?: { labels?: Record<string, string>; [key: string]: unknown };
  endpoints?: Array<{ zone?: string; [key: string]: unknown }> | null;
  [key: string]: unknown;
}

/** Whether a slice belongs to a grid's Service (the one name every site calls). */
export function isGridServiceSlice(slice: EndpointSliceLike): boolean {
  const labels = slice.metadata?.labels ?? {};
  return labels[SITE_GRID_LABEL] !== undefined && labels[SITE_LABEL] === undefined;
}

/** The slice as a node of `site` sees it: a grid Service's endpoints in that site only; any other slice as it is. */
export function filterEndpointSlice<T extends EndpointSliceLike>(slice: T, site: string): T {
  if (!isGridServiceSlice(slice) || !Array.isArray(slice.endpoints)) return slice;
  return { ...slice, endpoints: slice.endpoints.filter((endpoint) => endpoint.zone === site) };
}

/** Which answers the filter rewrites: EndpointSlice lists, objects and watches (discovery.k8s.io/v1). */
export function isEndpointSlicePath(path: string): boolean {
  return /^\/apis\/discovery\.k8s\.io\/v1\/(watch\/)?(namespaces\/[^/]+\/)?endpointslices(\/[^/]+)?$/.test(path);
}

/**
 * A JSON answer for an EndpointSlice path, filtered: a list's items, or one
 * slice. Text that is not such JSON comes back unchanged (a Status, an
 * error): the filter never turns an answer into something else.
 */
export function filterEndpointSliceAnswer(body: string, site: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return body;
  }
  if (typeof parsed !== 'object' || parsed === null) return body;
  const object = parsed as EndpointSliceLike & { items?: EndpointSliceLike[] };
  if (object.kind === 'EndpointSliceList' && Array.isArray(object.items)) {
    return JSON.stringify({ ...object, items: object.items.map((slice) => filterEndpointSlice(slice, site)) });
  }
  if (object.kind === 'EndpointSlice' && isGridServiceSlice(object)) {
    return JSON.stringify(filterEndpointSlice(object, site));
  }
  return body;
}

/** One watch event line (`{"type":…,"object":…}`), its slice filtered; other lines unchanged. */
export function filterEndpointSliceEvent(line: string, site: string): string {
  let event: unknown;
  try {
    event = JSON.parse(line);
  } catch {
    return line;
  }
  const object = (event as { object?: EndpointSliceLike } | null)?.object;
  if (typeof object !== 'object' || object === null || !isGridServiceSlice(object)) return line;
  return JSON.stringify({ ...(event as object), object: filterEndpointSlice(object, site) });
}
