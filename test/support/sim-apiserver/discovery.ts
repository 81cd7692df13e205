/**
 * API discovery documents for the simulated API server, in both forms that
 * clients use: the classic per-group documents (`/api` APIVersions, `/apis`
 * APIGroupList, `/apis/<g>` APIGroup, `/api/v1` and `/apis/<g>/<v>`
 * APIResourceList), and the aggregated `apidiscovery.k8s.io/v2` form that
 * kubectl asks for first, which answers all groups in one round trip.
 */
import type { ResourceDefinition, ResourceRegistry } from './resources.js';
import { groupVersionOf } from './resources.js';

/** Content type of an aggregated discovery answer. */
export const AGGREGATED_DISCOVERY_CONTENT_TYPE = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

interface SubresourceInfo {
  kind: string;
  group?: string;
  version?: string;
  verbs: string[];
}

const SUBRESOURCES: Record<string, (definition: ResourceDefinition) => SubresourceInfo> = {
  status: (d) => ({ kind: d.kind, verbs: ['get', 'patch', 'update'] }),
  finalize: (d) => ({ kind: d.kind, verbs: ['update'] }),
  log: (d) => ({ kind: d.kind, verbs: ['get'] }),
  exec: () => ({ kind: 'PodExecOptions', verbs: ['create', 'get'] }),
  portforward: () => ({ kind: 'PodPortForwardOptions', verbs: ['create', 'get'] }),
};

function subresourceInfo(definition: ResourceDefinition, subresource: string): SubresourceInfo {
  return (SUBRESOURCES[subresource] ?? ((d: ResourceDefinition) => ({ kind: d.kind, verbs: ['get'] })))(definition);
}

/** Whether an Accept header asks for aggregated discovery (v2, or the older v2beta1). */
export function wantsAggregatedDiscovery(accept: string | undefined): 'v2' | 'v2beta1' | undefined {
  if (!accept) return undefined;
  for (const part of accept.split(',')) {
    if (!/as=APIGroupDiscoveryList/.test(part) || !/g=apidiscovery\.k8s\.io/.test(part)) continue;
    if (/v=v2beta1/.test(part)) return 'v2beta1';
    if (/v=v2(;|$|\s)/.test(part)) return 'v2';
  }
  return undefined;
}

/** Builds discovery documents from the resource registry. */
export class Discovery {
  readonly #registry: ResourceRegistry;

  constructor(registry: ResourceRegistry) {
    this.#registry = registry;
  }

  /** `/api`: the core group's versions and where to reach the server. */
  coreVersions(serverAddress: string): Record<string, unknown> {
    return {
      kind: 'APIVersions',
      versions: ['v1'],
      serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
    };
  }

  /** `/apis`: every named group. */
  groupList(): Record<string, unknown> {
    return { kind: 'APIGroupList', apiVersion: 'v1', groups: this.#registry.groups().map((g) => this.#group(g)) };
  }

  /** `/apis/<group>`, or undefined for an unknown group. */
  group(name: string): Record<string, unknown> | undefined {
    const group = this.#registry.groups().find((g) => g.name === name);
    return group ? { kind: 'APIGroup', apiVersion: 'v1', ...this.#group(group) } : undefined;
  }

  /** `/api/v1` or `/apis/<group>/<version>`, or undefined when nothing is served there. */
  resourceList(group: string, version: string): Record<string, unknown> | undefined {
    const definitions = this.#registry.inGroupVersion(group, version);
    if (definitions.length === 0) return undefined;
    const resources: Record<string, unknown>[] = [];
    for (const d of definitions) {
      resources.push({
        name: d.resource,
        singularName: d.singular,
        namespaced: d.namespaced,
        kind: d.kind,
        verbs: d.verbs,
        ...(d.shortNames.length > 0 ? { shortNames: d.shortNames } : {}),
        ...(d.categories ? { categories: d.categories } : {}),
      });
      for (const sub of d.subresources) {
        const info = subresourceInfo(d, sub);
        resources.push({
          name: `${d.resource}/${sub}`,
          singularName: '',
          namespaced: d.namespaced,
          kind: info.kind,
          verbs: info.verbs,
        });
      }
    }
    return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: groupVersionOf({ group, version }), resources };
  }

  /** The aggregated document for `/api` (core) or `/apis` (named groups). */
  aggregated(scope: 'core' | 'groups', version: 'v2' | 'v2beta1'): Record<string, unknown> {
    const groups = scope === 'core' ? [{ name: '', versions: ['v1'] }] : this.#registry.groups();
    return {
      kind: 'APIGroupDiscoveryList',
      apiVersion: `apidiscovery.k8s.io/${version}`,
      metadata: {},
      items: groups.map((g) => ({
        metadata: g.name ? { name: g.name } : {},
        versions: g.versions.map((v) => ({
          version: v,
          resources: this.#registry.inGroupVersion(g.name, v).map((d) => ({
            resource: d.resource,
            responseKind: { group: d.group, version: d.version, kind: d.kind },
            scope: d.namespaced ? 'Namespaced' : 'Cluster',
            singularResource: d.singular,
            verbs: d.verbs,
            ...(d.shortNames.length > 0 ? { shortNames: d.shortNames } : {}),
            ...(d.categories ? { categories: d.categories } : {}),
            ...(d.subresources.length > 0
              ? {
                  subresources: d.subresources.map((sub) => {
                    const info = subresourceInfo(d, sub);
                    return {
                      subresource: sub,
                      responseKind: {
                        group: info.group ?? d.group,
                        version: info.version ?? d.version,
                        kind: info.kind,
                      },
                      verbs: info.verbs,
                    };
                  }),
                }
              : {}),
          })),
          freshness: 'Current',
        })),
      })),
    };
  }

  #group(group: { name: string; versions: string[] }): Record<string, unknown> {
    const versions = group.versions.map((v) => ({ groupVersion: `${group.name}/${v}`, version: v }));
    return { name: group.name, versions, preferredVersion: versions[0] };
  }
}
