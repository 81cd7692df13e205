/**
 * What a cluster runs, from what its API server says: the Nodes (roles from
 * their labels, kubelet versions from `status.nodeInfo.kubeletVersion`, edge
 * nodes from edgeadm's label) and, for kubeadm, the kube-apiserver mirror
 * Pods (the image tag of each control plane's static Pod is the version its
 * API server runs, which is what kubeadm's own version getter reads). Pure:
 * the reading is in plan.ts.
 */
import { EdgeadmError } from '../../errors.js';
import type { KubeObject } from '../../kube/client.js';
import type { DistributionName } from '../distributions/distribution.js';
import { EDGE_NODE_LABEL } from '../edge-settings.js';
import { parseKubeVersion, tryParseKubeVersion, type KubeVersion } from './kube-version.js';
import type { ClusterVersions } from './skew.js';

/** The labels that mark a control-plane Node (`master`: k3s still sets it, older kubeadm did). */
export const CONTROL_PLANE_LABELS = ['node-role.kubernetes.io/control-plane', 'node-role.kubernetes.io/master'];

/** The fields of a Node this module reads. */
export interface NodeObject extends KubeObject {
  metadata: { name: string; labels?: Record<string, string> };
  status?: { nodeInfo?: { kubeletVersion?: string } };
}

/** The fields of a mirror Pod this module reads. */
export interface PodObject extends KubeObject {
  metadata: { name: string; labels?: Record<string, string> };
  spec?: { nodeName?: string; containers?: Array<{ name?: string; image?: string }> };
}

/** One Node as the plan shows it. */
export interface ClusterHost {
  name: string;
  role: 'control-plane' | 'node';
  isEdge: boolean;
  kubelet: KubeVersion;
  /** A control plane's kube-apiserver. */
  apiServer?: KubeVersion;
}

/** The cluster as read. */
export interface ClusterSnapshot {
  distribution: DistributionName;
  /** More than one control plane. */
  isHa: boolean;
  /** What `/version` answered on the API server edgeadm reached. */
  servedVersion: KubeVersion;
  /** Control planes first (the one edgeadm reached, first), then nodes, each by name. */
  hosts: ClusterHost[];
}

/** Whether a Node is a control plane, by its labels. */
export function isControlPlaneNode(node: NodeObject): boolean {
  const labels = node.metadata.labels ?? {};
  return CONTROL_PLANE_LABELS.some((label) => label in labels);
}

/** The version in an image reference's tag (`registry.k8s.io/kube-apiserver:v1.31.2` → v1.31.2). */
export function imageTagVersion(image: string | undefined): KubeVersion | undefined {
  const tag = /:([^:/@]+)$/.exec(image ?? '')?.[1];
  return tag === undefined ? undefined : tryParseKubeVersion(tag);
}

/**
 * Builds the snapshot. Each control plane's API server version: for k3s,
 * its kubelet's (one binary runs both); for kubeadm, its kube-apiserver
 * mirror Pod's image tag, else (no mirror Pod: only possible for the one
 * edgeadm reached) what `/version` answered.
 *
 * @throws {EdgeadmError} `E_UPGRADE_NO_CONTROL_PLANE` when no Node is a control plane.
 */
export function clusterSnapshotOf(input: {
  distribution: DistributionName;
  nodes: readonly NodeObject[];
  apiServerPods: readonly PodObject[];
  servedVersion: string;
  /** The Node name of the control plane edgeadm reached, when known: it goes first. */
  reachedNode?: string | undefined;
}): ClusterSnapshot {
  const servedVersion = parseKubeVersion(input.servedVersion, 'the API server (/version)');
  const podVersions = new Map<string, KubeVersion>();
  for (const pod of input.apiServerPods) {
    const version = imageTagVersion(pod.spec?.containers?.find((c) => c.name === 'kube-apiserver')?.image);
    if (pod.spec?.nodeName !== undefined && version !== undefined) podVersions.set(pod.spec.nodeName, version);
  }
  const hosts: ClusterHost[] = input.nodes.map((node) => {
    const name = node.metadata.name;
    const kubelet = parseKubeVersion(node.status?.nodeInfo?.kubeletVersion ?? '', `the kubelet of node ${name}`);
    const isEdge = node.metadata.labels?.[EDGE_NODE_LABEL] === 'true';
    if (!isControlPlaneNode(node)) return { name, role: 'node', isEdge, kubelet };
    const apiServer = input.distribution === 'k3s' ? kubelet : (podVersions.get(name) ?? servedVersion);
    return { name, role: 'control-plane', isEdge, kubelet, apiServer };
  });
  if (!hosts.some((host) => host.role === 'control-plane')) {
    throw new EdgeadmError('the cluster has no Node labelled as a control plane', {
      code: 'E_UPGRADE_NO_CONTROL_PLANE',
      hints: [`Control planes carry the label ${CONTROL_PLANE_LABELS[0]}.`],
    });
  }
  const rank = (host: ClusterHost): number =>
    host.role === 'control-plane' ? (host.name === input.reachedNode ? 0 : 1) : 2;
  hosts.sort((a, b) => rank(a) - rank(b) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return {
    distribution: input.distribution,
    isHa: hosts.filter((host) => host.role === 'control-plane').length > 1,
    servedVersion,
    hosts,
  };
}

/** The versions the skew policy judges. */
export function clusterVersionsOf(snapshot: ClusterSnapshot): ClusterVersions {
  return {
    controlPlanes: snapshot.hosts
      .filter((host) => host.role === 'control-plane')
      .map((host) => ({ name: host.name, apiServer: host.apiServer ?? host.kubelet, kubelet: host.kubelet })),
    nodes: snapshot.hosts
      .filter((host) => host.role === 'node')
      .map((host) => ({ name: host.name, kubelet: host.kubelet })),
  };
}
