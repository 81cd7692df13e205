/**
 * SIMULATED workload controllers: the status that kube-controller-manager's
 * Deployment, StatefulSet, DaemonSet and Job controllers would write, without
 * ReplicaSets, Pods or ControllerRevisions behind it. Written from the
 * controllers' documented status semantics (README, "Workload status"), not
 * from their code. Time is compressed: a workload is observed one step after
 * a spec change and settles one step later (`stepMs`); a Deployment that
 * cannot progress exceeds its deadline after `progressDeadlineMs`, whatever
 * its `progressDeadlineSeconds`.
 *
 * Two image registries make a workload fail, so that a test can break one
 * cluster's copy by an image name alone:
 * - {@link UNPULLABLE_IMAGE_REGISTRY}: the image cannot be pulled; pods never
 *   become ready (a Deployment then exceeds its progress deadline; a
 *   StatefulSet, DaemonSet or Job waits for ever, as they do for real);
 * - {@link FAILING_IMAGE_REGISTRY}: the containers start and exit non-zero;
 *   a Job fails once past its `backoffLimit`, other workloads never become
 *   ready (a Deployment exceeds its deadline).
 *
 * Status is written through the status subresource as
 * `kube-controller-manager`, so watches, resourceVersions and managedFields
 * see what they would see from the real controllers.
 */
import { createHash } from 'node:crypto';
import type { ObjectService } from './objects.js';
import type { ResourceDefinition, ResourceRegistry } from './resources.js';
import type { KubeObject, SimStore } from './store.js';

/** Images under this registry host cannot be pulled (`.invalid` never resolves, RFC 2606). */
export const UNPULLABLE_IMAGE_REGISTRY = 'unpullable.invalid';
/** Images under this registry host start and exit with status 1. */
export const FAILING_IMAGE_REGISTRY = 'fails.invalid';
/** The field manager the simulated controllers write status as. */
export const CONTROLLER_MANAGER = 'kube-controller-manager';
/** Default time from a spec change to its observation, and from there to settling. */
export const DEFAULT_WORKLOAD_STEP_MS = 50;
/** Default (compressed) progress deadline of a Deployment that cannot progress. */
export const DEFAULT_PROGRESS_DEADLINE_MS = 1_000;

/** Options of the simulated controllers. */
export interface WorkloadControllerOptions {
  /** Time to observe a change, and again to settle. */
  stepMs?: number;
  /** When a Deployment that cannot progress gets `ProgressDeadlineExceeded`. */
  progressDeadlineMs?: number;
}

type Json = Record<string, unknown>;
type Stage = 'observed' | 'settled' | 'deadline';

/** What the controllers remember per workload: the generation they work on and how far they are. */
interface Progress {
  generation: number;
  stage: Stage;
  /** Whether the workload ran an earlier spec (old pods serve while new ones start). */
  isUpdate: boolean;
  timer: NodeJS.Timeout | undefined;
}

function record(value: unknown): Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {};
}

function count(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : fallback;
}

