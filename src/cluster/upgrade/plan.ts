/**
 * `edgeadm upgrade plan`: reads a cluster through one of its control planes
 * and an install package, and says what `upgrade apply` and `upgrade node`
 * would do, host by host, or which rule of the version skew policy forbids
 * it. It changes nothing anywhere: every command it runs on the host is a
 * read (`readOnly`), and the API server is only read.
 *
 * The request ({@link UpgradePlanRequest}) is parsed and validated once,
 * before any I/O ({@link parseUpgradePlanRequest}); {@link planUpgrade}
 * then verifies the package on this machine, connects, finds the
 * distribution (the install state init wrote, else the admin kubeconfig each
 * distribution writes), and reads Nodes, `/version` and (kubeadm) the
 * kube-apiserver mirror Pods with the admin kubeconfig on the control plane.
 */
import { join } from 'node:path';
import { EdgeadmError, PreflightError, ValidationError } from '../../errors.js';
import { connectHost, type HostConnectOptions } from '../../hosts/connect.js';
import type { Host } from '../../hosts/host.js';
import { KubeClient } from '../../kube/client.js';
import { kubeCredentialsOf, type KubeCredentials } from '../../kube/kubeconfig.js';
import { edgeadmHome, type Logger } from '../../log/run-log.js';
import type { ResolvedPackage } from '../../packages/source.js';
import { resolveTrustedPackage } from '../../packages/package-trust.js';
import type { Distribution, DistributionName } from '../distributions/distribution.js';
import { distributionFor } from '../distributions/index.js';
import { K3S_CONFIG_PATH, k3sDistribution } from '../distributions/k3s.js';
import { kubeadmDistribution } from '../distributions/kubeadm.js';
import { readHostFile } from '../host-files.js';
import { loadState } from '../state.js';
import {
  clusterSnapshotOf,
  clusterVersionsOf,
  type ClusterSnapshot,
  type NodeObject,
  type PodObject,
} from './cluster-versions.js';
import { parseKubeVersion, type KubeVersion } from './kube-version.js';
import { checkUpgrade, type HostAction, type SkewRule, type UpgradeVerdict } from './skew.js';

/** The typed request of `upgrade plan`, parsed once from flags. */
export interface UpgradePlanRequest {
  /** The control plane to read the cluster through. */
  connect: HostConnectOptions;
  /** `--install-pkg-path`: a file or an http(s) URL; without it, the plan only shows the cluster. */
  packageSource?: string;
  /** `--trusted-key`: public key files the package must be signed by; none: its origin is not checked. */
  trustedKeyFiles: string[];
}

/** What the command layer hands over. */
export interface UpgradePlanInput {
  connect: HostConnectOptions;
  installPkgPath?: string | undefined;
  trustedKeys?: string[] | undefined;
}

/**
 * Validates the input into a request, before any I/O.
 *
 * @throws {ValidationError} `E_USAGE` for an empty `--install-pkg-path`.
 */
export function parseUpgradePlanRequest(input: UpgradePlanInput): UpgradePlanRequest {
  const source = input.installPkgPath;
  if (source !== undefined && source.trim() === '') {
    throw new ValidationError('--install-pkg-path is empty', {
      code: 'E_USAGE',
      hints: ['Give the new install package: a .tar.gz file or an http(s) URL.'],
    });
  }
  return {
    connect: input.connect,
    ...(source === undefined ? {} : { packageSource: source }),
    trustedKeyFiles: input.trustedKeys ?? [],
  };
}

/** One host in the plan. */
export interface PlannedHost {
  /** The Node name. */
  host: string;
  role: 'control-plane' | 'node';
  isEdge: boolean;
  /** The version it runs (a control plane: its API server's), e.g. `v1.31.4+k3s1`. */
  from: string;
  /** The kubelet's version, when it differs from `from` (a control plane upgraded half way). */
  kubelet?: string;
  /** The target, when a package was given. */
  to?: string;
  action?: HostAction;
  /** The order apply and node would take it in (1-based); absent when there is nothing to do or it is refused. */
  step?: number;
  /** What `apply` (a control plane) or `node` would do there, in order. */
  actions: string[];
  /** Why it is refused: the rule by name and the message. */
  refusals: Array<{ rule: SkewRule; message: string }>;
}

/** The result of `upgrade plan` (its `--json` document). */
export interface UpgradePlanResult {
  /** The host edgeadm read the cluster through. */
  host: string;
  distribution: DistributionName;
  isHa: boolean;
  controlPlanes: number;
  nodes: number;
  edgeNodes: number;
  /** What the reached API server answers at /version. */
  apiServerVersion: string;
  package?: { name: string; file: string; distribution: string; kubernetesVersion: string };
  /** The target version (the package's). */
  target?: string;
  /** Control planes first, in upgrade order, then nodes. */
  hosts: PlannedHost[];
  /** Always true: nothing was changed on any host. */
  isReadOnly: true;
}

