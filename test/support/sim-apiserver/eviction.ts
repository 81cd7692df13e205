/**
 * SIMULATED `pods/eviction` subresource and the PodDisruptionBudget
 * arithmetic behind it: what `kubectl drain` and `edgeadm upgrade node`
 * POST to evict a Pod. Written from kube-apiserver's eviction handler
 * (kubernetes `pkg/registry/core/pod/storage/eviction.go`: `Create`,
 * `canIgnorePDB`, `checkAndDecrement`, `getPodDisruptionBudgets`) and the
 * disruption controller's status computation (`pkg/controller/disruption`),
 * read upstream and written here independently.
 *
 * What it does as kube-apiserver does:
 * - the body must be a policy/v1 (or v1beta1) Eviction whose name is the
 *   Pod's (400 "name in URL does not match name in Eviction object");
 * - a Pod that is Succeeded, Failed or Pending, or already being deleted, is
 *   deleted without looking at any budget (`canIgnorePDB`);
 * - the budgets of the Pod's namespace whose (non-empty) selector matches
 *   its labels apply; more than one answers a 500 Failure Status ("This pod
 *   has more than one PodDisruptionBudget, …");
 * - an unready Pod is deleted when the budget has its healthy Pods anyway;
 * - a budget that allows no disruption answers 429 TooManyRequests "Cannot
 *   evict pod as it would violate the pod's disruption budget." with a
 *   `DisruptionTarget` cause naming the budget, the Pods it needs and has;
 * - otherwise the Pod is deleted and the answer is a Success Status.
 *
 * - an accepted eviction records the Pod in the budget's
 *   `status.disruptedPods` (as `checkAndDecrement` does).
 *
 * What differs, on purpose: there is no disruption controller running
 * beside the store, so the budget's status (`currentHealthy`,
 * `desiredHealthy`, `disruptionsAllowed`) is computed at each eviction from
 * the Pods the budget selects, as the controller would compute it, rather
 * than read from a status the controller wrote earlier; the "not yet
 * processed" 429 (`observedGeneration` behind) therefore never happens.
 * The expected count: the controller takes the scale of the Pods'
 * controllers (for `maxUnavailable` and a percentage); the simulation has
 * no controllers that recreate Pods, so it takes the selected Pods plus
 * the Pods the budget's `disruptedPods` records as evicted (their
 * replacements, which nothing here starts, are still missing, as they are
 * in a real cluster until they are Ready).
 */
import { ApiError, badRequest, type StatusObject } from './status.js';
import type { ObjectService } from './objects.js';
import type { ResourceRegistry } from './resources.js';
import { parseFieldSelector, parseLabelSelector } from './selectors.js';
import type { KubeObject } from './store.js';

type Json = Record<string, unknown>;

/** The message of every budget refusal, kube-apiserver's words. */
export const EVICTION_REFUSED_MESSAGE = "Cannot evict pod as it would violate the pod's disruption budget.";

/** What the disruption controller would write into a budget's status. */
export interface BudgetStatus {
  currentHealthy: number;
  desiredHealthy: number;
  expectedPods: number;
  disruptionsAllowed: number;
}

function record(value: unknown): Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {};
}

/** Whether a Pod is Ready (its Ready condition is True), as podutil.IsPodReady reads it. */
export function isPodReady(pod: KubeObject): boolean {
  const conditions = record(pod['status'])['conditions'];
  return (
    Array.isArray(conditions) && conditions.some((c) => record(c)['type'] === 'Ready' && record(c)['status'] === 'True')
  );
}

function phaseOf(pod: KubeObject): string | undefined {
  const phase = record(pod['status'])['phase'];
  return typeof phase === 'string' ? phase : undefined;
}

/**
 * Whether a metav1.LabelSelector (matchLabels, matchExpressions) selects
 * `labels`. An empty or absent selector selects nothing here: the eviction
 * handler skips budgets whose selector is empty.
 */
export function budgetSelects(selector: unknown, labels: Record<string, string> | undefined): boolean {
  const s = record(selector);
  const matchLabels = record(s['matchLabels']);
  const expressions = Array.isArray(s['matchExpressions']) ? s['matchExpressions'].map(record) : [];
  if (Object.keys(matchLabels).length === 0 && expressions.length === 0) return false;
  const have = labels ?? {};
  for (const [key, value] of Object.entries(matchLabels)) if (have[key] !== value) return false;
  for (const expression of expressions) {
    const key = String(expression['key'] ?? '');
    const values = Array.isArray(expression['values']) ? expression['values'].map(String) : [];
    const isPresent = key in have;
    switch (expression['operator']) {
      case 'In':
        if (!isPresent || !values.includes(have[key]!)) return false;
        break;
      case 'NotIn':
        if (isPresent && values.includes(have[key]!)) return false;
        break;
      case 'Exists':
        if (!isPresent) return false;
        break;
      case 'DoesNotExist':
        if (isPresent) return false;
        break;
      default:
        // An invalid selector matches nothing (the handler skips it).
        return false;
    }
  }
  return true;
}

/** An int-or-percent scaled to `total`, rounded up (the controller's GetScaledValueFromIntOrPercent, roundUp). */
function scaled(value: unknown, total: number): number | undefined {
  if (typeof value === 'number') return value;
  if (typeof value === 'string') {
    const match = /^(\d+)%$/.exec(value);
    if (match) return Math.ceil((Number(match[1]) * total) / 100);
    if (/^\d+$/.test(value)) return Number(value);
  }
  return undefined;
}

