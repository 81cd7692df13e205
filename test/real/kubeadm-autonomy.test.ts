/**
 * Edge autonomy on real Kubernetes (kubeadm v1.34 built from its module,
 * real kubelet, containerd and runc): an edge node joined with
 * `--enable-edge` is cut off from the control plane (an `unreachable` route
 * to its address in the node's network namespace, as an uplink failure).
 *
 * - The real API server's node lifecycle controller marks the node
 *   unreachable and taints it; the test's pods asked Kubernetes to evict them
 *   30 s after that, and edgeadm's autonomy controller gave them the node's
 *   window instead, so they are still bound and running well past 30 s.
 * - While cut off, the node's kubelet is restarted and the workload's
 *   container killed: the kubelet learns its pods from the edge-proxy's cache
 *   (the API server is unreachable) and starts the container again.
 * - When the link returns the node is Ready again and nothing was recreated:
 *   the same pods, the same UIDs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resetRealCluster, runEdgeWorkload, startRealCluster, type RealCluster } from '../support/real/main-job.js';
import { realEdgeadm } from '../support/real/rig.js';
import { startTestHosts, type TestHost, type TestHosts } from '../support/test-hosts.js';
import { waitFor as waitForRig } from '../support/real/wait.js';

/** Seconds after the node's NoExecute taint the test's pods ask Kubernetes to evict them. */
const ASKED_TOLERATION_SECONDS = 30;
/** Bound on one thing the cluster does (the node lifecycle controller's grace period is 50 s; two busy cores). */
const EVENT_TIMEOUT_MS = 4 * 60_000;

const waitFor = <T>(what: string, check: () => Promise<T | undefined>): Promise<T> =>
  waitForRig(what, check, { timeoutMs: EVENT_TIMEOUT_MS });

interface Pod {
  metadata: { name: string; uid: string; deletionTimestamp?: string };
  spec: { nodeName: string; tolerations?: Array<{ key?: string; effect?: string; tolerationSeconds?: number }> };
  status?: { containerStatuses?: Array<{ restartCount: number; state?: { running?: unknown } }> };
}

