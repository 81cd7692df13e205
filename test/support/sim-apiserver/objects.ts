/**
 * The object semantics of the simulated API server, independent of HTTP:
 * create (names, generateName, namespace checks, per-type defaults), update
 * with optimistic concurrency, the patch types, server-side apply, delete
 * with preconditions and finalizers, and namespace deletion that takes the
 * namespace's objects with it. Writes that change nothing are not written,
 * so their resourceVersion stays the same, as with the real server.
 *
 * What a real control plane would do asynchronously is done at once and
 * simply: pods start Running (no kubelet), services get a cluster IP,
 * a deleted namespace disappears with its content (no namespace controller).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { load as loadYaml } from 'js-yaml';
import { UNDELETABLE_NAMESPACES } from './bootstrap-objects.js';
import { tolerationUpdateError, withDefaultTolerations, type Toleration } from './node-lifecycle.js';
import type { ResourceDefinition, ResourceRegistry } from './resources.js';
import { groupVersionOf, hasStatusSubresource } from './resources.js';
import type { FieldSelector, LabelSelector } from './selectors.js';
import type { KubeObject, SimStore } from './store.js';
import {
  alreadyExists,
  applyConflict,
  badRequest,
  conflict,
  forbidden,
  invalid,
  notFound,
  unsupportedMediaType,
} from './status.js';
import {
  applyJsonPatch,
  applyMergePatch,
  jsonEqual,
  recordUpdate,
  serverSideApply,
  stripStrategicDirectives,
} from './patch.js';

/** Patch content types the server accepts. */
export const PATCH_TYPES = {
  json: 'application/json-patch+json',
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
} as const;

/** Options shared by the write operations. */
export interface WriteOptions {
  /** The field manager recorded in managedFields. */
  manager: string;
  /** Compute and return the result without storing it (`dryRun=All`). */
  isDryRun?: boolean;
  /** The subresource written ("status"), or empty for the object itself. */
  subresource?: string;
}

/** Options of a delete. */
export interface DeleteOptions {
  preconditions?: { uid?: string; resourceVersion?: string };
  isDryRun?: boolean;
}

/** Behaviour switches of the simulation's object layer. */
export interface ObjectServiceOptions {
  store: SimStore;
  registry: ResourceRegistry;
  /** Whether a pod created without a status starts Running with ready containers. */
  isPodStartingRunning: boolean;
  /** Called when a pod is gone, to end its logs. */
  onPodDeleted?: (namespace: string, name: string) => void;
  /** Whether the DefaultTolerationSeconds admission plugin runs on pods (see node-lifecycle.ts). */
  isDefaultTolerationSecondsOn?: boolean;
}

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const MAX_SUBDOMAIN_LENGTH = 253;
const MAX_LABEL_LENGTH = 63;
const GENERATE_NAME_SUFFIX_LENGTH = 5;
const GENERATE_NAME_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
/** Types whose metadata.generation tracks spec changes. */
const GENERATION_TRACKED = new Set(['apps/deployments', 'apps/daemonsets', 'apps/statefulsets', 'batch/jobs']);
/**
 * The spec defaults kube-apiserver gives workloads on create (the
 * `SetDefaults_*` functions of pkg/apis/apps/v1 and pkg/apis/batch/v1, as the
 * API reference lists them): `kubectl rollout status` refuses a workload
 * without a RollingUpdate strategy, and the simulated controllers read
 * replicas and limits from here.
 */
const WORKLOAD_DEFAULTS: Readonly<Record<string, Record<string, unknown>>> = {
  'apps/deployments': {
    replicas: 1,
    strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%', maxSurge: '25%' } },
    revisionHistoryLimit: 10,
    progressDeadlineSeconds: 600,
  },
  'apps/statefulsets': {
    replicas: 1,
    podManagementPolicy: 'OrderedReady',
    updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 0 } },
    revisionHistoryLimit: 10,
  },
  'apps/daemonsets': {
    updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } },
    revisionHistoryLimit: 10,
  },
  'batch/jobs': { parallelism: 1, completions: 1, backoffLimit: 6, completionMode: 'NonIndexed', suspend: false },
};

/** `given` with `defaults` filled in where it has nothing (maps merged key by key). */
function defaulted(defaults: Record<string, unknown>, given: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...given };
  for (const [key, value] of Object.entries(defaults)) {
    if (out[key] === undefined) out[key] = structuredClone(value);
    else if (isMap(value) && isMap(out[key])) out[key] = defaulted(value, out[key]);
  }
  return out;
}

