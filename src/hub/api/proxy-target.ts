/**
 * Which requests the kube proxy takes: `/clusters/NAME/…` (and the same
 * forwarded by another replica), split into the cluster and a path that
 * passed `parseApiPath`, or the reason it is refused. Pure: no I/O.
 */
import { isClusterName } from '../../kube/names.js';
import { parseApiPath } from '../../kube/api-path.js';
import { CONTROL_PATH_PREFIX } from '../../tunnel/protocol.js';
import { PEER_PROXY_PREFIX } from '../replicas/peer-link.js';

/** The path prefix of the kube proxy. */
export const KUBE_PROXY_PREFIX = '/clusters/';

/** The stable code of a refused proxy path. */
export const BAD_PROXY_PATH_CODE = 'E_HUB_PROXY_PATH';

/**
 * A request aimed at one cluster, split: either a path that may be
 * forwarded, or the reason it may not (answered 400 before anything else).
 */
export type ProxyTarget =
  | {
      cluster: string;
      /** The path (and query) on the cluster's API server, exactly as received; passed `parseApiPath`. */
      path: string;
      refusal?: undefined;
      /** Forwarded by another hub replica (peer-link.ts): only a replica may send it. */
      isForwarded?: boolean;
    }
  | {
      cluster: string;
      /** Why the path is not forwarded, for the user. */
      refusal: string;
      isForwarded?: boolean;
    };

/**
 * Splits `/clusters/NAME/rest?query`; undefined when the URL is not a proxy
 * URL. The rest must pass `parseApiPath`, and must not lie under the
 * tunnel's control prefix (`/.edgeadm/`): agents of this version tell
 * control streams apart by their missing identity, but older ones did by
 * that prefix alone, and no API server path starts with it.
 */
export function parseProxyUrl(url: string): ProxyTarget | undefined {
  if (!url.startsWith(KUBE_PROXY_PREFIX)) return undefined;
  const rest = url.slice(KUBE_PROXY_PREFIX.length);
  const end = rest.search(/[/?]/);
  const cluster = end === -1 ? rest : rest.slice(0, end);
  if (!isClusterName(cluster)) return undefined;
  let path = end === -1 ? '' : rest.slice(end);
  if (path === '' || path.startsWith('?')) path = `/${path}`;
  const checked = parseApiPath(path);
  if (!checked.ok) return { cluster, refusal: `the hub forwards API paths only: ${checked.message}` };
  const firstSegment = checked.value.path.slice(1).split('/')[0] ?? '';
  if (`/${firstSegment.toLowerCase()}/` === CONTROL_PATH_PREFIX) {
    return { cluster, refusal: `the hub does not forward paths under ${CONTROL_PATH_PREFIX}` };
  }
  return { cluster, path: checked.value.target };
}

/**
 * Splits `/hub/peer/v1/clusters/NAME/rest?query`, a request another hub
 * replica forwarded (peer-link.ts), by the same rule as {@link parseProxyUrl};
 * undefined when the URL is not one.
 */
export function parsePeerProxyUrl(url: string): ProxyTarget | undefined {
  if (!url.startsWith(`${PEER_PROXY_PREFIX}${KUBE_PROXY_PREFIX}`)) return undefined;
  const target = parseProxyUrl(url.slice(PEER_PROXY_PREFIX.length));
  return target === undefined ? undefined : { ...target, isForwarded: true };
}
