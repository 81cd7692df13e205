/**
 * The simulated workload controllers (test/support/sim-apiserver, not
 * kube-controller-manager): Deployments, StatefulSets, DaemonSets and Jobs
 * get the status their controllers would write, judged by the real kubectl
 * (`kubectl rollout status` reads exactly these fields) and by edgeadm's
 * readiness rules; an image from the unpullable or failing registry makes a
 * workload fail as it would for real.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient } from '../../../src/kube/client.js';
import { readinessOf } from '../../../src/rollout/readiness.js';
import {
  CONTROLLER_MANAGER,
  FAILING_IMAGE_REGISTRY,
  UNPULLABLE_IMAGE_REGISTRY,
  runKubectl,
  startSimApiServer,
  type KubeObject,
  type SimApiServer,
} from '../../support/sim-apiserver/index.js';
import { printedBy } from '../../support/run-output.js';

let server: SimApiServer;
let client: KubeClient;
let kubeconfig: string;

function workload(kind: string, name: string, image: string, extra: Record<string, unknown> = {}): KubeObject {
  const apiVersion = kind === 'Job' ? 'batch/v1' : 'apps/v1';
  const template = {
    metadata: { labels: { app: name } },
    spec: { containers: [{ name: 'main', image }], ...(kind === 'Job' ? { restartPolicy: 'Never' } : {}) },
  };
  const spec =
    kind === 'Job' ? { template, ...extra } : { selector: { matchLabels: { app: name } }, template, ...extra };
  return { apiVersion, kind, metadata: { name, namespace: 'default' }, spec };
}

const PLURAL: Record<string, string> = {
  Deployment: 'deployments',
  StatefulSet: 'statefulsets',
  DaemonSet: 'daemonsets',
  Job: 'jobs',
};

function pathOf(object: KubeObject): string {
  const group = object.kind === 'Job' ? 'batch/v1' : 'apps/v1';
  return `/apis/${group}/namespaces/default/${PLURAL[object.kind]}/${object.metadata.name}`;
}

async function apply(object: KubeObject): Promise<void> {
  await client.apply(pathOf(object), object, { force: true });
}

/** Every version of every object the store held since the test began, in order. */
const versions: KubeObject[] = [];
const waiters = new Set<() => void>();

/**
 * The first version of `object` (from the `after`th on) that `predicate`
 * accepts, waiting for the store's next writes if none does yet: every
 * intermediate state is seen, whatever the timing.
 */
async function versionWhere(
  object: KubeObject,
  predicate: (version: KubeObject) => boolean,
  after = 0,
): Promise<{ version: KubeObject; index: number }> {
  for (;;) {
    for (let index = after; index < versions.length; index += 1) {
      const version = versions[index] as KubeObject;
      if (version.kind === object.kind && version.metadata.name === object.metadata.name && predicate(version))
        return { version, index };
    }
    after = versions.length;
    await new Promise<void>((resolve) => waiters.add(resolve));
  }
}

/** Status observed for the object's generation `generation`, with readiness `state`. */
function observedAs(generation: number, state: string): (version: KubeObject) => boolean {
  return (version) => {
    const status = version['status'] as Record<string, unknown> | undefined;
    const observed = status?.['observedGeneration'] ?? (status === undefined ? undefined : version.metadata.generation);
    return observed === generation && readinessOf(version).state === state;
  };
}

async function readinessBecomes(object: KubeObject, state: string, generation = 1): Promise<Record<string, unknown>> {
  return (await versionWhere(object, observedAs(generation, state))).version;
}

beforeAll(async () => {
  server = await startSimApiServer({
    workloadControllers: { stepMs: 30, progressDeadlineMs: 300 },
    objects: ['node-a', 'node-b'].map((name) => ({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name, labels: { 'kubernetes.io/hostname': name } },
    })),
  });
  server.store.subscribe((event) => {
    versions.push(event.object);
    for (const wake of [...waiters]) {
      waiters.delete(wake);
      wake();
    }
  });
  client = new KubeClient({ contextName: 'sim', server: server.url, caPem: server.caPem, token: server.adminToken });
  kubeconfig = server.kubeconfig();
});

afterAll(async () => {
  await server.stop();
});

