/**
 * The site grid controller (`edgeadm agent site-grid-controller`): keeps one
 * copy of each SiteGrid per selected site. A pass is level triggered: it
 * reads the Nodes, the grids and the grids' objects, plans each grid
 * (grid-plan.ts) and applies, deletes and writes status as planned. Passes
 * are idempotent: server-side apply of an unchanged object changes nothing,
 * and the status is written only when it differs.
 *
 * {@link runSiteGridController} runs a pass whenever a watch (Nodes, grids,
 * the grids' workloads) reports a change, and at least every resync period.
 * What it may touch is bounded by its RBAC (manifests/site-grid-controller.yaml)
 * and, within that, by owner references: it deletes only objects whose
 * controller reference is a grid's uid.
 */
import { corePath, groupPath, type KubeClient, type KubeObject } from '../kube/client.js';
import { watchChanges } from '../kube/watch.js';
import { sharedLabels } from './grid-render.js';
import {
  GRID_OBJECTS_SELECTOR,
  ownedBy,
  planGrid,
  toOwnedObject,
  type ObservedSite,
  type OwnedObject,
} from './grid-plan.js';
import { SITE_GRID_API_VERSION, SITE_GRID_FIELD_MANAGER, type SiteGrid } from './site-grid.js';
import { SITE_LABEL } from './site-label.js';
import { isNodeReady, type SiteNodeObject } from './site-list.js';

/** The kinds a grid's copies are made of, with their API paths. */
const KIND_PATHS: Record<string, (options: { namespace?: string; name?: string }) => string> = {
  Deployment: (options) => groupPath('apps/v1', 'deployments', options),
  StatefulSet: (options) => groupPath('apps/v1', 'statefulsets', options),
  Service: (options) => corePath('services', options),
};

/** The path of the grids, or of one grid's status. */
export function siteGridPath(options: { namespace?: string; name?: string; subresource?: string } = {}): string {
  const base = groupPath(SITE_GRID_API_VERSION, 'sitegrids', options);
  return options.subresource === undefined ? base : `${base}/${options.subresource}`;
}

/** Reads the Nodes into sites (by name), with the labels all of a site's nodes share. */
export async function observeSites(client: KubeClient): Promise<ObservedSite[]> {
  const nodes = await client.list<SiteNodeObject>(corePath('nodes'), { labelSelector: SITE_LABEL });
  const bySite = new Map<string, SiteNodeObject[]>();
  for (const node of nodes) {
    const site = node.metadata?.labels?.[SITE_LABEL];
    if (site) bySite.set(site, [...(bySite.get(site) ?? []), node]);
  }
  const sorted = [...bySite].sort(([a], [b]) => a.localeCompare(b));
  return sorted.map(([name, members]) => ({
    name,
    labels: sharedLabels(members.map((node) => node.metadata?.labels ?? {})),
    nodes: members.length,
    readyNodes: members.filter(isNodeReady).length,
  }));
}

/** What one pass did, for the log. */
export interface GridPassResult {
  grids: number;
  applied: string[];
  deleted: string[];
  held: string[];
  failed: string[];
}

async function readGridObjects(client: KubeClient): Promise<Array<OwnedObject & { namespace: string }>> {
  const found: Array<OwnedObject & { namespace: string }> = [];
  for (const [kind, path] of Object.entries(KIND_PATHS)) {
    for (const object of await client.list<KubeObject>(path({}), { labelSelector: GRID_OBJECTS_SELECTOR })) {
      found.push({ ...toOwnedObject(object, kind), namespace: object.metadata?.namespace ?? '' });
    }
  }
  return found;
}

async function applyObject(client: KubeClient, object: KubeObject): Promise<void> {
  const path = KIND_PATHS[object.kind ?? '']!({
    namespace: object.metadata?.namespace ?? '',
    name: object.metadata?.name ?? '',
  });
  await client.request('PATCH', path, {
    body: object,
    contentType: 'application/apply-patch+yaml',
    query: { fieldManager: SITE_GRID_FIELD_MANAGER, force: 'true' },
  });
}

