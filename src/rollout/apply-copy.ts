/**
 * Applies one cluster's copy of a rollout to that cluster's API server, and
 * reads back what it runs: the agent's side of a rollout, whatever carries
 * the copy there.
 *
 * - Objects are applied in the copy's order with server-side apply under
 *   one field manager, `edgeadm-rollout`, forcing conflicts (the rollout
 *   owns the fields it sets, as a controller does).
 * - What the rollout applied is recorded in an inventory ConfigMap
 *   (`kube-system/edgeadm-rollout-<name>`), so that objects a later
 *   revision drops are pruned. An object is deleted only if it still
 *   carries the rollout's label: nothing the rollout did not create is
 *   touched, even when its name is reused.
 * - Status is read back per object and reduced to one readiness, quoting
 *   the revision the objects carry, never the one that was sent. Only
 *   objects that carry the rollout's label are read back as its own.
 * - The objects and the inventory may be reached with two clients: the
 *   agent applies objects as the rollout's owner (impersonated, so the
 *   cluster's RBAC decides) and keeps the inventories as itself, so an
 *   owner needs no rights in kube-system. The inventory also records the
 *   owner and the revision, from which an agent that restarts knows what it
 *   runs.
 * - Every request path is built from the copy's names; a name the API server
 *   could not hold in one path segment (`.`, `..`, `/`, `%`, as its
 *   `ValidatePathSegmentName` refuses) is refused here before any request,
 *   and the whole path must pass `parseApiPath`.
 */
import type { KubeClient, KubeObject } from '../kube/client.js';
import { parseApiPath } from '../kube/api-path.js';
import { copyReadinessOf } from './readiness.js';
import { ROLLOUT_LABEL, ROLLOUT_REVISION_ANNOTATION, type RenderedCopy } from './render.js';
import type { RolloutResource } from './spec.js';
import type { CopyReport } from './progress.js';
import type { ReportedObject, RolloutOwner } from './wire.js';

/** The field manager every rollout applies as. */
export const ROLLOUT_FIELD_MANAGER = 'edgeadm-rollout';
/** Where the inventories live. */
export const INVENTORY_NAMESPACE = 'kube-system';
/** The prefix of an inventory ConfigMap's name; the rollout's name follows. */
export const INVENTORY_NAME_PREFIX = 'edgeadm-rollout-';

/** How a kind is reached on this cluster. */
interface KindPath {
  resource: string;
  isNamespaced: boolean;
}

/** One object's identity, as kept in the inventory. */
interface InventoryEntry {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
}

type DiscoveryList = { resources?: Array<{ name: string; kind: string; namespaced: boolean }> };

type InventoryMap = KubeObject & { data?: Record<string, string> };

/** What an inventory says a cluster runs of one rollout. */
export interface InventoryRecord {
  rollout: string;
  /** Whom the rollout's objects were applied as; absent in an inventory that did not record it. */
  owner?: RolloutOwner;
  /** The copy revision last applied (or being applied). */
  revision?: string;
}

/** A copy read back from the cluster: its report and its objects' status. */
export interface CopyReadBack {
  report: CopyReport;
  objects: ReportedObject[];
}

/** Options of {@link CopyApplier.apply}. */
export interface ApplyOptions {
  /** Recorded in the inventory, so that a restarted agent reads the objects back as the same user. */
  owner?: RolloutOwner;
  /** Aborted when a newer copy supersedes this one: the apply stops between two objects. */
  signal?: AbortSignal;
}

/** A copy names an object the cluster cannot take: a bad name or apiVersion, or a kind it does not serve. */
export class CopyObjectError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CopyObjectError';
  }
}

/** Checks one path segment as the API server's `ValidatePathSegmentName` does. */
function segment(value: string, what: string): string {
  if (value === '' || value === '.' || value === '..' || value.includes('/') || value.includes('%')) {
    throw new CopyObjectError(`${what} ${JSON.stringify(value)} may not be '.', '..' or contain '/' or '%'`);
  }
  return value;
}

/** Applies copies to one cluster; keeps what discovery learned between copies. */
export class CopyApplier {
  readonly #client: KubeClient;
  readonly #inventory: KubeClient;
  readonly #kinds = new Map<string, KindPath>();

  /**
   * @param client reaches the rollout's objects (as the owner, when impersonating).
   * @param options.inventory reaches the inventory ConfigMaps; `client` when absent.
   */
  constructor(client: KubeClient, options: { inventory?: KubeClient } = {}) {
    this.#client = client;
    this.#inventory = options.inventory ?? client;
  }

  /** The client the inventories are kept with. */
  get inventoryClient(): KubeClient {
    return this.#inventory;
  }

