/**
 * The agent's identity on its edge cluster. The agent acts for hub users by
 * impersonation, so the identity it uses needs `impersonate` on users and
 * groups; and it keeps the inventories of the rollouts it applies
 * (ConfigMaps `kube-system/edgeadm-rollout-<name>`) as itself, so that a
 * rollout's owner, impersonated for the rollout's objects, needs no rights
 * in kube-system: a Role there on ConfigMaps. This module owns that RBAC: the
 * objects `register-cloud --create-service-account` creates from an admin
 * kubeconfig (a ServiceAccount, a ClusterRole with that one rule, its
 * binding, and a `kubernetes.io/service-account-token` Secret for a
 * long-lived token), and the access reviews that check any identity
 * before the agent is registered with it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { EdgeadmError } from '../errors.js';
import { KubeApiError, KubeClient, corePath, groupPath, type KubeObject } from '../kube/client.js';
import type { Logger } from '../log/run-log.js';
import { AGENT_TOKEN_POLL_MS, AGENT_TOKEN_WAIT_MS } from '../tunnel/limits.js';
import type { Upstream, UpstreamCredentials } from '../tunnel/upstream.js';

/** Namespace of the agent's ServiceAccount. */
export const AGENT_SERVICE_ACCOUNT_NAMESPACE = 'kube-system';
/** Name of the agent's ServiceAccount, ClusterRole and ClusterRoleBinding. */
export const AGENT_SERVICE_ACCOUNT_NAME = 'edgeadm-tunnel-agent';
/** Name of the Secret that holds the ServiceAccount's token. */
export const AGENT_TOKEN_SECRET_NAME = 'edgeadm-tunnel-agent-token';
/** Label on everything edgeadm creates for the agent, so an operator can find (and remove) it. */
export const AGENT_RBAC_LABELS = {
  'app.kubernetes.io/managed-by': 'edgeadm',
  'app.kubernetes.io/name': 'tunnel-agent',
};

const RBAC_GROUP_VERSION = 'rbac.authorization.k8s.io/v1';
const SERVICE_ACCOUNT_TOKEN_TYPE = 'kubernetes.io/service-account-token';
const SERVICE_ACCOUNT_NAME_ANNOTATION = 'kubernetes.io/service-account.name';

/**
 * What the agent's identity may do cluster-wide: impersonate users and
 * groups (the one right it needs), and list nodes, so that the hub shows how
 * many the cluster has (a read the impersonate right allows anyway, kept
 * without impersonating anyone).
 */
export const AGENT_IMPERSONATION_RULES = [
  { apiGroups: [''], resources: ['users', 'groups'], verbs: ['impersonate'] },
  { apiGroups: [''], resources: ['nodes'], verbs: ['list'] },
] as const;

/**
 * What the agent does as itself with the rollout inventories (ConfigMaps in
 * kube-system): read them back after a restart (list), write them (server-side
 * apply creates or patches) and delete them with the rollout. RBAC cannot
 * narrow `create` or `list` to a name prefix, so the Role covers the
 * namespace's ConfigMaps; it adds nothing to what the impersonate right
 * already allows, and keeps the owner's rights out of kube-system.
 */
export const AGENT_INVENTORY_RULES = [
  { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'create', 'patch', 'update', 'delete'] },
] as const;

/** The objects `--create-service-account` applies, in order. Pure. */
export function agentRbacObjects(): KubeObject[] {
  const namespace = AGENT_SERVICE_ACCOUNT_NAMESPACE;
  const name = AGENT_SERVICE_ACCOUNT_NAME;
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace, labels: { ...AGENT_RBAC_LABELS } } },
    {
      apiVersion: RBAC_GROUP_VERSION,
      kind: 'ClusterRole',
      metadata: { name, labels: { ...AGENT_RBAC_LABELS } },
      rules: AGENT_IMPERSONATION_RULES.map((rule) => ({
        apiGroups: [...rule.apiGroups],
        resources: [...rule.resources],
        verbs: [...rule.verbs],
      })),
    },
    {
      apiVersion: RBAC_GROUP_VERSION,
      kind: 'ClusterRoleBinding',
      metadata: { name, labels: { ...AGENT_RBAC_LABELS } },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    },
    {
      apiVersion: RBAC_GROUP_VERSION,
      kind: 'Role',
      metadata: { name, namespace, labels: { ...AGENT_RBAC_LABELS } },
      rules: AGENT_INVENTORY_RULES.map((rule) => ({
        apiGroups: [...rule.apiGroups],
        resources: [...rule.resources],
        verbs: [...rule.verbs],
      })),
    },
    {
      apiVersion: RBAC_GROUP_VERSION,
      kind: 'RoleBinding',
      metadata: { name, namespace, labels: { ...AGENT_RBAC_LABELS } },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    },
  ];
}