async function reconcileGrid(
  client: KubeClient,
  grid: SiteGrid,
  sites: readonly ObservedSite[],
  found: ReadonlyArray<OwnedObject & { namespace: string }>,
  result: GridPassResult,
): Promise<void> {
  const { namespace, name } = grid.metadata;
  const plan = planGrid(
    grid,
    sites,
    ownedBy(
      grid,
      found.filter((object) => object.namespace === namespace),
    ),
  );
  for (const object of plan.apply) {
    const id = `${namespace}/${object.kind}/${object.metadata?.name}`;
    try {
      await applyObject(client, object);
      result.applied.push(id);
    } catch {
      result.failed.push(id);
    }
  }
  for (const object of plan.delete) {
    await client.delete(KIND_PATHS[object.kind]!({ namespace, name: object.name }));
    result.deleted.push(`${namespace}/${object.kind}/${object.name}`);
  }
  result.held.push(...plan.held.map((held) => `${namespace}/${held}`));
  if (JSON.stringify(grid.status ?? {}) !== JSON.stringify(plan.status)) {
    // A merge patch replaces the status' lists whole: the sites gone from it disappear.
    await client.mergePatch(siteGridPath({ namespace, name, subresource: 'status' }), { status: plan.status });
  }
}

/** One pass over every grid. */
export async function reconcileSiteGrids(client: KubeClient): Promise<GridPassResult> {
  const sites = await observeSites(client);
  const grids = await client.list<SiteGrid>(siteGridPath());
  const found = await readGridObjects(client);
  const result: GridPassResult = { grids: grids.length, applied: [], deleted: [], held: [], failed: [] };
  for (const grid of grids) {
    if (grid.metadata.deletionTimestamp !== undefined) continue;
    try {
      await reconcileGrid(client, grid, sites, found, result);
    } catch {
      result.failed.push(`${grid.metadata.namespace}/${grid.metadata.name}`);
    }
  }
  return result;
}

/** How the controller runs. */
export interface SiteGridControllerOptions {
  client: KubeClient;
  /** The longest time between two passes, whatever the watches say. */
  resyncMs: number;
  signal: AbortSignal;
  log: (line: string) => void;
}

/** Changes closer together than this make one pass (a rollout's status updates come in bursts). */
export const SITE_GRID_DEBOUNCE_MS = 500;
/** The pause before a failed pass is run again. */
export const SITE_GRID_RETRY_MS = 2_000;

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** One pass, logged; true when it should be retried soon. */
async function runPass(client: KubeClient, log: (line: string) => void): Promise<boolean> {
  try {
    const pass = await reconcileSiteGrids(client);
    const lines = [...pass.deleted.map((d) => `deleted ${d}`), ...pass.failed.map((f) => `failed ${f} (retried)`)];
    if (lines.length > 0) log(lines.join('; '));
    return pass.failed.length > 0;
  } catch (error) {
    log(`pass failed, retrying: ${(error as Error).message}`);
    return true;
  }
}

/** Runs passes on every change the watches see, and every `resyncMs`, until the signal aborts. */
export async function runSiteGridController(options: SiteGridControllerOptions): Promise<void> {
  const { client, signal } = options;
  // Set by the watches between passes: a change seen during a pass runs the next one at once.
  const changes = { isDirty: false };
  let wake = new AbortController();
  const onChange = (): void => {
    changes.isDirty = true;
    wake.abort();
  };
  const onError = (error: Error): void => options.log(`watch failed, re-listing: ${error.message}`);
  const watch = (path: string, labelSelector?: string): Promise<void> =>
    watchChanges({ client, path, signal, onChange, onError, ...(labelSelector ? { labelSelector } : {}) });
  const watches = [
    watch(corePath('nodes'), SITE_LABEL),
    watch(siteGridPath()),
    watch(KIND_PATHS.Deployment!({}), GRID_OBJECTS_SELECTOR),
    watch(KIND_PATHS.StatefulSet!({}), GRID_OBJECTS_SELECTOR),
  ];
  while (!signal.aborted) {
    await sleep(SITE_GRID_DEBOUNCE_MS, signal);
    changes.isDirty = false;
    wake = new AbortController();
    const isRetryNeeded = await runPass(client, options.log);
    if (changes.isDirty) continue;
    await sleep(isRetryNeeded ? SITE_GRID_RETRY_MS : options.resyncMs, AbortSignal.any([signal, wake.signal]));
  }
  await Promise.all(watches);
}