describe('edge autonomy on real kubeadm, kubelet and containerd', () => {
  let hosts: TestHosts;
  let cluster: RealCluster;
  let edge: TestHost;
  let pods: Array<{ name: string; node: string; uid: string }>;
  const podsOf = async (): Promise<Pod[]> =>
    (JSON.parse(await cluster.kubectl(['get', 'pods', '-l', 'app=autonomous', '-o', 'json'])) as { items: Pod[] })
      .items;
  /** The containers of the test workload's pods on `host` (by the CRI's pod UID label), running or not. */
  const workloadContainers = async (host: TestHost, uids: string[]): Promise<string[]> =>
    (
      await hosts.run(
        host,
        [
          `ctr --address /run/containerd/containerd.sock -n k8s.io containers ls -q | while read -r id; do`,
          `  info=$(ctr --address /run/containerd/containerd.sock -n k8s.io containers info "$id")`,
          `  for uid in ${uids.join(' ')}; do`,
          `    if echo "$info" | grep -q '"io.kubernetes.pod.uid": "'"$uid"'"' && echo "$info" | grep -q '"io.kubernetes.container.name": "main"'; then echo "$id"; fi`,
          '  done',
          'done',
        ].join('\n'),
      )
    )
      .split('\n')
      .filter(Boolean)
      .sort();
  const runningTasks = async (host: TestHost): Promise<string[]> =>
    (
      await hosts.run(
        host,
        'ctr --address /run/containerd/containerd.sock -n k8s.io tasks ls | awk \'$3 == "RUNNING" { print $1 }\'',
      )
    )
      .split('\n')
      .filter(Boolean);

  beforeAll(async () => {
    hosts = await startTestHosts({ count: 3, cgroups: true });
    cluster = await startRealCluster({ hosts, edgeadm: realEdgeadm() });
    edge = cluster.edges[0]!;
    pods = await runEdgeWorkload(cluster, 'autonomous', {
      unreachableTolerationSeconds: ASKED_TOLERATION_SECONDS,
      // A restarted kubelet cannot get a new service account token while cut off (test/real/README.md).
      isWithoutServiceAccountToken: true,
    });
  });
  afterAll(async () => {
    await hosts?.teardown();
  });

  it("the autonomy controller gives the pods on edge nodes their node's window instead of the 30 s they asked for", async () => {
    await waitFor('the pods patched with the node window', async () => {
      const all = await podsOf();
      const windows = all.map(
        (pod) => pod.spec.tolerations?.find((t) => t.key === 'node.kubernetes.io/unreachable')?.tolerationSeconds,
      );
      return windows.every((seconds) => seconds === undefined || seconds > ASKED_TOLERATION_SECONDS)
        ? windows
        : undefined;
    });
  });

  it('cut off past the eviction window its pods asked for, the node keeps them bound and running', async () => {
    const uids = pods.filter((pod) => pod.node === edge.name).map((pod) => pod.uid);
    const containers = await workloadContainers(edge, uids);
    expect(containers.length).toBeGreaterThan(0);
    await hosts.run(edge, `ip route add unreachable ${cluster.controlPlane.address}/32`);
    const taintedAt = await waitFor('the real node lifecycle controller to taint the node unreachable', async () => {
      const node = JSON.parse(await cluster.kubectl(['get', 'node', edge.name, '-o', 'json'])) as {
        spec?: { taints?: Array<{ key: string; effect: string; timeAdded?: string }> };
      };
      const taint = node.spec?.taints?.find(
        (t) => t.key === 'node.kubernetes.io/unreachable' && t.effect === 'NoExecute',
      );
      return taint ? Date.now() : undefined;
    });
    // Well past the 30 s the pods asked for, measured from when the taint was seen.
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, taintedAt + 3 * ASKED_TOLERATION_SECONDS * 1000 - Date.now())),
    );
    const onEdge = (await podsOf()).filter((pod) => pod.spec.nodeName === edge.name);
    expect(onEdge.map((pod) => pod.metadata.uid).sort()).toEqual(
      pods
        .filter((pod) => pod.node === edge.name)
        .map((pod) => pod.uid)
        .sort(),
    );
    expect(onEdge.filter((pod) => pod.metadata.deletionTimestamp !== undefined)).toEqual([]);
    // The same containers, still running: nothing was stopped or replaced on the node.
    expect(await workloadContainers(edge, uids)).toEqual(containers);
    const running = await runningTasks(edge);
    expect(containers.filter((id) => !running.includes(id))).toEqual([]);
  });

  it('restarted while cut off, the kubelet gets its pods from the edge-proxy and starts their killed container again', async () => {
    const workload = pods.find((pod) => pod.node === edge.name)!;
    // The kubelet's launcher (the direct service manager's) starts it again 10 s after it exits (Restart=always).
    await hosts.run(
      edge,
      [
        'launcher=$(cat /var/lib/edgeadm/services/kubelet.service.pid)',
        'kill $(pgrep -P "$launcher")',
        // The workload's container: the task whose process prints "hello from pod".
        `for task in $(ctr --address /run/containerd/containerd.sock -n k8s.io tasks ls | awk 'NR > 1 { print $1 }'); do`,
        `  if ctr --address /run/containerd/containerd.sock -n k8s.io containers info "$task" | grep -q '"io.kubernetes.pod.uid": "${workload.uid}"' && ctr --address /run/containerd/containerd.sock -n k8s.io containers info "$task" | grep -q '"io.kubernetes.container.name": "main"'; then`,
        '    ctr --address /run/containerd/containerd.sock -n k8s.io tasks kill -s KILL "$task"',
        '  fi',
        'done',
      ].join('\n'),
    );
    await waitFor(
      "the kubelet to start the killed container again (it can reach only the edge-proxy's cache)",
      async () => {
        const log = await hosts.run(
          edge,
          `ctr --address /run/containerd/containerd.sock -n k8s.io containers ls -q | while read -r id; do ctr --address /run/containerd/containerd.sock -n k8s.io containers info "$id" | grep -q '"io.kubernetes.pod.uid": "${workload.uid}"' && ctr --address /run/containerd/containerd.sock -n k8s.io containers info "$id" | grep -q '"io.kubernetes.container.name": "main"' && echo "$id"; done; true`,
        );
        const containers = log.split('\n').filter(Boolean);
        const running = await runningTasks(edge);
        // Two containers of "main" for the pod (the killed one and its successor), the new one running.
        return containers.length >= 2 && containers.some((id) => running.includes(id)) ? containers : undefined;
      },
    );
  });

  it('when the link returns the node is Ready again and nothing was recreated', async () => {
    await hosts.run(edge, `ip route del unreachable ${cluster.controlPlane.address}/32`);
    await waitFor('the node Ready again', async () => {
      const node = JSON.parse(await cluster.kubectl(['get', 'node', edge.name, '-o', 'json'])) as {
        status: { conditions: Array<{ type: string; status: string }> };
      };
      return node.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True') ? true : undefined;
    });
    const after = await podsOf();
    expect(after.map((pod) => pod.metadata.uid).sort()).toEqual(pods.map((pod) => pod.uid).sort());
  });

  it('reset leaves every host as it was before init', async () => {
    expect(await resetRealCluster(cluster)).toEqual(Object.fromEntries(hosts.targets.map((host) => [host.name, []])));
  });
});
