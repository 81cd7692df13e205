/**
 * The hub and rollouts on real Kubernetes (kubeadm v1.34 built from its
 * module, real kubelet, containerd and runc): `edgeadm hub serve` on the
 * operator's machine, `register-cloud --host` installs the tunnel agent on
 * the control plane over SSH with a ServiceAccount that may only
 * impersonate, and then, through the hub:
 *
 * - `edgeadm kubectl` reaches the real API server; a hub user is
 *   impersonated there, so the cluster's own RBAC decides (403 without a
 *   RoleBinding), and a user whose selector does not match never reaches it;
 * - a Rollout runs a real Deployment's pods on the edge node; a scoped user
 *   cannot delete the admin's rollout;
 * - a revision whose image cannot be pulled fails its gate, and
 *   `onFailure: rollback` brings the cluster back to the previous revision
 *   without restarting the pod that kept running (the time is printed for
 *   BENCHMARKS.md);
 * - the hub shows the cluster's health as the agent reads it (nodes,
 *   kubeadm's certificates, the package init recorded in the cluster);
 * - deleting the rollout removes its objects from the real cluster; reset
 *   leaves every host as before.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import type { X509Certificate } from 'node:crypto';
import { connect as tlsConnect } from 'node:tls';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { execa } from 'execa';
import { dump } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostSnapshot, snapshotDifference } from '../support/real/cluster-hosts.js';
import { startRealCluster, type RealCluster } from '../support/real/main-job.js';
import { builtSet, realEdgeadm, rigKubeadmPackage, RIG_WORKLOAD_IMAGE } from '../support/real/rig.js';
import { startSimApiServer, UNPULLABLE_IMAGE_REGISTRY } from '../support/sim-apiserver/index.js';
import { startTestHosts, type TestHosts } from '../support/test-hosts.js';
import { waitFor as waitForRig, type WaitOptions } from '../support/real/wait.js';
import { readinessOf } from '../../src/rollout/readiness.js';
import type { ClusterView } from '../../src/hub/contract/views.js';
import { verifyPackage } from '../../src/packages/verify.js';
import { parsePemCertificates } from '../../src/trust/pem.js';

const CLUSTER = 'site-real';
const NAMESPACE = 'shop';
/** An image no registry serves (`.invalid` never resolves): its pull fails, and the simulated API server says so too. */
const UNPULLABLE_IMAGE = `${UNPULLABLE_IMAGE_REGISTRY}/web:2`;
/** The gate's deadline of the rollout: a copy not ready this long after its apply fails. */
const DEADLINE_SECONDS = 20;
const EVENT_TIMEOUT_MS = 5 * 60_000;

const waitFor = <T>(what: string, check: () => Promise<T | undefined>, options: WaitOptions = {}): Promise<T> =>
  waitForRig(what, check, { intervalMs: 1_000, timeoutMs: EVENT_TIMEOUT_MS, ...options });

interface StatusView {
  revision: number;
  state: string;
  rollbackOf?: { revision: number; reason: string };
  counts?: Record<string, number>;
  clusters?: Array<{ phase: string; message?: string }>;
}

async function freePort(address: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, address, () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** A Rollout of a Namespace, a per-cluster ConfigMap and a Deployment on the edge node. */
function rolloutDocument(image: string, onFailure: 'rollback' | 'halt' = 'rollback'): Record<string, unknown> {
  return {
    apiVersion: 'edgeadm.io/v1alpha1',
    kind: 'Rollout',
    metadata: { name: 'web' },
    spec: {
      placement: { clusterSelector: 'env=real' },
      resources: [
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } },
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'web-site', namespace: NAMESPACE },
          data: { site: '${cluster.name}' },
        },
        edgeDeployment({
          name: 'web',
          namespace: NAMESPACE,
          image,
          script:
            'echo "served by $(hostname)" > /tmp/index.html; httpd -p 8080 -h /tmp; ' +
            'while :; do echo "tick $(date +%s)"; sleep 1; done',
        }),
      ],
      strategy: {
        waves: ['100%'],
        maxUnavailable: '100%',
        failureBudget: 0,
        // No soak: "complete" is when the copy reads back ready (a soak would add its own wait to the rollback's time).
        soakSeconds: 0,
        deadlineSeconds: DEADLINE_SECONDS,
        onFailure,
      },
    },
  };
}

