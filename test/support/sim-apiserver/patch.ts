/**
 * Patches and field ownership for the simulated API server:
 * - JSON merge patch (RFC 7386); strategic merge patch is treated as a merge
 *   patch after its `$`-directives are dropped, which is a simplification:
 *   lists are replaced, never merged by key;
 * - JSON patch (RFC 6902);
 * - server-side apply: create-or-merge, with `metadata.managedFields`
 *   recording which manager set which fields, fields a manager stops applying
 *   removed, conflicts with other managers reported unless forced. Ownership
 *   is tracked per map key; lists are owned as a whole (real server-side
 *   apply merges some lists by key).
 */
import type { KubeObject, ManagedFieldsEntry } from './store.js';
import { badRequest } from './status.js';

type Json = unknown;
type JsonMap = Record<string, unknown>;
/** A path of map keys from the object root to a leaf. */
export type FieldPath = string[];

function isMap(value: Json): value is JsonMap {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Structural equality of JSON values (key order does not matter). */
export function jsonEqual(a: Json, b: Json): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((item, i) => jsonEqual(item, b[i]));
  }
  if (isMap(a) && isMap(b)) {
    const keys = Object.keys(a);
    if (keys.length !== Object.keys(b).length) return false;
    return keys.every((k) => Object.prototype.hasOwnProperty.call(b, k) && jsonEqual(a[k], b[k]));
  }
  return false;
}

/** Applies an RFC 7386 JSON merge patch, returning the new document. */
export function applyMergePatch(target: Json, patch: Json): Json {
  if (!isMap(patch)) return structuredClone(patch);
  const result: JsonMap = isMap(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = applyMergePatch(result[key], value);
  }
  return result;
}

/** Drops strategic-merge-patch directives (`$patch`, `$setElementOrder/…`, `$retainKeys`, …). */
export function stripStrategicDirectives(patch: Json): Json {
  if (Array.isArray(patch)) return patch.map(stripStrategicDirectives);
  if (!isMap(patch)) return patch;
  const result: JsonMap = {};
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith('$')) continue;
    result[key] = stripStrategicDirectives(value);
  }
  return result;
}

function unescapePointer(segment: string): string {
  return segment.replace(/~1/g, '/').replace(/~0/g, '~');
}

function pointerSegments(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw badRequest(`invalid JSON pointer "${pointer}"`);
  return pointer.slice(1).split('/').map(unescapePointer);
}

function resolveParent(document: Json, segments: string[]): { parent: JsonMap | Json[]; key: string } {
  let current = document;
  for (const segment of segments.slice(0, -1)) {
    if (Array.isArray(current)) current = current[Number(segment)];
    else if (isMap(current)) current = current[segment];
    else current = undefined;
    if (current === undefined) throw badRequest(`doc is missing path: /${segments.join('/')}`);
  }
  if (!Array.isArray(current) && !isMap(current)) throw badRequest(`doc is missing path: /${segments.join('/')}`);
  return { parent: current, key: segments[segments.length - 1] ?? '' };
}

function readPointer(document: Json, pointer: string): Json {
  let current = document;
  for (const segment of pointerSegments(pointer)) {
    if (Array.isArray(current)) current = current[Number(segment)];
    else if (isMap(current)) current = current[segment];
    else current = undefined;
    if (current === undefined) throw badRequest(`doc is missing path: ${pointer}`);
  }
  return current;
}

function removeAt(document: Json, pointer: string): Json {
  const { parent, key } = resolveParent(document, pointerSegments(pointer));
  if (Array.isArray(parent)) {
    const index = Number(key);
    if (!(index >= 0 && index < parent.length)) throw badRequest(`doc is missing path: ${pointer}`);
    return parent.splice(index, 1)[0];
  }
  if (!Object.prototype.hasOwnProperty.call(parent, key)) throw badRequest(`doc is missing path: ${pointer}`);
  const removed = parent[key];
  delete parent[key];
  return removed;
}

