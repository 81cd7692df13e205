/**
 * `edgeadm token create | list | delete` against a cluster, with an admin
 * kubeconfig: the token Secrets as kubeadm keeps them, and cluster-info
 * re-signed after every change so that discovery with a new token works at
 * once and a deleted token's signature goes.
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { ValidationError } from '../errors.js';
import { KubeClient, corePath } from '../kube/client.js';
import { kubeCredentialsOf } from '../kube/kubeconfig.js';
import {
  DEFAULT_BOOTSTRAP_TOKEN_GROUP,
  formatBootstrapToken,
  generateBootstrapToken,
  parseBootstrapToken,
  parseBootstrapTokenId,
  type BootstrapTokenInfo,
} from '../trust/bootstrap-token.js';
import { caPinsOfPem } from '../trust/ca-pin.js';
import { CLUSTER_INFO_KUBECONFIG_KEY, CLUSTER_INFO_NAME, CLUSTER_INFO_NAMESPACE } from '../trust/cluster-info.js';
import { parseGoDuration } from '../trust/duration.js';
import { readKubeconfigCluster } from '../trust/kubeconfig.js';
import {
  createBootstrapToken,
  deleteBootstrapToken,
  listBootstrapTokens,
  signClusterInfo,
} from './bootstrap-tokens.js';
import { INSTALL_PACKAGE_PLACEHOLDER, clusterJoinTraits, renderJoinCommand } from './join-command.js';

/** The kubeconfig used when none is given: $KUBECONFIG's first file, else ~/.kube/config. */
export function defaultKubeconfigPath(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env.KUBECONFIG?.split(':').find((p) => p !== '');
  return fromEnv ?? join(homedir(), '.kube', 'config');
}

/** An admin client from a kubeconfig file on this machine. */
export async function clientFromKubeconfig(path: string, context?: string): Promise<KubeClient> {
  if (!existsSync(path)) {
    throw new ValidationError(`the kubeconfig ${path} does not exist`, {
      code: 'E_KUBECONFIG_MISSING',
      hints: ['Pass --kubeconfig with the admin kubeconfig that edgeadm init wrote.'],
    });
  }
  const credentials = await kubeCredentialsOf(readFileSync(path, 'utf8'), {
    what: path,
    ...(context ? { context } : {}),
    readFile: async (file) => readFileSync(file, 'utf8'),
  });
  return new KubeClient(credentials);
}

/** Options of {@link createToken}. */
export interface CreateTokenOptions {
  token?: string;
  ttl: string;
  description?: string;
  groups?: string[];
  printJoinCommand: boolean;
  /** The package the printed join command names; without it, {@link INSTALL_PACKAGE_PLACEHOLDER}. */
  installPackagePath?: string;
}

/** What `token create` reports. The token is a credential. */
export interface CreatedToken {
  token: string;
  id: string;
  expires?: string;
  joinCommand?: string;
}

/** Creates a token on the cluster and re-signs cluster-info. */
export async function createToken(client: KubeClient, options: CreateTokenOptions): Promise<CreatedToken> {
  const token = options.token ? parseBootstrapToken(options.token) : generateBootstrapToken();
  const ttlMs = parseGoDuration(options.ttl);
  await createBootstrapToken(client, {
    token,
    ttlMs,
    ...(options.description ? { description: options.description } : {}),
    groups: options.groups && options.groups.length > 0 ? options.groups : [DEFAULT_BOOTSTRAP_TOKEN_GROUP],
  });
  await signClusterInfo(client);
  const result: CreatedToken = { token: formatBootstrapToken(token), id: token.id };
  if (ttlMs > 0) result.expires = new Date(Date.now() + ttlMs).toISOString();
  if (options.printJoinCommand) {
    result.joinCommand = await joinCommandFor(client, result.token, options.installPackagePath);
  }
  return result;
}

/**
 * `edgeadm join <server> --token … --discovery-token-ca-cert-hash …`, from
 * cluster-info, with the cluster's distribution and --enable-edge as the
 * cluster shows them (see clusterJoinTraits).
 */
async function joinCommandFor(client: KubeClient, token: string, installPackagePath?: string): Promise<string> {
  const configMap = await client.get<{ data?: Record<string, string> }>(
    corePath('configmaps', { namespace: CLUSTER_INFO_NAMESPACE, name: CLUSTER_INFO_NAME }),
  );
  const kubeconfig = configMap?.data?.[CLUSTER_INFO_KUBECONFIG_KEY];
  if (!kubeconfig) {
    throw new ValidationError(`the cluster has no ${CLUSTER_INFO_NAMESPACE}/${CLUSTER_INFO_NAME}`, {
      code: 'E_CLUSTER_INFO_MISSING',
      hints: ['Run edgeadm init phase bootstrap-token on the control plane.'],
    });
  }
  const cluster = readKubeconfigCluster(kubeconfig, 'cluster-info');
  const address = new URL(cluster.server).host;
  const pin = caPinsOfPem(cluster.caPem, 'the cluster CA')[0];
  return renderJoinCommand({
    address,
    token,
    caPin: pin ?? '',
    installPackagePath: installPackagePath ?? INSTALL_PACKAGE_PLACEHOLDER,
    ...(await clusterJoinTraits(client)),
  });
}

/** One row of `token list` (no secret). */
export interface TokenListEntry {
  id: string;
  expires?: string;
  usages: string[];
  groups: string[];
  description?: string;
}

/** The cluster's tokens, without their secrets. */
export async function listTokens(client: KubeClient): Promise<TokenListEntry[]> {
  return (await listBootstrapTokens(client)).map((info: BootstrapTokenInfo) => ({
    id: info.token.id,
    ...(info.expires ? { expires: info.expires.toISOString() } : {}),
    usages: info.usages,
    groups: info.groups,
    ...(info.description ? { description: info.description } : {}),
  }));
}

/**
 * Deletes a token (by id, or by the whole token) and re-signs cluster-info.
 *
 * @throws {ValidationError} `E_TOKEN_NOT_FOUND`.
 */
export async function deleteToken(client: KubeClient, idOrToken: string): Promise<{ id: string }> {
  const id = idOrToken.includes('.') ? parseBootstrapToken(idOrToken).id : parseBootstrapTokenId(idOrToken);
  if (!(await deleteBootstrapToken(client, id))) {
    throw new ValidationError(`bootstrap token ${JSON.stringify(id)} was not found`, { code: 'E_TOKEN_NOT_FOUND' });
  }
  await signClusterInfo(client);
  return { id };
}
