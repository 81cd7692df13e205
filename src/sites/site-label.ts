/**
 * What makes a node part of a site: the label `edgeadm.io/site=NAME`, and
 * the zone label that goes with it. Pure: the rules that `join --site`, the
 * fleet inventory and the site grid controller share.
 *
 * Why the zone too: Kubernetes' EndpointSlice controller copies each node's
 * `topology.kubernetes.io/zone` onto every endpoint of a pod on it
 * (`endpoints[].zone`). With zone = site, an EndpointSlice alone says which
 * site each endpoint is in, so the edge-proxy can keep a grid Service's
 * endpoints inside the caller's site from the slice it relays or caches,
 * offline too, without a list of every node (docs/guides/site-grids.md).
 */
import { ValidationError } from '../errors.js';
import { isDns1123Label } from '../kube/names.js';

/** The label that names a node's site. */
export const SITE_LABEL = 'edgeadm.io/site';
/** Kubernetes' well-known zone label; set to the site so endpoints carry it. */
export const ZONE_LABEL = 'topology.kubernetes.io/zone';

/**
 * Parses a site name (`join --site`, an inventory's `edgeadm.io/site`
 * label): a DNS-1123 label, since it names per-site objects
 * (`<grid>-<site>`) and is a label value.
 *
 * @throws {ValidationError} `E_SITE_INVALID`.
 */
export function parseSiteName(value: string, where = '--site'): string {
  if (!isDns1123Label(value)) {
    throw new ValidationError(
      `${where} ${JSON.stringify(value)} is not a valid site name: lowercase letters, digits and -, at most 63, starting and ending with a letter or digit`,
      { code: 'E_SITE_INVALID', hints: ['For example: --site shop-lyon-1'] },
    );
  }
  return value;
}

/**
 * A node's labels with its site's labels added: `edgeadm.io/site` when a
 * site is given, and the zone label for any site in the result.
 *
 * @throws {ValidationError} `E_SITE_INVALID` for a bad site name;
 * `E_FLAG_CONFLICT` when the labels already name another site or zone.
 */
export function withSiteLabels(labels: Readonly<Record<string, string>>, site?: string): Record<string, string> {
  const named = site === undefined ? labels[SITE_LABEL] : parseSiteName(site);
  if (named === undefined) return { ...labels };
  if (site === undefined) parseSiteName(named, `label ${SITE_LABEL}`);
  for (const key of [SITE_LABEL, ZONE_LABEL]) {
    const have = labels[key];
    if (have !== undefined && have !== named) {
      throw new ValidationError(`site ${named} and the label ${key}=${have} disagree`, {
        code: 'E_FLAG_CONFLICT',
        hints: [`A site's nodes carry ${SITE_LABEL} and ${ZONE_LABEL} with the site's name: drop the label.`],
      });
    }
  }
  return { ...labels, [SITE_LABEL]: named, [ZONE_LABEL]: named };
}