/** The token Secret; created once and never re-applied (its data belongs to the cluster's token controller). */
export function agentTokenSecret(): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: SERVICE_ACCOUNT_TOKEN_TYPE,
    metadata: {
      name: AGENT_TOKEN_SECRET_NAME,
      namespace: AGENT_SERVICE_ACCOUNT_NAMESPACE,
      labels: { ...AGENT_RBAC_LABELS },
      annotations: { [SERVICE_ACCOUNT_NAME_ANNOTATION]: AGENT_SERVICE_ACCOUNT_NAME },
    },
  };
}

function pathOf(object: KubeObject): string {
  const name = object.metadata?.name ?? '';
  const namespace = object.metadata?.namespace;
  const resource = `${(object.kind ?? '').toLowerCase()}s`;
  return object.apiVersion === 'v1'
    ? corePath(resource, { ...(namespace ? { namespace } : {}), name })
    : groupPath(object.apiVersion ?? '', resource, { ...(namespace ? { namespace } : {}), name });
}

function serviceAccountError(why: string, cause: unknown): EdgeadmError {
  const isForbidden = cause instanceof KubeApiError && (cause.status === 401 || cause.status === 403);
  return new EdgeadmError(`cannot create the agent's ServiceAccount: ${why}`, {
    code: 'E_AGENT_SERVICE_ACCOUNT',
    exitCode: isForbidden ? 3 : 1,
    cause,
    hints: isForbidden
      ? [
          '--create-service-account needs a cluster-admin kubeconfig (--kubeconfig).',
          'Or create the RBAC yourself (README, "Cloud hub") and pass a kubeconfig of that identity without the flag.',
        ]
      : ['Check that --kubeconfig reaches the API server, then run the same command again: it is idempotent.'],
  });
}

/** What {@link ensureAgentServiceAccount} returns. `credentials.token` is a secret. */
export interface AgentServiceAccount {
  /** The same server and CA as the admin's, with the ServiceAccount's token. */
  credentials: UpstreamCredentials;
  /** Whether anything was created or changed (false on an idempotent re-run). */
  hasChanged: boolean;
}

/**
 * Creates (or finds) the agent's ServiceAccount, its ClusterRole and
 * binding, and its token Secret, with the admin `credentials`, and waits
 * for the cluster to fill the token. The admin credentials are used for
 * these calls only.
 *
 * @throws {EdgeadmError} `E_AGENT_SERVICE_ACCOUNT`.
 */
export async function ensureAgentServiceAccount(options: {
  admin: UpstreamCredentials;
  logger: Logger;
  /** Bound of the wait for the token; {@link AGENT_TOKEN_WAIT_MS} by default. */
  tokenWaitMs?: number;
}): Promise<AgentServiceAccount> {
  const { admin } = options;
  if (admin.isInsecureSkipTlsVerify && admin.caPem === undefined) {
    throw new EdgeadmError('cannot create the agent ServiceAccount: the kubeconfig skips TLS verification', {
      code: 'E_AGENT_SERVICE_ACCOUNT',
      exitCode: 3,
      hints: ['Use a kubeconfig with the cluster CA (certificate-authority-data); the agent pins it.'],
    });
  }
  const client = new KubeClient({
    server: admin.server,
    contextName: 'admin',
    ...(admin.caPem === undefined ? {} : { caPem: admin.caPem }),
    ...(admin.token === undefined ? {} : { token: admin.token }),
    ...(admin.clientCertPem === undefined ? {} : { clientCertificatePem: admin.clientCertPem }),
    ...(admin.clientKeyPem === undefined ? {} : { clientKeyPem: admin.clientKeyPem }),
  });
  let hasChanged = false;
  for (const object of agentRbacObjects()) {
    const path = pathOf(object);
    try {
      const before = await client.get(path);
      const after = await client.apply(path, object, { force: true });
      if (before?.metadata?.resourceVersion !== after.metadata?.resourceVersion) {
        hasChanged = true;
        options.logger.info(`applied ${object.kind} ${object.metadata?.name ?? ''}`);
      }
    } catch (error) {
      throw serviceAccountError(`${object.kind} ${object.metadata?.name ?? ''}: ${(error as Error).message}`, error);
    }
  }
  const secret = agentTokenSecret();
  const secretPath = pathOf(secret);
  try {
    if ((await client.get(secretPath)) === undefined) {
      await client.create(corePath('secrets', { namespace: AGENT_SERVICE_ACCOUNT_NAMESPACE }), secret);
      hasChanged = true;
      options.logger.info(`created Secret ${AGENT_TOKEN_SECRET_NAME}`);
    }
  } catch (error) {
    throw serviceAccountError(`Secret ${AGENT_TOKEN_SECRET_NAME}: ${(error as Error).message}`, error);
  }
  const token = await waitForToken(client, secretPath, options.tokenWaitMs ?? AGENT_TOKEN_WAIT_MS);
  const credentials: UpstreamCredentials = { server: admin.server, isInsecureSkipTlsVerify: false, token };
  if (admin.caPem !== undefined) credentials.caPem = admin.caPem;
  return { credentials, hasChanged };
}

