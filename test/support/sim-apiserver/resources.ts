/**
 * The resource types the simulated API server serves: their group, version,
 * kind, scope, verbs and subresources. Discovery, routing, storage and
 * authorization all read this one table, so adding a type is one entry here.
 */

/** Verbs a resource collection supports, as discovery lists them. */
export type ResourceVerb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection';

/** One served resource type. */
export interface ResourceDefinition {
  group: string;
  version: string;
  /** Plural, lower-case name used in URLs ("secrets"). */
  resource: string;
  /** Singular, lower-case name ("secret"). */
  singular: string;
  kind: string;
  namespaced: boolean;
  shortNames: string[];
  verbs: ResourceVerb[];
  /** Subresources served besides the object itself ("status", "log", "exec", "portforward"). */
  subresources: string[];
  /** Categories for `kubectl get all`. */
  categories?: string[];
  /**
   * Virtual resources (reviews) are never stored: a create is answered from
   * the request and discarded, as the real server does.
   */
  isVirtual?: boolean;
}

const ALL_VERBS: ResourceVerb[] = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

function define(
  groupVersion: string,
  kind: string,
  resource: string,
  options: Partial<
    Pick<ResourceDefinition, 'namespaced' | 'shortNames' | 'subresources' | 'categories' | 'verbs' | 'isVirtual'>
  > = {},
): ResourceDefinition {
  const [group, version] = groupVersion.includes('/') ? groupVersion.split('/') : ['', groupVersion];
  return {
    group: group ?? '',
    version: version ?? 'v1',
    resource,
    singular: kind.toLowerCase(),
    kind,
    namespaced: options.namespaced ?? true,
    shortNames: options.shortNames ?? [],
    verbs: options.verbs ?? ALL_VERBS,
    subresources: options.subresources ?? [],
    ...(options.categories ? { categories: options.categories } : {}),
    ...(options.isVirtual ? { isVirtual: true } : {}),
  };
}

/**
 * certificates.k8s.io/v1 CertificateSigningRequests: served only when the
 * simulated CSR controllers run (`csrControllers`), as a cluster without a
 * controller manager would leave them pending forever.
 */
export const CERTIFICATE_SIGNING_REQUESTS: ResourceDefinition = define(
  'certificates.k8s.io/v1',
  'CertificateSigningRequest',
  'certificatesigningrequests',
  { namespaced: false, shortNames: ['csr'], subresources: ['status', 'approval'] },
);