function now(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Drops zero counts, as the API's `omitempty` fields are absent when zero. */
function withoutZeros(status: Json, keep: readonly string[] = []): Json {
  return Object.fromEntries(Object.entries(status).filter(([key, value]) => value !== 0 || keep.includes(key)));
}

function podSpecOf(object: KubeObject): Json {
  return record(record(record(object['spec'])['template'])['spec']);
}

function imagesOf(object: KubeObject): string[] {
  const spec = podSpecOf(object);
  return ['initContainers', 'containers'].flatMap((field) => {
    const containers = spec[field];
    return Array.isArray(containers) ? containers.map((c) => String(record(c)['image'] ?? '')) : [];
  });
}

/** How the simulation runs a workload's pods: by its images' registry. */
function podOutcome(object: KubeObject): 'ready' | 'unpullable' | 'failing' {
  const registries = imagesOf(object).map((image) => image.split('/')[0]);
  if (registries.includes(UNPULLABLE_IMAGE_REGISTRY)) return 'unpullable';
  if (registries.includes(FAILING_IMAGE_REGISTRY)) return 'failing';
  return 'ready';
}

/** A name suffix from the pod template, standing in for the real pod-template-hash (not the same hash). */
function templateHash(object: KubeObject): string {
  const template = JSON.stringify(record(object['spec'])['template'] ?? {});
  return createHash('sha256').update(template).digest('hex').slice(0, 10);
}

/** `25%` of `total`, rounded as the Deployment controller rounds maxSurge (up) or maxUnavailable (down). */
function scaled(value: unknown, total: number, fallback: string, roundUp: boolean): number {
  const text = value === undefined ? fallback : String(value);
  const percent = /^(\d+)%$/.exec(text);
  if (percent) {
    const exact = (Number(percent[1]) * total) / 100;
    return roundUp ? Math.ceil(exact) : Math.floor(exact);
  }
  return count(Number(text), 0);
}

function condition(type: string, status: 'True' | 'False', reason: string, message: string, previous: Json): Json {
  const old = (Array.isArray(previous['conditions']) ? previous['conditions'] : [])
    .map(record)
    .find((c) => c['type'] === type);
  const at = now();
  const isSame = old?.['status'] === status;
  return {
    type,
    status,
    lastUpdateTime: at,
    lastTransitionTime: isSame ? (old?.['lastTransitionTime'] ?? at) : at,
    reason,
    message,
  };
}

/** A Deployment's status at a stage (kubernetes.io/docs/concepts/workloads/controllers/deployment, "Deployment status"). */
export function deploymentStatus(object: KubeObject, stage: Stage, isUpdate: boolean): Json {
  const spec = record(object['spec']);
  const previous = record(object['status']);
  const wanted = count(spec['replicas'], 1);
  const generation = count(object.metadata.generation, 1);
  const replicaSet = `${object.metadata.name}-${templateHash(object)}`;
  const rolling = record(record(spec['strategy'])['rollingUpdate']);
  const maxSurge = Math.max(1, scaled(rolling['maxSurge'], wanted, '25%', true));
  const maxUnavailable = scaled(rolling['maxUnavailable'], wanted, '25%', false);
  const outcome = podOutcome(object);
  let replicas = wanted;
  let updated = wanted;
  let available = 0;
  if (stage === 'settled' && outcome === 'ready') available = wanted;
  else if (isUpdate) {
    // A rolling update: the old ReplicaSet's pods keep serving while the surge of new ones starts.
    const old = count(previous['availableReplicas'], wanted);
    updated = Math.min(wanted, maxSurge);
    replicas = old + updated;
    available = old;
  }
  const isAvailable = available >= wanted - maxUnavailable;
  const progressing =
    stage === 'deadline'
      ? condition(
          'Progressing',
          'False',
          'ProgressDeadlineExceeded',
          `ReplicaSet "${replicaSet}" has timed out progressing.`,
          previous,
        )
      : stage === 'settled' && outcome === 'ready'
        ? condition(
            'Progressing',
            'True',
            'NewReplicaSetAvailable',
            `ReplicaSet "${replicaSet}" has successfully progressed.`,
            previous,
          )
        : condition(
            'Progressing',
            'True',
            isUpdate ? 'ReplicaSetUpdated' : 'NewReplicaSetCreated',
            isUpdate ? `ReplicaSet "${replicaSet}" is progressing.` : `Created new replica set "${replicaSet}"`,
            previous,
          );
  const availableCondition = isAvailable
    ? condition('Available', 'True', 'MinimumReplicasAvailable', 'Deployment has minimum availability.', previous)
    : condition(
        'Available',
        'False',
        'MinimumReplicasUnavailable',
        'Deployment does not have minimum availability.',
        previous,
      );
  return {
    ...withoutZeros({
      observedGeneration: generation,
      replicas,
      updatedReplicas: updated,
      readyReplicas: available,
      availableReplicas: available,
      unavailableReplicas: Math.max(0, replicas - available),
    }),
    conditions: [availableCondition, progressing],
  };
}

/** A StatefulSet's status at a stage (kubernetes.io/docs/concepts/workloads/controllers/statefulset, "Rolling Updates"). */
export function statefulSetStatus(object: KubeObject, stage: Stage, isUpdate: boolean): Json {
  const wanted = count(record(object['spec'])['replicas'], 1);
  const previous = record(object['status']);
  const updateRevision = `${object.metadata.name}-${templateHash(object)}`;
  const outcome = podOutcome(object);
  const isSettled = stage === 'settled' && outcome === 'ready';
  let ready = 0;
  let updated = wanted;
  let currentRevision = updateRevision;
  if (isSettled) ready = wanted;
  else if (isUpdate) {
    // The highest ordinal is replaced first; until it is ready the others run the old revision.
    currentRevision = String(previous['currentRevision'] ?? updateRevision);
    ready = Math.max(0, count(previous['readyReplicas'], wanted) - 1);
    updated = 1;
  }
  return {
    ...withoutZeros(
      {
        observedGeneration: count(object.metadata.generation, 1),
        replicas: wanted,
        readyReplicas: ready,
        currentReplicas: isSettled || !isUpdate ? wanted : wanted - updated,
        updatedReplicas: updated,
        availableReplicas: ready,
      },
      ['replicas', 'availableReplicas'],
    ),
    currentRevision: isSettled ? updateRevision : currentRevision,
    updateRevision,
    collisionCount: 0,
  };
}

/** A DaemonSet's status at a stage, over the nodes its node selector matches (taints are not modelled). */
export function daemonSetStatus(
  object: KubeObject,
  stage: Stage,
  isUpdate: boolean,
  nodes: readonly KubeObject[],
): Json {
  const selector = record(podSpecOf(object)['nodeSelector']);
  const desired = nodes.filter((node) =>
    Object.entries(selector).every(([key, value]) => node.metadata.labels?.[key] === value),
  ).length;
  const previous = record(object['status']);
  const outcome = podOutcome(object);
  let available = 0;
  let updated = desired;
  if (stage === 'settled' && outcome === 'ready') available = desired;
  else if (isUpdate) {
    // maxUnavailable 1 (the default): one node's pod is replaced at a time.
    const old = Math.min(desired, count(previous['numberAvailable'], desired));
    updated = Math.min(desired, 1);
    available = Math.max(0, old - updated);
  }
  return withoutZeros(
    {
      currentNumberScheduled: desired,
      numberMisscheduled: 0,
      desiredNumberScheduled: desired,
      numberReady: available,
      observedGeneration: count(object.metadata.generation, 1),
      updatedNumberScheduled: updated,
      numberAvailable: available,
      numberUnavailable: desired - available,
    },
    ['currentNumberScheduled', 'numberMisscheduled', 'desiredNumberScheduled', 'numberReady'],
  );
}

/** A Job's status at a stage (kubernetes.io/docs/concepts/workloads/controllers/job, "Job termination and cleanup"). */
export function jobStatus(object: KubeObject, stage: Stage): Json {
  const spec = record(object['spec']);
  const previous = record(object['status']);
  const completions = count(spec['completions'], 1);
  const parallelism = count(spec['parallelism'], 1);
  const backoffLimit = count(spec['backoffLimit'], 6);
  const startTime = String(previous['startTime'] ?? now());
  const outcome = podOutcome(object);
  if (stage === 'settled' && outcome === 'ready') {
    return {
      startTime,
      completionTime: now(),
      succeeded: completions,
      ready: 0,
      conditions: [
        condition('Complete', 'True', 'CompletionsReached', 'Reached expected number of succeeded pods', previous),
      ],
    };
  }
  if (stage === 'settled' && outcome === 'failing') {
    return {
      startTime,
      failed: backoffLimit + 1,
      ready: 0,
      conditions: [
        condition('Failed', 'True', 'BackoffLimitExceeded', 'Job has reached the specified backoff limit', previous),
      ],
    };
  }
  const active = Math.min(parallelism, completions);
  return { startTime, active, ready: outcome === 'unpullable' ? 0 : active };
}

/**
 * Starts the simulated controllers on `store`: every workload whose
 * generation changes is observed one step later and settles one step after
 * that (or, for a Deployment that cannot progress, exceeds its deadline).
 * Returns the stop function.
 */
export function startWorkloadControllers(
  deps: { store: SimStore; objects: ObjectService; registry: ResourceRegistry },
  options: WorkloadControllerOptions = {},
): () => void {
  const stepMs = options.stepMs ?? DEFAULT_WORKLOAD_STEP_MS;
  const deadlineMs = options.progressDeadlineMs ?? DEFAULT_PROGRESS_DEADLINE_MS;
  const kinds = new Map<string, ResourceDefinition>();
  for (const [group, resource] of [
    ['apps', 'deployments'],
    ['apps', 'statefulsets'],
    ['apps', 'daemonsets'],
    ['batch', 'jobs'],
  ] as const) {
    const definition = deps.registry.all.find((d) => d.group === group && d.resource === resource);
    if (definition) kinds.set(`${group}/${resource}`, definition);
  }
  const nodes = deps.registry.byResource('', 'v1', 'nodes');
  const progress = new Map<string, Progress>();
  let isStopped = false;
  const keyOf = (definition: ResourceDefinition, object: KubeObject): string =>
    `${definition.group}/${definition.resource}/${object.metadata.namespace ?? ''}/${object.metadata.name}`;

  const statusAt = (definition: ResourceDefinition, object: KubeObject, at: Progress): Json => {
    switch (definition.resource) {
      case 'deployments':
        return deploymentStatus(object, at.stage, at.isUpdate);
      case 'statefulsets':
        return statefulSetStatus(object, at.stage, at.isUpdate);
      case 'daemonsets':
        return daemonSetStatus(object, at.stage, at.isUpdate, nodes ? deps.store.list(nodes) : []);
      default:
        return jobStatus(object, at.stage);
    }
  };

  const step = (definition: ResourceDefinition, namespace: string, name: string, key: string): void => {
    const at = progress.get(key);
    if (at === undefined || isStopped) return;
    at.timer = undefined;
    const object = deps.store.get(definition, namespace, name);
    if (!object || object.metadata.deletionTimestamp || object.metadata.generation !== at.generation) return;
    try {
      deps.objects.update(
        definition,
        namespace,
        name,
        { ...object, status: statusAt(definition, object, at) },
        { manager: CONTROLLER_MANAGER, subresource: 'status' },
      );
    } catch {
      // A write raced this one (409): the next event brings the controller back.
    }
    const outcome = podOutcome(object);
    const next: { stage: Stage; delayMs: number } | undefined =
      at.stage !== 'observed'
        ? undefined
        : outcome === 'ready' || definition.resource === 'jobs'
          ? { stage: 'settled', delayMs: stepMs }
          : definition.resource === 'deployments'
            ? { stage: 'deadline', delayMs: deadlineMs }
            : undefined;
    if (next === undefined) return;
    at.stage = next.stage;
    if (definition.resource === 'jobs' && outcome === 'unpullable') return; // pending pods never count as failed
    at.timer = setTimeout(() => step(definition, namespace, name, key), next.delayMs);
  };

  const observe = (definition: ResourceDefinition, object: KubeObject, isForced = false): void => {
    const key = keyOf(definition, object);
    const generation = count(object.metadata.generation, 1);
    const known = progress.get(key);
    if (known !== undefined && known.generation === generation && !isForced) return;
    const status = record(object['status']);
    if (known === undefined && status['observedGeneration'] === generation && !isForced) {
      progress.set(key, { generation, stage: 'settled', isUpdate: false, timer: undefined });
      return;
    }
    clearTimeout(known?.timer);
    const at: Progress = {
      generation,
      stage: 'observed',
      isUpdate: known !== undefined || status['observedGeneration'] !== undefined,
      timer: undefined,
    };
    progress.set(key, at);
    const namespace = object.metadata.namespace ?? '';
    at.timer = setTimeout(() => step(definition, namespace, object.metadata.name, key), stepMs);
  };

  for (const definition of kinds.values())
    for (const object of deps.store.list(definition)) observe(definition, object);
  const unsubscribe = deps.store.subscribe((event) => {
    const definition = kinds.get(`${event.definition.group}/${event.definition.resource}`);
    if (definition !== undefined) {
      if (event.type === 'DELETED') {
        const key = keyOf(definition, event.object);
        clearTimeout(progress.get(key)?.timer);
        progress.delete(key);
      } else observe(definition, event.object);
      return;
    }
    // Nodes come and go: every DaemonSet recounts the nodes it should run on.
    if (event.definition.group === '' && event.definition.resource === 'nodes') {
      const daemonSets = kinds.get('apps/daemonsets');
      if (daemonSets) for (const object of deps.store.list(daemonSets)) observe(daemonSets, object, true);
    }
  });
  return () => {
    isStopped = true;
    unsubscribe();
    for (const at of progress.values()) clearTimeout(at.timer);
  };
}
