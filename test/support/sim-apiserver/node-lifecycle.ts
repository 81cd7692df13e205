/**
 * SIMULATED node lifecycle: what kube-controller-manager's node lifecycle
 * controller and taint eviction controller, and kube-apiserver's
 * DefaultTolerationSeconds admission plugin, do to a node that stops
 * heartbeating and to the pods on it. It is not them. Each rule follows
 * the Kubernetes code named beside it (kubernetes/kubernetes,
 * pkg/controller/nodelifecycle/node_lifecycle_controller.go,
 * pkg/controller/tainteviction/taint_eviction.go and timed_workers.go,
 * plugin/pkg/admission/defaulttolerationseconds/admission.go); README.md,
 * "Node lifecycle", lists what is left out.
 *
 * Time is injected ({@link SimClock}) and every period is an option, so
 * unit tests drive it with a fake clock and the integration suites shorten
 * it (see ../sim-timing.ts). `tolerationSecondMs` is how long one of a
 * pod's `tolerationSeconds` lasts here: 1,000 ms as in Kubernetes, less
 * when a test shortens it, so that `tolerationSeconds: 300` still reads
 * 300 in the pod while its window passes in a few seconds.
 */
import type { ObjectService } from './objects.js';
import type { ResourceDefinition, ResourceRegistry } from './resources.js';
import type { KubeObject, SimStore } from './store.js';

/** The taint keys the node lifecycle controller owns (k8s.io/api core/v1 well_known_taints.go). */
export const TAINT_NODE_UNREACHABLE = 'node.kubernetes.io/unreachable';
export const TAINT_NODE_NOT_READY = 'node.kubernetes.io/not-ready';
/** kube-controller-manager's `--node-monitor-period` default (nodelifecycle config v1alpha1 defaults.go). */
export const DEFAULT_NODE_MONITOR_PERIOD_MS = 5_000;
/** `--node-monitor-grace-period` default in the releases the simulation reports (1.30; 50 s from 1.32). */
export const DEFAULT_NODE_MONITOR_GRACE_PERIOD_MS = 40_000;
/** `--node-startup-grace-period` default: a node that never posted status. */
export const DEFAULT_NODE_STARTUP_GRACE_PERIOD_MS = 60_000;
/** kube-apiserver's `--default-not-ready-toleration-seconds` and `--default-unreachable-toleration-seconds`. */
export const DEFAULT_TOLERATION_SECONDS = 300;
/** How long one toleration second lasts, unshortened. */
export const DEFAULT_TOLERATION_SECOND_MS = 1_000;
/** The field manager and event source of the simulated controllers. */
const NODE_CONTROLLER = 'node-controller';
const TAINT_EVICTION_CONTROLLER = 'taint-eviction-controller';

/** A clock the controllers run on: the real one, or a test's. */
export interface SimClock {
  now(): number;
  /** Runs `run` after `ms`; returns a cancel function. */
  setTimer(run: () => void, ms: number): () => void;
}

/** The real clock. */
export const REAL_CLOCK: SimClock = {
  now: () => Date.now(),
  setTimer: (run, ms) => {
    const timer = setTimeout(run, ms);
    return () => clearTimeout(timer);
  },
};

/** Periods of the simulated node lifecycle; each defaults to Kubernetes' default. */
export interface NodeLifecycleOptions {
  monitorPeriodMs?: number;
  gracePeriodMs?: number;
  startupGracePeriodMs?: number;
  /** How long one of a pod's `tolerationSeconds` lasts. */
  tolerationSecondMs?: number;
  clock?: SimClock;
}

type Json = Record<string, unknown>;

/** A pod's toleration as the API holds it. */
export interface Toleration {
  key?: string;
  operator?: string;
  value?: string;
  effect?: string;
  tolerationSeconds?: number;
}

/** A node's taint as the API holds it. */
export interface Taint {
  key: string;
  value?: string;
  effect: string;
  timeAdded?: string;
}

function record(value: unknown): Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {};
}

function list<T>(value: unknown): T[] {
  return Array.isArray(value) ? (value as T[]) : [];
}