function addAt(document: Json, pointer: string, value: Json): Json {
  const segments = pointerSegments(pointer);
  if (segments.length === 0) return structuredClone(value);
  const { parent, key } = resolveParent(document, segments);
  if (Array.isArray(parent)) {
    const index = key === '-' ? parent.length : Number(key);
    if (!(index >= 0 && index <= parent.length)) throw badRequest(`invalid array index in ${pointer}`);
    parent.splice(index, 0, structuredClone(value));
  } else {
    parent[key] = structuredClone(value);
  }
  return document;
}

interface JsonPatchOperation {
  op?: string;
  path?: string;
  from?: string;
  value?: Json;
}

/** Applies an RFC 6902 JSON patch, returning the new document. */
export function applyJsonPatch(document: Json, operations: Json): Json {
  if (!Array.isArray(operations)) throw badRequest('a JSON patch must be a list of operations');
  let result = structuredClone(document);
  for (const operation of operations as JsonPatchOperation[]) {
    const path = operation.path ?? '';
    switch (operation.op) {
      case 'add':
        result = addAt(result, path, operation.value);
        break;
      case 'remove':
        removeAt(result, path);
        break;
      case 'replace':
        removeAt(result, path);
        result = addAt(result, path, operation.value);
        break;
      case 'move': {
        const moved = removeAt(result, operation.from ?? '');
        result = addAt(result, path, moved);
        break;
      }
      case 'copy':
        result = addAt(result, path, readPointer(result, operation.from ?? ''));
        break;
      case 'test':
        if (!jsonEqual(readPointer(result, path), operation.value)) {
          throw badRequest(`testing value ${path} failed`);
        }
        break;
      default:
        throw badRequest(`Unexpected kind: ${String(operation.op)}`);
    }
  }
  return result;
}

// ---------------------------------------------------------------------------
// Field ownership

const IDENTITY_METADATA = new Set([
  'name',
  'namespace',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'managedFields',
  'selfLink',
]);

function collectPaths(value: Json, prefix: FieldPath, out: FieldPath[]): void {
  if (isMap(value) && Object.keys(value).length > 0) {
    for (const [key, child] of Object.entries(value)) collectPaths(child, [...prefix, key], out);
  } else {
    out.push(prefix);
  }
}

/**
 * The leaf field paths an object sets, leaving out what the server owns
 * (kind, apiVersion, identity metadata) and, unless `includeStatus`, the
 * status.
 */
export function fieldPathsOf(object: JsonMap, includeStatus: boolean): FieldPath[] {
  const out: FieldPath[] = [];
  for (const [key, value] of Object.entries(object)) {
    if (key === 'apiVersion' || key === 'kind') continue;
    if (key === 'status' && !includeStatus) continue;
    if (key === 'metadata' && isMap(value)) {
      for (const [metaKey, metaValue] of Object.entries(value)) {
        if (!IDENTITY_METADATA.has(metaKey)) collectPaths(metaValue, ['metadata', metaKey], out);
      }
      continue;
    }
    collectPaths(value, [key], out);
  }
  return out;
}

/** Encodes field paths as a `FieldsV1` set (`{"f:data": {"f:key": {}}}`). */
export function toFieldsV1(paths: FieldPath[]): JsonMap {
  const root: JsonMap = {};
  for (const path of paths) {
    let node = root;
    for (const key of path) {
      const encoded = `f:${key}`;
      if (!isMap(node[encoded])) node[encoded] = {};
      node = node[encoded] as JsonMap;
    }
  }
  return root;
}

/** Decodes a `FieldsV1` set into leaf field paths. */
export function fromFieldsV1(fields: Json): FieldPath[] {
  const out: FieldPath[] = [];
  const walk = (node: Json, prefix: FieldPath): void => {
    if (!isMap(node)) return;
    const children = Object.entries(node).filter(([k]) => k.startsWith('f:'));
    if (children.length === 0) {
      if (prefix.length > 0) out.push(prefix);
      return;
    }
    for (const [key, child] of children) walk(child, [...prefix, key.slice(2)]);
  };
  walk(fields, []);
  return out;
}

function overlaps(a: FieldPath, b: FieldPath): boolean {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false;
  return true;
}

function valueAt(object: Json, path: FieldPath): Json {
  let current = object;
  for (const key of path) {
    if (!isMap(current)) return undefined;
    current = current[key];
  }
  return current;
}