/** The budget's status as the disruption controller would compute it from the Pods it selects. */
export function budgetStatus(budget: KubeObject, pods: readonly KubeObject[]): BudgetStatus {
  const spec = record(budget['spec']);
  const selected = pods.filter((pod) => budgetSelects(spec['selector'], pod.metadata.labels));
  const present = new Set(selected.map((pod) => pod.metadata.name));
  const disrupted = Object.keys(record(record(budget['status'])['disruptedPods'])).filter((name) => !present.has(name));
  const expectedPods = selected.length + disrupted.length;
  const currentHealthy = selected.filter(
    (pod) => phaseOf(pod) === 'Running' && isPodReady(pod) && !pod.metadata.deletionTimestamp,
  ).length;
  let desiredHealthy = 0;
  const minAvailable = scaled(spec['minAvailable'], expectedPods);
  const maxUnavailable = scaled(spec['maxUnavailable'], expectedPods);
  if (minAvailable !== undefined) desiredHealthy = minAvailable;
  else if (maxUnavailable !== undefined) desiredHealthy = Math.max(0, expectedPods - maxUnavailable);
  return {
    currentHealthy,
    desiredHealthy,
    expectedPods,
    disruptionsAllowed: Math.max(0, currentHealthy - desiredHealthy),
  };
}

function tooManyRequests(budget: string, status: BudgetStatus): ApiError {
  return new ApiError({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: EVICTION_REFUSED_MESSAGE,
    reason: 'TooManyRequests',
    details: {
      causes: [
        {
          reason: 'DisruptionTarget',
          message: `The disruption budget ${budget} needs ${status.desiredHealthy} healthy pods and has ${status.currentHealthy} currently`,
        },
      ],
    },
    code: 429,
  });
}

/** What {@link evictPod} needs of the server. */
export interface EvictionContext {
  objects: ObjectService;
  registry: ResourceRegistry;
}

/**
 * Handles `POST …/pods/<name>/eviction`: deletes the Pod or refuses, as
 * described in the module comment. Returns the Status to send (201).
 *
 * @throws {ApiError} 400 (body), 404 (no Pod), 429 (budget), or what the delete throws.
 */
export function evictPod(
  context: EvictionContext,
  request: { namespace: string; name: string; body: unknown; isDryRun: boolean },
): StatusObject {
  const eviction = record(request.body);
  const kind = eviction['kind'];
  const apiVersion = eviction['apiVersion'];
  if (kind !== 'Eviction' || (apiVersion !== 'policy/v1' && apiVersion !== 'policy/v1beta1')) {
    throw badRequest(`not a Eviction object: ${String(apiVersion)} ${String(kind)}`);
  }
  if (record(eviction['metadata'])['name'] !== request.name) {
    throw badRequest('name in URL does not match name in Eviction object');
  }
  const podsType = context.registry.byResource('', 'v1', 'pods')!;
  const budgetsType = context.registry.byResource('policy', 'v1', 'poddisruptionbudgets')!;
  const pod = context.objects.get(podsType, request.namespace, request.name);
  const deleteOptions = record(eviction['deleteOptions']);
  const preconditions = record(deleteOptions['preconditions']);
  const remove = (resourceVersion?: string): StatusObject => {
    context.objects.remove(podsType, request.namespace, request.name, {
      isDryRun: request.isDryRun,
      preconditions: {
        ...(typeof preconditions['uid'] === 'string' ? { uid: preconditions['uid'] } : {}),
        ...(typeof preconditions['resourceVersion'] === 'string'
          ? { resourceVersion: preconditions['resourceVersion'] }
          : resourceVersion === undefined
            ? {}
            : { resourceVersion }),
      },
    });
    return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 };
  };
  const phase = phaseOf(pod);
  if (phase === 'Succeeded' || phase === 'Failed' || phase === 'Pending' || pod.metadata.deletionTimestamp) {
    return remove();
  }
  const { items: budgets } = context.objects.list(budgetsType, request.namespace, {
    labels: parseLabelSelector(null),
    fields: parseFieldSelector(null),
  });
  const matching = budgets.filter((budget) => budgetSelects(record(budget['spec'])['selector'], pod.metadata.labels));
  if (matching.length > 1) {
    throw new ApiError({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.',
      code: 500,
    });
  }
  if (matching.length === 0) return remove();
  const budget = matching[0]!;
  const { items: pods } = context.objects.list(podsType, request.namespace, {
    labels: parseLabelSelector(null),
    fields: parseFieldSelector(null),
  });
  const status = budgetStatus(budget, pods);
  if (!isPodReady(pod) && status.currentHealthy >= status.desiredHealthy && status.desiredHealthy > 0) {
    // Not counted as healthy: deleting it costs the budget nothing (guarded by its resourceVersion).
    return remove(pod.metadata.resourceVersion);
  }
  if (status.disruptionsAllowed === 0) throw tooManyRequests(budget.metadata.name, status);
  if (!request.isDryRun) {
    const recorded = structuredClone(budget);
    const budgetStatusRecord = record(recorded['status']);
    recorded['status'] = {
      ...budgetStatusRecord,
      disruptedPods: { ...record(budgetStatusRecord['disruptedPods']), [request.name]: new Date().toISOString() },
    };
    context.objects.update(budgetsType, request.namespace, budget.metadata.name, recorded, {
      manager: 'kube-apiserver',
      subresource: 'status',
    });
  }
  return remove();
}
