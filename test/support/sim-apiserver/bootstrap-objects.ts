/**
 * The objects a fresh simulated cluster starts with: the four system
 * namespaces, and the slice of the API server's default RBAC policy that
 * clients rely on (public health/version info for everyone, discovery and
 * self-reviews for authenticated users, cluster-admin for system:masters).
 */
import type { KubeObject } from './store.js';

const RBAC = 'rbac.authorization.k8s.io/v1';
const RBAC_GROUP = 'rbac.authorization.k8s.io';
const BOOTSTRAPPING_LABEL = { 'kubernetes.io/bootstrapping': 'rbac-defaults' };

/** Namespaces every cluster has. */
export const SYSTEM_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'] as const;

/** Namespaces the API server refuses to delete. */
export const UNDELETABLE_NAMESPACES = new Set(['default', 'kube-system', 'kube-public']);

function namespace(name: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, labels: { 'kubernetes.io/metadata.name': name } },
    spec: { finalizers: ['kubernetes'] },
    status: { phase: 'Active' },
  };
}

function clusterRole(name: string, rules: Record<string, string[]>[]): KubeObject {
  return {
    apiVersion: RBAC,
    kind: 'ClusterRole',
    metadata: {
      name,
      labels: BOOTSTRAPPING_LABEL,
      annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' },
    },
    rules,
  };
}

function clusterRoleBinding(name: string, role: string, groups: string[]): KubeObject {
  return {
    apiVersion: RBAC,
    kind: 'ClusterRoleBinding',
    metadata: {
      name,
      labels: BOOTSTRAPPING_LABEL,
      annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' },
    },
    roleRef: { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name: role },
    subjects: groups.map((group) => ({ apiGroup: RBAC_GROUP, kind: 'Group', name: group })),
  };
}

/** The system namespaces. */
export function defaultNamespaces(): KubeObject[] {
  return SYSTEM_NAMESPACES.map(namespace);
}

/** The default RBAC policy subset. */
export function defaultRbacObjects(): KubeObject[] {
  const publicInfo = ['/healthz', '/livez', '/readyz', '/version', '/version/'];
  return [
    clusterRole('cluster-admin', [
      { apiGroups: ['*'], resources: ['*'], verbs: ['*'] },
      { nonResourceURLs: ['*'], verbs: ['*'] },
    ]),
    clusterRoleBinding('cluster-admin', 'cluster-admin', ['system:masters']),
    clusterRole('system:public-info-viewer', [{ nonResourceURLs: publicInfo, verbs: ['get'] }]),
    clusterRoleBinding('system:public-info-viewer', 'system:public-info-viewer', [
      'system:authenticated',
      'system:unauthenticated',
    ]),
    clusterRole('system:discovery', [
      {
        nonResourceURLs: ['/api', '/api/*', '/apis', '/apis/*', '/openapi', '/openapi/*', ...publicInfo],
        verbs: ['get'],
      },
    ]),
    clusterRoleBinding('system:discovery', 'system:discovery', ['system:authenticated']),
    clusterRole('system:basic-user', [
      {
        apiGroups: ['authorization.k8s.io'],
        resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'],
        verbs: ['create'],
      },
      { apiGroups: ['authentication.k8s.io'], resources: ['selfsubjectreviews'], verbs: ['create'] },
    ]),
    clusterRoleBinding('system:basic-user', 'system:basic-user', ['system:authenticated']),
  ];
}

/**
 * The default ClusterRoles a kubelet's TLS bootstrap relies on
 * (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go):
 * `system:node-bootstrapper` (create, get, list, watch CSRs) and the
 * approver's `nodeclient` and `selfnodeclient` roles. Served with the
 * simulated CSR controllers; kubeadm binds them to its token group.
 */
export function csrRbacObjects(): KubeObject[] {
  const csrs = 'certificatesigningrequests';
  return [
    clusterRole('system:node-bootstrapper', [
      { apiGroups: ['certificates.k8s.io'], resources: [csrs], verbs: ['create', 'get', 'list', 'watch'] },
    ]),
    clusterRole('system:certificates.k8s.io:certificatesigningrequests:nodeclient', [
      { apiGroups: ['certificates.k8s.io'], resources: [`${csrs}/nodeclient`], verbs: ['create'] },
    ]),
    clusterRole('system:certificates.k8s.io:certificatesigningrequests:selfnodeclient', [
      { apiGroups: ['certificates.k8s.io'], resources: [`${csrs}/selfnodeclient`], verbs: ['create'] },
    ]),
  ];
}