function deleteAt(object: JsonMap, path: FieldPath): void {
  const parents: JsonMap[] = [];
  let current: Json = object;
  for (const key of path.slice(0, -1)) {
    if (!isMap(current)) return;
    parents.push(current);
    current = current[key];
  }
  if (!isMap(current)) return;
  delete current[path[path.length - 1] ?? ''];
  // Prune maps that the removal left empty, but never the object's top-level fields.
  for (let i = path.length - 2; i >= 1; i--) {
    const parent = parents[i];
    const key = path[i] ?? '';
    const child = parent?.[key];
    if (parent && isMap(child) && Object.keys(child).length === 0) delete parent[key];
    else break;
  }
}

function deepMerge(target: JsonMap, source: JsonMap): void {
  for (const [key, value] of Object.entries(source)) {
    const existing = target[key];
    if (isMap(existing) && isMap(value)) deepMerge(existing, value);
    else target[key] = structuredClone(value);
  }
}

function managerKey(entry: Pick<ManagedFieldsEntry, 'manager' | 'operation' | 'subresource'>): string {
  return `${entry.manager}\u0000${entry.operation}\u0000${entry.subresource ?? ''}`;
}

function removeOwnership(entries: ManagedFieldsEntry[], taken: FieldPath[], except: string): ManagedFieldsEntry[] {
  return entries
    .map((entry) => {
      if (managerKey(entry) === except) return entry;
      const kept = fromFieldsV1(entry.fieldsV1).filter((p) => !taken.some((t) => overlaps(p, t)));
      return { ...entry, fieldsV1: toFieldsV1(kept) };
    })
    .filter((entry) => managerKey(entry) === except || fromFieldsV1(entry.fieldsV1).length > 0);
}

/** Inputs of {@link serverSideApply}. */
export interface ApplyRequest {
  existing: KubeObject | undefined;
  applied: KubeObject;
  manager: string;
  force: boolean;
  /** Whether status belongs to the applied fields (an apply to the status subresource). */
  includeStatus: boolean;
  subresource?: string;
  now: string;
}

/** The outcome of {@link serverSideApply}: the merged object, or the contested fields. */
export type ApplyOutcome =
  { kind: 'merged'; object: KubeObject } | { kind: 'conflict'; conflicts: { manager: string; field: string }[] };

/**
 * Merges an applied configuration into the live object the way server-side
 * apply does, and records the manager's ownership in managedFields.
 */
export function serverSideApply(request: ApplyRequest): ApplyOutcome {
  const appliedPaths = fieldPathsOf(request.applied, request.includeStatus);
  const ownEntry: ManagedFieldsEntry = {
    manager: request.manager,
    operation: 'Apply',
    apiVersion: request.applied.apiVersion,
    time: request.now,
    fieldsType: 'FieldsV1',
    fieldsV1: toFieldsV1(appliedPaths),
    ...(request.subresource ? { subresource: request.subresource } : {}),
  };
  const ownKey = managerKey(ownEntry);
  const body = structuredClone(request.applied) as JsonMap;
  const bodyMetadata = isMap(body['metadata']) ? body['metadata'] : {};
  for (const key of IDENTITY_METADATA) delete bodyMetadata[key];
  if (!request.includeStatus) delete body['status'];

  if (!request.existing) {
    const created = body as KubeObject;
    created.metadata = {
      ...bodyMetadata,
      name: request.applied.metadata.name,
      managedFields: [ownEntry],
    } as KubeObject['metadata'];
    if (request.applied.metadata.namespace) created.metadata.namespace = request.applied.metadata.namespace;
    return { kind: 'merged', object: created };
  }

  let entries = structuredClone(request.existing.metadata.managedFields ?? []);
  const conflicts: { manager: string; field: string; path: FieldPath }[] = [];
  for (const entry of entries) {
    if (managerKey(entry) === ownKey) continue;
    for (const owned of fromFieldsV1(entry.fieldsV1)) {
      const contested = appliedPaths.find((p) => overlaps(p, owned));
      if (!contested) continue;
      const path = contested.length >= owned.length ? contested : owned;
      if (jsonEqual(valueAt(request.existing, path), valueAt(request.applied, path))) continue;
      conflicts.push({ manager: entry.manager, field: `.${path.join('.')}`, path });
    }
  }
  if (conflicts.length > 0 && !request.force) {
    return { kind: 'conflict', conflicts: conflicts.map(({ manager, field }) => ({ manager, field })) };
  }
  if (conflicts.length > 0)
    entries = removeOwnership(
      entries,
      conflicts.map((c) => c.path),
      ownKey,
    );

  const previous = entries.find((e) => managerKey(e) === ownKey);
  const ownedByOthers = entries.filter((e) => managerKey(e) !== ownKey).flatMap((e) => fromFieldsV1(e.fieldsV1));
  const merged = structuredClone(request.existing) as JsonMap;
  deepMerge(merged, body);
  for (const dropped of previous ? fromFieldsV1(previous.fieldsV1) : []) {
    if (appliedPaths.some((p) => overlaps(p, dropped))) continue;
    if (ownedByOthers.some((p) => overlaps(p, dropped))) continue;
    deleteAt(merged, dropped);
  }
  const index = entries.findIndex((e) => managerKey(e) === ownKey);
  if (index >= 0) {
    // Keep the old timestamp when ownership did not change, so a repeated apply is a true no-op.
    const unchanged =
      previous && jsonEqual(previous.fieldsV1, ownEntry.fieldsV1) && previous.apiVersion === ownEntry.apiVersion;
    entries[index] = unchanged && previous ? previous : ownEntry;
  } else {
    entries.push(ownEntry);
  }
  (merged['metadata'] as JsonMap)['managedFields'] = entries;
  return { kind: 'merged', object: merged as KubeObject };
}