  async #kindPath(apiVersion: string, kind: string): Promise<KindPath> {
    const key = `${apiVersion}/${kind}`;
    const known = this.#kinds.get(key);
    if (known !== undefined) return known;
    const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
    if (!/^([a-z0-9.-]+\/)?v[a-z0-9]+$/.test(apiVersion))
      throw new CopyObjectError(`"${apiVersion}" is not an apiVersion`);
    const list = await this.#client.request<DiscoveryList>('GET', base);
    for (const resource of list.resources ?? []) {
      if (resource.name.includes('/')) continue; // subresources
      this.#kinds.set(`${apiVersion}/${resource.kind}`, { resource: resource.name, isNamespaced: resource.namespaced });
    }
    const found = this.#kinds.get(key);
    if (found === undefined) throw new CopyObjectError(`the cluster serves no kind ${kind} in ${apiVersion}`);
    return found;
  }

  async #pathOf(entry: InventoryEntry): Promise<string> {
    const { resource, isNamespaced } = await this.#kindPath(entry.apiVersion, entry.kind);
    const base = entry.apiVersion.includes('/') ? `/apis/${entry.apiVersion}` : `/api/${entry.apiVersion}`;
    const namespace = isNamespaced ? `/namespaces/${segment(entry.namespace ?? 'default', 'namespace')}` : '';
    const path = `${base}${namespace}/${resource}/${segment(entry.name, `${entry.kind} name`)}`;
    const checked = parseApiPath(path);
    if (!checked.ok) throw new CopyObjectError(`${entry.kind} ${entry.name}: ${checked.message}`);
    return path;
  }

  async #readInventory(rollout: string): Promise<InventoryEntry[]> {
    const map = await this.#inventory.get<InventoryMap>(inventoryPath(rollout));
    const text = map?.data?.['objects'];
    return text === undefined ? [] : (JSON.parse(text) as InventoryEntry[]);
  }

  async #writeInventory(
    rollout: string,
    entries: InventoryEntry[],
    record: { owner?: RolloutOwner; revision?: string } = {},
  ): Promise<void> {
    await this.#inventory.request('PATCH', inventoryPath(rollout), {
      body: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name: inventoryName(rollout),
          namespace: INVENTORY_NAMESPACE,
          labels: { [ROLLOUT_LABEL]: rollout },
        },
        data: {
          objects: JSON.stringify(entries),
          ...(record.owner === undefined ? {} : { owner: JSON.stringify(record.owner) }),
          ...(record.revision === undefined ? {} : { revision: record.revision }),
        },
      },
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager: ROLLOUT_FIELD_MANAGER, force: 'true' },
    });
  }

  /** Deletes the entries that still carry the rollout's label; returns how many it deleted. */
  async #prune(rollout: string, entries: readonly InventoryEntry[]): Promise<number> {
    let pruned = 0;
    for (const entry of [...entries].reverse()) {
      const path = await this.#pathOf(entry);
      const live = await this.#client.get(path);
      if (live?.metadata?.labels?.[ROLLOUT_LABEL] !== rollout) continue;
      if (await this.#client.delete(path)) pruned += 1;
    }
    return pruned;
  }

  /**
   * Applies a copy: every object, then prunes what the previous copy had and
   * this one has not, then records the new inventory.
   */
  async apply(
    rollout: string,
    copy: RenderedCopy,
    options: ApplyOptions = {},
  ): Promise<{ applied: number; pruned: number }> {
    const record = { ...(options.owner === undefined ? {} : { owner: options.owner }), revision: copy.revision };
    const previous = await this.#readInventory(rollout);
    const current = copy.objects.map(entryOf);
    // Every path is checked before anything is written.
    for (const entry of current) await this.#pathOf(entry);
    // The inventory is written first with both sets, so an interruption never forgets an object to prune.
    await this.#writeInventory(rollout, union(previous, current), record);
    for (const object of copy.objects) {
      options.signal?.throwIfAborted();
      await this.#client.request('PATCH', await this.#pathOf(entryOf(object)), {
        body: object,
        contentType: 'application/apply-patch+yaml',
        query: { fieldManager: ROLLOUT_FIELD_MANAGER, force: 'true' },
      });
    }
    const dropped = previous.filter((entry) => !current.some((kept) => sameEntry(kept, entry)));
    options.signal?.throwIfAborted();
    const pruned = await this.#prune(rollout, dropped);
    await this.#writeInventory(rollout, current, record);
    return { applied: copy.objects.length, pruned };
  }

  /** Removes everything a rollout applied to this cluster, and its inventory. */
  async remove(rollout: string): Promise<number> {
    const pruned = await this.#prune(rollout, await this.#readInventory(rollout));
    await this.#inventory.delete(inventoryPath(rollout));
    return pruned;
  }

  /** Every rollout this cluster has an inventory of: what an agent runs after it restarts. */
  async inventories(): Promise<InventoryRecord[]> {
    const maps = await this.#inventory.list<InventoryMap>(`/api/v1/namespaces/${INVENTORY_NAMESPACE}/configmaps`, {
      labelSelector: ROLLOUT_LABEL,
    });
    const records: InventoryRecord[] = [];
    for (const map of maps) {
      const rollout = map.metadata?.labels?.[ROLLOUT_LABEL];
      if (rollout === undefined || map.metadata?.name !== inventoryName(rollout)) continue;
      const record: InventoryRecord = { rollout };
      const owner = parseOwner(map.data?.['owner']);
      if (owner !== undefined) record.owner = owner;
      const revision = map.data?.['revision'];
      if (typeof revision === 'string' && revision !== '') record.revision = revision;
      records.push(record);
    }
    return records;
  }

  /**
   * Reads the applied objects back: the revision they carry (the oldest one
   * if they differ, so a half-applied copy never passes for the new one) and
   * their readiness.
   */
  async report(rollout: string, cluster: string): Promise<CopyReport | undefined> {
    return (await this.readBack(rollout, cluster))?.report;
  }

  /**
   * {@link report}, with each object's identity and `.status` (what the
   * hub's summaries read). An object the inventory names that is gone, or
   * no longer carries the rollout's label, makes the copy progressing with
   * no revision: it is not the rollout's any more.
   */
  async readBack(rollout: string, cluster: string): Promise<CopyReadBack | undefined> {
    const entries = await this.#readInventory(rollout);
    if (entries.length === 0) return undefined;
    const objects: KubeObject[] = [];
    const reported: ReportedObject[] = [];
    for (const entry of entries) {
      const live = await this.#client.get(await this.#pathOf(entry));
      if (live === undefined || live.metadata?.labels?.[ROLLOUT_LABEL] !== rollout) {
        const why = live === undefined ? 'is missing' : 'no longer carries the rollout label';
        return {
          report: { cluster, revision: '', readiness: 'progressing', message: `${entry.kind}/${entry.name} ${why}` },
          objects: reported,
        };
      }
      objects.push(live);
      const status = live['status'];
      reported.push({
        ...entry,
        ...(status !== null && typeof status === 'object' && !Array.isArray(status)
          ? { status: status as Record<string, unknown> }
          : {}),
      });
    }
    const revisions = new Set(
      objects.map((object) => object.metadata?.annotations?.[ROLLOUT_REVISION_ANNOTATION] ?? ''),
    );
    const revision = revisions.size === 1 ? [...revisions][0]! : '';
    const readiness = copyReadinessOf(objects);
    return {
      report: {
        cluster,
        revision,
        readiness: readiness.state,
        ...(readiness.state === 'ready' ? {} : { message: readiness.message }),
      },
      objects: reported,
    };
  }
}

