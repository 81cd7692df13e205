import { describe, expect, it } from 'vitest';
import {
  clusterSnapshotOf,
  clusterVersionsOf,
  imageTagVersion,
  type NodeObject,
  type PodObject,
} from '../../../../src/cluster/upgrade/cluster-versions.js';

function node(name: string, kubeletVersion: string, labels: Record<string, string> = {}): NodeObject {
  return { apiVersion: 'v1', kind: 'Node', metadata: { name, labels }, status: { nodeInfo: { kubeletVersion } } };
}

function apiServerPod(nodeName: string, image: string): PodObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `kube-apiserver-${nodeName}`, labels: { component: 'kube-apiserver' } },
    spec: { nodeName, containers: [{ name: 'kube-apiserver', image }] },
  };
}

const CP = { 'node-role.kubernetes.io/control-plane': '' };

describe('the cluster as its API server describes it', () => {
  it('kubeadm: each control plane runs the version of its kube-apiserver mirror Pod, the reached one first', () => {
    const snapshot = clusterSnapshotOf({
      distribution: 'kubeadm',
      nodes: [
        node('w1', 'v1.31.4', { 'edgeadm.io/edge': 'true' }),
        node('cp2', 'v1.31.4', CP),
        node('cp1', 'v1.31.4', CP),
      ],
      apiServerPods: [
        apiServerPod('cp1', 'registry.k8s.io/kube-apiserver:v1.32.1'),
        apiServerPod('cp2', 'registry.k8s.io/kube-apiserver:v1.31.4'),
      ],
      servedVersion: 'v1.32.1',
      reachedNode: 'cp2',
    });
    expect(snapshot.isHa).toBe(true);
    expect(snapshot.hosts.map((h) => [h.name, h.role, h.isEdge, h.apiServer?.text, h.kubelet.text])).toEqual([
      ['cp2', 'control-plane', false, 'v1.31.4', 'v1.31.4'],
      ['cp1', 'control-plane', false, 'v1.32.1', 'v1.31.4'],
      ['w1', 'node', true, undefined, 'v1.31.4'],
    ]);
    expect(clusterVersionsOf(snapshot).controlPlanes.map((cp) => cp.apiServer.text)).toEqual(['v1.31.4', 'v1.32.1']);
  });

  it('k3s: a server runs its API server from the same binary as its kubelet (k3s still sets the master label)', () => {
    const snapshot = clusterSnapshotOf({
      distribution: 'k3s',
      nodes: [node('s1', 'v1.31.4+k3s1', { 'node-role.kubernetes.io/master': 'true' }), node('a1', 'v1.30.9+k3s2')],
      apiServerPods: [],
      servedVersion: 'v1.31.4+k3s1',
    });
    expect(snapshot.isHa).toBe(false);
    expect(snapshot.hosts[0]).toMatchObject({ name: 's1', role: 'control-plane', apiServer: { text: 'v1.31.4+k3s1' } });
  });

  it('refuses a cluster without a control plane, and a Node whose version is not one', () => {
    expect(() =>
      clusterSnapshotOf({
        distribution: 'k3s',
        nodes: [node('a1', 'v1.31.4')],
        apiServerPods: [],
        servedVersion: 'v1.31.4',
      }),
    ).toThrow(expect.objectContaining({ code: 'E_UPGRADE_NO_CONTROL_PLANE' }));
    expect(() =>
      clusterSnapshotOf({
        distribution: 'k3s',
        nodes: [node('s1', '', CP)],
        apiServerPods: [],
        servedVersion: 'v1.31.4',
      }),
    ).toThrow(/the kubelet of node s1 reports ""/);
  });

  it('reads the version from an image tag only', () => {
    expect(imageTagVersion('registry.k8s.io/kube-apiserver:v1.32.1')?.text).toBe('v1.32.1');
    expect(imageTagVersion('localhost:5000/kube-apiserver')).toBeUndefined();
    expect(imageTagVersion('registry.k8s.io/kube-apiserver:latest')).toBeUndefined();
  });
});
