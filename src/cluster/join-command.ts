/**
 * The `edgeadm join …` command that init and `token create
 * --print-join-command` print: the flags a node needs to join this cluster
 * as it is, so that a copied command joins with the cluster's distribution
 * and, on an edge cluster, as an edge node.
 *
 * init knows the distribution and --enable-edge itself. `token create` only
 * has an admin kubeconfig, so it reads them from the cluster, from what is
 * there on every such cluster anyway (nothing extra to keep in step):
 * kubeadm's `kube-system/kubeadm-config` ConfigMap (kubeadm's upload-config
 * phase writes it on every kubeadm cluster, and kubeadm itself reads it back
 * on join and upgrade; k3s has none) and edgeadm's `kube-system/edgeadm-edge`
 * edge settings (written by `init --enable-edge`, read by `join
 * --enable-edge`).
 */
import { EdgeadmError } from '../errors.js';
import { KubeApiError, corePath, type KubeClient } from '../kube/client.js';
import type { DistributionName } from './distributions/distribution.js';
import { DEFAULT_DISTRIBUTION } from './distributions/index.js';
import { EDGE_CONFIG_NAME } from './edge-settings.js';

/** The ConfigMap kubeadm uploads on every cluster it initialises (kube-system). */
export const KUBEADM_CONFIG_NAME = 'kubeadm-config';

/** What a printed join command says. */
export interface JoinCommandInput {
  /** `host:port` of the API server. */
  address: string;
  /** The bootstrap token (a secret: the command is printed for the operator only). */
  token: string;
  /** `sha256:<hex>` of the cluster CA. */
  caPin: string;
  /** Unknown to `token create`: the operator adds it. */
  installPackagePath?: string;
  distribution: DistributionName;
  /** The cluster was initialised with --enable-edge: nodes join as edge nodes. */
  isEdge: boolean;
}

/**
 * What stands for the install package in a join command printed by `token
 * create` without --install-pkg-path: join needs one, and the cluster does
 * not record which. A command run as printed stops at "cannot read" it.
 */
export const INSTALL_PACKAGE_PLACEHOLDER = './PACKAGE.tar.gz';

/** The join command for a worker. Pure. */
export function renderJoinCommand(input: JoinCommandInput): string {
  const words = [
    'edgeadm join',
    input.address,
    '--token',
    input.token,
    '--discovery-token-ca-cert-hash',
    input.caPin,
    ...(input.installPackagePath ? ['--install-pkg-path', input.installPackagePath] : []),
    ...(input.distribution !== DEFAULT_DISTRIBUTION ? ['--distribution', input.distribution] : []),
    ...(input.isEdge ? ['--enable-edge'] : []),
  ];
  return words.join(' ');
}

/** The cluster's distribution and whether it is an edge cluster, as {@link renderJoinCommand} needs them. */
export interface ClusterJoinTraits {
  distribution: DistributionName;
  isEdge: boolean;
}

async function hasConfigMap(client: KubeClient, name: string): Promise<boolean> {
  try {
    return (await client.get(corePath('configmaps', { namespace: 'kube-system', name }))) !== undefined;
  } catch (error) {
    if (error instanceof KubeApiError && (error.status === 401 || error.status === 403)) {
      throw new EdgeadmError(`cannot read kube-system/${name} to tell how nodes join this cluster: ${error.message}`, {
        code: 'E_JOIN_COMMAND_UNKNOWN',
        cause: error,
        hints: ['Use the admin kubeconfig that edgeadm init wrote (--kubeconfig), or print only the token.'],
      });
    }
    throw error;
  }
}

/**
 * Reads the distribution (kubeadm when `kube-system/kubeadm-config` exists,
 * else k3s) and whether the cluster has edge settings.
 *
 * @throws {EdgeadmError} `E_JOIN_COMMAND_UNKNOWN` when the client may not read them.
 */
export async function clusterJoinTraits(client: KubeClient): Promise<ClusterJoinTraits> {
  const [isKubeadm, isEdge] = await Promise.all([
    hasConfigMap(client, KUBEADM_CONFIG_NAME),
    hasConfigMap(client, EDGE_CONFIG_NAME),
  ]);
  return { distribution: isKubeadm ? 'kubeadm' : 'k3s', isEdge };
}
