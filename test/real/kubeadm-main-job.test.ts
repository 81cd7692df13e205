/**
 * The main job on real Kubernetes (kubeadm v1.34, built from its module):
 * init → join ×2 --enable-edge → three nodes Ready at the real kubelet's
 * version → a Deployment's pods run real containers on the edge nodes →
 * `kubectl logs` and `kubectl exec` answer from inside them → reset leaves
 * every host as before (files, mounts, processes, links, cgroups).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lineFromInsidePod, runRealMainJob, type RealMainJobResult } from '../support/real/main-job.js';
import { startTestHosts, type TestHosts } from '../support/test-hosts.js';
import { realEdgeadm } from '../support/real/rig.js';

describe('the main job on real kubeadm, kubelet and containerd', () => {
  let hosts: TestHosts;
  let result: RealMainJobResult;

  beforeAll(async () => {
    hosts = await startTestHosts({ count: 3, cgroups: true });
    result = await runRealMainJob({ hosts, edgeadm: realEdgeadm() });
    // The times BENCHMARKS.md records ("The real-Kubernetes rig").
    console.log(
      `real main job: init ${result.seconds.init.toFixed(1)} s, joins to node Ready ` +
        `${result.seconds.joins.map((s) => s.toFixed(1)).join(' s, ')} s, whole job ${result.seconds.total.toFixed(1)} s`,
    );
  });
  afterAll(async () => {
    await hosts?.teardown();
  });

  it('brings three nodes Ready, each kubelet at the version of the binary built from the module', () => {
    expect(result.nodes).toHaveLength(3);
    for (const node of result.nodes) {
      expect(node, JSON.stringify(node)).toMatchObject({ isReady: true, kubeletVersion: result.kubernetesVersion });
    }
    expect(
      result.nodes
        .filter((node) => node.isEdge)
        .map((node) => node.name)
        .sort(),
    ).toEqual(
      hosts.targets
        .slice(1)
        .map((host) => host.name)
        .sort(),
    );
  });

  it("runs the Deployment's pods on the edge nodes, and kubectl logs and exec answer from inside them", () => {
    const edgeNames = hosts.targets.slice(1).map((host) => host.name);
    expect(result.pods.map((pod) => pod.node).sort()).toEqual(edgeNames.sort());
    expect(result.logs).toMatch(
      new RegExp(`^hello from pod ${result.pods[0]!.name} on node (${edgeNames.join('|')})$`, 'm'),
    );
    expect(result.execOutput).toContain(lineFromInsidePod(result.pods[0]!.name));
  });

  it('leaves every host as it was before init: files, mounts, processes, links and cgroups', () => {
    expect(result.leftovers).toEqual(Object.fromEntries(hosts.targets.map((host) => [host.name, []])));
  });
});