/** Inputs of {@link recordUpdate}. */
export interface UpdateRecord {
  existing: KubeObject | undefined;
  updated: KubeObject;
  manager: string;
  includeStatus: boolean;
  subresource?: string;
  now: string;
}

/**
 * Records a non-apply write (create, update, patch) in managedFields: the
 * manager takes the fields whose values it changed, as an `Update` entry.
 * Returns the managedFields list to store.
 */
export function recordUpdate(record: UpdateRecord): ManagedFieldsEntry[] {
  const entries = structuredClone(record.existing?.metadata.managedFields ?? []);
  const after = fieldPathsOf(record.updated, record.includeStatus);
  let changed: FieldPath[];
  if (!record.existing) {
    changed = after;
  } else {
    const before = fieldPathsOf(record.existing, record.includeStatus);
    const candidates = [...after, ...before.filter((p) => !after.some((q) => jsonEqual(p, q)))];
    changed = candidates.filter((p) => !jsonEqual(valueAt(record.existing, p), valueAt(record.updated, p)));
  }
  if (changed.length === 0) return entries;
  const own: ManagedFieldsEntry = {
    manager: record.manager,
    operation: 'Update',
    apiVersion: record.updated.apiVersion,
    time: record.now,
    fieldsType: 'FieldsV1',
    fieldsV1: {},
    ...(record.subresource ? { subresource: record.subresource } : {}),
  };
  const ownKey = managerKey(own);
  const remaining = removeOwnership(entries, changed, ownKey);
  const previous = remaining.find((e) => managerKey(e) === ownKey);
  const present = changed.filter((p) => valueAt(record.updated, p) !== undefined);
  const owned = [...(previous ? fromFieldsV1(previous.fieldsV1) : []), ...present].filter(
    (p, i, all) => valueAt(record.updated, p) !== undefined && all.findIndex((q) => jsonEqual(p, q)) === i,
  );
  own.fieldsV1 = toFieldsV1(owned);
  const index = remaining.findIndex((e) => managerKey(e) === ownKey);
  if (owned.length === 0) return remaining.filter((e) => managerKey(e) !== ownKey);
  if (index >= 0) remaining[index] = own;
  else remaining.push(own);
  return remaining;
}

/** The field manager name the server derives from a User-Agent when the request names none. */
export function defaultFieldManager(userAgent: string | undefined): string {
  const prefix = (userAgent ?? '').split('/')[0]?.trim();
  return prefix ? prefix.slice(0, 128) : 'unknown';
}
