/**
 * Keeping a cached LIST current from WATCH events, and the diff sent to a
 * held watch when the upstream returns — pure functions over parsed JSON.
 *
 * Objects are matched by namespace and name. A resourceVersion is opaque in
 * the API contract, but every Kubernetes store in use issues increasing
 * integers; when both sides are integers an older event never overwrites a
 * newer object (two watch streams may feed the same list), otherwise the
 * event is applied as it comes.
 */

/** A Kubernetes object, as far as list patching reads it. */
export interface KubeObjectLike {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; [key: string]: unknown };
  [key: string]: unknown;
}

/** A LIST answer (`PodList`, …). */
export interface KubeListLike {
  kind?: string;
  metadata?: { resourceVersion?: string; [key: string]: unknown };
  items: KubeObjectLike[];
  [key: string]: unknown;
}

/** One watch event as the API server sends it. */
export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR' | string;
  object: KubeObjectLike;
}

/** Whether a parsed body is a LIST answer that can be patched. */
export function isKubeList(value: unknown): value is KubeListLike {
  return (
    value !== null &&
    typeof value === 'object' &&
    Array.isArray((value as KubeListLike).items) &&
    typeof (value as KubeListLike).kind === 'string' &&
    (value as KubeListLike).kind!.endsWith('List')
  );
}

function identityOf(object: KubeObjectLike): string {
  return `${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`;
}

function versionNumber(version: string | undefined): number | undefined {
  return version !== undefined && /^\d+$/.test(version) ? Number(version) : undefined;
}

/** Whether `next` is not older than `current` (unknown forms count as newer). */
function isNotOlder(next: string | undefined, current: string | undefined): boolean {
  const a = versionNumber(next);
  const b = versionNumber(current);
  return a === undefined || b === undefined || a >= b;
}

/**
 * Applies one watch event to `list` in place. Returns whether the list changed.
 * ADDED and MODIFIED upsert, DELETED removes, BOOKMARK only moves the list's
 * resourceVersion, ERROR changes nothing.
 */
export function applyWatchEvent(list: KubeListLike, event: WatchEvent): boolean {
  const version = event.object?.metadata?.resourceVersion;
  if (event.type === 'ERROR' || !event.object) return false;
  const listMeta = (list.metadata ??= {});
  const moveListVersion = (): boolean => {
    if (version === undefined || !isNotOlder(version, listMeta.resourceVersion) || version === listMeta.resourceVersion)
      return false;
    listMeta.resourceVersion = version;
    return true;
  };
  if (event.type === 'BOOKMARK') return moveListVersion();
  const id = identityOf(event.object);
  const index = list.items.findIndex((item) => identityOf(item) === id);
  if (event.type === 'DELETED') {
    const existing = index >= 0 ? list.items[index] : undefined;
    if (existing && isNotOlder(version, existing.metadata?.resourceVersion)) list.items.splice(index, 1);
    return moveListVersion() || existing !== undefined;
  }
  if (event.type !== 'ADDED' && event.type !== 'MODIFIED') return false;
  if (index >= 0) {
    if (!isNotOlder(version, list.items[index]!.metadata?.resourceVersion)) return moveListVersion();
    list.items[index] = event.object;
  } else {
    list.items.push(event.object);
  }
  moveListVersion();
  return true;
}

/**
 * The events that take a client from `before` to `after`: ADDED for new
 * objects, MODIFIED for changed ones (by resourceVersion), DELETED for
 * objects gone (carrying their last known state, as the API server does).
 */
export function diffLists(before: KubeListLike, after: KubeListLike): WatchEvent[] {
  const previous = new Map(before.items.map((item) => [identityOf(item), item]));
  const events: WatchEvent[] = [];
  for (const item of after.items) {
    const old = previous.get(identityOf(item));
    previous.delete(identityOf(item));
    if (!old) events.push({ type: 'ADDED', object: item });
    else if (old.metadata?.resourceVersion !== item.metadata?.resourceVersion)
      events.push({ type: 'MODIFIED', object: item });
  }
  for (const gone of previous.values()) events.push({ type: 'DELETED', object: gone });
  return events;
}