async function waitForToken(client: KubeClient, path: string, waitMs: number): Promise<string> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    let secret: KubeObject | undefined;
    try {
      secret = await client.get(path);
    } catch (error) {
      throw serviceAccountError(`reading Secret ${AGENT_TOKEN_SECRET_NAME}: ${(error as Error).message}`, error);
    }
    const encoded = (secret?.['data'] as Record<string, unknown> | undefined)?.['token'];
    if (typeof encoded === 'string' && encoded !== '') return Buffer.from(encoded, 'base64').toString('utf8');
    if (Date.now() >= deadline) {
      throw new EdgeadmError(
        `the cluster did not fill the token of Secret ${AGENT_SERVICE_ACCOUNT_NAMESPACE}/${AGENT_TOKEN_SECRET_NAME} within ${waitMs} ms`,
        {
          code: 'E_AGENT_SERVICE_ACCOUNT',
          hints: [
            "The token controller of kube-controller-manager fills it; check that it runs (and that the ServiceAccount's namespace exists).",
          ],
        },
      );
    }
    await sleep(AGENT_TOKEN_POLL_MS);
  }
}

/** One access review answer of {@link reviewImpersonation}. */
export interface ImpersonationReview {
  resource: 'users' | 'groups';
  isAllowed: boolean;
}

/** Asks the API server (SelfSubjectAccessReview) whether the agent's own identity may impersonate users and groups. */
export async function reviewImpersonation(upstream: Upstream): Promise<ImpersonationReview[]> {
  const reviews: ImpersonationReview[] = [];
  for (const resource of ['users', 'groups'] as const) {
    const answer = (await upstream.requestJson('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SelfSubjectAccessReview',
      spec: { resourceAttributes: { verb: 'impersonate', group: '', resource } },
    })) as { status?: { allowed?: unknown } };
    reviews.push({ resource, isAllowed: answer.status?.allowed === true });
  }
  return reviews;
}

/**
 * Refuses an identity that may not impersonate users and groups (the agent
 * would be useless with it). When the API server cannot be asked, it warns
 * and goes on: the cluster may be registered before it is reachable.
 *
 * @throws {EdgeadmError} `E_AGENT_RBAC` (exit 3).
 */
export async function requireImpersonation(upstream: Upstream, logger: Logger, identity: string): Promise<void> {
  let reviews: ImpersonationReview[];
  try {
    reviews = await reviewImpersonation(upstream);
  } catch (error) {
    logger.warn(`cannot check that ${identity} may impersonate (${(error as Error).message}); going on`);
    return;
  }
  const missing = reviews.filter((r) => !r.isAllowed).map((r) => r.resource);
  if (missing.length === 0) return;
  throw new EdgeadmError(`${identity} may not impersonate ${missing.join(' and ')} on this cluster`, {
    code: 'E_AGENT_RBAC',
    exitCode: 3,
    hints: [
      'The agent acts for hub users by impersonation. Bind to its identity a ClusterRole with',
      '  rules: [{apiGroups: [""], resources: [users, groups], verbs: [impersonate]}]',
      'or run register-cloud with an admin --kubeconfig and --create-service-account, which does that for you.',
    ],
  });
}
