/**
 * The cluster-wide edge settings: what `init --enable-edge` writes into the
 * `kube-system/edgeadm-edge` ConfigMap (from manifests/edge-node-config.yaml)
 * and what `join --enable-edge` reads back with the bootstrap token before
 * it configures a node: the label and taint edge nodes register with, and
 * the bounds of their edge-proxy's cache.
 *
 * The label is `edgeadm.io/edge`, not `node-role.kubernetes.io/edge`: a
 * kubelet may not give itself labels under kubernetes.io except a short
 * allowed list (NodeRestriction, KEP-279), and edge nodes register their
 * own labels.
 */
import {
  DEFAULT_AUTONOMY_DURATION,
  formatAutonomyDuration,
  parseAutonomyDuration,
  type AutonomyDuration,
} from '../edge/autonomy.js';
import { DEFAULT_CACHE_MAX_ENTRIES } from '../edge/limits.js';
import { parseByteSize } from '../edge/byte-size.js';
import { EdgeadmError, ValidationError } from '../errors.js';
import { KubeApiError, corePath, type KubeClient, type KubeObject } from '../kube/client.js';
import { EDGE_ADDON_MANIFESTS } from './edge-manifests.js';
import { renderManifest } from './manifests.js';
import { SITE_GRID_CONTROLLER_ACCOUNT } from '../sites/site-grid.js';

/** The ConfigMap (in kube-system) that holds the edge settings. */
export const EDGE_CONFIG_NAME = 'edgeadm-edge';
/** The label (value `true`) and taint key edge nodes get. */
export const EDGE_NODE_LABEL = 'edgeadm.io/edge';
/** The edge-proxy cache bound written at init (bytes, Kubernetes notation). */
export const DEFAULT_EDGE_PROXY_CACHE_MAX_BYTES = '256Mi';

/** What edge nodes join with. */
export interface EdgeSettings {
  nodeLabels: Record<string, string>;
  /** `key=value:Effect`, as k3s `node-taint` and the kubelet's `--register-with-taints` take them. */
  nodeTaints: string[];
  proxyCacheMaxBytes: string;
  proxyCacheMaxEntries: number;
  /** How long pods on edge nodes tolerate their node being cut off (join --autonomy-duration overrides it per node). */
  autonomyDuration: AutonomyDuration;
}

/** The settings init writes (`autonomyDuration`: init's --autonomy-duration, else the default). */
export function defaultEdgeSettings(autonomyDuration?: AutonomyDuration): EdgeSettings {
  return {
    autonomyDuration: autonomyDuration ?? parseAutonomyDuration(DEFAULT_AUTONOMY_DURATION),
    nodeLabels: { [EDGE_NODE_LABEL]: 'true' },
    nodeTaints: [`${EDGE_NODE_LABEL}=true:NoSchedule`],
    proxyCacheMaxBytes: DEFAULT_EDGE_PROXY_CACHE_MAX_BYTES,
    proxyCacheMaxEntries: DEFAULT_CACHE_MAX_ENTRIES,
  };
}

/** The edge addon objects for `settings`, rendered from manifests/. Pure. */
export function edgeAddonObjects(settings: EdgeSettings): KubeObject[] {
  const values = {
    EDGE_CONFIG_NAME,
    EDGE_NODE_LABELS: Object.entries(settings.nodeLabels)
      .map(([key, value]) => `${key}=${value}`)
      .join(','),
    EDGE_NODE_TAINTS: settings.nodeTaints.join(','),
    PROXY_CACHE_MAX_BYTES: settings.proxyCacheMaxBytes,
    PROXY_CACHE_MAX_ENTRIES: String(settings.proxyCacheMaxEntries),
    AUTONOMY_DURATION: formatAutonomyDuration(settings.autonomyDuration),
    SITE_GRID_CONTROLLER: SITE_GRID_CONTROLLER_ACCOUNT,
  };
  return EDGE_ADDON_MANIFESTS.flatMap(({ file, template }) => renderManifest(template, values, `manifests/${file}`));
}