/** Options of {@link planUpgrade}. */
export interface PlanUpgradeOptions {
  logger: Logger;
  /** Where the loud line goes when the package's origin is not checked. */
  warn?: (line: string) => void;
}

/**
 * Reads the cluster (and the package) and plans the upgrade.
 *
 * @throws {EdgeadmError} `E_PACKAGE_DISTRIBUTION` (package for the other
 * distribution), `E_UPGRADE_SAME_VERSION` (every host already at the
 * package's version), `E_UPGRADE_NO_CLUSTER` (no control plane on the host),
 * `E_DISTRIBUTION_UNKNOWN`; a {@link PreflightError} `E_UPGRADE_SKEW` (exit
 * code 2) when the policy forbids the upgrade, with the plan in its details.
 */
export async function planUpgrade(
  request: UpgradePlanRequest,
  options: PlanUpgradeOptions,
): Promise<UpgradePlanResult> {
  // The package first: it is local, and a bad one should fail before any host is touched.
  const pkg =
    request.packageSource === undefined
      ? undefined
      : await resolveTrustedPackage(request.packageSource, {
          cacheDir: join(edgeadmHome(), 'packages'),
          trustedKeyFiles: request.trustedKeyFiles,
          warn: options.warn,
        });
  const target =
    pkg === undefined ? undefined : parseKubeVersion(pkg.manifest.kubernetesVersion, `package ${pkg.manifest.name}`);
  const host = await connectHost({ ...request.connect, logger: options.logger });
  let snapshot: ClusterSnapshot;
  try {
    snapshot = await readCluster(host);
  } finally {
    await host.close();
  }
  if (pkg !== undefined && pkg.manifest.distribution !== snapshot.distribution) {
    throw new ValidationError(
      `the install package ${pkg.manifest.name} is for ${pkg.manifest.distribution}, but the cluster on ${host.name} runs ${snapshot.distribution}`,
      {
        code: 'E_PACKAGE_DISTRIBUTION',
        hints: [
          `Build or pick a ${snapshot.distribution} package (edgeadm package inspect shows what a package holds).`,
        ],
      },
    );
  }
  const verdict = target === undefined ? undefined : checkUpgrade(clusterVersionsOf(snapshot), target);
  const result = resultOf(host.name, snapshot, pkg, verdict);
  if (verdict !== undefined && target !== undefined) {
    if (!verdict.isAllowed) {
      throw new PreflightError(
        `the upgrade to ${target.text} breaks the Kubernetes version skew policy:\n${verdict.violations.map((v) => `  - ${v.message}`).join('\n')}`,
        {
          code: 'E_UPGRADE_SKEW',
          hints: hintsFor(verdict),
          details: { plan: result },
        },
      );
    }
    if (verdict.steps.length === 0) {
      throw new EdgeadmError(
        `the cluster is already at ${target.text}: every host runs it, there is nothing to upgrade`,
        {
          code: 'E_UPGRADE_SAME_VERSION',
          details: { plan: result },
        },
      );
    }
  }
  return result;
}

/** The hints of an E_UPGRADE_SKEW refusal (also `upgrade apply`'s). */
export function hintsFor(verdict: UpgradeVerdict): string[] {
  const rules = new Set(verdict.violations.map((v) => v.rule));
  const hints: string[] = [];
  if (rules.has('control-plane-one-minor-at-a-time')) {
    hints.push('Upgrade through each minor version in turn, with a package for each (v1.30 → v1.31 → v1.32).');
  }
  if (rules.has('no-minor-downgrade')) {
    hints.push('A minor version is not downgraded; an upgrade that fails is rolled back from its backup instead.');
  }
  if (rules.has('kubelet-minor-lag') || rules.has('kubelet-not-newer-than-api-server')) {
    hints.push('Bring the nodes named above within the policy first (edgeadm upgrade node with a suitable package).');
  }
  hints.push('The rules: https://kubernetes.io/releases/version-skew-policy/');
  return hints;
}

