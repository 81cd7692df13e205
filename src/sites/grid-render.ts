/**
 * What a SiteGrid asks for, site by site: which sites it selects, the
 * overrides that apply to each, and the objects of each copy (a workload
 * pinned to the site's nodes and a Service with the site's name), plus the
 * grid's own Service that clients in every site call. Pure: no I/O; the
 * controller applies what this renders.
 */
import type { KubeObject } from '../kube/client.js';
import {
  copyLabels,
  copyName,
  EDGE_NODE_TAINT_KEY,
  SITE_GRID_API_VERSION,
  SITE_GRID_LABEL,
  type Container,
  type EnvVar,
  type KubeLabelSelector,
  type SiteGrid,
  type SiteOverride,
} from './site-grid.js';
import { SITE_LABEL } from './site-label.js';

/** A site as grids see it: its name and the labels all its nodes share. */
export interface GridSite {
  name: string;
  labels: Record<string, string>;
}

/** Whether `labels` match a Kubernetes label selector (an empty selector matches all). */
export function matchesSelector(selector: KubeLabelSelector, labels: Readonly<Record<string, string>>): boolean {
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (labels[key] !== value) return false;
  }
  for (const term of selector.matchExpressions ?? []) {
    const value = labels[term.key];
    const isIn = value !== undefined && (term.values ?? []).includes(value);
    if (term.operator === 'In' && !isIn) return false;
    if (term.operator === 'NotIn' && isIn) return false;
    if (term.operator === 'Exists' && value === undefined) return false;
    if (term.operator === 'DoesNotExist' && value !== undefined) return false;
  }
  return true;
}

/** The labels every node of a site carries with the same value (the site's labels). */
export function sharedLabels(nodeLabels: ReadonlyArray<Readonly<Record<string, string>>>): Record<string, string> {
  const [first, ...rest] = nodeLabels;
  if (first === undefined) return {};
  return Object.fromEntries(Object.entries(first).filter(([key, value]) => rest.every((l) => l[key] === value)));
}

/** The sites a grid selects, by name and/or label; every site when it names neither. */
export function selectSites(grid: SiteGrid, sites: readonly GridSite[]): GridSite[] {
  const chosen = grid.spec.sites;
  if (chosen?.names === undefined && chosen?.selector === undefined) return [...sites];
  return sites.filter(
    (site) =>
      (chosen.names?.includes(site.name) ?? false) ||
      (chosen.selector !== undefined && matchesSelector(chosen.selector, site.labels)),
  );
}

/** Whether an override is for `site`. */
function isOverrideFor(override: SiteOverride, site: GridSite): boolean {
  if (override.sites?.includes(site.name)) return true;
  return override.siteSelector !== undefined && matchesSelector(override.siteSelector, site.labels);
}

/** Env by name: `over`'s values replace `base`'s of the same name, new ones are added in order. */
export function mergeEnv(base: readonly EnvVar[], over: readonly EnvVar[]): EnvVar[] {
  const merged = base.map((entry) => over.find((o) => o.name === entry.name) ?? entry);
  return [...merged, ...over.filter((o) => !base.some((entry) => entry.name === o.name))];
}

/** The overrides for a site, applied in their order (a later one wins), as one. */
export function siteOverrides(grid: SiteGrid, site: GridSite): SiteOverride[] {
  return (grid.spec.overrides ?? []).filter((override) => isOverrideFor(override, site));
}

function overriddenContainer(container: Container, overrides: readonly SiteOverride[]): Container {
  let result: Container = { ...container };
  for (const override of overrides) {
    if (override.container !== undefined && override.container !== container.name) continue;
    if (override.image !== undefined) result = { ...result, image: override.image };
    if (override.env !== undefined) result = { ...result, env: mergeEnv(result.env ?? [], override.env) };
    if (override.resources !== undefined) result = { ...result, resources: override.resources };
  }
  return result;
}

/** The replicas of a site's copy: the last override's that sets them, else the template's (1 by default). */
export function siteReplicas(grid: SiteGrid, overrides: readonly SiteOverride[]): number {
  return overrides.reduce((replicas, o) => o.replicas ?? replicas, grid.spec.workload.replicas ?? 1);
}

function ownerReference(grid: SiteGrid): Record<string, unknown> {
  return {
    apiVersion: SITE_GRID_API_VERSION,
    kind: 'SiteGrid',
    name: grid.metadata.name,
    uid: grid.metadata.uid,
    controller: true,
  };
}

/** A site's workload: the template with the site's overrides, its pods pinned to the site's nodes. */
export function renderWorkload(grid: SiteGrid, site: GridSite): KubeObject {
  const { kind, template } = grid.spec.workload;
  const overrides = siteOverrides(grid, site);
  const name = copyName(grid.metadata.name, site.name);
  const selector = { [SITE_GRID_LABEL]: grid.metadata.name, [SITE_LABEL]: site.name };
  const tolerations = template.spec.tolerations ?? [];
  const isEdgeTolerated = tolerations.some((t) => t.key === EDGE_NODE_TAINT_KEY);
  return {
    apiVersion: 'apps/v1',
    kind,
    metadata: {
      name,
      namespace: grid.metadata.namespace,
      labels: copyLabels(grid.metadata.name, site.name),
      ownerReferences: [ownerReference(grid)],
    },
    spec: {
      replicas: siteReplicas(grid, overrides),
      selector: { matchLabels: selector },
      ...(kind === 'StatefulSet' ? { serviceName: name } : {}),
      template: {
        metadata: { ...template.metadata, labels: { ...template.metadata?.labels, ...selector } },
        spec: {
          ...template.spec,
          // The site's nodes only: a copy never runs in another site, whatever the template says.
          nodeSelector: { ...template.spec.nodeSelector, [SITE_LABEL]: site.name },
          tolerations: isEdgeTolerated
            ? tolerations
            : [...tolerations, { key: EDGE_NODE_TAINT_KEY, operator: 'Exists', effect: 'NoSchedule' }],
          containers: template.spec.containers.map((c) => overriddenContainer(c, overrides)),
        },
      },
    },
  };
}

function renderService(grid: SiteGrid, name: string, selector: Record<string, string>, site?: string): KubeObject {
  const service = grid.spec.service!;
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name,
      namespace: grid.metadata.namespace,
      labels: copyLabels(grid.metadata.name, site),
      ownerReferences: [ownerReference(grid)],
    },
    spec: { ...(service.type === undefined ? {} : { type: service.type }), selector, ports: service.ports },
  };
}

/** A site's own Service (`<grid>-<site>`): that site's pods only, by name, from anywhere. */
export function renderSiteService(grid: SiteGrid, site: GridSite): KubeObject | undefined {
  if (grid.spec.service === undefined) return undefined;
  const selector = { [SITE_GRID_LABEL]: grid.metadata.name, [SITE_LABEL]: site.name };
  return renderService(grid, copyName(grid.metadata.name, site.name), selector, site.name);
}

/**
 * The grid's Service (`<grid>`): every copy's pods, one name in every site.
 * Its label (copied by Kubernetes onto its EndpointSlices) is what the
 * edge-proxy keys on to give each site's nodes only their own site's
 * endpoints (src/sites/endpoint-filter.ts).
 */
export function renderGridService(grid: SiteGrid): KubeObject | undefined {
  if (grid.spec.service === undefined) return undefined;
  return renderService(grid, grid.metadata.name, { [SITE_GRID_LABEL]: grid.metadata.name });
}