const LABEL = /^[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?=([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;
const TAINT =
  /^[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?(=[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?:(NoSchedule|PreferNoSchedule|NoExecute)$/;

function invalidSettings(why: string): ValidationError {
  return new ValidationError(`kube-system/${EDGE_CONFIG_NAME} is not valid: ${why}`, {
    code: 'E_EDGE_SETTINGS_INVALID',
    hints: [`Restore it with "edgeadm init phase edge-addons --enable-edge" on the control plane.`],
  });
}

function split(text: string | undefined): string[] {
  return (text ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
}

/**
 * The settings in the ConfigMap's data. Pure.
 *
 * @throws {ValidationError} `E_EDGE_SETTINGS_INVALID`.
 */
export function parseEdgeSettings(data: Record<string, string> | undefined): EdgeSettings {
  const nodeLabels: Record<string, string> = {};
  for (const entry of split(data?.nodeLabels)) {
    if (!LABEL.test(entry)) throw invalidSettings(`nodeLabels entry ${JSON.stringify(entry)} is not key=value`);
    const [key, ...rest] = entry.split('=');
    nodeLabels[key!] = rest.join('=');
  }
  const nodeTaints = split(data?.nodeTaints);
  for (const taint of nodeTaints) {
    if (!TAINT.test(taint)) throw invalidSettings(`nodeTaints entry ${JSON.stringify(taint)} is not key=value:Effect`);
  }
  const proxyCacheMaxBytes = data?.proxyCacheMaxBytes ?? DEFAULT_EDGE_PROXY_CACHE_MAX_BYTES;
  try {
    parseByteSize(proxyCacheMaxBytes, 'proxyCacheMaxBytes');
  } catch {
    throw invalidSettings(`proxyCacheMaxBytes ${JSON.stringify(proxyCacheMaxBytes)} is not a size such as 256Mi`);
  }
  const entries = data?.proxyCacheMaxEntries ?? String(DEFAULT_CACHE_MAX_ENTRIES);
  const proxyCacheMaxEntries = Number(entries);
  if (!/^\d+$/.test(entries) || !Number.isSafeInteger(proxyCacheMaxEntries) || proxyCacheMaxEntries < 1) {
    throw invalidSettings(`proxyCacheMaxEntries ${JSON.stringify(entries)} is not a positive integer`);
  }
  // A cluster set up before autonomy durations existed has none: edgeadm's default.
  const autonomyText = data?.autonomyDuration ?? DEFAULT_AUTONOMY_DURATION;
  let autonomyDuration: AutonomyDuration;
  try {
    autonomyDuration = parseAutonomyDuration(autonomyText, 'autonomyDuration');
  } catch {
    throw invalidSettings(
      `autonomyDuration ${JSON.stringify(autonomyText)} is not a duration such as 24h (0 = never evict)`,
    );
  }
  return { nodeLabels, nodeTaints, proxyCacheMaxBytes, proxyCacheMaxEntries, autonomyDuration };
}

/**
 * Reads the settings from the cluster (with the bootstrap token, which the
 * edge addons' RBAC lets read that one ConfigMap).
 *
 * @throws {EdgeadmError} `E_EDGE_NOT_ENABLED` when the cluster has no edge
 * settings (init ran without --enable-edge) or does not let the token read
 * them; `E_EDGE_SETTINGS_INVALID` when they do not parse.
 */
export async function readEdgeSettings(client: KubeClient): Promise<EdgeSettings> {
  const path = corePath('configmaps', { namespace: 'kube-system', name: EDGE_CONFIG_NAME });
  let configMap: (KubeObject & { data?: Record<string, string> }) | undefined;
  try {
    configMap = await client.get(path);
  } catch (error) {
    if (!(error instanceof KubeApiError) || (error.status !== 403 && error.status !== 401)) throw error;
  }
  if (!configMap) {
    throw new EdgeadmError(
      `the cluster at ${client.server} has no edge settings (kube-system/${EDGE_CONFIG_NAME}) that this token may read: it was not initialised with --enable-edge`,
      {
        code: 'E_EDGE_NOT_ENABLED',
        hints: [
          'Make it an edge cluster: run init again on the control plane with --enable-edge (what is done stays done; it adds the edge addons and the autonomy controller): "edgeadm init --enable-edge --host CONTROL_PLANE --install-pkg-path PACKAGE", with the host and package it was made with. Then join again.',
          'Or join without --enable-edge.',
        ],
      },
    );
  }
  return parseEdgeSettings(configMap.data);
}
