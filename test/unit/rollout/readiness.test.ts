import { describe, expect, it } from 'vitest';
import { copyReadinessOf, readinessOf, summarize } from '../../../src/rollout/readiness.js';

const deployment = (spec: Record<string, unknown>, status: Record<string, unknown>, generation = 2) => ({
  kind: 'Deployment',
  metadata: { name: 'web', generation },
  spec,
  status,
});

describe('readinessOf', () => {
  it('reads a Deployment as kubectl rollout status does', () => {
    const done = { observedGeneration: 2, replicas: 3, updatedReplicas: 3, availableReplicas: 3 };
    expect(readinessOf(deployment({ replicas: 3 }, done))).toEqual({ state: 'ready' });
    expect(readinessOf(deployment({ replicas: 3 }, { ...done, observedGeneration: 1 }))).toMatchObject({
      state: 'progressing',
      message: 'waiting for the deployment spec update to be observed',
    });
    expect(readinessOf(deployment({ replicas: 3 }, { ...done, updatedReplicas: 1 }))).toMatchObject({
      state: 'progressing',
      message: '1 of 3 updated replicas',
    });
    expect(readinessOf(deployment({ replicas: 3 }, { ...done, replicas: 4 }))).toMatchObject({ state: 'progressing' });
    expect(readinessOf(deployment({ replicas: 3 }, { ...done, availableReplicas: 2 }))).toMatchObject({
      state: 'progressing',
    });
    const stuck = {
      ...done,
      conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded' }],
    };
    expect(readinessOf(deployment({ replicas: 3 }, stuck))).toMatchObject({ state: 'failed' });
  });

  it('does not fail a new spec on the progress deadline the previous one exceeded, before it is observed', () => {
    // A fixed revision (or a rollback) of a Deployment stuck on an unpullable image: generation 3, status still of 2.
    const stuckBefore = {
      observedGeneration: 2,
      replicas: 3,
      updatedReplicas: 1,
      availableReplicas: 2,
      conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded' }],
    };
    expect(readinessOf(deployment({ replicas: 3 }, stuckBefore, 3))).toMatchObject({
      state: 'progressing',
      message: 'waiting for the deployment spec update to be observed',
    });
  });

  it('reads StatefulSets, DaemonSets, Jobs and conditions', () => {
    expect(
      readinessOf({
        kind: 'StatefulSet',
        metadata: {},
        spec: { replicas: 2 },
        status: { readyReplicas: 2, currentRevision: 'a', updateRevision: 'b' },
      }),
    ).toMatchObject({ state: 'progressing' });
    expect(
      readinessOf({
        kind: 'DaemonSet',
        metadata: {},
        status: { desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 3 },
      }),
    ).toEqual({ state: 'ready' });
    expect(readinessOf({ kind: 'Job', status: { conditions: [{ type: 'Failed', status: 'True' }] } })).toMatchObject({
      state: 'failed',
    });
    expect(readinessOf({ kind: 'Job', status: {} })).toMatchObject({ state: 'progressing' });
    expect(readinessOf({ kind: 'Widget', status: { conditions: [{ type: 'Ready', status: 'False' }] } })).toMatchObject(
      {
        state: 'progressing',
      },
    );
    expect(readinessOf({ kind: 'ConfigMap' })).toEqual({ state: 'ready' });
  });

  it('a copy is failed if one object failed, and ready only if all are', () => {
    const ready = { kind: 'ConfigMap', metadata: { name: 'a' } };
    const failed = {
      kind: 'Job',
      metadata: { name: 'j' },
      status: { conditions: [{ type: 'Failed', status: 'True' }] },
    };
    expect(copyReadinessOf([ready, ready])).toEqual({ state: 'ready' });
    expect(copyReadinessOf([ready, failed]).state).toBe('failed');
    expect(copyReadinessOf([ready, { kind: 'Job', metadata: { name: 'k' } }])).toMatchObject({
      state: 'progressing',
      message: 'Job/k: job has not completed',
    });
  });
});

describe('summarize', () => {
  const copy = (available: number | undefined) => [
    { kind: 'Deployment', metadata: { name: 'web' }, status: { availableReplicas: available } },
    { kind: 'ConfigMap', metadata: { name: 'web' } },
  ];

  it('reduces a field over every cluster, skipping copies that report no number', () => {
    const copies = [copy(3), copy(1), copy(undefined), ...Array.from({ length: 20_000 }, () => copy(2))];
    const values = summarize(
      [
        { name: 'min', reduce: 'min', field: '.status.availableReplicas', kind: 'Deployment' },
        { name: 'max', reduce: 'max', field: '.status.availableReplicas', kind: 'Deployment' },
        { name: 'sum', reduce: 'sum', field: '.status.availableReplicas', kind: 'Deployment', objectName: 'web' },
        { name: 'count', reduce: 'count', field: '.status.availableReplicas' },
      ],
      copies,
    );
    expect(values).toEqual([
      { name: 'min', value: 1, reporting: 20_002 },
      { name: 'max', value: 3, reporting: 20_002 },
      { name: 'sum', value: 40_004, reporting: 20_002 },
      { name: 'count', value: 20_002, reporting: 40_006 },
    ]);
  });
});
