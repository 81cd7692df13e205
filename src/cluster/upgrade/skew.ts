/**
 * The Kubernetes version skew policy as edgeadm's upgrade applies it: pure
 * functions from the versions a cluster runs and a target version to a
 * verdict per host and the ordered steps of the upgrade.
 *
 * The rules (https://kubernetes.io/releases/version-skew-policy/), each with
 * a stable name that refusals carry:
 * - `control-plane-one-minor-at-a-time`: a control plane goes from 1.n to
 *   1.n+1, never further in one upgrade (kubeadm's
 *   MaximumAllowedMinorVersionUpgradeSkew; k3s documents the same).
 * - `no-minor-downgrade`: no host goes to an older minor version (kubeadm
 *   allows one minor down; edgeadm restores a backup instead). A patch (or
 *   k3s `+k3sN`) downgrade within a minor is allowed and shown as such.
 * - `ha-api-servers-one-minor-apart`: the newest and oldest kube-apiserver
 *   are within one minor version.
 * - `kubelet-not-newer-than-api-server`: a kubelet is never of a newer
 *   minor than a kube-apiserver.
 * - `kubelet-minor-lag`: a kubelet is at most three minor versions older
 *   than the kube-apiserver (two, for a kubelet older than 1.25).
 *
 * The order of an upgrade: control planes first, one at a time (the one
 * edgeadm reached first), then the nodes. A control plane's own kubelet is
 * upgraded with its API server: k3s runs both from one binary, and kubeadm's
 * procedure upgrades it right after `kubeadm upgrade apply|node` on that
 * host. It is held to the kubelet rules against its own API server only;
 * while the control planes roll, it may be one minor ahead of another
 * control plane's API server, as in every rolling HA upgrade.
 *
 * An upgrade is accepted only when the state after every prefix of its steps
 * satisfies every rule ({@link skewViolations}); the property tests check
 * exactly that.
 */
import { compareKubeVersions, minorOf, minorsAhead, type KubeVersion } from './kube-version.js';
import {
  LEGACY_KUBELET_BEFORE_MINOR,
  MAX_API_SERVER_MINOR_SPREAD,
  MAX_CONTROL_PLANE_MINOR_STEP,
  MAX_KUBELET_MINOR_LAG,
  MAX_LEGACY_KUBELET_MINOR_LAG,
} from './limits.js';

/** A rule of the version skew policy (see the module comment). */
export type SkewRule =
  | 'control-plane-one-minor-at-a-time'
  | 'no-minor-downgrade'
  | 'ha-api-servers-one-minor-apart'
  | 'kubelet-not-newer-than-api-server'
  | 'kubelet-minor-lag';

/** Each rule as a sentence, for messages and `--help`. */
export const SKEW_RULES: Readonly<Record<SkewRule, string>> = {
  'control-plane-one-minor-at-a-time': 'a control plane is upgraded one minor version at a time, never skipping one',
  'no-minor-downgrade': 'no host goes back to an older minor version',
  'ha-api-servers-one-minor-apart': 'the newest and oldest kube-apiserver are at most one minor version apart',
  'kubelet-not-newer-than-api-server': 'a kubelet is never newer than the kube-apiserver',
  'kubelet-minor-lag':
    'a kubelet is at most three minor versions older than the kube-apiserver (two for a kubelet older than v1.25)',
};

/** A control plane: its kube-apiserver and its own kubelet. */
export interface ControlPlaneVersions {
  /** The Node name. */
  name: string;
  apiServer: KubeVersion;
  kubelet: KubeVersion;
}

/** A node that is not a control plane. */
export interface NodeVersions {
  name: string;
  kubelet: KubeVersion;
}

/** What a cluster runs. */
export interface ClusterVersions {
  /** In the order their upgrade would go (the one edgeadm reached first, first). */
  controlPlanes: ControlPlaneVersions[];
  nodes: NodeVersions[];
}

/** One broken rule. */
export interface SkewViolation {
  rule: SkewRule;
  /** The host it concerns. */
  host: string;
  /** What is wrong, then the rule in words and by name. */
  message: string;
}

/** What the upgrade does to one host. */
export type HostAction = 'upgrade' | 'patch-downgrade' | 'none' | 'refused';

/** The verdict on one host. */
export interface HostVerdict {
  host: string;
  role: 'control-plane' | 'node';
  /** The version it runs (a control plane: its API server's). */
  from: KubeVersion;
  to: KubeVersion;
  action: HostAction;
  /** Why it is refused (empty otherwise). */
  violations: SkewViolation[];
}