describe('simulated workload controllers', () => {
  it('brings a Deployment to Available, as kubectl rollout status sees it, through a progressing state', async () => {
    const deployment = workload('Deployment', 'web', 'nginx:1.27', { replicas: 3 });
    await apply(deployment);
    const progressing = await versionWhere(deployment, observedAs(1, 'progressing'));
    expect(progressing.version['status']).toMatchObject({ replicas: 3, updatedReplicas: 3, unavailableReplicas: 3 });
    const ready = (await versionWhere(deployment, observedAs(1, 'ready'), progressing.index)).version;
    expect(ready['status']).toMatchObject({
      observedGeneration: 1,
      replicas: 3,
      updatedReplicas: 3,
      readyReplicas: 3,
      availableReplicas: 3,
    });
    const conditions = (ready['status'] as { conditions: Array<Record<string, string>> }).conditions;
    expect(conditions.map((c) => [c['type'], c['status'], c['reason']])).toEqual([
      ['Available', 'True', 'MinimumReplicasAvailable'],
      ['Progressing', 'True', 'NewReplicaSetAvailable'],
    ]);
    // The controller writes status through the status subresource, as itself.
    const managers = (ready['metadata'] as unknown as { managedFields: Array<Record<string, string>> }).managedFields;
    expect(managers).toContainEqual(expect.objectContaining({ manager: CONTROLLER_MANAGER, subresource: 'status' }));
    const status = await runKubectl(['rollout', 'status', 'deployment/web', '--timeout=20s'], { kubeconfig });
    expect(status.exitCode, printedBy(status)).toBe(0);
    expect(status.stdout).toContain('successfully rolled out');
  });

  it('runs a rolling update: old replicas serve while the new ones start, then the update completes', async () => {
    const updated = workload('Deployment', 'web', 'nginx:1.28', { replicas: 3 });
    await apply(updated);
    const during = await versionWhere(updated, observedAs(2, 'progressing'));
    const status = during.version['status'] as Record<string, number>;
    // kubectl's rule: fewer updated than wanted, or old ones still running.
    expect(status['updatedReplicas']! < 3 || status['replicas']! > status['updatedReplicas']!).toBe(true);
    expect(status['availableReplicas']).toBe(3);
    const after = (await versionWhere(updated, observedAs(2, 'ready'), during.index)).version;
    expect(after['status']).toMatchObject({ observedGeneration: 2, replicas: 3, updatedReplicas: 3 });
  });

  it(`fails a Deployment whose image is under ${UNPULLABLE_IMAGE_REGISTRY}: ProgressDeadlineExceeded`, async () => {
    const broken = workload('Deployment', 'broken', `${UNPULLABLE_IMAGE_REGISTRY}/web:1`, { replicas: 2 });
    await apply(broken);
    const failed = await readinessBecomes(broken, 'failed');
    const conditions = (failed['status'] as { conditions: Array<Record<string, string>> }).conditions;
    expect(conditions.find((c) => c['type'] === 'Progressing')).toMatchObject({
      status: 'False',
      reason: 'ProgressDeadlineExceeded',
    });
    expect(conditions.find((c) => c['type'] === 'Available')).toMatchObject({ status: 'False' });
    const status = await runKubectl(['rollout', 'status', 'deployment/broken', '--timeout=20s'], { kubeconfig });
    expect(status.exitCode).not.toBe(0);
    expect(status.stderr).toContain('exceeded its progress deadline');
  });

  it('brings a StatefulSet to its update revision, as kubectl rollout status sees it', async () => {
    const set = workload('StatefulSet', 'db', 'postgres:16', { replicas: 2, serviceName: 'db' });
    await apply(set);
    const ready = await readinessBecomes(set, 'ready');
    const status = ready['status'] as Record<string, unknown>;
    expect(status).toMatchObject({ replicas: 2, readyReplicas: 2, availableReplicas: 2 });
    expect(status['currentRevision']).toBe(status['updateRevision']);
    const rolled = await runKubectl(['rollout', 'status', 'statefulset/db', '--timeout=20s'], { kubeconfig });
    expect(rolled.exitCode, printedBy(rolled)).toBe(0);
    // An update moves the update revision first; the current one follows when it is done.
    await apply(workload('StatefulSet', 'db', 'postgres:17', { replicas: 2, serviceName: 'db' }));
    const during = await versionWhere(set, observedAs(2, 'progressing'));
    const duringStatus = during.version['status'] as Record<string, unknown>;
    expect(duringStatus['currentRevision']).not.toBe(duringStatus['updateRevision']);
    const after = (await versionWhere(set, observedAs(2, 'ready'), during.index)).version['status'] as Record<
      string,
      unknown
    >;
    expect(after['updateRevision']).toBe(duringStatus['updateRevision']);
    expect(after['currentRevision']).toBe(after['updateRevision']);
  });

  it('schedules a DaemonSet on every node its selector matches, as kubectl rollout status sees it', async () => {
    const all = workload('DaemonSet', 'agent', 'agent:1');
    await apply(all);
    const ready = await readinessBecomes(all, 'ready');
    expect(ready['status']).toMatchObject({ desiredNumberScheduled: 2, numberReady: 2, numberAvailable: 2 });
    const rolled = await runKubectl(['rollout', 'status', 'daemonset/agent', '--timeout=20s'], { kubeconfig });
    expect(rolled.exitCode, printedBy(rolled)).toBe(0);
    const one = workload('DaemonSet', 'only-a', 'agent:1');
    (one['spec'] as { template: { spec: Record<string, unknown> } }).template.spec['nodeSelector'] = {
      'kubernetes.io/hostname': 'node-a',
    };
    await apply(one);
    expect((await readinessBecomes(one, 'ready'))['status']).toMatchObject({ desiredNumberScheduled: 1 });
  });

  it(`completes a Job, and fails one whose image is under ${FAILING_IMAGE_REGISTRY} past its backoffLimit`, async () => {
    const job = workload('Job', 'migrate', 'migrate:1');
    await apply(job);
    const done = await readinessBecomes(job, 'ready');
    expect(done['status']).toMatchObject({ succeeded: 1 });
    const failing = workload('Job', 'crash', `${FAILING_IMAGE_REGISTRY}/migrate:1`, { backoffLimit: 2 });
    await apply(failing);
    const failed = await readinessBecomes(failing, 'failed');
    expect(failed['status']).toMatchObject({ failed: 3 });
    const conditions = (failed['status'] as { conditions: Array<Record<string, string>> }).conditions;
    expect(conditions).toContainEqual(expect.objectContaining({ type: 'Failed', reason: 'BackoffLimitExceeded' }));
  });

  it('leaves a Job whose image cannot be pulled active and not ready (pending pods are not failures)', async () => {
    const stuck = workload('Job', 'stuck', `${UNPULLABLE_IMAGE_REGISTRY}/migrate:1`);
    await apply(stuck);
    const live = await readinessBecomes(stuck, 'progressing');
    expect(live['status']).toMatchObject({ active: 1, ready: 0 });
  });
});