/** The service cluster IP range the simulation hands addresses out of (k3s's default). */
const SERVICE_IP_PREFIX = '10.43.';
/** The pod IP range the simulation hands addresses out of (k3s's default). */
const POD_IP_PREFIX = '10.42.';

function nowTimestamp(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function isMap(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function target(definition: ResourceDefinition, name?: string): { resource: string; group: string; name?: string } {
  return { resource: definition.resource, group: definition.group, ...(name !== undefined ? { name } : {}) };
}

/** A pod's tolerations as stored. */
function tolerationsOf(object: KubeObject): Toleration[] {
  const spec = object['spec'];
  return isMap(spec) && Array.isArray(spec['tolerations']) ? (spec['tolerations'] as Toleration[]) : [];
}

/** The object without what every write changes anyway, for "did anything change?" comparisons. */
function comparable(object: KubeObject): unknown {
  const copy = structuredClone(object);
  delete copy.metadata.resourceVersion;
  return copy;
}

function specOf(object: KubeObject): unknown {
  const copy: Record<string, unknown> = { ...object };
  delete copy['metadata'];
  delete copy['status'];
  return copy;
}

function generateNameSuffix(): string {
  const bytes = randomBytes(GENERATE_NAME_SUFFIX_LENGTH);
  return [...bytes].map((b) => GENERATE_NAME_ALPHABET[b % GENERATE_NAME_ALPHABET.length]).join('');
}

function ipFromCounter(prefix: string, counter: number): string {
  return `${prefix}${Math.floor(counter / 250) % 250}.${(counter % 250) + 2}`;
}

/** Create, read, update, patch and delete with the API server's rules. */
export class ObjectService {
  readonly #store: SimStore;
  readonly #registry: ResourceRegistry;
  readonly #options: ObjectServiceOptions;
  #serviceIps = 0;
  #podIps = 0;

  constructor(options: ObjectServiceOptions) {
    this.#store = options.store;
    this.#registry = options.registry;
    this.#options = options;
  }

  /** The stored object, or a 404. */
  get(definition: ResourceDefinition, namespace: string, name: string): KubeObject {
    const found = this.#store.get(definition, namespace, name);
    if (!found) throw notFound(target(definition, name));
    return found;
  }

  /** Objects of a type matching the selectors, and the store's resourceVersion at the time. */
  list(
    definition: ResourceDefinition,
    namespace: string,
    selectors: { labels: LabelSelector; fields: FieldSelector },
  ): { items: KubeObject[]; resourceVersion: string } {
    const items = this.#store
      .list(definition, definition.namespaced ? namespace : undefined)
      .filter((o) => selectors.labels.matches(o.metadata.labels) && selectors.fields.matches(o));
    return { items, resourceVersion: this.#store.resourceVersion };
  }

  /** Creates an object; 409 when it exists. */
  create(definition: ResourceDefinition, namespace: string, body: unknown, options: WriteOptions): KubeObject {
    const object = this.#checkBody(definition, namespace, body);
    if (!object.metadata.name) {
      if (!object.metadata.generateName) {
        throw invalid(definition.kind, '', 'metadata.name', 'Required value: name or generateName is required');
      }
      object.metadata.name = `${object.metadata.generateName}${generateNameSuffix()}`;
    }
    this.#checkName(definition, object.metadata.name);
    this.#checkNamespaceExists(definition, namespace);
    if (this.#store.get(definition, namespace, object.metadata.name)) {
      throw alreadyExists(target(definition, object.metadata.name));
    }
    delete object.metadata.managedFields;
    this.#applyDefaults(definition, object);
    object.metadata.managedFields = recordUpdate({
      existing: undefined,
      updated: object,
      manager: options.manager,
      includeStatus: false,
      now: nowTimestamp(),
    });
    return options.isDryRun ? object : this.#store.put(definition, object);
  }

  /** Replaces an object (PUT); 409 when the body's resourceVersion is stale. */
  update(
    definition: ResourceDefinition,
    namespace: string,
    name: string,
    body: unknown,
    options: WriteOptions,
  ): KubeObject {
    const existing = this.get(definition, namespace, name);
    const incoming = this.#checkBody(definition, namespace, body);
    if (incoming.metadata.name && incoming.metadata.name !== name) {
      throw badRequest(
        `the name of the object (${incoming.metadata.name}) does not match the name on the URL (${name})`,
      );
    }
    incoming.metadata.name = name;
    const expected = incoming.metadata.resourceVersion;
    if (expected !== undefined && expected !== '' && expected !== existing.metadata.resourceVersion) {
      throw conflict(
        target(definition, name),
        'the object has been modified; please apply your changes to the latest version and try again',
      );
    }
    return this.#write(definition, existing, incoming, options);
  }

  /** Patches an object with a JSON, merge, strategic-merge or apply patch. */
  patch(
    definition: ResourceDefinition,
    namespace: string,
    name: string,
    patch: { contentType: string; body: string; isForced: boolean },
    options: WriteOptions,
  ): { object: KubeObject; isCreated: boolean } {
    const type = patch.contentType.split(';')[0]?.trim() ?? '';
    if (type === PATCH_TYPES.apply)
      return this.#apply(definition, namespace, name, patch.body, patch.isForced, options);
    let parsed: unknown;
    try {
      parsed = JSON.parse(patch.body);
    } catch (error) {
      throw badRequest(`error decoding patch: ${(error as Error).message}`);
    }
    const existing = this.get(definition, namespace, name);
    let patched: unknown;
    if (type === PATCH_TYPES.json) patched = applyJsonPatch(existing, parsed);
    else if (type === PATCH_TYPES.merge) patched = applyMergePatch(existing, parsed);
    else if (type === PATCH_TYPES.strategic) patched = applyMergePatch(existing, stripStrategicDirectives(parsed));
    else throw unsupportedMediaType(patch.contentType);
    if (!isMap(patched) || !isMap(patched['metadata'])) throw badRequest('the patch removed the object metadata');
    const object = patched as KubeObject;
    if (object.metadata.name !== name) throw badRequest('the patch changed the object name');
    // A patch carrying a resourceVersion is a precondition, as with update.
    const expected = isMap(parsed) && isMap(parsed['metadata']) ? parsed['metadata']['resourceVersion'] : undefined;
    if (typeof expected === 'string' && expected !== existing.metadata.resourceVersion) {
      throw conflict(
        target(definition, name),
        'the object has been modified; please apply your changes to the latest version and try again',
      );
    }
    return { object: this.#write(definition, existing, object, options), isCreated: false };
  }

  /** Deletes an object, or marks it deleting while finalizers remain; returns its final state. */
  remove(definition: ResourceDefinition, namespace: string, name: string, options: DeleteOptions = {}): KubeObject {
    const existing = this.get(definition, namespace, name);
    const pre = options.preconditions;
    if (pre?.uid && pre.uid !== existing.metadata.uid) {
      throw conflict(
        target(definition, name),
        `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${existing.metadata.uid ?? ''}`,
      );
    }
    if (pre?.resourceVersion && pre.resourceVersion !== existing.metadata.resourceVersion) {
      throw conflict(
        target(definition, name),
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${existing.metadata.resourceVersion ?? ''}`,
      );
    }
    if (definition.group === '' && definition.resource === 'namespaces') {
      if (UNDELETABLE_NAMESPACES.has(name))
        throw forbidden(
          target(definition, name),
          `namespaces "${name}" is forbidden: this namespace may not be deleted`,
        );
      if (options.isDryRun) return existing;
      this.#deleteNamespaceContent(name);
      return this.#removeNow(definition, namespace, name);
    }
    if ((existing.metadata.finalizers ?? []).length > 0) {
      if (existing.metadata.deletionTimestamp || options.isDryRun) return existing;
      const marked = structuredClone(existing);
      marked.metadata.deletionTimestamp = nowTimestamp();
      marked.metadata.deletionGracePeriodSeconds = 0;
      return this.#store.put(definition, marked);
    }
    return options.isDryRun ? existing : this.#removeNow(definition, namespace, name);
  }

  /** Deletes every matching object of a type in a namespace. */
  removeCollection(
    definition: ResourceDefinition,
    namespace: string,
    selectors: { labels: LabelSelector; fields: FieldSelector },
    options: DeleteOptions = {},
  ): KubeObject[] {
    return this.list(definition, namespace, selectors).items.map((o) =>
      this.remove(definition, o.metadata.namespace ?? '', o.metadata.name, {
        ...(options.isDryRun ? { isDryRun: true } : {}),
      }),
    );
  }

  /**
   * Creates or replaces an object directly (the test handle's `setObject`):
   * defaults are applied, no authorization, no resourceVersion precondition.
   */
  upsert(object: KubeObject, manager: string): KubeObject {
    const definition = this.#registry.byKind(object.apiVersion, object.kind);
    if (!definition) throw badRequest(`no resource type serves ${object.apiVersion} ${object.kind}`);
    const namespace = definition.namespaced ? (object.metadata.namespace ?? 'default') : '';
    const existing = this.#store.get(definition, namespace, object.metadata.name);
    if (!existing) return this.create(definition, namespace, object, { manager });
    const replacement = structuredClone(object);
    delete replacement.metadata.resourceVersion;
    return this.#write(definition, existing, replacement, { manager, subresource: '' }, true);
  }

  /** Resolves an object's resource type from its apiVersion and kind. */
  definitionOf(object: Pick<KubeObject, 'apiVersion' | 'kind'>): ResourceDefinition | undefined {
    return this.#registry.byKind(object.apiVersion, object.kind);
  }

  #apply(
    definition: ResourceDefinition,
    namespace: string,
    name: string,
    body: string,
    isForced: boolean,
    options: WriteOptions,
  ): { object: KubeObject; isCreated: boolean } {
    let parsed: unknown;
    try {
      parsed = loadYaml(body);
    } catch (error) {
      throw badRequest(`error decoding YAML: ${(error as Error).message}`);
    }
    if (!isMap(parsed) || !isMap(parsed['metadata'])) throw badRequest('apply patches must be objects with metadata');
    const applied = parsed as KubeObject;
    if (applied.apiVersion !== groupVersionOf(definition) || applied.kind !== definition.kind) {
      throw badRequest(
        `the apply patch is ${String(applied.apiVersion)}/${String(applied.kind)}, the URL names ${groupVersionOf(definition)} ${definition.kind}`,
      );
    }
    if (applied.metadata.name && applied.metadata.name !== name) {
      throw badRequest(
        `the name of the object (${applied.metadata.name}) does not match the name on the URL (${name})`,
      );
    }
    applied.metadata.name = name;
    if (definition.namespaced) {
      if (applied.metadata.namespace && applied.metadata.namespace !== namespace) {
        throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
      }
      applied.metadata.namespace = namespace;
    }
    const existing = this.#store.get(definition, namespace, name);
    const subresource = options.subresource ?? '';
    const outcome = serverSideApply({
      existing,
      applied,
      manager: options.manager,
      force: isForced,
      includeStatus: subresource === 'status' || !hasStatusSubresource(definition),
      ...(subresource ? { subresource } : {}),
      now: nowTimestamp(),
    });
    if (outcome.kind === 'conflict') throw applyConflict(target(definition, name), outcome.conflicts);
    if (!existing) {
      this.#checkName(definition, name);
      this.#checkNamespaceExists(definition, namespace);
      const created = outcome.object;
      const managed = created.metadata.managedFields;
      this.#applyDefaults(definition, created);
      created.metadata.managedFields = managed ?? [];
      return { object: options.isDryRun ? created : this.#store.put(definition, created), isCreated: true };
    }
    return { object: this.#commit(definition, existing, outcome.object, options), isCreated: false };
  }

  /** Stores a new version of an existing object after an update or patch (non-apply). */
  #write(
    definition: ResourceDefinition,
    existing: KubeObject,
    incoming: KubeObject,
    options: WriteOptions,
    isInternal = false,
  ): KubeObject {
    const subresource = options.subresource ?? '';
    let next: KubeObject;
    if (subresource === 'status') {
      next = structuredClone(existing);
      if (incoming['status'] === undefined) delete next['status'];
      else next['status'] = incoming['status'];
    } else {
      next = structuredClone(incoming);
      if (hasStatusSubresource(definition) && !isInternal) {
        if (existing['status'] === undefined) delete next['status'];
        else next['status'] = existing['status'];
      }
    }
    next.metadata.managedFields = recordUpdate({
      existing,
      updated: next,
      manager: options.manager,
      includeStatus: subresource === 'status' || !hasStatusSubresource(definition),
      ...(subresource ? { subresource } : {}),
      now: nowTimestamp(),
    });
    return this.#commit(definition, existing, next, options);
  }

  /** Carries identity over, bumps generation, finishes deletions, and skips no-op writes. */
  #commit(definition: ResourceDefinition, existing: KubeObject, next: KubeObject, options: WriteOptions): KubeObject {
    next.apiVersion = existing.apiVersion;
    next.kind = existing.kind;
    for (const key of [
      'uid',
      'creationTimestamp',
      'deletionTimestamp',
      'deletionGracePeriodSeconds',
      'namespace',
    ] as const) {
      const value = existing.metadata[key];
      if (value === undefined) delete next.metadata[key];
      else (next.metadata as Record<string, unknown>)[key] = value;
    }
    if (definition.resource === 'secrets') this.#foldStringData(next);
    if (definition.group === '' && definition.resource === 'pods' && (options.subresource ?? '') === '') {
      this.#admitPod(next);
      const error = tolerationUpdateError(tolerationsOf(existing), tolerationsOf(next));
      if (error !== undefined) throw invalid('Pod', existing.metadata.name, 'spec.tolerations', error);
    }
    if (existing.metadata.generation !== undefined) {
      next.metadata.generation = existing.metadata.generation + (jsonEqual(specOf(existing), specOf(next)) ? 0 : 1);
    }
    next.metadata.resourceVersion = existing.metadata.resourceVersion ?? '';
    if (jsonEqual(comparable(existing), comparable(next))) return existing;
    if (options.isDryRun) return next;
    if (next.metadata.deletionTimestamp && (next.metadata.finalizers ?? []).length === 0) {
      this.#store.put(definition, next);
      return this.#removeNow(definition, next.metadata.namespace ?? '', next.metadata.name);
    }
    return this.#store.put(definition, next);
  }

  #removeNow(definition: ResourceDefinition, namespace: string, name: string): KubeObject {
    const removed = this.#store.remove(definition, namespace, name);
    if (!removed) throw notFound(target(definition, name));
    if (definition.group === '' && definition.resource === 'pods') this.#options.onPodDeleted?.(namespace, name);
    return removed;
  }

  #deleteNamespaceContent(namespace: string): void {
    for (const definition of this.#registry.all) {
      if (!definition.namespaced || definition.isVirtual) continue;
      for (const object of this.#store.list(definition, namespace))
        this.#removeNow(definition, namespace, object.metadata.name);
    }
  }

  #checkBody(definition: ResourceDefinition, namespace: string, body: unknown): KubeObject {
    if (!isMap(body)) throw badRequest('the request body must be a JSON object');
    const object = structuredClone(body) as KubeObject;
    const apiVersion = groupVersionOf(definition);
    if (object.apiVersion !== undefined && object.apiVersion !== apiVersion) {
      throw badRequest(
        `the API version in the data (${String(object.apiVersion)}) does not match the expected API version (${apiVersion})`,
      );
    }
    if (object.kind !== undefined && object.kind !== definition.kind) {
      throw badRequest(
        `the kind in the data (${String(object.kind)}) does not match the expected kind (${definition.kind})`,
      );
    }
    object.apiVersion = apiVersion;
    object.kind = definition.kind;
    if (!isMap(object.metadata)) object.metadata = { name: '' };
    if (definition.namespaced) {
      if (object.metadata.namespace && object.metadata.namespace !== namespace) {
        throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
      }
      object.metadata.namespace = namespace;
    } else {
      delete object.metadata.namespace;
    }
    return object;
  }

  #checkName(definition: ResourceDefinition, name: string): void {
    const isRbac = definition.group === 'rbac.authorization.k8s.io';
    const isNamespace = definition.group === '' && definition.resource === 'namespaces';
    let problem = '';
    if (isRbac) {
      if (name.includes('/') || name.includes('%') || name === '.' || name === '..')
        problem = 'may not contain "/" or "%"';
    } else if (isNamespace) {
      if (!DNS_LABEL.test(name) || name.length > MAX_LABEL_LENGTH) {
        problem =
          "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
      }
    } else if (!DNS_SUBDOMAIN.test(name) || name.length > MAX_SUBDOMAIN_LENGTH) {
      problem =
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
    }
    if (problem) throw invalid(definition.kind, name, 'metadata.name', `Invalid value: "${name}": ${problem}`);
  }

  #checkNamespaceExists(definition: ResourceDefinition, namespace: string): void {
    if (!definition.namespaced) return;
    const namespaces = this.#registry.byResource('', 'v1', 'namespaces');
    if (namespaces && !this.#store.get(namespaces, '', namespace)) {
      throw notFound({ resource: 'namespaces', group: '', name: namespace });
    }
  }

  #foldStringData(object: KubeObject): void {
    const stringData = object['stringData'];
    if (!isMap(stringData)) return;
    const data = isMap(object['data']) ? object['data'] : {};
    for (const [key, value] of Object.entries(stringData))
      data[key] = Buffer.from(String(value), 'utf8').toString('base64');
    object['data'] = data;
    delete object['stringData'];
  }

  #applyDefaults(definition: ResourceDefinition, object: KubeObject): void {
    const meta = object.metadata;
    meta.uid = randomUUID();
    meta.creationTimestamp = nowTimestamp();
    delete meta.resourceVersion;
    delete meta.deletionTimestamp;
    if (GENERATION_TRACKED.has(`${definition.group}/${definition.resource}`)) meta.generation = 1;
    const kind = `${definition.group}/${definition.resource}`;
    if (kind === '/namespaces') {
      meta.labels = { ...(meta.labels ?? {}), 'kubernetes.io/metadata.name': meta.name };
      object['spec'] = { finalizers: ['kubernetes'], ...(isMap(object['spec']) ? object['spec'] : {}) };
      object['status'] = { phase: 'Active' };
    } else if (kind === '/secrets') {
      this.#foldStringData(object);
      if (object['type'] === undefined) object['type'] = 'Opaque';
    } else if (kind === '/services') {
      const spec = isMap(object['spec']) ? object['spec'] : {};
      spec['type'] ??= 'ClusterIP';
      if (spec['clusterIP'] === undefined && spec['type'] !== 'ExternalName') {
        spec['clusterIP'] = ipFromCounter(SERVICE_IP_PREFIX, ++this.#serviceIps);
        spec['clusterIPs'] = [spec['clusterIP']];
      }
      if (Array.isArray(spec['ports'])) {
        for (const port of spec['ports'] as Record<string, unknown>[]) {
          port['protocol'] ??= 'TCP';
          port['targetPort'] ??= port['port'];
        }
      }
      object['spec'] = spec;
      object['status'] ??= { loadBalancer: {} };
    } else if (kind === '/pods') {
      this.#defaultPod(object);
    } else if (WORKLOAD_DEFAULTS[kind] !== undefined) {
      const spec = isMap(object['spec']) ? object['spec'] : {};
      const defaults = { ...WORKLOAD_DEFAULTS[kind] };
      // A Job with parallelism but no completions is a work queue: completions stay unset.
      if (kind === 'batch/jobs' && spec['parallelism'] !== undefined) delete defaults['completions'];
      object['spec'] = defaulted(defaults, spec);
    }
  }

  /** Mutating admission on a pod (create and update): DefaultTolerationSeconds, when on. */
  #admitPod(object: KubeObject): void {
    if (!this.#options.isDefaultTolerationSecondsOn || !isMap(object['spec'])) return;
    const tolerations = withDefaultTolerations(tolerationsOf(object));
    if (tolerations !== undefined) object['spec']['tolerations'] = tolerations;
  }

  #defaultPod(object: KubeObject): void {
    const spec = isMap(object['spec']) ? object['spec'] : {};
    object['spec'] = spec;
    this.#admitPod(object);
    const containers = Array.isArray(spec['containers']) ? (spec['containers'] as Record<string, unknown>[]) : [];
    const status = isMap(object['status']) ? object['status'] : undefined;
    if (status?.['phase'] !== undefined || !this.#options.isPodStartingRunning) {
      object['status'] = status ?? { phase: 'Pending' };
      return;
    }
    const started = nowTimestamp();
    object['status'] = {
      phase: 'Running',
      conditions: ['Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map((type) => ({
        type,
        status: 'True',
        lastTransitionTime: started,
      })),
      podIP: ipFromCounter(POD_IP_PREFIX, ++this.#podIps),
      startTime: started,
      containerStatuses: containers.map((c) => ({
        name: c['name'],
        image: c['image'],
        imageID: '',
        ready: true,
        started: true,
        restartCount: 0,
        state: { running: { startedAt: started } },
      })),
    };
  }
}
