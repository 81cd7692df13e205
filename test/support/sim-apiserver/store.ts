/**
 * The simulated API server's object store: objects by resource type,
 * namespace and name; one global, monotonically increasing resourceVersion
 * (a decimal string on the wire, as etcd's revision is); and a bounded
 * history of change events from which watches resume. A watch that asks for
 * a version older than the kept history gets 410 Expired, as it would from a
 * compacted etcd.
 *
 * The store hands out deep copies only, so callers can never change a stored
 * object behind its resourceVersion's back.
 */
import type { ResourceDefinition } from './resources.js';
import { groupVersionOf } from './resources.js';

/** Object metadata, loosely typed: the simulation stores whatever clients send. */
export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  managedFields?: ManagedFieldsEntry[];
  generateName?: string;
  [key: string]: unknown;
}

/** One `metadata.managedFields` entry. */
export interface ManagedFieldsEntry {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  time: string;
  fieldsType: 'FieldsV1';
  fieldsV1: Record<string, unknown>;
  subresource?: string;
}

/** A stored Kubernetes object. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [key: string]: unknown;
}

/** The kinds of change a watch reports. */
export type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** One change in the store's history. */
export interface StoreEvent {
  type: ChangeType;
  definition: ResourceDefinition;
  /** The object after the change (for DELETED: as it was, stamped with the deletion's resourceVersion). */
  object: KubeObject;
  /** The object before the change, for MODIFIED and DELETED. */
  previous?: KubeObject;
  resourceVersion: number;
}

/** What `eventsSince` answers when the asked-for version has been compacted away. */
export interface ExpiredHistory {
  expired: true;
  oldestRetained: number;
}

/** A point-in-time copy of the store, for persistence across process restarts. */
export interface StoreSnapshot {
  resourceVersion: number;
  objects: KubeObject[];
}

/** Default number of change events kept for resuming watches. */
export const DEFAULT_EVENT_HISTORY_LIMIT = 1000;

function typeKey(definition: Pick<ResourceDefinition, 'group' | 'resource'>): string {
  return `${definition.group}/${definition.resource}`;
}

function objectKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

function clone<T>(value: T): T {
  return structuredClone(value);
}

/** Options for a {@link SimStore}. */
export interface SimStoreOptions {
  /** How many change events to keep for watches that resume from a resourceVersion. */
  eventHistoryLimit?: number;
}

/** In-memory object storage with resourceVersions and change history. */
export class SimStore {
  readonly #objects = new Map<string, Map<string, KubeObject>>();
  readonly #history: StoreEvent[] = [];
  readonly #listeners = new Set<(event: StoreEvent) => void>();
  readonly #historyLimit: number;
  #resourceVersion = 0;
  /** Events at or below this version are no longer in the history. */
  #compactedThrough = 0;

  constructor(options: SimStoreOptions = {}) {
    this.#historyLimit = options.eventHistoryLimit ?? DEFAULT_EVENT_HISTORY_LIMIT;
  }

  /** The latest resourceVersion handed out, as a decimal string. */
  get resourceVersion(): string {
    return String(this.#resourceVersion);
  }

  /** A copy of one object, or undefined. */
  get(definition: ResourceDefinition, namespace: string, name: string): KubeObject | undefined {
    const found = this.#objects.get(typeKey(definition))?.get(objectKey(definition.namespaced ? namespace : '', name));
    return found ? clone(found) : undefined;
  }

  /** Copies of all objects of a type, optionally in one namespace, ordered by namespace then name. */
  list(definition: ResourceDefinition, namespace?: string): KubeObject[] {
    const bucket = this.#objects.get(typeKey(definition));
    if (!bucket) return [];
    const items = [...bucket.values()].filter(
      (o) => !definition.namespaced || !namespace || (o.metadata.namespace ?? '') === namespace,
    );
    items.sort((a, b) =>
      objectKey(a.metadata.namespace ?? '', a.metadata.name).localeCompare(
        objectKey(b.metadata.namespace ?? '', b.metadata.name),
      ),
    );
    return items.map(clone);
  }

  /**
   * Stores a new object or replaces an existing one, stamping the next
   * resourceVersion, and records the change. Returns the stored copy.
   */
  put(definition: ResourceDefinition, object: KubeObject): KubeObject {
    const namespace = definition.namespaced ? (object.metadata.namespace ?? '') : '';
    let bucket = this.#objects.get(typeKey(definition));
    if (!bucket) {
      bucket = new Map();
      this.#objects.set(typeKey(definition), bucket);
    }
    const key = objectKey(namespace, object.metadata.name);
    const previous = bucket.get(key);
    const stored = clone(object);
    stored.apiVersion = groupVersionOf(definition);
    stored.kind = definition.kind;
    this.#resourceVersion++;
    stored.metadata.resourceVersion = String(this.#resourceVersion);
    bucket.set(key, stored);
    this.#record({
      type: previous ? 'MODIFIED' : 'ADDED',
      definition,
      object: stored,
      ...(previous ? { previous } : {}),
      resourceVersion: this.#resourceVersion,
    });
    return clone(stored);
  }