function timestamp(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** core/v1 `Toleration.ToleratesTaint` (k8s.io/api core/v1 toleration.go). */
export function toleratesTaint(toleration: Toleration, taint: Taint): boolean {
  if (toleration.effect && toleration.effect !== taint.effect) return false;
  if (toleration.key && toleration.key !== taint.key) return false;
  switch (toleration.operator ?? 'Equal') {
    case 'Exists':
      return true;
    case 'Equal':
    case '':
      return (toleration.value ?? '') === (taint.value ?? '');
    default:
      return false;
  }
}

/**
 * The toleration matching each taint, the first in the pod's order, or
 * undefined when one taint is not tolerated (`GetMatchingTolerations`,
 * pkg/apis/core/v1/helper/helpers.go).
 */
export function matchingTolerations(taints: Taint[], tolerations: Toleration[]): Toleration[] | undefined {
  const used: Toleration[] = [];
  for (const taint of taints) {
    const match = tolerations.find((toleration) => toleratesTaint(toleration, taint));
    if (match === undefined) return undefined;
    used.push(match);
  }
  return used;
}

/** `getMinTolerationTime` (taint_eviction.go) in seconds: -1 for ever, 0 for none. */
export function minTolerationSeconds(used: Toleration[]): number {
  if (used.length === 0) return 0;
  let min = Number.POSITIVE_INFINITY;
  for (const toleration of used) {
    if (toleration.tolerationSeconds === undefined || toleration.tolerationSeconds === null) continue;
    if (toleration.tolerationSeconds <= 0) return 0;
    min = Math.min(min, toleration.tolerationSeconds);
  }
  return min === Number.POSITIVE_INFINITY ? -1 : min;
}

/**
 * The DefaultTolerationSeconds admission plugin (admission.go, `Admit`), on
 * pods (not their subresources), at create and update: a pod with no
 * toleration of `not-ready:NoExecute` (a toleration with an empty key or
 * effect counts) gets one for 300 s, and the same for `unreachable`. Pure:
 * returns the new list, or undefined when nothing is added.
 */
export function withDefaultTolerations(tolerations: Toleration[]): Toleration[] | undefined {
  const covers = (key: string): boolean =>
    tolerations.some((t) => (t.key === key || !t.key) && (t.effect === 'NoExecute' || !t.effect));
  const added: Toleration[] = [];
  for (const key of [TAINT_NODE_NOT_READY, TAINT_NODE_UNREACHABLE]) {
    if (!covers(key))
      added.push({ key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: DEFAULT_TOLERATION_SECONDS });
  }
  return added.length === 0 ? undefined : [...tolerations, ...added];
}

/**
 * `validateOnlyAddedTolerations` (pkg/apis/core/validation/validation.go,
 * run by `ValidatePodUpdate`): every existing toleration must still be
 * there, equal but for its `tolerationSeconds`. Returns the upstream
 * message for a refused update, else undefined.
 */
export function tolerationUpdateError(oldTolerations: Toleration[], newTolerations: Toleration[]): string | undefined {
  const withoutSeconds = (t: Toleration): string =>
    JSON.stringify({ key: t.key ?? '', operator: t.operator ?? '', value: t.value ?? '', effect: t.effect ?? '' });
  const kept = new Set(newTolerations.map(withoutSeconds));
  for (const old of oldTolerations) {
    if (!kept.has(withoutSeconds(old)))
      return 'Forbidden: existing toleration can not be modified except its tolerationSeconds';
  }
  return undefined;
}

interface NodeHealth {
  probeMs: number;
  heartbeat: string | undefined;
  leaseRenewTime: string | undefined;
}

interface ScheduledEviction {
  createdAtMs: number;
  fireAtMs: number;
  cancel: () => void;
}

/**
 * Starts the simulated node lifecycle and taint eviction controllers on
 * `store`. Returns the stop function.
 */
export function startNodeLifecycle(
  deps: { store: SimStore; objects: ObjectService; registry: ResourceRegistry },
  options: NodeLifecycleOptions = {},
): () => void {
  const clock = options.clock ?? REAL_CLOCK;
  const monitorPeriodMs = options.monitorPeriodMs ?? DEFAULT_NODE_MONITOR_PERIOD_MS;
  const gracePeriodMs = options.gracePeriodMs ?? DEFAULT_NODE_MONITOR_GRACE_PERIOD_MS;
  const startupGracePeriodMs = options.startupGracePeriodMs ?? DEFAULT_NODE_STARTUP_GRACE_PERIOD_MS;
  const secondMs = options.tolerationSecondMs ?? DEFAULT_TOLERATION_SECOND_MS;
  const nodes = deps.registry.byResource('', 'v1', 'nodes');
  const pods = deps.registry.byResource('', 'v1', 'pods');
  const leases = deps.registry.byResource('coordination.k8s.io', 'v1', 'leases');
  const events = deps.registry.byResource('', 'v1', 'events');
  if (!nodes || !pods) return () => {};
  const health = new Map<string, NodeHealth>();
  const evictions = new Map<string, ScheduledEviction>();
  /** NoExecute taints per node, as the taint eviction controller last saw them. */
  const taintedNodes = new Map<string, Taint[]>();
  let isStopped = false;

  const podsOn = (nodeName: string): KubeObject[] =>
    deps.store.list(pods).filter((pod) => record(pod['spec'])['nodeName'] === nodeName);
  const readyOf = (node: KubeObject): Json | undefined =>
    list<Json>(record(node['status'])['conditions']).find((c) => c['type'] === 'Ready');
  const noExecuteTaints = (node: KubeObject): Taint[] =>
    list<Taint>(record(node['spec'])['taints']).filter((t) => t.effect === 'NoExecute');

  const writeStatus = (definition: ResourceDefinition, object: KubeObject, status: Json, manager: string): void => {
    try {
      deps.objects.update(
        definition,
        object.metadata.namespace ?? '',
        object.metadata.name,
        { ...object, status },
        { manager, subresource: 'status' },
      );
    } catch {
      // A write raced this one (409): the next pass retries, as the controllers do.
    }
  };

  const recordEvent = (pod: KubeObject, message: string): void => {
    if (!events) return;
    const namespace = pod.metadata.namespace ?? 'default';
    try {
      deps.objects.create(
        events,
        namespace,
        {
          apiVersion: 'v1',
          kind: 'Event',
          metadata: { generateName: `${pod.metadata.name}.`, namespace },
          involvedObject: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata.name, namespace },
          reason: 'TaintManagerEviction',
          message,
          type: 'Normal',
          source: { component: TAINT_EVICTION_CONTROLLER },
          firstTimestamp: timestamp(clock.now()),
          lastTimestamp: timestamp(clock.now()),
          count: 1,
        },
        { manager: TAINT_EVICTION_CONTROLLER },
      );
    } catch {
      // Events are best effort, as the recorder's are.
    }
  };

  // --- taint eviction (taint_eviction.go) ---

  const cancelEviction = (key: string): void => {
    evictions.get(key)?.cancel();
    evictions.delete(key);
  };

  /** `deletePodHandler` / `addConditionAndDeletePod`: DisruptionTarget, then delete. */
  const evict = (namespace: string, name: string): void => {
    evictions.delete(`${namespace}/${name}`);
    if (isStopped) return;
    const pod = deps.store.get(pods, namespace, name);
    if (!pod) return;
    recordEvent(pod, `Marking for deletion Pod ${namespace}/${name}`);
    const status = structuredClone(record(pod['status']));
    const conditions = list<Json>(status['conditions']).filter((c) => c['type'] !== 'DisruptionTarget');
    conditions.push({
      type: 'DisruptionTarget',
      status: 'True',
      reason: 'DeletionByTaintManager',
      message: 'Taint manager: deleting due to NoExecute taint',
      lastTransitionTime: timestamp(clock.now()),
    });
    writeStatus(pods, pod, { ...status, conditions }, TAINT_EVICTION_CONTROLLER);
    try {
      deps.objects.remove(pods, namespace, name);
    } catch {
      // Already gone.
    }
  };

  const scheduleEviction = (namespace: string, name: string, createdAtMs: number, fireAtMs: number): void => {
    const key = `${namespace}/${name}`;
    // `AddWork`: an existing item is kept.
    if (evictions.has(key)) return;
    const cancel = clock.setTimer(() => evict(namespace, name), Math.max(0, fireAtMs - clock.now()));
    evictions.set(key, { createdAtMs, fireAtMs, cancel });
  };

  /** `processPodOnNode`. */
  const processPodOnNode = (pod: KubeObject, taints: Taint[], nowMs: number): void => {
    const namespace = pod.metadata.namespace ?? '';
    const key = `${namespace}/${pod.metadata.name}`;
    if (taints.length === 0) {
      cancelEviction(key);
      return;
    }
    const used = matchingTolerations(taints, list<Toleration>(record(pod['spec'])['tolerations']));
    if (used === undefined) {
      cancelEviction(key);
      scheduleEviction(namespace, pod.metadata.name, nowMs, nowMs);
      return;
    }
    const seconds = minTolerationSeconds(used);
    if (seconds < 0) {
      cancelEviction(key);
      return;
    }
    const triggerMs = nowMs + seconds * secondMs;
    const scheduled = evictions.get(key);
    let startMs = nowMs;
    if (scheduled !== undefined) {
      // Upstream keeps an eviction already scheduled from an earlier start:
      // changed tolerations never postpone it (only "for ever" cancels it).
      startMs = scheduled.createdAtMs;
      if (startMs + seconds * secondMs < triggerMs) return;
      cancelEviction(key);
    }
    scheduleEviction(namespace, pod.metadata.name, startMs, triggerMs);
  };

  /** `handleNodeUpdate`. */
  const onNodeTaints = (node: KubeObject): void => {
    const taints = noExecuteTaints(node);
    if (taints.length === 0) taintedNodes.delete(node.metadata.name);
    else taintedNodes.set(node.metadata.name, taints);
    const nowMs = clock.now();
    for (const pod of podsOn(node.metadata.name)) processPodOnNode(pod, taints, nowMs);
  };

  /** `handlePodUpdate`. */
  const onPod = (pod: KubeObject): void => {
    const nodeName = record(pod['spec'])['nodeName'];
    if (typeof nodeName !== 'string' || nodeName === '') return;
    const taints = taintedNodes.get(nodeName);
    if (taints === undefined) return;
    processPodOnNode(pod, taints, clock.now());
  };

  // --- node lifecycle (node_lifecycle_controller.go) ---

  /** `SwapNodeControllerTaint`: NoExecute taints get `timeAdded`. */
  const swapTaints = (node: KubeObject, add: Taint[], remove: Array<Pick<Taint, 'key' | 'effect'>>): void => {
    const spec = record(node['spec']);
    const current = list<Taint>(spec['taints']);
    const kept = current.filter((t) => !remove.some((r) => r.key === t.key && r.effect === t.effect));
    const missing = add.filter((a) => !kept.some((t) => t.key === a.key && t.effect === a.effect));
    if (missing.length === 0 && kept.length === current.length) return;
    const stamped = missing.map((t) => (t.effect === 'NoExecute' ? { ...t, timeAdded: timestamp(clock.now()) } : t));
    const taints = [...kept, ...stamped];
    const next: KubeObject = { ...node, spec: { ...spec } };
    if (taints.length === 0) delete (next['spec'] as Json)['taints'];
    else (next['spec'] as Json)['taints'] = taints;
    try {
      deps.objects.update(nodes, '', node.metadata.name, next, { manager: NODE_CONTROLLER });
    } catch {
      // Raced another write: the next pass tries again.
    }
  };

  /** `MarkPodsNotReady` (controller/util/node): each pod's Ready condition becomes False. */
  const markPodsNotReady = (nodeName: string): void => {
    for (const pod of podsOn(nodeName)) {
      const status = structuredClone(record(pod['status']));
      const conditions = list<Json>(status['conditions']);
      const ready = conditions.find((c) => c['type'] === 'Ready');
      if (ready === undefined || ready['status'] === 'False') continue;
      ready['status'] = 'False';
      ready['lastTransitionTime'] = timestamp(clock.now());
      writeStatus(pods, pod, { ...status, conditions }, NODE_CONTROLLER);
    }
  };

  /** `tryUpdateNodeHealth`: the Ready condition as observed, and Unknown posted once the grace period passed. */
  const updateHealth = (node: KubeObject, nowMs: number): { observed: string; current: string } | undefined => {
    const ready = readyOf(node);
    const name = node.metadata.name;
    const heartbeat = typeof ready?.['lastHeartbeatTime'] === 'string' ? ready['lastHeartbeatTime'] : undefined;
    const lease = leases ? deps.store.get(leases, 'kube-node-lease', name) : undefined;
    const renewTime = record(lease?.['spec'])['renewTime'];
    const leaseRenewTime = typeof renewTime === 'string' ? renewTime : undefined;
    let known = health.get(name);
    if (known === undefined) {
      known = { probeMs: nowMs, heartbeat, leaseRenewTime };
      health.set(name, known);
    }
    // A new heartbeat in the status, or a renewed Lease, counts as a probe.
    if (heartbeat !== known.heartbeat || (leaseRenewTime !== undefined && leaseRenewTime !== known.leaseRenewTime)) {
      known.probeMs = nowMs;
      known.heartbeat = heartbeat;
      known.leaseRenewTime = leaseRenewTime;
    }
    const grace = ready === undefined ? startupGracePeriodMs : gracePeriodMs;
    // A node that never posted a Ready condition is left alone until its
    // startup grace period ends (`monitorNodeHealth` acts only with a current condition).
    if (ready === undefined && nowMs <= known.probeMs + grace) return undefined;
    const observed = String(ready?.['status'] ?? 'Unknown');
    if (nowMs <= known.probeMs + grace) return { observed, current: observed };
    const status = structuredClone(record(node['status']));
    const conditions = list<Json>(status['conditions']);
    let isChanged = false;
    for (const type of ['Ready', 'MemoryPressure', 'DiskPressure', 'PIDPressure']) {
      const condition = conditions.find((c) => c['type'] === type);
      if (condition === undefined) {
        conditions.push({
          type,
          status: 'Unknown',
          reason: 'NodeStatusNeverUpdated',
          message: 'Kubelet never posted node status.',
          lastHeartbeatTime: node.metadata.creationTimestamp,
          lastTransitionTime: timestamp(nowMs),
        });
        isChanged = true;
      } else if (condition['status'] !== 'Unknown') {
        condition['status'] = 'Unknown';
        condition['reason'] = 'NodeStatusUnknown';
        condition['message'] = 'Kubelet stopped posting node status.';
        condition['lastTransitionTime'] = timestamp(nowMs);
        isChanged = true;
      }
    }
    // The heartbeat time is kept, so this write is not taken for a kubelet's heartbeat.
    if (isChanged) writeStatus(nodes, node, { ...status, conditions }, NODE_CONTROLLER);
    return { observed, current: 'Unknown' };
  };

  /** One `monitorNodeHealth` pass, with `processTaintBaseEviction` and the NoSchedule pass folded in. */
  const monitor = (): void => {
    if (isStopped) return;
    const nowMs = clock.now();
    const all = deps.store.list(nodes);
    const states = all.flatMap((node) => {
      const state = updateHealth(node, nowMs);
      return state === undefined ? [] : [{ node, ...state }];
    });
    // `handleDisruption`: when no node at all is Ready, the controller
    // stops tainting and removes the taints it set (master disruption mode).
    const isFullDisruption = states.length > 0 && states.every((s) => s.current !== 'True');
    for (const { node: stale, observed, current } of states) {
      const node = deps.store.get(nodes, '', stale.metadata.name);
      if (!node) continue;
      const unreachable = { key: TAINT_NODE_UNREACHABLE, effect: 'NoExecute' };
      const notReady = { key: TAINT_NODE_NOT_READY, effect: 'NoExecute' };
      if (isFullDisruption || observed === 'True') swapTaints(node, [], [unreachable, notReady]);
      else if (observed === 'False') swapTaints(node, [notReady], [unreachable]);
      else swapTaints(node, [unreachable], [notReady]);
      // `doNoScheduleTaintingPass`: the condition's NoSchedule taint.
      const fresh = deps.store.get(nodes, '', node.metadata.name) ?? node;
      const status = readyOf(fresh)?.['status'];
      const noSchedule =
        status === 'False' ? TAINT_NODE_NOT_READY : status === 'Unknown' ? TAINT_NODE_UNREACHABLE : undefined;
      swapTaints(
        fresh,
        noSchedule === undefined ? [] : [{ key: noSchedule, effect: 'NoSchedule' }],
        [TAINT_NODE_NOT_READY, TAINT_NODE_UNREACHABLE]
          .filter((key) => key !== noSchedule)
          .map((key) => ({ key, effect: 'NoSchedule' })),
      );
      if (current !== 'True' && observed === 'True') markPodsNotReady(node.metadata.name);
    }
    cancelMonitor = clock.setTimer(monitor, monitorPeriodMs);
  };

  for (const node of deps.store.list(nodes)) onNodeTaints(node);
  const unsubscribe = deps.store.subscribe((event) => {
    if (isStopped) return;
    const { group, resource } = event.definition;
    if (group !== '' || (resource !== 'nodes' && resource !== 'pods')) return;
    if (resource === 'nodes') {
      if (event.type === 'DELETED') {
        taintedNodes.delete(event.object.metadata.name);
        health.delete(event.object.metadata.name);
        return;
      }
      const before = taintedNodes.get(event.object.metadata.name) ?? [];
      const after = noExecuteTaints(event.object);
      if (JSON.stringify(before) !== JSON.stringify(after)) onNodeTaints(event.object);
      return;
    }
    if (event.type === 'DELETED') {
      cancelEviction(`${event.object.metadata.namespace ?? ''}/${event.object.metadata.name}`);
      return;
    }
    // `PodUpdated`: only a new pod, or changed tolerations or node, is looked at again.
    const before = record(event.previous?.['spec']);
    const after = record(event.object['spec']);
    const isRelevant =
      event.previous === undefined ||
      before['nodeName'] !== after['nodeName'] ||
      JSON.stringify(before['tolerations'] ?? []) !== JSON.stringify(after['tolerations'] ?? []);
    if (isRelevant) onPod(event.object);
  });
  let cancelMonitor = clock.setTimer(monitor, monitorPeriodMs);
  return () => {
    isStopped = true;
    unsubscribe();
    cancelMonitor();
    for (const key of [...evictions.keys()]) cancelEviction(key);
  };
}
