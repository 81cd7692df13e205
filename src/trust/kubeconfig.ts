/**
 * The two kubeconfig shapes of token discovery, and reading a cluster out of
 * a kubeconfig:
 *
 * - the cluster-info kubeconfig: one unnamed cluster (`name: ""`) with the
 *   API server address and the CA, nothing else. It is public, and it is
 *   what the per-token JWS signs.
 * - the TLS-bootstrap kubeconfig a joining node gets: cluster `kubernetes`,
 *   user `tls-bootstrap-token-user` with the bootstrap token, one context.
 *
 * Both are written in the layout Kubernetes' own tools write (keys sorted,
 * two-space indent), so files look the same whoever wrote them.
 */
import { load } from 'js-yaml';
import { EdgeadmError } from '../errors.js';

/** The cluster name in a TLS-bootstrap kubeconfig. */
export const BOOTSTRAP_CLUSTER_NAME = 'kubernetes';
/** The user name in a TLS-bootstrap kubeconfig. */
export const BOOTSTRAP_USER_NAME = 'tls-bootstrap-token-user';

/** A cluster entry: where the API server is and which CA vouches for it. */
export interface KubeconfigCluster {
  /** `https://host:port`. */
  server: string;
  /** The CA bundle, as PEM text. */
  caPem: string;
}

/** Options for {@link renderBootstrapKubeconfig}. */
export interface BootstrapKubeconfigOptions extends KubeconfigCluster {
  /** The bootstrap token, `<id>.<secret>`: this file is a credential. */
  token: string;
}

/** Keywords YAML would read as something other than a string. */
const YAML_NON_STRING = /^(?:true|false|yes|no|on|off|y|n|null|~)$/i;

/** A YAML scalar: plain when that is unambiguous (a URL, base64), otherwise double-quoted. */
function yamlScalar(value: string): string {
  return /^[A-Za-z][A-Za-z0-9._:/@[\]%+=-]*$/.test(value) && !YAML_NON_STRING.test(value)
    ? value
    : JSON.stringify(value);
}

function base64(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}

/** The kubeconfig that cluster-info holds (and that its signatures cover). */
export function renderClusterInfoKubeconfig(cluster: KubeconfigCluster): string {
  return [
    'apiVersion: v1',
    'clusters:',
    '- cluster:',
    `    certificate-authority-data: ${yamlScalar(base64(cluster.caPem))}`,
    `    server: ${yamlScalar(cluster.server)}`,
    '  name: ""',
    'contexts: null',
    'current-context: ""',
    'kind: Config',
    'preferences: {}',
    'users: null',
    '',
  ].join('\n');
}

/** The kubeconfig a joining node's kubelet uses for TLS bootstrap. */
export function renderBootstrapKubeconfig(options: BootstrapKubeconfigOptions): string {
  const context = `${BOOTSTRAP_USER_NAME}@${BOOTSTRAP_CLUSTER_NAME}`;
  return [
    'apiVersion: v1',
    'clusters:',
    '- cluster:',
    `    certificate-authority-data: ${yamlScalar(base64(options.caPem))}`,
    `    server: ${yamlScalar(options.server)}`,
    `  name: ${BOOTSTRAP_CLUSTER_NAME}`,
    'contexts:',
    '- context:',
    `    cluster: ${BOOTSTRAP_CLUSTER_NAME}`,
    `    user: ${BOOTSTRAP_USER_NAME}`,
    `  name: ${context}`,
    `current-context: ${context}`,
    'kind: Config',
    'preferences: {}',
    'users:',
    `- name: ${BOOTSTRAP_USER_NAME}`,
    '  user:',
    `    token: ${yamlScalar(options.token)}`,
    '',
  ].join('\n');
}

interface NamedEntry<T> {
  name?: unknown;
  cluster?: T;
  context?: { cluster?: unknown };
}

interface RawCluster {
  server?: unknown;
  'certificate-authority-data'?: unknown;
}

/**
 * Reads the cluster a kubeconfig points at: the unnamed cluster if there is
 * one (cluster-info's), otherwise the current context's cluster.
 *
 * @param what - names the document in errors (`"the cluster-info ConfigMap"`).
 * @throws {EdgeadmError} `E_KUBECONFIG_INVALID`: "couldn't parse the
 * kubeconfig file in …" or "malformed kubeconfig in …".
 */
export function readKubeconfigCluster(text: string, what: string): KubeconfigCluster & { name: string } {
  let document: unknown;
  try {
    document = load(text);
  } catch (error) {
    throw new EdgeadmError(`couldn't parse the kubeconfig file in ${what}: ${(error as Error).message}`, {
      code: 'E_KUBECONFIG_INVALID',
      cause: error,
    });
  }
  const malformed = (why: string): EdgeadmError =>
    new EdgeadmError(`malformed kubeconfig in ${what}: ${why}`, { code: 'E_KUBECONFIG_INVALID' });
  if (document === null || typeof document !== 'object' || Array.isArray(document)) {
    throw new EdgeadmError(`couldn't parse the kubeconfig file in ${what}: it is not a YAML mapping`, {
      code: 'E_KUBECONFIG_INVALID',
    });
  }
  const config = document as {
    clusters?: unknown;
    contexts?: unknown;
    'current-context'?: unknown;
  };
  const clusters = Array.isArray(config.clusters) ? (config.clusters as NamedEntry<RawCluster>[]) : [];
  const contexts = Array.isArray(config.contexts) ? (config.contexts as NamedEntry<never>[]) : [];
  let entry = clusters.find((item) => item?.name === '');
  if (!entry) {
    const current = contexts.find((item) => item?.name === config['current-context']);
    const clusterName = current?.context?.cluster;
    entry = clusterName === undefined ? undefined : clusters.find((item) => item?.name === clusterName);
  }
  if (!entry || typeof entry.cluster !== 'object' || entry.cluster === null) {
    throw malformed('it has no unnamed cluster and no current context that names a cluster');
  }
  const { server, 'certificate-authority-data': caData } = entry.cluster;
  if (typeof server !== 'string' || !/^https:\/\//.test(server)) {
    throw malformed('the cluster has no https:// server');
  }
  if (typeof caData !== 'string' || caData.trim() === '') {
    throw malformed('the cluster has no certificate-authority-data');
  }
  return { name: String(entry.name ?? ''), server, caPem: Buffer.from(caData, 'base64').toString('utf8') };
}
