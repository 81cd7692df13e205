/**
 * Whether one applied object is ready, by its kind's own status rules (the
 * ones `kubectl rollout status` uses for workloads), and the summaries an
 * operator declares over every cluster's copies. Pure: no I/O.
 */
import type { SummarySpec } from './spec.js';

/** An object's readiness. */
export type Readiness = { state: 'ready' } | { state: 'progressing' | 'failed'; message: string };

type Json = Record<string, unknown>;

function record(value: unknown): Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {};
}

function num(value: unknown, fallback = 0): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

function conditionOf(status: Json, type: string): Json | undefined {
  const conditions = status['conditions'];
  if (!Array.isArray(conditions)) return undefined;
  return conditions.map(record).find((condition) => condition['type'] === type);
}

function progressing(message: string): Readiness {
  return { state: 'progressing', message };
}

/** Whether the controller has seen the object's latest spec. */
function isObserved(object: Json, status: Json): boolean {
  const generation = record(object['metadata'])['generation'];
  return generation === undefined || num(status['observedGeneration'], -1) >= num(generation);
}

function deploymentReadiness(object: Json, status: Json): Readiness {
  // Observed first, as kubectl rollout status does: until the controller has seen the new spec, its conditions
  // (a ProgressDeadlineExceeded left by the revision before, which a fix or a rollback replaces) are about the old one.
  if (!isObserved(object, status)) return progressing('waiting for the deployment spec update to be observed');
  const progressingCondition = conditionOf(status, 'Progressing');
  if (progressingCondition?.['reason'] === 'ProgressDeadlineExceeded') {
    return {
      state: 'failed',
      message: `deployment exceeded its progress deadline: ${String(progressingCondition['message'] ?? '')}`,
    };
  }
  const wanted = num(record(object['spec'])['replicas'], 1);
  const updated = num(status['updatedReplicas']);
  const available = num(status['availableReplicas']);
  const total = num(status['replicas']);
  if (updated < wanted) return progressing(`${updated} of ${wanted} updated replicas`);
  if (total > updated) return progressing(`${total - updated} old replicas pending termination`);
  if (available < updated) return progressing(`${available} of ${updated} updated replicas available`);
  return { state: 'ready' };
}

function statefulSetReadiness(object: Json, status: Json): Readiness {
  if (!isObserved(object, status)) return progressing('waiting for the statefulset spec update to be observed');
  const wanted = num(record(object['spec'])['replicas'], 1);
  const ready = num(status['readyReplicas']);
  if (ready < wanted) return progressing(`${ready} of ${wanted} replicas ready`);
  const { currentRevision, updateRevision } = status;
  if (updateRevision !== undefined && currentRevision !== updateRevision) {
    return progressing(`${num(status['updatedReplicas'])} of ${wanted} replicas updated`);
  }
  return { state: 'ready' };
}

function daemonSetReadiness(object: Json, status: Json): Readiness {
  if (!isObserved(object, status)) return progressing('waiting for the daemonset spec update to be observed');
  const desired = num(status['desiredNumberScheduled']);
  const updated = num(status['updatedNumberScheduled']);
  const available = num(status['numberAvailable']);
  if (updated < desired) return progressing(`${updated} of ${desired} pods updated`);
  if (available < desired) return progressing(`${available} of ${desired} updated pods available`);
  return { state: 'ready' };
}

function jobReadiness(status: Json): Readiness {
  if (conditionOf(status, 'Failed')?.['status'] === 'True') {
    return { state: 'failed', message: `job failed: ${String(conditionOf(status, 'Failed')?.['message'] ?? '')}` };
  }
  if (conditionOf(status, 'Complete')?.['status'] === 'True') return { state: 'ready' };
  return progressing('job has not completed');
}

/**
 * The readiness of one object as its cluster reports it: Deployment,
 * StatefulSet, DaemonSet and Job by their status fields; any other object
 * with a `Ready` or `Available` condition by that condition; anything else
 * is ready once it exists.
 */
export function readinessOf(object: Json): Readiness {
  const status = record(object['status']);
  switch (object['kind']) {
    case 'Deployment':
      return deploymentReadiness(object, status);
    case 'StatefulSet':
      return statefulSetReadiness(object, status);
    case 'DaemonSet':
      return daemonSetReadiness(object, status);
    case 'Job':
      return jobReadiness(status);
  }
  for (const type of ['Ready', 'Available']) {
    const condition = conditionOf(status, type);
    if (condition === undefined) continue;
    if (condition['status'] === 'True') return { state: 'ready' };
    return progressing(
      `${type} is ${String(condition['status'])}: ${String(condition['message'] ?? condition['reason'] ?? '')}`,
    );
  }
  return { state: 'ready' };
}

/** The readiness of a whole copy: failed if any object failed, ready if all are. */
export function copyReadinessOf(objects: readonly Json[]): Readiness {
  let firstProgressing: Readiness | undefined;
  for (const object of objects) {
    const readiness = readinessOf(object);
    const name = `${String(object['kind'])}/${String(record(object['metadata'])['name'])}`;
    if (readiness.state === 'failed') return { state: 'failed', message: `${name}: ${readiness.message}` };
    if (readiness.state === 'progressing' && firstProgressing === undefined) {
      firstProgressing = progressing(`${name}: ${readiness.message}`);
    }
  }
  return firstProgressing ?? { state: 'ready' };
}

/** A summary's value across clusters. */
export interface SummaryValue {
  name: string;
  /** Undefined when no copy reported a number for the field (min, max). */
  value: number | undefined;
  /** How many objects the value is computed from. */
  reporting: number;
}

/** Reads `.a.b.c` from an object. */
function fieldOf(object: Json, path: string): unknown {
  let value: unknown = object;
  for (const key of path.slice(1).split('.')) value = record(value)[key];
  return value;
}

/**
 * Computes declared summaries over the objects every cluster reported
 * (one list per cluster). `count` counts objects where the field is set and
 * truthy; `sum`, `min` and `max` take numeric fields and skip the rest.
 */
export function summarize(summaries: readonly SummarySpec[], copies: readonly (readonly Json[])[]): SummaryValue[] {
  return summaries.map((summary) => {
    const values: unknown[] = [];
    for (const objects of copies) {
      for (const object of objects) {
        if (summary.kind !== undefined && object['kind'] !== summary.kind) continue;
        if (summary.objectName !== undefined && record(object['metadata'])['name'] !== summary.objectName) continue;
        values.push(fieldOf(object, summary.field));
      }
    }
    if (summary.reduce === 'count') {
      return { name: summary.name, value: values.filter(Boolean).length, reporting: values.length };
    }
    const numbers = values.filter((value): value is number => typeof value === 'number' && Number.isFinite(value));
    let value: number | undefined;
    if (summary.reduce === 'sum') value = numbers.reduce((total, n) => total + n, 0);
    else if (numbers.length > 0) {
      // A loop, not Math.min(...numbers): thousands of clusters would overflow the argument list.
      const pick = summary.reduce === 'min' ? Math.min : Math.max;
      value = numbers.reduce((best, n) => pick(best, n));
    }
    return { name: summary.name, value, reporting: numbers.length };
  });
}
