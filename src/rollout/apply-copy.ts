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
 *   the revision the objects carry, never the one that was sent.
 */
import type { KubeClient, KubeObject } from '../kube/client.js';
import { copyReadinessOf } from './readiness.js';
import { ROLLOUT_LABEL, ROLLOUT_REVISION_ANNOTATION, type RenderedCopy } from './render.js';
import type { RolloutResource } from './spec.js';
import type { CopyReport } from './progress.js';

/** The field manager every rollout applies as. */
export const ROLLOUT_FIELD_MANAGER = 'edgeadm-rollout';
/** Where the inventories live. */
const INVENTORY_NAMESPACE = 'kube-system';

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

/** Applies copies to one cluster; keeps what discovery learned between copies. */
export class CopyApplier {
  readonly #client: KubeClient;
  readonly #kinds = new Map<string, KindPath>();

  constructor(client: KubeClient) {
    this.#client = client;
  }

  async #kindPath(apiVersion: string, kind: string): Promise<KindPath> {
    const key = `${apiVersion}/${kind}`;
    const known = this.#kinds.get(key);
    if (known !== undefined) return known;
    const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
    const list = await this.#client.request<DiscoveryList>('GET', base);
    for (const resource of list.resources ?? []) {
      if (resource.name.includes('/')) continue; // subresources
      this.#kinds.set(`${apiVersion}/${resource.kind}`, { resource: resource.name, isNamespaced: resource.namespaced });
    }
    const found = this.#kinds.get(key);
    if (found === undefined) throw new Error(`the cluster serves no kind ${kind} in ${apiVersion}`);
    return found;
  }

  async #pathOf(entry: InventoryEntry): Promise<string> {
    const { resource, isNamespaced } = await this.#kindPath(entry.apiVersion, entry.kind);
    const base = entry.apiVersion.includes('/') ? `/apis/${entry.apiVersion}` : `/api/${entry.apiVersion}`;
    const namespace = isNamespaced ? `/namespaces/${entry.namespace ?? 'default'}` : '';
    return `${base}${namespace}/${resource}/${entry.name}`;
  }

  async #readInventory(rollout: string): Promise<InventoryEntry[]> {
    const map = await this.#client.get<KubeObject & { data?: Record<string, string> }>(inventoryPath(rollout));
    const text = map?.data?.['objects'];
    return text === undefined ? [] : (JSON.parse(text) as InventoryEntry[]);
  }

  async #writeInventory(rollout: string, entries: InventoryEntry[]): Promise<void> {
    await this.#client.request('PATCH', inventoryPath(rollout), {
      body: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name: inventoryName(rollout),
          namespace: INVENTORY_NAMESPACE,
          labels: { [ROLLOUT_LABEL]: rollout },
        },
        data: { objects: JSON.stringify(entries) },
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
  async apply(rollout: string, copy: RenderedCopy): Promise<{ applied: number; pruned: number }> {
    const previous = await this.#readInventory(rollout);
    const current = copy.objects.map(entryOf);
    // The inventory is written first with both sets, so an interruption never forgets an object to prune.
    await this.#writeInventory(rollout, union(previous, current));
    for (const object of copy.objects) {
      await this.#client.request('PATCH', await this.#pathOf(entryOf(object)), {
        body: object,
        contentType: 'application/apply-patch+yaml',
        query: { fieldManager: ROLLOUT_FIELD_MANAGER, force: 'true' },
      });
    }
    const dropped = previous.filter((entry) => !current.some((kept) => sameEntry(kept, entry)));
    const pruned = await this.#prune(rollout, dropped);
    await this.#writeInventory(rollout, current);
    return { applied: copy.objects.length, pruned };
  }

  /** Removes everything a rollout applied to this cluster, and its inventory. */
  async remove(rollout: string): Promise<number> {
    const pruned = await this.#prune(rollout, await this.#readInventory(rollout));
    await this.#client.delete(inventoryPath(rollout));
    return pruned;
  }

  /**
   * Reads the applied objects back: the revision they carry (the oldest one
   * if they differ, so a half-applied copy never passes for the new one) and
   * their readiness.
   */
  async report(rollout: string, cluster: string): Promise<CopyReport | undefined> {
    const entries = await this.#readInventory(rollout);
    if (entries.length === 0) return undefined;
    const objects: KubeObject[] = [];
    for (const entry of entries) {
      const live = await this.#client.get(await this.#pathOf(entry));
      if (live === undefined)
        return { cluster, revision: '', readiness: 'progressing', message: `${entry.kind}/${entry.name} is missing` };
      objects.push(live);
    }
    const revisions = new Set(
      objects.map((object) => object.metadata?.annotations?.[ROLLOUT_REVISION_ANNOTATION] ?? ''),
    );
    const revision = revisions.size === 1 ? [...revisions][0]! : '';
    const readiness = copyReadinessOf(objects);
    return {
      cluster,
      revision,
      readiness: readiness.state,
      ...(readiness.state === 'ready' ? {} : { message: readiness.message }),
    };
  }
}

function inventoryName(rollout: string): string {
  return `edgeadm-rollout-${rollout}`;
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
