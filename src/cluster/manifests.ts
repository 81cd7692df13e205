/**
 * The manifests edgeadm applies to a cluster (manifests/ at the top of the
 * repository, embedded for the single binary): `{{NAME}}` templates rendered
 * into objects, and server-side apply of those objects, idempotent (an
 * identical re-apply keeps every resourceVersion, so it reports no change).
 * Rendering is pure; applying goes through the KubeClient.
 */
import { loadAll } from 'js-yaml';
import { EdgeadmError, ValidationError } from '../errors.js';
import { corePath, groupPath, type KubeClient, type KubeObject } from '../kube/client.js';

/** The kinds edgeadm's manifests may hold, and their REST resource names. */
const RESOURCES: Record<string, { resource: string; isNamespaced: boolean }> = {
  'v1/ConfigMap': { resource: 'configmaps', isNamespaced: true },
  'v1/Secret': { resource: 'secrets', isNamespaced: true },
  'v1/Namespace': { resource: 'namespaces', isNamespaced: false },
  'v1/ServiceAccount': { resource: 'serviceaccounts', isNamespaced: true },
  'rbac.authorization.k8s.io/v1/Role': { resource: 'roles', isNamespaced: true },
  'rbac.authorization.k8s.io/v1/RoleBinding': { resource: 'rolebindings', isNamespaced: true },
  'rbac.authorization.k8s.io/v1/ClusterRole': { resource: 'clusterroles', isNamespaced: false },
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': { resource: 'clusterrolebindings', isNamespaced: false },
  'apps/v1/DaemonSet': { resource: 'daemonsets', isNamespaced: true },
  'apiextensions.k8s.io/v1/CustomResourceDefinition': { resource: 'customresourcedefinitions', isNamespaced: false },
};

/** A template value may not break out of the quoted YAML scalar it fills. */
const SAFE_VALUE = /^[^'\n\r\\{}]*$/;

/**
 * Fills the `{{NAME}}` placeholders of a manifest template and parses its
 * documents. Comments may name placeholders; only those outside comments
 * must have values.
 *
 * @throws {ValidationError} `E_MANIFEST_RENDER` for a placeholder without a
 * value, an unsafe value, or a document that is not an object with kind and
 * name.
 */
export function renderManifest(template: string, values: Record<string, string>, what: string): KubeObject[] {
  const body = template
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('#'))
    .join('\n');
  const text = body.replace(/\{\{([A-Z0-9_]+)\}\}/g, (_match, name: string) => {
    const value = values[name];
    if (value === undefined) {
      throw new ValidationError(`manifest ${what}: no value for {{${name}}}`, { code: 'E_MANIFEST_RENDER' });
    }
    if (!SAFE_VALUE.test(value)) {
      throw new ValidationError(`manifest ${what}: the value of {{${name}}} has characters a manifest cannot hold`, {
        code: 'E_MANIFEST_RENDER',
      });
    }
    return value;
  });
  const objects = loadAll(text).filter((document) => document !== null && document !== undefined) as KubeObject[];
  for (const object of objects) {
    if (typeof object !== 'object' || !object.kind || !object.apiVersion || !object.metadata?.name) {
      throw new ValidationError(`manifest ${what}: every document needs apiVersion, kind and metadata.name`, {
        code: 'E_MANIFEST_RENDER',
      });
    }
  }
  return objects;
}

/** `Kind namespace/name`, for messages and plans. */
export function describeObject(object: KubeObject): string {
  const namespace = object.metadata?.namespace;
  return `${object.kind} ${namespace ? `${namespace}/` : ''}${object.metadata?.name ?? ''}`;
}

/**
 * The API path of an object.
 *
 * @throws {EdgeadmError} `E_MANIFEST_KIND` for a kind edgeadm does not apply.
 */
export function objectPath(object: KubeObject): string {
  const known = RESOURCES[`${object.apiVersion}/${object.kind}`];
  if (!known) {
    throw new EdgeadmError(`edgeadm does not apply ${object.apiVersion} ${object.kind}`, { code: 'E_MANIFEST_KIND' });
  }
  const where = {
    ...(known.isNamespaced ? { namespace: object.metadata?.namespace ?? 'default' } : {}),
    name: object.metadata!.name!,
  };
  return object.apiVersion === 'v1'
    ? corePath(known.resource, where)
    : groupPath(object.apiVersion!, known.resource, where);
}

/**
 * Server-side applies each object (forcing edgeadm's ownership of the fields
 * it sets) and returns those that changed.
 */
export async function applyObjects(client: KubeClient, objects: readonly KubeObject[]): Promise<KubeObject[]> {
  const changed: KubeObject[] = [];
  for (const object of objects) {
    const path = objectPath(object);
    const before = await client.get(path);
    const after = await client.apply(path, object, { force: true });
    if (before?.metadata?.resourceVersion !== after.metadata?.resourceVersion) changed.push(object);
  }
  return changed;
}