/** One replica of busybox running `script` on the edge node (never pulled: the rig's image is on every node). */
function edgeDeployment(options: {
  name: string;
  namespace: string;
  image: string;
  script: string;
  progressDeadlineSeconds?: number;
}): Record<string, unknown> {
  const { name } = options;
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: options.namespace },
    spec: {
      replicas: 1,
      ...(options.progressDeadlineSeconds === undefined
        ? {}
        : { progressDeadlineSeconds: options.progressDeadlineSeconds }),
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          nodeSelector: { 'edgeadm.io/edge': 'true' },
          tolerations: [{ key: 'edgeadm.io/edge', operator: 'Exists', effect: 'NoSchedule' }],
          terminationGracePeriodSeconds: 2,
          automountServiceAccountToken: false,
          containers: [
            { name, image: options.image, imagePullPolicy: 'IfNotPresent', command: ['/bin/sh', '-c', options.script] },
          ],
        },
      },
    },
  };
}

/** The differential's Deployment: a short progress deadline. */
function differentialDeployment(image: string): Record<string, unknown> {
  return edgeDeployment({
    name: 'diff',
    namespace: 'default',
    image,
    script: 'while :; do sleep 5; done',
    progressDeadlineSeconds: 15,
  });
}

/** The rig's kubectl with another kubeconfig. */
async function kubectlWith(kubeconfig: string, args: string[]): Promise<string> {
  const result = await execa(join(builtSet('kubernetes').dir, 'kubectl'), ['--kubeconfig', kubeconfig, ...args], {
    all: true,
    reject: false,
  });
  if (result.exitCode !== 0) throw new Error(`kubectl ${args.join(' ')} (${result.exitCode}):\n${result.all}`);
  return result.stdout;
}