/** The owner recorded in an inventory, if it is one. */
function parseOwner(text: string | undefined): RolloutOwner | undefined {
  if (text === undefined) return undefined;
  try {
    const owner = JSON.parse(text) as Partial<RolloutOwner>;
    if (typeof owner.user !== 'string' || owner.user === '') return undefined;
    if (!Array.isArray(owner.groups) || !owner.groups.every((group) => typeof group === 'string')) return undefined;
    return { user: owner.user, groups: owner.groups };
  } catch {
    return undefined;
  }
}

function inventoryName(rollout: string): string {
  return `${INVENTORY_NAME_PREFIX}${rollout}`;
}

function inventoryPath(rollout: string): string {
  return `/api/v1/namespaces/${INVENTORY_NAMESPACE}/configmaps/${inventoryName(rollout)}`;
}

function entryOf(object: RolloutResource): InventoryEntry {
  return {
    apiVersion: object.apiVersion,
    kind: object.kind,
    name: object.metadata.name,
    ...(object.metadata.namespace === undefined ? {} : { namespace: object.metadata.namespace }),
  };
}

/** The API group of an apiVersion (`apps/v1` → `apps`, `v1` → ``). */
function groupOf(apiVersion: string): string {
  return apiVersion.includes('/') ? (apiVersion.split('/')[0] as string) : '';
}

/** One object whatever version it is served at: a revision that moves to apps/v2 must not prune it. */
function sameEntry(a: InventoryEntry, b: InventoryEntry): boolean {
  return (
    groupOf(a.apiVersion) === groupOf(b.apiVersion) &&
    a.kind === b.kind &&
    a.name === b.name &&
    a.namespace === b.namespace
  );
}

function union(a: readonly InventoryEntry[], b: readonly InventoryEntry[]): InventoryEntry[] {
  return [...a, ...b.filter((entry) => !a.some((kept) => sameEntry(kept, entry)))];
}
