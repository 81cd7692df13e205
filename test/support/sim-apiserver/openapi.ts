/**
 * A minimal OpenAPI v3 publication for the simulated API server. kubectl
 * reads `/openapi/v3` before `apply`/`create -f` to learn whether the server
 * validates fields itself (the `fieldValidation` query parameter on the
 * type's PATCH operation); when it does, kubectl sends
 * `fieldValidation=Strict` and validates nothing on the client. Without
 * this document kubectl refuses to apply ("failed to download openapi").
 *
 * The documents list each type's paths and operations with the
 * `x-kubernetes-group-version-kind` and `x-kubernetes-action` extensions,
 * and only skeleton schemas (apiVersion, kind, metadata): the simulation
 * does not validate fields, so it does not pretend to describe them.
 */
import { createHash } from 'node:crypto';
import type { ResourceDefinition, ResourceRegistry } from './resources.js';

const META = 'io.k8s.apimachinery.pkg.apis.meta.v1';
const WRITE_PARAMETERS = ['dryRun', 'fieldManager', 'fieldValidation'];

/** The schema name the API server uses for a kind ("io.k8s.api.core.v1.ConfigMap"). */
function schemaName(definition: ResourceDefinition): string {
  const group = definition.group === '' ? 'core' : (definition.group.split('.')[0] ?? definition.group);
  return `io.k8s.api.${group}.${definition.version}.${definition.kind}`;
}

/** The OpenAPI v3 path key of a group/version ("api/v1", "apis/apps/v1"). */
function groupVersionPath(group: string, version: string): string {
  return group ? `apis/${group}/${version}` : `api/${version}`;
}

function queryParameters(names: string[]): Record<string, unknown>[] {
  return names.map((name) => ({
    name,
    in: 'query',
    schema: { type: name === 'force' ? 'boolean' : 'string', uniqueItems: true },
  }));
}

function ref(name: string): Record<string, string> {
  return { $ref: `#/components/schemas/${name}` };
}

function operation(
  definition: ResourceDefinition,
  action: string,
  parameters: string[],
  hasBody: boolean,
): Record<string, unknown> {
  const body = ref(action === 'patch' ? `${META}.Patch` : schemaName(definition));
  const contentTypes =
    action === 'patch'
      ? // Strategic merge patch is accepted but not advertised: the skeleton schemas carry no patch
        // strategies, and kubectl would otherwise try (and warn about) computing one from them.
        ['application/apply-patch+yaml', 'application/json-patch+json', 'application/merge-patch+json']
      : ['*/*'];
  return {
    operationId: `${action}${definition.kind}`,
    parameters: queryParameters(parameters),
    ...(hasBody
      ? { requestBody: { content: Object.fromEntries(contentTypes.map((t) => [t, { schema: body }])) } }
      : {}),
    responses: {
      '200': { description: 'OK', content: { 'application/json': { schema: ref(schemaName(definition)) } } },
    },
    'x-kubernetes-action': action,
    'x-kubernetes-group-version-kind': { group: definition.group, version: definition.version, kind: definition.kind },
  };
}

function pathsOf(definition: ResourceDefinition): Record<string, unknown> {
  const base = `/${groupVersionPath(definition.group, definition.version)}`;
  const collection = definition.namespaced
    ? `${base}/namespaces/{namespace}/${definition.resource}`
    : `${base}/${definition.resource}`;
  const item = `${collection}/{name}`;
  const verbs = new Set<string>(definition.verbs);
  const collectionOps: Record<string, unknown> = {};
  const itemOps: Record<string, unknown> = {};
  if (verbs.has('list'))
    collectionOps['get'] = operation(definition, 'list', ['labelSelector', 'fieldSelector', 'watch'], false);
  if (verbs.has('create')) collectionOps['post'] = operation(definition, 'post', WRITE_PARAMETERS, true);
  if (verbs.has('deletecollection'))
    collectionOps['delete'] = operation(definition, 'deletecollection', ['labelSelector'], false);
  if (verbs.has('get')) itemOps['get'] = operation(definition, 'get', [], false);
  if (verbs.has('update')) itemOps['put'] = operation(definition, 'put', WRITE_PARAMETERS, true);
  if (verbs.has('patch')) itemOps['patch'] = operation(definition, 'patch', [...WRITE_PARAMETERS, 'force'], true);
  if (verbs.has('delete')) itemOps['delete'] = operation(definition, 'delete', ['dryRun'], false);
  const paths: Record<string, unknown> = {};
  if (Object.keys(collectionOps).length > 0) paths[collection] = collectionOps;
  if (Object.keys(itemOps).length > 0) paths[item] = itemOps;
  return paths;
}

function objectSchema(description: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { type: 'object', description, ...extra };
}

/** Builds and caches the OpenAPI v3 documents. */
export class OpenApiV3 {
  readonly #registry: ResourceRegistry;
  readonly #gitVersion: string;
  #documents: Map<string, string> | undefined;

  constructor(registry: ResourceRegistry, gitVersion: string) {
    this.#registry = registry;
    this.#gitVersion = gitVersion;
  }

  #build(): Map<string, string> {
    const documents = new Map<string, string>();
    const groupVersions = [
      { group: '', version: 'v1' },
      ...this.#registry.groups().flatMap((g) => g.versions.map((version) => ({ group: g.name, version }))),
    ];
    for (const { group, version } of groupVersions) {
      const definitions = this.#registry.inGroupVersion(group, version);
      const schemas: Record<string, unknown> = {
        [`${META}.ObjectMeta`]: objectSchema('Standard object metadata (not described by the simulation).'),
        [`${META}.Patch`]: objectSchema('A patch document.'),
      };
      let paths: Record<string, unknown> = {};
      for (const definition of definitions) {
        paths = { ...paths, ...pathsOf(definition) };
        schemas[schemaName(definition)] = objectSchema(
          `${definition.kind} (the simulated API server does not describe fields).`,
          {
            properties: {
              apiVersion: { type: 'string' },
              kind: { type: 'string' },
              metadata: { allOf: [ref(`${META}.ObjectMeta`)] },
            },
            'x-kubernetes-group-version-kind': [
              { group: definition.group, kind: definition.kind, version: definition.version },
            ],
          },
        );
      }
      documents.set(
        groupVersionPath(group, version),
        JSON.stringify({
          openapi: '3.0.0',
          info: { title: 'Kubernetes (edgeadm sim-apiserver)', version: this.#gitVersion },
          paths,
          components: { schemas },
        }),
      );
    }
    return documents;
  }

  #all(): Map<string, string> {
    this.#documents ??= this.#build();
    return this.#documents;
  }

  /** The `/openapi/v3` index. */
  root(): Record<string, unknown> {
    const paths: Record<string, unknown> = {};
    for (const [path, text] of this.#all()) {
      const hash = createHash('sha512').update(text).digest('hex').toUpperCase();
      paths[path] = { serverRelativeURL: `/openapi/v3/${path}?hash=${hash}` };
    }
    return { paths };
  }

  /** The document of one group/version (path as in the index), as JSON text. */
  document(path: string): string | undefined {
    return this.#all().get(path);
  }
}
