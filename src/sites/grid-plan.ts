/**
 * One reconcile of one grid, decided: which copies to apply, which to leave
 * alone (their site is offline), which to delete (their site is gone or no
 * longer selected), and the status to write. Pure: the controller reads the
 * cluster, calls this, and does what it says.
 *
 * A site is present while any Node carries its label, Ready or not. A site
 * whose nodes are all NotReady (cut off) keeps its copy untouched: applying
 * a changed template would make the Deployment controller replace pods the
 * site's nodes cannot hear about, and deleting it would take away what the
 * site still runs. Only a site with no Node left loses its copy.
 */
import type { KubeObject } from '../kube/client.js';
import { renderGridService, renderSiteService, renderWorkload, selectSites, type GridSite } from './grid-render.js';
import {
  copyName,
  copyNameProblem,
  SITE_GRID_LABEL,
  type SiteCopyStatus,
  type SiteGrid,
  type SiteGridStatus,
} from './site-grid.js';
import { SITE_LABEL } from './site-label.js';

/** A site with its nodes' readiness, as the controller read it. */
export interface ObservedSite extends GridSite {
  nodes: number;
  readyNodes: number;
}

/** An object of a grid found in the cluster (workload or Service). */
export interface OwnedObject {
  kind: string;
  name: string;
  /** Its `edgeadm.io/site` label; undefined for the grid's own Service. */
  site: string | undefined;
  ownerUid: string | undefined;
  status?: { replicas?: number; readyReplicas?: number; observedGeneration?: number };
  generation?: number;
}

/** What to do for one grid. */
export interface GridPlan {
  apply: KubeObject[];
  /** Copies left as they are (their site offline). */
  held: string[];
  delete: Array<{ kind: string; name: string }>;
  status: SiteGridStatus;
}

/** The objects of `grid` among those found, by their owner reference. */
export function ownedBy(grid: SiteGrid, found: readonly OwnedObject[]): OwnedObject[] {
  return found.filter((object) => object.ownerUid === grid.metadata.uid);
}

/** Reads an object of a grid as {@link OwnedObject}. */
export function toOwnedObject(object: KubeObject, kind: string): OwnedObject {
  const metadata = object.metadata ?? {};
  const owners = (metadata.ownerReferences as Array<{ uid?: string; controller?: boolean }> | undefined) ?? [];
  const status = object.status as OwnedObject['status'] | undefined;
  const generation = metadata.generation as number | undefined;
  return {
    kind,
    name: metadata.name ?? '',
    site: metadata.labels?.[SITE_LABEL],
    ownerUid: owners.find((owner) => owner.controller === true)?.uid,
    ...(status === undefined ? {} : { status }),
    ...(generation === undefined ? {} : { generation }),
  };
}

function copyStatus(site: ObservedSite, desired: number, workload: OwnedObject | undefined): SiteCopyStatus {
  const readyReplicas = workload?.status?.readyReplicas ?? 0;
  const observedGeneration = workload?.status?.observedGeneration;
  const isCurrent = observedGeneration !== undefined && observedGeneration === workload?.generation;
  const state = site.readyNodes === 0 ? 'Offline' : isCurrent && readyReplicas >= desired ? 'Ready' : 'Progressing';
  return {
    site: site.name,
    state,
    nodes: site.nodes,
    readyNodes: site.readyNodes,
    replicas: desired,
    readyReplicas,
    ...(observedGeneration === undefined ? {} : { observedGeneration }),
  };
}

/** Plans one grid against the sites and the grid's objects found (already {@link ownedBy} it). */
export function planGrid(grid: SiteGrid, sites: readonly ObservedSite[], owned: readonly OwnedObject[]): GridPlan {
  const plan: GridPlan = { apply: [], held: [], delete: [], status: { sites: [] } };
  if (grid.metadata.generation !== undefined) plan.status.observedGeneration = grid.metadata.generation;
  const kind = grid.spec.workload.kind;
  const selected = selectSites(grid, sites) as ObservedSite[];
  const keep = new Set<string>();
  for (const site of selected) {
    const name = copyName(grid.metadata.name, site.name);
    const problem = copyNameProblem(name);
    const workload = owned.find((o) => o.kind === kind && o.name === name);
    if (problem !== undefined) {
      plan.status.sites.push({ ...copyStatus(site, 0, undefined), state: 'Invalid', message: problem });
      continue;
    }
    keep.add(`${kind}/${name}`).add(`Service/${name}`);
    const rendered = renderWorkload(grid, site);
    const desired = (rendered.spec as { replicas: number }).replicas;
    plan.status.sites.push(copyStatus(site, desired, workload));
    if (site.readyNodes === 0 && workload !== undefined) {
      plan.held.push(name);
      continue;
    }
    plan.apply.push(rendered);
    const service = renderSiteService(grid, site);
    if (service !== undefined) plan.apply.push(service);
  }
  const gridService = renderGridService(grid);
  if (gridService !== undefined) {
    plan.apply.push(gridService);
    keep.add(`Service/${grid.metadata.name}`);
  }
  for (const object of owned) {
    if (!keep.has(`${object.kind}/${object.name}`)) plan.delete.push({ kind: object.kind, name: object.name });
  }
  return plan;
}

/** The label selector that finds every object of every grid. */
export const GRID_OBJECTS_SELECTOR = SITE_GRID_LABEL;