/** The distribution of the control plane on `host`, and its driver (also `upgrade apply`'s). */
export async function distributionOn(host: Host): Promise<Distribution> {
  const state = await loadState(host);
  if (state?.role === 'worker') {
    throw new ValidationError(
      `${host.name} is a node, not a control plane: upgrade plan reads the cluster through a control plane`,
      {
        code: 'E_UPGRADE_NOT_CONTROL_PLANE',
        hints: ['Pass --host with a control plane of the cluster.'],
      },
    );
  }
  if (state?.distribution !== undefined) return distributionFor(state.distribution);
  // No install state (a cluster edgeadm did not set up): the admin kubeconfig each distribution writes says which.
  for (const candidate of [k3sDistribution, kubeadmDistribution]) {
    if (await host.exists(candidate.adminKubeconfigPath, { sudo: true })) return candidate;
  }
  throw new EdgeadmError(
    `no control plane found on ${host.name}: neither ${k3sDistribution.adminKubeconfigPath} nor ${kubeadmDistribution.adminKubeconfigPath} exists`,
    {
      code: 'E_UPGRADE_NO_CLUSTER',
      hints: ['Pass --host with a control plane that edgeadm init (or k3s / kubeadm) set up.'],
    },
  );
}

/** Where this machine reaches the API server: the kubeconfig's, unless it is a loopback address. */
export async function reachableServer(
  host: Host,
  distribution: Distribution,
  credentials: KubeCredentials,
): Promise<string> {
  const url = new URL(credentials.server);
  const isLoopback = url.hostname === 'localhost' || url.hostname.startsWith('127.') || url.hostname === '[::1]';
  if (!isLoopback) return credentials.server;
  let address: string | undefined;
  if (distribution.name === 'k3s') {
    const config = await host.exec(`cat ${K3S_CONFIG_PATH}`, { sudo: true, readOnly: true });
    address = /^advertise-address:\s*['"]?([^'"\s]+)/m.exec(config.stdout)?.[1];
  }
  address ??= (await host.facts()).addresses.find((a) => a.family === 'inet' && a.scope === 'global')?.address;
  if (address === undefined) {
    throw new EdgeadmError(`cannot tell at which address this machine reaches the API server of ${host.name}`, {
      code: 'E_UPGRADE_API_ADDRESS',
    });
  }
  url.hostname = address;
  return url.origin;
}

/** Reads the cluster with the control plane's admin kubeconfig. Only reads (also `upgrade apply`'s skew check). */
export async function readCluster(host: Host): Promise<ClusterSnapshot> {
  const distribution = await distributionOn(host);
  const what = `${host.name}:${distribution.adminKubeconfigPath}`;
  const text = await readHostFile(host, distribution.adminKubeconfigPath);
  const credentials = await kubeCredentialsOf(text, { what, readFile: (path) => readHostFile(host, path) });
  const client = new KubeClient({ ...credentials, server: await reachableServer(host, distribution, credentials) });
  const [version, nodes, pods, facts] = await Promise.all([
    client.request<{ gitVersion?: string }>('GET', '/version'),
    client.list<NodeObject>('/api/v1/nodes'),
    distribution.name === 'kubeadm'
      ? client.list<PodObject>('/api/v1/namespaces/kube-system/pods', { labelSelector: 'component=kube-apiserver' })
      : Promise.resolve([]),
    host.facts(),
  ]);
  return clusterSnapshotOf({
    distribution: distribution.name,
    nodes,
    apiServerPods: pods,
    servedVersion: version.gitVersion ?? '',
    reachedNode: nodes.some((n) => n.metadata.name === facts.hostname) ? facts.hostname : undefined,
  });
}

/** What `apply` / `node` would do on one host, for people. */
function actionsFor(
  distribution: DistributionName,
  host: { role: 'control-plane' | 'node'; isEdge: boolean },
  target: KubeVersion,
  isFirstControlPlane: boolean,
): string[] {
  if (host.role === 'control-plane') {
    return distribution === 'k3s'
      ? [
          'back up the datastore (etcd snapshot, or the SQLite database copied consistently), the k3s binary and its configuration',
          `install the package's k3s binary and airgap images, restart k3s`,
          `wait for the API server, and for the node Ready at ${target.text}; roll back to the backup if a gate fails`,
        ]
      : [
          'back up etcd and the static Pod manifests, the binaries and the kubelet configuration',
          "install the package's kubeadm and kubelet",
          isFirstControlPlane ? `kubeadm upgrade apply ${target.text}` : 'kubeadm upgrade node',
          `restart the kubelet; wait for the API server and the node Ready at ${target.text}; roll back if a gate fails`,
        ];
  }
  return [
    'cordon, and drain (evictions with a timeout)',
    `install the package's ${distribution === 'k3s' ? 'k3s binary' : 'kubeadm and kubelet'}${host.isEdge ? ', and its edgeadm for the edge-proxy (the cache is kept)' : ''}`,
    ...(distribution === 'kubeadm' ? ['kubeadm upgrade node'] : []),
    `restart, wait for the node Ready at ${target.text}, uncordon`,
  ];
}

function resultOf(
  hostName: string,
  snapshot: ClusterSnapshot,
  pkg: ResolvedPackage | undefined,
  verdict: UpgradeVerdict | undefined,
): UpgradePlanResult {
  const steps = new Map(verdict?.steps.map((step, index) => [step.host, index + 1]) ?? []);
  let isFirstControlPlane = true;
  const hosts = snapshot.hosts.map((host): PlannedHost => {
    const from = host.apiServer ?? host.kubelet;
    const hostVerdict = verdict?.hosts.find((h) => h.host === host.name);
    const planned: PlannedHost = {
      host: host.name,
      role: host.role,
      isEdge: host.isEdge,
      from: from.text,
      ...(host.kubelet.text === from.text ? {} : { kubelet: host.kubelet.text }),
      actions: [],
      refusals: (hostVerdict?.violations ?? []).map((v) => ({ rule: v.rule, message: v.message })),
    };
    if (verdict !== undefined && hostVerdict !== undefined) {
      planned.to = verdict.target.text;
      planned.action = hostVerdict.action;
      const step = steps.get(host.name);
      if (step !== undefined) {
        planned.step = step;
        planned.actions = actionsFor(snapshot.distribution, host, verdict.target, isFirstControlPlane);
        if (host.role === 'control-plane') isFirstControlPlane = false;
      }
    }
    return planned;
  });
  return {
    host: hostName,
    distribution: snapshot.distribution,
    isHa: snapshot.isHa,
    controlPlanes: hosts.filter((h) => h.role === 'control-plane').length,
    nodes: hosts.filter((h) => h.role === 'node').length,
    edgeNodes: hosts.filter((h) => h.isEdge).length,
    apiServerVersion: snapshot.servedVersion.text,
    ...(pkg === undefined
      ? {}
      : {
          package: {
            name: pkg.manifest.name,
            file: pkg.file,
            distribution: pkg.manifest.distribution,
            kubernetesVersion: pkg.manifest.kubernetesVersion,
          },
          target: pkg.manifest.kubernetesVersion,
        }),
    hosts,
    isReadOnly: true,
  };
}

/** The plan for people: the cluster, then one block per host in upgrade order. */
export function formatUpgradePlan(result: UpgradePlanResult): string[] {
  const lines = [
    `Cluster read through ${result.host}: ${result.distribution}, ${result.controlPlanes} control plane${result.controlPlanes === 1 ? '' : 's'}${result.isHa ? ' (HA)' : ''}, ${result.nodes} node${result.nodes === 1 ? '' : 's'}${result.edgeNodes > 0 ? ` (${result.edgeNodes} edge)` : ''}; API server ${result.apiServerVersion}`,
  ];
  if (result.package) {
    lines.push(`Package: ${result.package.name} (${result.package.distribution} ${result.package.kubernetesVersion})`);
  }
  const width = Math.max(...result.hosts.map((h) => h.host.length));
  lines.push('');
  for (const host of result.hosts) {
    const role = host.role === 'control-plane' ? 'control plane' : host.isEdge ? 'edge node' : 'node';
    const versions = `${host.from}${host.kubelet ? ` (kubelet ${host.kubelet})` : ''}${host.to ? ` -> ${host.to}` : ''}`;
    const what =
      host.action === undefined
        ? ''
        : host.action === 'none'
          ? `  already at ${host.to}`
          : host.action === 'refused'
            ? '  REFUSED'
            : host.action === 'patch-downgrade'
              ? '  (patch downgrade)'
              : '';
    lines.push(
      `${host.step === undefined ? '  ' : `${host.step}.`} ${host.host.padEnd(width)}  ${role.padEnd(13)} ${versions}${what}`,
    );
    for (const action of host.actions) lines.push(`     - ${action}`);
    for (const refusal of host.refusals) lines.push(`     ! ${refusal.message}`);
  }
  lines.push('');
  if (result.target === undefined) {
    lines.push('No package given: pass --install-pkg-path with the new install package to plan an upgrade.');
  } else {
    const cps = result.hosts.filter((h) => h.role === 'control-plane' && h.step !== undefined).length;
    lines.push(
      `Upgrade to ${result.target}: control planes first, one at a time (edgeadm upgrade apply --host <control plane> --install-pkg-path ${result.package?.file ?? '<package>'}), then the nodes (edgeadm upgrade node).${cps === 0 ? ' The control planes are done.' : ''}`,
    );
  }
  lines.push('Nothing was changed on any host.');
  return lines;
}