/** One step of an upgrade: one host brought to the target. */
export interface UpgradeStep {
  host: string;
  role: 'control-plane' | 'node';
  to: KubeVersion;
}

/** The verdict on a whole upgrade. */
export interface UpgradeVerdict {
  target: KubeVersion;
  /** No rule is broken (the steps may be empty: everything already runs the target). */
  isAllowed: boolean;
  /** Every host, control planes first, in upgrade order. */
  hosts: HostVerdict[];
  /** What apply does, in order; empty when refused. */
  steps: UpgradeStep[];
  /** Every broken rule, also those of the cluster as it is. */
  violations: SkewViolation[];
}

function rule(rule: SkewRule, host: string, problem: string): SkewViolation {
  return { rule, host, message: `${problem}: ${SKEW_RULES[rule]} (version skew policy: ${rule})` };
}

/** How many minors a kubelet of this version may lag (see {@link MAX_LEGACY_KUBELET_MINOR_LAG}). */
export function maxKubeletLag(kubelet: KubeVersion): number {
  return kubelet.major === 1 && kubelet.minor < LEGACY_KUBELET_BEFORE_MINOR
    ? MAX_LEGACY_KUBELET_MINOR_LAG
    : MAX_KUBELET_MINOR_LAG;
}

function kubeletViolations(host: string, kubelet: KubeVersion, apiServers: readonly KubeVersion[]): SkewViolation[] {
  const violations: SkewViolation[] = [];
  const oldest = apiServers.reduce<KubeVersion | undefined>(
    (min, v) => (min === undefined || minorsAhead(v, min) < 0 ? v : min),
    undefined,
  );
  const newest = apiServers.reduce<KubeVersion | undefined>(
    (max, v) => (max === undefined || minorsAhead(v, max) > 0 ? v : max),
    undefined,
  );
  if (oldest !== undefined && minorsAhead(kubelet, oldest) > 0) {
    violations.push(
      rule(
        'kubelet-not-newer-than-api-server',
        host,
        `the kubelet of ${host} (${kubelet.text}) would be newer than the kube-apiserver at ${oldest.text}`,
      ),
    );
  }
  if (newest !== undefined && minorsAhead(newest, kubelet) > maxKubeletLag(kubelet)) {
    violations.push(
      rule(
        'kubelet-minor-lag',
        host,
        `the kubelet of ${host} (${kubelet.text}) would be ${minorsAhead(newest, kubelet)} minor versions older than the kube-apiserver at ${newest.text}`,
      ),
    );
  }
  return violations;
}

/**
 * The rules a cluster state breaks (empty: the state is within the policy).
 * A control plane's kubelet is held against its own API server; a node's
 * against every API server.
 */
export function skewViolations(cluster: ClusterVersions): SkewViolation[] {
  const violations: SkewViolation[] = [];
  const apiServers = cluster.controlPlanes.map((cp) => cp.apiServer);
  if (cluster.controlPlanes.length > 1) {
    const sorted = [...cluster.controlPlanes].sort((a, b) => compareKubeVersions(a.apiServer, b.apiServer));
    const oldest = sorted[0]!;
    const newest = sorted[sorted.length - 1]!;
    if (minorsAhead(newest.apiServer, oldest.apiServer) > MAX_API_SERVER_MINOR_SPREAD) {
      violations.push(
        rule(
          'ha-api-servers-one-minor-apart',
          oldest.name,
          `the kube-apiserver of ${newest.name} (${newest.apiServer.text}) and of ${oldest.name} (${oldest.apiServer.text}) would be ${minorsAhead(newest.apiServer, oldest.apiServer)} minor versions apart`,
        ),
      );
    }
  }
  for (const cp of cluster.controlPlanes) violations.push(...kubeletViolations(cp.name, cp.kubelet, [cp.apiServer]));
  for (const node of cluster.nodes) violations.push(...kubeletViolations(node.name, node.kubelet, apiServers));
  return violations;
}

/** The cluster after one step. */
export function applyStep(cluster: ClusterVersions, step: UpgradeStep): ClusterVersions {
  return {
    controlPlanes: cluster.controlPlanes.map((cp) =>
      step.role === 'control-plane' && cp.name === step.host ? { ...cp, apiServer: step.to, kubelet: step.to } : cp,
    ),
    nodes: cluster.nodes.map((node) =>
      step.role === 'node' && node.name === step.host ? { ...node, kubelet: step.to } : node,
    ),
  };
}