  /** Removes an object and records the deletion; returns the removed copy, or undefined when absent. */
  remove(definition: ResourceDefinition, namespace: string, name: string): KubeObject | undefined {
    const bucket = this.#objects.get(typeKey(definition));
    const key = objectKey(definition.namespaced ? namespace : '', name);
    const previous = bucket?.get(key);
    if (!bucket || !previous) return undefined;
    bucket.delete(key);
    this.#resourceVersion++;
    const tombstone = clone(previous);
    tombstone.metadata.resourceVersion = String(this.#resourceVersion);
    this.#record({ type: 'DELETED', definition, object: tombstone, previous, resourceVersion: this.#resourceVersion });
    return clone(tombstone);
  }

  /**
   * The recorded changes after `resourceVersion`, oldest first, or an
   * {@link ExpiredHistory} when some of them have been dropped already.
   */
  eventsSince(resourceVersion: number): StoreEvent[] | ExpiredHistory {
    if (resourceVersion < this.#compactedThrough) {
      return { expired: true, oldestRetained: this.#compactedThrough + 1 };
    }
    return this.#history.filter((e) => e.resourceVersion > resourceVersion).map(clone);
  }

  /** Calls `listener` with a copy of every later change; returns the function that unsubscribes. */
  subscribe(listener: (event: StoreEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** A copy of every object and the current resourceVersion. */
  snapshot(): StoreSnapshot {
    const objects: KubeObject[] = [];
    for (const bucket of this.#objects.values()) for (const o of bucket.values()) objects.push(clone(o));
    return { resourceVersion: this.#resourceVersion, objects };
  }

  /**
   * Loads a snapshot into an empty store. The history starts empty at the
   * snapshot's version, so older watches resume with 410, as after a restore.
   */
  restore(snapshot: StoreSnapshot, resolve: (object: KubeObject) => ResourceDefinition | undefined): void {
    for (const object of snapshot.objects) {
      const definition = resolve(object);
      if (!definition) continue;
      let bucket = this.#objects.get(typeKey(definition));
      if (!bucket) {
        bucket = new Map();
        this.#objects.set(typeKey(definition), bucket);
      }
      const namespace = definition.namespaced ? (object.metadata.namespace ?? '') : '';
      bucket.set(objectKey(namespace, object.metadata.name), clone(object));
    }
    this.#resourceVersion = Math.max(this.#resourceVersion, snapshot.resourceVersion);
    this.#history.length = 0;
    this.#compactedThrough = this.#resourceVersion;
  }

  /** Forgets history so that watches from any earlier version get 410 (a test hook for compaction). */
  compact(): void {
    this.#history.length = 0;
    this.#compactedThrough = this.#resourceVersion;
  }

  #record(event: StoreEvent): void {
    this.#history.push(event);
    while (this.#history.length > this.#historyLimit) {
      const dropped = this.#history.shift();
      if (dropped) this.#compactedThrough = dropped.resourceVersion;
    }
    for (const listener of this.#listeners) listener(clone(event));
  }
}