describe('the hub and rollouts on real kubeadm, kubelet and containerd', () => {
  let hosts: TestHosts;
  let cluster: RealCluster;
  /** Stops `hub serve` (set once it started). */
  let stopHub: (() => Promise<void>) | undefined;
  let hubOutput = '';
  let adminConfig: string;
  let work: string;
  const binary = realEdgeadm()[0];
  /** PATH with the rig's kubectl first: `edgeadm kubectl` runs the kubectl on PATH. */
  const env = (): Record<string, string> => ({
    PATH: `${builtSet('kubernetes').dir}:${process.env.PATH ?? ''}`,
    HOME: work,
    EDGEADM_HOME: join(work, '.edgeadm'),
    KUBECACHEDIR: join(work, 'kube-cache'),
  });
  /** Runs edgeadm on the operator's machine; the result, whatever its exit code. */
  const edgeadm = (args: string[]) => execa(binary, args, { env: env(), all: true, reject: false });
  const edgeadmOk = async (args: string[]): Promise<string> => {
    const result = await edgeadm(args);
    if (result.exitCode !== 0) throw new Error(`edgeadm ${args.join(' ')} (${result.exitCode}):\n${result.all}`);
    return result.stdout;
  };
  const viaHub = (args: string[], config = adminConfig) =>
    edgeadm(['kubectl', '--hub-config', config, '--cluster', CLUSTER, '--', ...args]);
  const status = async (): Promise<StatusView> =>
    JSON.parse(
      await edgeadmOk(['hub', 'rollout', 'status', 'web', '--clusters', '--json', '--hub-config', adminConfig]),
    ) as StatusView;
  const apply = async (document: Record<string, unknown>, config = adminConfig): Promise<number> => {
    const file = join(work, `rollout-${Date.now()}.yaml`);
    writeFileSync(file, dump(document));
    const printed = await edgeadmOk(['hub', 'rollout', 'apply', '-f', file, '--json', '--hub-config', config]);
    return (JSON.parse(printed) as { revision: number }).revision;
  };
  const webPods = async (): Promise<Array<{ uid: string; image: string; phase: string; deleting: boolean }>> => {
    const list = JSON.parse(await cluster.kubectl(['get', 'pods', '-n', NAMESPACE, '-l', 'app=web', '-o', 'json'])) as {
      items: Array<{
        metadata: { uid: string; deletionTimestamp?: string };
        spec: { containers: Array<{ image: string }> };
        status: { phase: string };
      }>;
    };
    return list.items.map((pod) => ({
      uid: pod.metadata.uid,
      image: pod.spec.containers[0]!.image,
      phase: pod.status.phase,
      deleting: pod.metadata.deletionTimestamp !== undefined,
    }));
  };

  beforeAll(async () => {
    hosts = await startTestHosts({ count: 2, cgroups: true });
    cluster = await startRealCluster({ hosts, edgeadm: realEdgeadm() });
    work = mkdtempSync(join(hosts.dir, 'hub-operator-'));
    // The hub listens on the operator machine's end of the hosts' network, which the hosts route to.
    const address = cluster.controlPlane.address.replace(/\.\d+$/, '.1');
    const port = await freePort(address);
    const dataDir = join(work, 'hub-data');
    adminConfig = join(dataDir, 'admin.yaml');
    const started = execa(binary, ['hub', 'serve', '--listen', `${address}:${port}`, '--data-dir', dataDir], {
      env: env(),
      all: true,
      reject: false,
    });
    stopHub = async () => {
      started.kill('SIGTERM');
      await started.catch(() => undefined);
    };
    started.all.on('data', (chunk: Buffer) => (hubOutput += chunk.toString()));
    const pin = await waitFor(
      'the hub to print its CA pin',
      async () => {
        if (started.exitCode !== undefined && started.exitCode !== null)
          throw new Error(`hub serve exited:\n${hubOutput}`);
        return /hub CA pin: (sha256:[0-9a-f]{64})/.exec(hubOutput)?.[1];
      },
      { intervalMs: 200 },
    );
    const token = (
      JSON.parse(await edgeadmOk(['hub', 'token', 'create', '--json', '--hub-config', adminConfig])) as {
        token: string;
      }
    ).token;
    await cluster.edgeadm('register the cluster with the hub (agent installed over SSH)', [
      'register-cloud',
      `${address}:${port}`,
      '--token',
      token,
      '--hub-ca-cert-hash',
      pin,
      '--name',
      CLUSTER,
      '--labels',
      'env=real',
      '--kubeconfig',
      cluster.kubeconfig,
      '--create-service-account',
      ...cluster.ssh(cluster.controlPlane),
    ]);
  });
  afterAll(async () => {
    await stopHub?.();
    await hosts?.teardown();
  });

  it('reaches the real API server through the tunnel: the nodes kubectl sees directly', async () => {
    const connected = await waitFor('the cluster to be Connected at the hub', async () => {
      const printed = await edgeadmOk(['hub', 'clusters', 'get', CLUSTER, '--json', '--hub-config', adminConfig]);
      const view = JSON.parse(printed) as { state?: string; kubernetesVersion?: string };
      return view.state === 'Connected' ? view : undefined;
    });
    expect(connected.state).toBe('Connected');
    // The hub admin is impersonated too: the cluster's RBAC refuses it until it is bound (docs/guides/rollouts.md).
    const unbound = await viaHub(['get', 'nodes']);
    expect(unbound.exitCode).not.toBe(0);
    expect(unbound.all).toMatch(/User "edgeadm-hub-admin" cannot list resource "nodes"/);
    await cluster.kubectl([
      'create',
      'clusterrolebinding',
      'edgeadm-hub-admin',
      '--clusterrole=cluster-admin',
      '--user=edgeadm-hub-admin',
    ]);
    const through = await waitFor('the ClusterRoleBinding to take effect', async () => {
      const result = await viaHub(['get', 'nodes', '-o', 'jsonpath={.items[*].metadata.name}']);
      return result.exitCode === 0 ? result : undefined;
    });
    const direct = await cluster.kubectl(['get', 'nodes', '-o', 'jsonpath={.items[*].metadata.name}']);
    expect(through.stdout.split(' ').sort()).toEqual(direct.split(' ').sort());
    expect(direct.split(' ')).toHaveLength(2);
  });

  it("shows the real cluster's health as its agent reads it: every node Ready, kubeadm's certificates, the package init recorded", async () => {
    const view = await waitFor('the first health report at the hub', async () => {
      const printed = await edgeadmOk(['hub', 'clusters', 'get', CLUSTER, '--json', '--hub-config', adminConfig]);
      const parsed = JSON.parse(printed) as ClusterView;
      return parsed.health?.nodes !== undefined && parsed.health.package !== undefined ? parsed : undefined;
    });
    const health = view.health!;
    const nodeNames = (await cluster.kubectl(['get', 'nodes', '-o', 'jsonpath={.items[*].metadata.name}'])).split(' ');
    expect(health.nodes).toEqual({ total: nodeNames.length, ready: nodeNames.length, notReady: [] });
    expect(health.kubernetesVersion).toBe(cluster.kubernetesVersion);
    // The package init recorded: the one the rig built, by its manifest's digest (unsigned: no signer).
    const pkg = await verifyPackage((await rigKubeadmPackage()).file);
    expect(health.package).toMatchObject({
      name: pkg.manifest.name,
      version: cluster.kubernetesVersion,
      distribution: 'kubeadm',
      manifestSha256: pkg.manifestSha256,
      action: 'init',
    });
    expect(health.package?.signer).toBeUndefined();
    // kubeadm's CA (as the admin kubeconfig trusts it) and the API server's serving certificate, read independently.
    const caPem = Buffer.from(
      /certificate-authority-data: (\S+)/.exec(readFileSync(cluster.kubeconfig, 'utf8'))![1]!,
      'base64',
    ).toString('utf8');
    const ca = parsePemCertificates(caPem)[0]!.certificate;
    const serving = await new Promise<X509Certificate>((resolve, reject) => {
      const socket = tlsConnect({ host: cluster.controlPlane.address, port: 6443, ca: caPem }, () => {
        resolve(socket.getPeerX509Certificate()!);
        socket.destroy();
      });
      socket.once('error', reject);
    });
    expect(health.certificates).toEqual([
      { kind: 'cluster-ca', subject: 'CN=kubernetes', notAfter: new Date(ca.validTo).toISOString() },
      { kind: 'apiserver-serving', subject: 'CN=kube-apiserver', notAfter: new Date(serving.validTo).toISOString() },
    ]);
  });

  it('impersonates a hub user on the cluster, so the real RBAC decides; a user of other clusters never reaches it', async () => {
    const alice = join(work, 'alice.yaml');
    await edgeadmOk([
      'hub',
      'user',
      'create',
      'alice',
      '--clusters-selector',
      'env=real',
      '-o',
      alice,
      '--hub-config',
      adminConfig,
    ]);
    const refused = await viaHub(['get', 'nodes'], alice);
    expect(refused.exitCode).not.toBe(0);
    expect(refused.all).toMatch(/User "alice" cannot list resource "nodes"/);
    // A Role of this cluster's own lets her read ConfigMaps, and only that.
    await cluster.kubectl([
      'create',
      'role',
      'cm-reader',
      '--verb=get,list,watch',
      '--resource=configmaps',
      '-n',
      'default',
    ]);
    await cluster.kubectl(['create', 'rolebinding', 'alice-cm', '--role=cm-reader', '--user=alice', '-n', 'default']);
    const allowed = await waitFor('the RoleBinding to take effect', async () => {
      const result = await viaHub(['get', 'configmaps', '-n', 'default', '-o', 'name'], alice);
      return result.exitCode === 0 ? result : undefined;
    });
    expect(allowed.stdout).toMatch(/configmap\/kube-root-ca\.crt/);

    const bob = join(work, 'bob.yaml');
    await edgeadmOk([
      'hub',
      'user',
      'create',
      'bob',
      '--clusters-selector',
      'env=other',
      '-o',
      bob,
      '--hub-config',
      adminConfig,
    ]);
    const outside = await viaHub(['get', 'configmaps', '-n', 'default'], bob);
    expect(outside.exitCode).not.toBe(0);
    expect(outside.all).not.toMatch(/kube-root-ca/);
  });

  it("runs a rollout's Deployment as real pods on the edge node; a scoped user cannot delete the admin's rollout", async () => {
    const revision = await apply(rolloutDocument(RIG_WORKLOAD_IMAGE));
    const done = await waitFor('the rollout to complete', async () => {
      const view = await status();
      return view.revision === revision && view.state === 'complete' ? view : undefined;
    });
    expect(done.state).toBe('complete');
    const pods = await webPods();
    expect(pods).toEqual([expect.objectContaining({ image: RIG_WORKLOAD_IMAGE, phase: 'Running', deleting: false })]);
    const site = JSON.parse(await cluster.kubectl(['get', 'configmap', 'web-site', '-n', NAMESPACE, '-o', 'json'])) as {
      data: Record<string, string>;
    };
    expect(site.data).toEqual({ site: CLUSTER });

    const alice = join(work, 'alice.yaml');
    const deleted = await edgeadm(['hub', 'rollout', 'delete', 'web', '--hub-config', alice]);
    expect(deleted.exitCode).not.toBe(0);
    expect(await cluster.kubectl(['get', 'deployment', 'web', '-n', NAMESPACE, '-o', 'name'])).toBe(
      'deployment.apps/web',
    );
  });

  it("reaches the rollout's pod through the tunnel: kubectl logs -f, exec and port-forward", async () => {
    const pod = (
      await cluster.kubectl([
        'get',
        'pods',
        '-n',
        NAMESPACE,
        '-l',
        'app=web',
        '-o',
        'jsonpath={.items[0].metadata.name}',
      ])
    ).trim();
    const hubKubectl = (args: string[]) =>
      execa(binary, ['kubectl', '--hub-config', adminConfig, '--cluster', CLUSTER, '--', ...args], {
        env: env(),
        all: true,
        reject: false,
      });

    const follow = hubKubectl(['logs', '-f', '-n', NAMESPACE, pod]);
    let followed = '';
    follow.all?.on('data', (chunk: Buffer) => (followed += chunk.toString()));
    // Lines written after the stream opened: the follow is live, not one read of the log.
    const firstSeen = await waitFor('kubectl logs -f to print a tick', async () => /tick (\d+)/.exec(followed)?.[1], {
      intervalMs: 250,
    });
    await waitFor(
      'kubectl logs -f to print a later tick',
      async () =>
        [...followed.matchAll(/tick (\d+)/g)].some((m) => Number(m[1]) >= Number(firstSeen) + 2) ? true : undefined,
      { intervalMs: 250 },
    );
    follow.kill('SIGTERM');
    await follow.catch(() => undefined);

    const exec = await hubKubectl(['exec', '-n', NAMESPACE, pod, '--', 'cat', '/tmp/index.html']);
    expect(exec.exitCode, exec.all).toBe(0);
    expect(exec.stdout.trim()).toBe(`served by ${pod}`);

    const localPort = await freePort('127.0.0.1');
    const forward = hubKubectl(['port-forward', '-n', NAMESPACE, `pod/${pod}`, `${localPort}:8080`]);
    let forwarded = '';
    forward.all?.on('data', (chunk: Buffer) => (forwarded += chunk.toString()));
    try {
      await waitFor(
        'kubectl port-forward to listen',
        async () => (/Forwarding from 127\.0\.0\.1/.test(forwarded) ? true : undefined),
        { intervalMs: 250 },
      );
      const page = await fetch(`http://127.0.0.1:${localPort}/index.html`);
      expect(page.status).toBe(200);
      expect((await page.text()).trim()).toBe(`served by ${pod}`);
    } finally {
      forward.kill('SIGTERM');
      await forward.catch(() => undefined);
    }
  });

  it('reads the real cluster for upgrade plan, and host check reports the running control plane', async () => {
    const plan = JSON.parse(
      await cluster.edgeadm('upgrade plan', ['upgrade', 'plan', ...cluster.ssh(cluster.controlPlane), '--json']),
    ) as { distribution: string; controlPlanes: number; nodes: number; edgeNodes: number; apiServerVersion: string };
    expect(plan).toMatchObject({
      distribution: 'kubeadm',
      controlPlanes: 1,
      // The nodes besides the control planes.
      nodes: 1,
      edgeNodes: 1,
      apiServerVersion: cluster.kubernetesVersion,
    });
    const pkg = await rigKubeadmPackage();
    const same = await edgeadm([
      'upgrade',
      'plan',
      ...cluster.ssh(cluster.controlPlane),
      '--install-pkg-path',
      pkg.file,
      '--json',
    ]);
    expect(same.exitCode).not.toBe(0);
    expect(JSON.parse(same.stdout)).toMatchObject({ error: { code: 'E_UPGRADE_SAME_VERSION' } });

    const checked = await edgeadm([
      'host',
      'check',
      ...cluster.ssh(cluster.controlPlane),
      '--role',
      'control-plane',
      '--json',
    ]);
    const report = JSON.parse(checked.stdout) as {
      isFit: boolean;
      checks: Array<{ id?: string; status: string; reason?: string }>;
    };
    console.log(
      `host check on the running control plane (exit ${checked.exitCode}):\n` +
        report.checks
          .filter((check) => check.status !== 'pass')
          .map((check) => `  ${JSON.stringify(check)}`)
          .join('\n'),
    );
    // The ports the running control plane holds count as its own, by the state edgeadm keeps and the live service.
    expect(checked.exitCode, checked.all).toBe(0);
    expect(report.isFit).toBe(true);
    const ports = report.checks.filter((check) => check.id?.startsWith('port-'));
    expect(ports.length).toBeGreaterThan(0);
    expect(
      ports.filter((check) => check.status === 'pass' && /which edgeadm installed/.test(check.reason ?? '')),
    ).not.toEqual([]);
  });

  it('rolls a revision whose image cannot be pulled back to the previous one, the running pod untouched', async () => {
    const [before] = await webPods();
    const failed = await apply(rolloutDocument(UNPULLABLE_IMAGE));
    const appliedAt = Date.now();
    // The gate fails at its deadline; the hub then applies the previous revision's document as a new revision.
    const rollback = await waitFor(
      'the hub to roll the failed revision back',
      async () => {
        const view = await status();
        return view.revision === failed + 1 ? view : undefined;
      },
      { intervalMs: 250 },
    );
    const rollbackStartedAt = Date.now();
    const timeline: Array<{ at: number; seen: string }> = [];
    expect(rollback.rollbackOf).toMatchObject({ revision: failed });
    const back = await waitFor(
      'the rolled-back revision to complete',
      async () => {
        const view = await status();
        const row = view.clusters?.[0];
        const seen = `r${view.revision} ${view.state}: ${row?.phase ?? JSON.stringify(view.counts)} ${row?.message ?? ''}`;
        if (timeline.at(-1)?.seen !== seen) timeline.push({ at: (Date.now() - rollbackStartedAt) / 1000, seen });
        return view.revision === failed + 1 && view.state === 'complete' ? view : undefined;
      },
      { intervalMs: 250 },
    );
    const completedAt = Date.now();
    console.log(timeline.map(({ at, seen }) => `  +${at.toFixed(1)} s ${seen}`).join('\n'));
    expect(back.state).toBe('complete');
    const deployment = JSON.parse(
      await cluster.kubectl(['get', 'deployment', 'web', '-n', NAMESPACE, '-o', 'json']),
    ) as {
      spec: { template: { spec: { containers: Array<{ image: string }> } } };
    };
    expect(deployment.spec.template.spec.containers[0]!.image).toBe(RIG_WORKLOAD_IMAGE);
    const running = await waitFor("only the first revision's pod", async () => {
      const pods = await webPods();
      return pods.length === 1 && !pods[0]!.deleting ? pods : undefined;
    });
    expect(running).toEqual([{ ...before!, phase: 'Running' }]);
    console.log(
      `rollback on real kubeadm: gate failed ${((rollbackStartedAt - appliedAt) / 1000).toFixed(1)} s after apply ` +
        `(deadline ${DEADLINE_SECONDS} s); rolled back and complete ${((completedAt - rollbackStartedAt) / 1000).toFixed(1)} s after the gate failed`,
    );
  });

  it("the baseline: with onFailure: halt, an operator's undo as soon as the watch reports the halt", async () => {
    const [before] = await webPods();
    const failed = await apply(rolloutDocument(UNPULLABLE_IMAGE, 'halt'));
    const watched = await edgeadm([
      'hub',
      'rollout',
      'status',
      'web',
      '--watch',
      '--timeout',
      '5m',
      '--json',
      '--hub-config',
      adminConfig,
    ]);
    const haltedAt = Date.now();
    expect(watched.exitCode, watched.all).toBe(5);
    expect(JSON.parse(watched.stdout)).toMatchObject({ revision: failed, state: 'halted' });
    const undone = JSON.parse(
      await edgeadmOk(['hub', 'rollout', 'undo', 'web', '--json', '--hub-config', adminConfig]),
    ) as {
      revision: number;
    };
    expect(undone.revision).toBe(failed + 1);
    await waitFor(
      'the undone revision to complete',
      async () => {
        const view = await status();
        return view.revision === undone.revision && view.state === 'complete' ? view : undefined;
      },
      { intervalMs: 250 },
    );
    const completedAt = Date.now();
    // The failed revision's pod may still be terminating when the undone revision reads back ready.
    const running = await waitFor("only the first revision's pod", async () => {
      const pods = await webPods();
      return pods.length === 1 && !pods[0]!.deleting ? pods : undefined;
    });
    expect(running).toEqual([{ ...before!, phase: 'Running' }]);
    console.log(
      `halt + operator undo on real kubeadm: complete ${((completedAt - haltedAt) / 1000).toFixed(1)} s after the watch reported the halt`,
    );
  });

  it("removes the rollout's objects from the real cluster when the admin deletes it", async () => {
    await edgeadmOk(['hub', 'rollout', 'delete', 'web', '--hub-config', adminConfig]);
    await waitFor('the Deployment and ConfigMap to be gone', async () => {
      const left = await cluster.kubectl(['get', 'deployment,configmap', '-n', NAMESPACE, '-o', 'name']);
      return left.split('\n').filter((line) => line.startsWith('deployment') || line.includes('web-site')).length === 0
        ? true
        : undefined;
    });
  });

  it("differential: the simulated API server's Deployment status gives the verdicts the real controllers give", async () => {
    // The rollout suites read workload readiness from the simulated controllers; here one Deployment goes through
    // ready → an image that cannot be pulled → fixed, on the real cluster and on the simulation, and edgeadm's
    // readiness verdict (what a rollout's gate sees) is compared at each settled state.
    const sim = await startSimApiServer({ workloadControllers: { stepMs: 200, progressDeadlineMs: 3_000 } });
    try {
      const simConfig = join(work, 'sim.kubeconfig');
      writeFileSync(simConfig, sim.kubeconfig(), { mode: 0o600 });
      const kubectlOn = async (config: string | undefined, args: string[]): Promise<string> =>
        config === undefined ? cluster.kubectl(args) : kubectlWith(config, args);
      const sides = { real: undefined, simulated: simConfig } as const;
      const verdicts: Record<string, Record<string, string>> = { real: {}, simulated: {} };
      for (const [step, image] of [
        ['ready', RIG_WORKLOAD_IMAGE],
        ['unpullable', `${UNPULLABLE_IMAGE_REGISTRY}/web:2`],
        ['fixed', RIG_WORKLOAD_IMAGE],
      ] as const) {
        const file = join(work, `diff-${step}.json`);
        writeFileSync(file, JSON.stringify(differentialDeployment(image)));
        for (const [side, config] of Object.entries(sides)) {
          await kubectlOn(config, ['apply', '--server-side', '--field-manager', 'edgeadm-rollout', '-f', file]);
          const wanted = step === 'unpullable' ? 'failed' : 'ready';
          const settled = await waitFor(`${side}: the Deployment to settle as ${wanted} (${step})`, async () => {
            const object = JSON.parse(
              await kubectlOn(config, ['get', 'deployment', 'diff', '-n', 'default', '-o', 'json']),
            );
            const verdict = readinessOf(object as Record<string, unknown>);
            return verdict.state === wanted ? verdict : undefined;
          });
          verdicts[side]![step] =
            settled.state === 'ready'
              ? 'ready'
              : `${settled.state}: ${/progress deadline/.test(settled.message) ? 'progress deadline' : settled.message}`;
        }
      }
      expect(verdicts.simulated).toEqual(verdicts.real);
      expect(verdicts.real).toEqual({ ready: 'ready', unpullable: 'failed: progress deadline', fixed: 'ready' });
    } finally {
      await sim.stop();
      await cluster.kubectl(['delete', 'deployment', 'diff', '-n', 'default', '--ignore-not-found']);
    }
  });

  it('says at reset that the tunnel agent is still installed; agent uninstall then leaves every host as before', async () => {
    const [edge] = cluster.edges;
    await cluster.edgeadm(`reset ${edge!.name}`, ['reset', ...cluster.ssh(edge!), '--force']);
    const printed = await cluster.edgeadm(
      `reset ${cluster.controlPlane.name}`,
      ['reset', ...cluster.ssh(cluster.controlPlane), '--force'],
      { all: true },
    );
    expect(printed).toMatch(/edgeadm-tunnel-agent\.service .* is still installed.*edgeadm agent uninstall/s);
    await cluster.edgeadm('uninstall the tunnel agent', ['agent', 'uninstall', ...cluster.ssh(cluster.controlPlane)]);
    await edgeadmOk(['hub', 'clusters', 'delete', CLUSTER, '--hub-config', adminConfig]);
    const leftovers: Record<string, string[]> = {};
    for (const host of hosts.targets) {
      leftovers[host.name] = snapshotDifference(cluster.before.get(host.name)!, await hostSnapshot(hosts, host));
    }
    expect(leftovers).toEqual(Object.fromEntries(hosts.targets.map((host) => [host.name, []])));
  });
});
