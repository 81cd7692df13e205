/**
 * Bootstrap tokens on a cluster, the way kubeadm keeps them, so that
 * discovery works on any distribution: the `bootstrap-token-<id>` Secrets,
 * the `kube-public/cluster-info` ConfigMap signed by edgeadm itself with one
 * JWS per signing token (re-signed whenever a token is created or deleted),
 * and the RBAC that lets anonymous users (and bootstrap tokens, for servers
 * that refuse anonymous requests, as k3s) read cluster-info.
 */
import { ValidationError } from '../errors.js';
import { KubeApiError, corePath, groupPath, type KubeClient, type KubeObject } from '../kube/client.js';
import {
  BOOTSTRAP_TOKEN_SECRET_NAMESPACE,
  BOOTSTRAP_TOKEN_SECRET_TYPE,
  bootstrapTokenSecret,
  bootstrapTokenSecretName,
  readBootstrapTokenSecret,
  type BootstrapTokenInfo,
  type BootstrapTokenSecretOptions,
} from '../trust/bootstrap-token.js';
import {
  CLUSTER_INFO_KUBECONFIG_KEY,
  CLUSTER_INFO_NAME,
  CLUSTER_INFO_NAMESPACE,
  JWS_SIGNATURE_KEY_PREFIX,
  signClusterInfoData,
} from '../trust/cluster-info.js';

/** The Role and RoleBinding that let anonymous users read cluster-info (kubeadm's names). */
export const CLUSTER_INFO_RBAC_NAME = 'kubeadm:bootstrap-signer-clusterinfo';

const SECRETS = (name?: string) =>
  corePath('secrets', { namespace: BOOTSTRAP_TOKEN_SECRET_NAMESPACE, ...(name ? { name } : {}) });
const CLUSTER_INFO = corePath('configmaps', { namespace: CLUSTER_INFO_NAMESPACE, name: CLUSTER_INFO_NAME });

/** Every well-formed bootstrap token Secret (malformed ones are skipped, as the API server skips them). */
export async function listBootstrapTokens(client: KubeClient): Promise<BootstrapTokenInfo[]> {
  const secrets = await client.list<KubeObject & { type?: string; data?: Record<string, string> }>(SECRETS(), {
    fieldSelector: `type=${BOOTSTRAP_TOKEN_SECRET_TYPE}`,
  });
  const tokens: BootstrapTokenInfo[] = [];
  for (const secret of secrets) {
    try {
      tokens.push(readBootstrapTokenSecret(secret));
    } catch {
      // Not a valid token Secret: it cannot authenticate or sign either.
    }
  }
  return tokens.sort((a, b) => a.token.id.localeCompare(b.token.id));
}

/** One token's Secret, or undefined. */
export async function getBootstrapToken(client: KubeClient, id: string): Promise<BootstrapTokenInfo | undefined> {
  const secret = await client.get(SECRETS(bootstrapTokenSecretName(id)));
  if (!secret) return undefined;
  return readBootstrapTokenSecret(secret);
}

/**
 * Creates a token's Secret.
 *
 * @throws {ValidationError} `E_TOKEN_EXISTS` when a token with that id is there.
 */
export async function createBootstrapToken(client: KubeClient, options: BootstrapTokenSecretOptions): Promise<void> {
  const secret = bootstrapTokenSecret(options);
  try {
    await client.create(SECRETS(), secret as unknown as KubeObject);
  } catch (error) {
    if (error instanceof KubeApiError && error.status === 409) {
      throw new ValidationError(`a bootstrap token with id ${options.token.id} already exists`, {
        code: 'E_TOKEN_EXISTS',
      });
    }
    throw error;
  }
}

/** Deletes a token's Secret; false when there was none. */
export async function deleteBootstrapToken(client: KubeClient, id: string): Promise<boolean> {
  return client.delete(SECRETS(bootstrapTokenSecretName(id)));
}

function isSigning(info: BootstrapTokenInfo, now: Date): boolean {
  return info.usages.includes('signing') && (info.expires === undefined || info.expires > now);
}

/**
 * Writes cluster-info with `kubeconfig` (or keeps the one it has) and one
 * signature per valid signing token. Returns true when it changed.
 */