/** What going from `from` to `target` is, or the rule it breaks. */
function changeOf(from: KubeVersion, target: KubeVersion): 'upgrade' | 'patch-downgrade' | 'none' | 'minor-downgrade' {
  const minors = minorsAhead(target, from);
  if (minors < 0) return 'minor-downgrade';
  const order = compareKubeVersions(target, from);
  if (order === 0) return 'none';
  return order > 0 ? 'upgrade' : 'patch-downgrade';
}

function controlPlaneVerdict(cp: ControlPlaneVersions, target: KubeVersion): HostVerdict {
  const violations: SkewViolation[] = [];
  const apiServerChange = changeOf(cp.apiServer, target);
  const kubeletChange = changeOf(cp.kubelet, target);
  if (apiServerChange === 'minor-downgrade' || kubeletChange === 'minor-downgrade') {
    const from = apiServerChange === 'minor-downgrade' ? cp.apiServer : cp.kubelet;
    violations.push(
      rule(
        'no-minor-downgrade',
        cp.name,
        `control plane ${cp.name} runs ${from.text}; ${target.text} is an older minor version (${minorOf(target)} < ${minorOf(from)})`,
      ),
    );
  }
  const step = minorsAhead(target, cp.apiServer);
  if (step > MAX_CONTROL_PLANE_MINOR_STEP) {
    const next = `v${cp.apiServer.major}.${cp.apiServer.minor + 1}`;
    violations.push(
      rule(
        'control-plane-one-minor-at-a-time',
        cp.name,
        `control plane ${cp.name} runs ${cp.apiServer.text}; ${target.text} would skip ${step > 1000 ? 'a major version' : `${step - 1} minor version${step > 2 ? 's' : ''}`} (upgrade to ${next} first)`,
      ),
    );
  }
  const action: HostAction =
    violations.length > 0
      ? 'refused'
      : apiServerChange === 'none' && kubeletChange === 'none'
        ? 'none'
        : apiServerChange === 'patch-downgrade' || (apiServerChange === 'none' && kubeletChange === 'patch-downgrade')
          ? 'patch-downgrade'
          : 'upgrade';
  return { host: cp.name, role: 'control-plane', from: cp.apiServer, to: target, action, violations };
}

function nodeVerdict(node: NodeVersions, target: KubeVersion): HostVerdict {
  const violations: SkewViolation[] = [];
  const change = changeOf(node.kubelet, target);
  if (change === 'minor-downgrade') {
    violations.push(
      rule(
        'no-minor-downgrade',
        node.name,
        `node ${node.name} runs ${node.kubelet.text}; ${target.text} is an older minor version (${minorOf(target)} < ${minorOf(node.kubelet)})`,
      ),
    );
  }
  // The node waits for the control planes: until its turn, its kubelet faces API servers at the target.
  const lag = minorsAhead(target, node.kubelet);
  if (lag > maxKubeletLag(node.kubelet)) {
    violations.push(
      rule(
        'kubelet-minor-lag',
        node.name,
        `node ${node.name} runs ${node.kubelet.text}; until it is upgraded its kubelet would be ${lag} minor versions older than the kube-apiserver at ${target.text}`,
      ),
    );
  }
  const action: HostAction = violations.length > 0 ? 'refused' : change === 'minor-downgrade' ? 'refused' : change;
  return { host: node.name, role: 'node', from: node.kubelet, to: target, action, violations };
}

/**
 * The verdict on upgrading `cluster` to `target`: per host, what happens or
 * the rule that forbids it; the steps in order when nothing is forbidden.
 * The cluster as it is must be within the policy too: an upgrade does not
 * start from a state the policy already forbids.
 */
export function checkUpgrade(cluster: ClusterVersions, target: KubeVersion): UpgradeVerdict {
  const current = skewViolations(cluster);
  const hosts = [
    ...cluster.controlPlanes.map((cp) => controlPlaneVerdict(cp, target)),
    ...cluster.nodes.map((node) => nodeVerdict(node, target)),
  ];
  for (const violation of current) {
    const verdict = hosts.find((h) => h.host === violation.host);
    if (verdict === undefined) continue;
    verdict.violations.push({ ...violation, message: `the cluster already breaks the policy: ${violation.message}` });
    verdict.action = 'refused';
  }
  const violations = hosts.flatMap((h) => h.violations);
  const isAllowed = violations.length === 0;
  const steps: UpgradeStep[] = isAllowed
    ? hosts.filter((h) => h.action !== 'none').map((h) => ({ host: h.host, role: h.role, to: target }))
    : [];
  return { target, isAllowed, hosts, steps, violations };
}