/** The built-in resource types, in discovery order. */
export const BUILTIN_RESOURCES: readonly ResourceDefinition[] = [
  define('v1', 'Namespace', 'namespaces', {
    namespaced: false,
    shortNames: ['ns'],
    subresources: ['status', 'finalize'],
    verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
  }),
  define('v1', 'Node', 'nodes', { namespaced: false, shortNames: ['no'], subresources: ['status'] }),
  define('v1', 'Secret', 'secrets'),
  define('v1', 'ConfigMap', 'configmaps', { shortNames: ['cm'] }),
  define('v1', 'Pod', 'pods', {
    shortNames: ['po'],
    subresources: ['status', 'log', 'exec', 'portforward', 'eviction'],
    categories: ['all'],
  }),
  define('v1', 'Service', 'services', {
    shortNames: ['svc'],
    subresources: ['status'],
    categories: ['all'],
    verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
  }),
  define('v1', 'ServiceAccount', 'serviceaccounts', { shortNames: ['sa'] }),
  define('v1', 'Event', 'events', { shortNames: ['ev'] }),
  define('coordination.k8s.io/v1', 'Lease', 'leases'),
  define('rbac.authorization.k8s.io/v1', 'Role', 'roles'),
  define('rbac.authorization.k8s.io/v1', 'RoleBinding', 'rolebindings'),
  define('rbac.authorization.k8s.io/v1', 'ClusterRole', 'clusterroles', { namespaced: false }),
  define('rbac.authorization.k8s.io/v1', 'ClusterRoleBinding', 'clusterrolebindings', { namespaced: false }),
  define('apps/v1', 'Deployment', 'deployments', {
    shortNames: ['deploy'],
    subresources: ['status'],
    categories: ['all'],
  }),
  define('apps/v1', 'DaemonSet', 'daemonsets', { shortNames: ['ds'], subresources: ['status'], categories: ['all'] }),
  define('apps/v1', 'StatefulSet', 'statefulsets', {
    shortNames: ['sts'],
    subresources: ['status'],
    categories: ['all'],
  }),
  // Stored only: a CRD's schema is not enforced and serves nothing; SiteGrid is served as if its CRD were (edge-addons applies it).
  define('apiextensions.k8s.io/v1', 'CustomResourceDefinition', 'customresourcedefinitions', {
    namespaced: false,
    shortNames: ['crd'],
    subresources: ['status'],
  }),
  define('edgeadm.io/v1alpha1', 'SiteGrid', 'sitegrids', { shortNames: ['sg'], subresources: ['status'] }),
  define('batch/v1', 'Job', 'jobs', { subresources: ['status'], categories: ['all'] }),
  define('policy/v1', 'PodDisruptionBudget', 'poddisruptionbudgets', { shortNames: ['pdb'], subresources: ['status'] }),
  define('authentication.k8s.io/v1', 'SelfSubjectReview', 'selfsubjectreviews', {
    namespaced: false,
    verbs: ['create'],
    isVirtual: true,
  }),
  // Older kubectl releases ask for `auth whoami` at the beta (1.28) or alpha (1.27) version.
  ...['v1beta1', 'v1alpha1'].map((version) =>
    define(`authentication.k8s.io/${version}`, 'SelfSubjectReview', 'selfsubjectreviews', {
      namespaced: false,
      verbs: ['create'],
      isVirtual: true,
    }),
  ),
  define('authorization.k8s.io/v1', 'SelfSubjectAccessReview', 'selfsubjectaccessreviews', {
    namespaced: false,
    verbs: ['create'],
    isVirtual: true,
  }),
];

/** The singular `List` kind of a resource ("SecretList"). */
export function listKindOf(definition: ResourceDefinition): string {
  return `${definition.kind}List`;
}

/** `group/version`, or just `version` for the core group. */
export function groupVersionOf(definition: Pick<ResourceDefinition, 'group' | 'version'>): string {
  return definition.group ? `${definition.group}/${definition.version}` : definition.version;
}

/** Resource types stored with a status that only the status subresource may change. */
export function hasStatusSubresource(definition: ResourceDefinition): boolean {
  return definition.subresources.includes('status');
}

/** Looks resource types up by URL coordinates or by apiVersion+kind. */
export class ResourceRegistry {
  readonly all: readonly ResourceDefinition[];

  constructor(definitions: readonly ResourceDefinition[]) {
    this.all = definitions;
  }

  /** The type served at `/<group>/<version>/<resource>`, if any. */
  byResource(group: string, version: string, resource: string): ResourceDefinition | undefined {
    return this.all.find((d) => d.group === group && d.version === version && d.resource === resource);
  }

  /** The type named by an object's `apiVersion` and `kind`, if any. */
  byKind(apiVersion: string, kind: string): ResourceDefinition | undefined {
    return this.all.find((d) => groupVersionOf(d) === apiVersion && d.kind === kind);
  }

  /** Distinct API groups (excluding the core group) in registration order, each with its versions. */
  groups(): { name: string; versions: string[] }[] {
    const groups: { name: string; versions: string[] }[] = [];
    for (const definition of this.all) {
      if (!definition.group) continue;
      let entry = groups.find((g) => g.name === definition.group);
      if (!entry) {
        entry = { name: definition.group, versions: [] };
        groups.push(entry);
      }
      if (!entry.versions.includes(definition.version)) entry.versions.push(definition.version);
    }
    return groups;
  }

  /** The types of one group/version. */
  inGroupVersion(group: string, version: string): ResourceDefinition[] {
    return this.all.filter((d) => d.group === group && d.version === version);
  }
}