export async function signClusterInfo(
  client: KubeClient,
  options: { kubeconfig?: string; now?: Date } = {},
): Promise<boolean> {
  const now = options.now ?? new Date();
  const existing = await client.get<KubeObject & { data?: Record<string, string> }>(CLUSTER_INFO);
  const kubeconfig = options.kubeconfig ?? existing?.data?.[CLUSTER_INFO_KUBECONFIG_KEY];
  if (kubeconfig === undefined) return false;
  const tokens = (await listBootstrapTokens(client)).filter((info) => isSigning(info, now)).map((info) => info.token);
  const kept = Object.fromEntries(
    Object.entries(existing?.data ?? {}).filter(([key]) => !key.startsWith(JWS_SIGNATURE_KEY_PREFIX)),
  );
  const data = signClusterInfoData({ ...kept, [CLUSTER_INFO_KUBECONFIG_KEY]: kubeconfig }, tokens);
  if (!existing) {
    await client.create(corePath('configmaps', { namespace: CLUSTER_INFO_NAMESPACE }), {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: CLUSTER_INFO_NAME, namespace: CLUSTER_INFO_NAMESPACE },
      data,
    });
    return true;
  }
  if (JSON.stringify(sortKeys(existing.data ?? {})) === JSON.stringify(sortKeys(data))) return false;
  await client.replace(CLUSTER_INFO, { ...existing, data });
  return true;
}

function sortKeys(record: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => a.localeCompare(b)));
}

/**
 * The Role and RoleBinding that let `system:anonymous` get cluster-info
 * (kubeadm's), and `system:bootstrappers` too: on an API server that
 * refuses anonymous requests (k3s), discovery reads cluster-info with the
 * bootstrap token (see src/trust/discovery.ts).
 */
export function clusterInfoRbacObjects(): { role: KubeObject; binding: KubeObject } {
  const metadata = { name: CLUSTER_INFO_RBAC_NAME, namespace: CLUSTER_INFO_NAMESPACE };
  return {
    role: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata,
      rules: [{ apiGroups: [''], resources: ['configmaps'], resourceNames: [CLUSTER_INFO_NAME], verbs: ['get'] }],
    },
    binding: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata,
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: CLUSTER_INFO_RBAC_NAME },
      subjects: [
        { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'system:anonymous' },
        { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:bootstrappers' },
      ],
    },
  };
}

/** Applies the cluster-info RBAC (server-side apply); true when it changed. */
export async function applyClusterInfoRbac(client: KubeClient): Promise<boolean> {
  const { role, binding } = clusterInfoRbacObjects();
  let isChanged = false;
  for (const [resource, object] of [
    ['roles', role],
    ['rolebindings', binding],
  ] as const) {
    const path = groupPath('rbac.authorization.k8s.io/v1', resource, {
      namespace: CLUSTER_INFO_NAMESPACE,
      name: CLUSTER_INFO_RBAC_NAME,
    });
    const before = await client.get(path);
    const after = await client.apply(path, object, { force: true });
    if (before?.metadata?.resourceVersion !== after.metadata?.resourceVersion) isChanged = true;
  }
  return isChanged;
}

const CLUSTER_SCOPED_RESOURCES: Record<string, string> = {
  ClusterRole: 'clusterroles',
  ClusterRoleBinding: 'clusterrolebindings',
};

/**
 * Applies the cluster-scoped RBAC objects a distribution needs for
 * bootstrap tokens to let nodes join (kubeadm's node bootstrap bindings),
 * with server-side apply; true when one changed.
 *
 * @throws {ValidationError} `E_BOOTSTRAP_OBJECT_UNSUPPORTED` for another kind.
 */
export async function applyBootstrapObjects(client: KubeClient, objects: readonly KubeObject[]): Promise<boolean> {
  let isChanged = false;
  for (const object of objects) {
    const resource = CLUSTER_SCOPED_RESOURCES[object.kind ?? ''];
    if (!resource || !object.metadata?.name) {
      throw new ValidationError(`cannot apply a bootstrap object of kind ${String(object.kind)}`, {
        code: 'E_BOOTSTRAP_OBJECT_UNSUPPORTED',
      });
    }
    const path = groupPath('rbac.authorization.k8s.io/v1', resource, { name: object.metadata.name });
    const before = await client.get(path);
    const after = await client.apply(path, object, { force: true });
    if (before?.metadata?.resourceVersion !== after.metadata?.resourceVersion) isChanged = true;
  }
  return isChanged;
}
