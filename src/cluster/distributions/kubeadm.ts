/**
 * The kubeadm driver: upstream Kubernetes from the install package (kubeadm,
 * kubelet, kubectl, and containerd with its shim, runc and the CNI plugins).
 *
 * edgeadm writes the kubeadm configuration (InitConfiguration +
 * ClusterConfiguration + KubeletConfiguration, or JoinConfiguration;
 * `kubeadm.k8s.io/v1beta4`, rendered with js-yaml), the kubelet unit and its
 * kubeadm drop-in, starts the kubelet (it waits for kubeadm's files, as
 * packaged kubelets do) and runs `kubeadm init --config …` or
 * `kubeadm join --config …` on the host.
 *
 * kubeadm's own `bootstrap-token` phase is skipped: edgeadm creates the one
 * token it prints, signs cluster-info itself (as for every distribution) and
 * applies kubeadm's node bootstrap RBAC from {@link kubeadmBootstrapObjects},
 * so no second, unprinted token is left valid on the cluster. A joining node
 * gets the bootstrap token and the pin of the CA that edgeadm's discovery
 * verified, so kubeadm's own discovery checks the same CA again.
 *
 * More control planes, kubeadm's way: with --control-plane-endpoint the
 * ClusterConfiguration carries it (and the API server certificate names
 * it); with --upload-certs edgeadm runs `kubeadm init phase upload-certs`
 * with the certificate key in a short-lived InitConfiguration
 * ({@link KUBEADM_UPLOAD_CERTS_CONFIG_PATH}), so that kubeadm encrypts the
 * CA keys into kube-system/kubeadm-certs; another control plane gets a
 * JoinConfiguration with `controlPlane.certificateKey` and
 * `controlPlane.localAPIEndpoint`, and `kubeadm join` downloads them.
 *
 * An edge node (join --enable-edge) joins with the edge taint in
 * `nodeRegistration.taints` and the label in `kubeletExtraArgs`; once its
 * edge-proxy runs, the kubelet unit gets edgeadm's drop-in that sends the
 * kubelet through it (see renderKubeletEdgeDropIn for why a drop-in).
 */
import { dump } from 'js-yaml';
import { ValidationError } from '../../errors.js';
import type { KubeObject } from '../../kube/client.js';
import { DEFAULT_BOOTSTRAP_TOKEN_GROUP, formatBootstrapToken } from '../../trust/bootstrap-token.js';
import { caPinsOfPem } from '../../trust/ca-pin.js';
import { KUBEADM_CA_PATH } from '../../trust/local-ca.js';
import { apiServerEgress } from '../../node-tunnel/egress-config.js';
import type {
  AgentConfigInput,
  ContainerRuntime,
  RuntimeConfigOptions,
  Distribution,
  ServerConfigInput,
} from './distribution.js';
import {
  CONTAINERD_UNIT,
  KUBELET_EDGE_DROP_IN_NAME,
  KUBELET_KUBEADM_DROP_IN,
  KUBELET_UNIT,
  renderKubeletEdgeDropIn,
} from './kubeadm-units.js';

/** Where the package's binaries go. */
const BIN_DIR = '/usr/local/bin';
/** The kubeadm binary, by full path (sudo and SSH sessions may have a short PATH). */
export const KUBEADM_BIN = `${BIN_DIR}/kubeadm`;
/** The kubeadm configuration API edgeadm writes. */
export const KUBEADM_API_VERSION = 'kubeadm.k8s.io/v1beta4';
/** The kubelet configuration API. */
export const KUBELET_CONFIG_API_VERSION = 'kubelet.config.k8s.io/v1beta1';
/** Where edgeadm writes the kubeadm configuration of a control plane. */
export const KUBEADM_INIT_CONFIG_PATH = '/etc/kubernetes/edgeadm-kubeadm-init.yaml';
/** Where edgeadm writes the kubeadm configuration of a joining node. */
export const KUBEADM_JOIN_CONFIG_PATH = '/etc/kubernetes/edgeadm-kubeadm-join.yaml';
/** Where edgeadm writes the configuration of `kubeadm init phase upload-certs` while it runs (it holds the certificate key). */
export const KUBEADM_UPLOAD_CERTS_CONFIG_PATH = '/etc/kubernetes/edgeadm-kubeadm-upload-certs.yaml';
/** The Secret (kube-system) kubeadm uploads the control-plane certificates into. */
export const KUBEADM_CERTS_SECRET = 'kubeadm-certs';
/** How long `kubeadm init phase upload-certs` may take. */
export const KUBEADM_UPLOAD_CERTS_TIMEOUT_MS = 2 * 60_000;
/** kubeadm's admin kubeconfig. */
export const KUBEADM_ADMIN_KUBECONFIG_PATH = '/etc/kubernetes/admin.conf';
/** The kubelet's kubeconfig, written once the kubelet has its client certificate. */
export const KUBEADM_KUBELET_KUBECONFIG_PATH = '/etc/kubernetes/kubelet.conf';
/** containerd's CRI socket. */
export const CONTAINERD_SOCKET_PATH = '/run/containerd/containerd.sock';
/** containerd's configuration file. */
export const CONTAINERD_CONFIG_PATH = '/etc/containerd/config.toml';
/** Where CNI plugins are installed (containerd's and the kubelet's default). */
export const CNI_BIN_DIR = '/opt/cni/bin';
/** The pause image containerd's CRI plugin uses for pod sandboxes. */
export const SANDBOX_IMAGE = 'registry.k8s.io/pause:3.9';
/** How long `kubeadm init` may take (it waits up to 4 min for the control plane itself). */
export const KUBEADM_INIT_TIMEOUT_MS = 10 * 60_000;
/** How long `kubeadm join` may take (discovery and TLS bootstrap wait up to 5 min each). */
export const KUBEADM_JOIN_TIMEOUT_MS = 12 * 60_000;
/**
 * kubeadm phases edgeadm does itself: `bootstrap-token` (the token, cluster-info
 * and its RBAC) and `show-join-command` (edgeadm prints its own).
 */
export const KUBEADM_SKIPPED_INIT_PHASES = ['bootstrap-token', 'show-join-command'] as const;

const RBAC = 'rbac.authorization.k8s.io/v1';
const RBAC_GROUP = 'rbac.authorization.k8s.io';

/**
 * The well-known topology labels the kubelet may set in the kubernetes.io
 * namespace (k8s.io/kubelet `IsKubeletLabel`): a site's zone is set at
 * registration, so the EndpointSlices of its first pods already carry it.
 */
const KUBELET_TOPOLOGY_LABELS = new Set(['topology.kubernetes.io/zone', 'topology.kubernetes.io/region']);

/**
 * Labels the kubelet may not set on its own Node (NodeRestriction): the
 * kubernetes.io and k8s.io namespaces, except the kubelet's and node's own
 * and the topology labels. edgeadm's labels phase sets them through the API
 * instead.
 */
export function isKubeletSettableLabel(key: string): boolean {
  const slash = key.indexOf('/');
  if (slash < 0) return true;
  if (KUBELET_TOPOLOGY_LABELS.has(key)) return true;
  const prefix = key.slice(0, slash);
  const isRestricted = /(^|\.)(kubernetes\.io|k8s\.io)$/.test(prefix);
  const isAllowed = /(^|\.)(kubelet|node)\.kubernetes\.io$/.test(prefix);
  return !isRestricted || isAllowed;
}

function kubeletExtraArgs(labels: Record<string, string>): Array<{ name: string; value: string }> {
  const settable = Object.entries(labels).filter(([key]) => isKubeletSettableLabel(key));
  if (settable.length === 0) return [];
  return [{ name: 'node-labels', value: settable.map(([key, value]) => `${key}=${value}`).join(',') }];
}

/**
 * `key=value:Effect` (as k3s's node-taint and the kubelet's
 * --register-with-taints take them) as a kubeadm `nodeRegistration.taints`
 * entry. Pure.
 */
export function kubeadmTaintOf(taint: string): { key: string; value?: string; effect: string } {
  const colon = taint.lastIndexOf(':');
  const keyValue = colon < 0 ? taint : taint.slice(0, colon);
  const effect = colon < 0 ? '' : taint.slice(colon + 1);
  const [key = '', ...value] = keyValue.split('=');
  if (key === '' || !['NoSchedule', 'PreferNoSchedule', 'NoExecute'].includes(effect)) {
    throw new ValidationError(`the taint ${JSON.stringify(taint)} is not key[=value]:Effect`, {
      code: 'E_TAINT_INVALID',
    });
  }
  return { key, ...(value.length > 0 ? { value: value.join('=') } : {}), effect };
}

function nodeRegistration(name: string, labels: Record<string, string>, taints?: string[]): Record<string, unknown> {
  const extra = kubeletExtraArgs(labels);
  return {
    name,
    criSocket: `unix://${CONTAINERD_SOCKET_PATH}`,
    // Given only when asked for: kubeadm reads an absent list as its default (none for a worker).
    ...(taints && taints.length > 0 ? { taints: taints.map(kubeadmTaintOf) } : {}),
    ...(extra.length > 0 ? { kubeletExtraArgs: extra } : {}),
  };
}

function documents(header: string, docs: Array<Record<string, unknown>>): string {
  return `${header}\n${docs.map((doc) => dump(doc, { lineWidth: -1 })).join('---\n')}`;
}

/**
 * `kubeadm init --config` input: InitConfiguration, ClusterConfiguration and
 * KubeletConfiguration (the host's cgroup driver, as containerd is configured). Pure.
 */
export function renderKubeadmInitConfig(input: ServerConfigInput): string {
  const port = kubeadmDistribution.apiPort;
  const init = {
    apiVersion: KUBEADM_API_VERSION,
    kind: 'InitConfiguration',
    localAPIEndpoint: { advertiseAddress: input.advertiseAddress, bindPort: port },
    nodeRegistration: nodeRegistration(input.nodeName, input.nodeLabels),
    skipPhases: [...KUBEADM_SKIPPED_INIT_PHASES],
    // Read by `kubeadm init phase upload-certs` only; the init configuration itself never holds it.
    ...(input.certificateKey ? { certificateKey: input.certificateKey } : {}),
  };
  const networking: Record<string, string> = {};
  if (input.podCidr) networking.podSubnet = input.podCidr;
  if (input.serviceCidr) networking.serviceSubnet = input.serviceCidr;
  const cluster = {
    apiVersion: KUBEADM_API_VERSION,
    kind: 'ClusterConfiguration',
    ...(input.kubernetesVersion ? { kubernetesVersion: input.kubernetesVersion } : {}),
    controlPlaneEndpoint: input.controlPlaneEndpoint ?? `${input.advertiseAddress}:${port}`,
    apiServer: {
      certSANs: [...new Set([input.advertiseAddress, ...input.certSans])],
      ...(input.isEgressThroughNodeTunnel ? apiServerEgress() : {}),
    },
    ...(Object.keys(networking).length > 0 ? { networking } : {}),
  };
  const kubelet = {
    apiVersion: KUBELET_CONFIG_API_VERSION,
    kind: 'KubeletConfiguration',
    // The same driver containerd uses on this host (renderContainerdConfig); the cluster's other kubelets get it too.
    cgroupDriver: input.cgroupDriver ?? 'systemd',
  };
  return documents('# Written by edgeadm init for kubeadm init; edgeadm reset removes it.', [init, cluster, kubelet]);
}

/**
 * `kubeadm join --config` input for another control plane: token discovery
 * against the endpoint edgeadm verified, pinned to the CA it verified, and
 * `controlPlane` with the certificate key (kubeadm downloads and decrypts
 * kubeadm-certs with it) and the address this API server advertises. Holds
 * the token and the key (mode 0600). Pure.
 *
 * @throws {ValidationError} `E_KUBEADM_NO_CA` without the verified CA,
 * `E_FLAG_MISSING` without the bootstrap token or the certificate key.
 */
export function renderKubeadmControlPlaneJoinConfig(input: ServerConfigInput): string {
  if (!input.caPem) {
    throw new ValidationError('kubeadm join --control-plane needs the cluster CA that discovery verified', {
      code: 'E_KUBEADM_NO_CA',
    });
  }
  if (!input.joinServer || !input.joinToken || !input.certificateKey) {
    throw new ValidationError(
      'kubeadm join --control-plane needs the API server, the bootstrap token and the certificate key',
      {
        code: 'E_FLAG_MISSING',
      },
    );
  }
  const join = {
    apiVersion: KUBEADM_API_VERSION,
    kind: 'JoinConfiguration',
    discovery: {
      bootstrapToken: {
        apiServerEndpoint: new URL(input.joinServer).host,
        token: input.joinToken,
        caCertHashes: caPinsOfPem(input.caPem, 'the verified cluster CA'),
      },
    },
    nodeRegistration: nodeRegistration(input.nodeName, input.nodeLabels),
    controlPlane: {
      localAPIEndpoint: { advertiseAddress: input.advertiseAddress, bindPort: kubeadmDistribution.apiPort },
      certificateKey: input.certificateKey,
    },
  };
  return documents('# Written by edgeadm join --control-plane for kubeadm join; edgeadm reset removes it.', [join]);
}

/** A control plane's configuration: InitConfiguration for the first, JoinConfiguration for another (`joinServer`). */
export function renderKubeadmServerConfig(input: ServerConfigInput): string {
  return input.joinServer ? renderKubeadmControlPlaneJoinConfig(input) : renderKubeadmInitConfig(input);
}

/**
 * `kubeadm join --config` input: token discovery against the API server
 * edgeadm verified, pinned to the CA it verified. Holds the token (mode 0600).
 *
 * @throws {ValidationError} `E_KUBEADM_NO_CA` without the verified CA.
 */
export function renderKubeadmJoinConfig(input: AgentConfigInput): string {
  if (!input.caPem) {
    throw new ValidationError('kubeadm join needs the cluster CA that discovery verified', {
      code: 'E_KUBEADM_NO_CA',
    });
  }
  const join = {
    apiVersion: KUBEADM_API_VERSION,
    kind: 'JoinConfiguration',
    discovery: {
      bootstrapToken: {
        apiServerEndpoint: new URL(input.server).host,
        token: input.joinCredential,
        caCertHashes: caPinsOfPem(input.caPem, 'the verified cluster CA'),
      },
    },
    nodeRegistration: nodeRegistration(input.nodeName, input.nodeLabels, input.nodeTaints),
  };
  return documents('# Written by edgeadm join for kubeadm join; edgeadm reset removes it.', [join]);
}

/** containerd's config.toml: the CRI plugin with runc under the host's cgroup driver, CNI from the package. */
export function renderContainerdConfig(
  options: RuntimeConfigOptions = { cgroupDriver: 'systemd', isOomScoreRestricted: false },
): string {
  return [
    '# Written by edgeadm for kubeadm; edgeadm reset removes it.',
    'version = 2',
    'root = "/var/lib/containerd"',
    'state = "/run/containerd"',
    '',
    '[grpc]',
    `  address = "${CONTAINERD_SOCKET_PATH}"`,
    '',
    '[plugins."io.containerd.grpc.v1.cri"]',
    `  sandbox_image = "${SANDBOX_IMAGE}"`,
    // Only on a host that cannot lower OOM scores (see RuntimeConfigOptions); the runtime phase says so.
    ...(options.isOomScoreRestricted ? ['  restrict_oom_score_adj = true'] : []),
    '  [plugins."io.containerd.grpc.v1.cri".containerd]',
    '    default_runtime_name = "runc"',
    '    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]',
    '      runtime_type = "io.containerd.runc.v2"',
    '      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]',
    `        SystemdCgroup = ${options.cgroupDriver === 'systemd'}`,
    '  [plugins."io.containerd.grpc.v1.cri".cni]',
    `    bin_dir = "${CNI_BIN_DIR}"`,
    '    conf_dir = "/etc/cni/net.d"',
    '',
  ].join('\n');
}

/** containerd, as the kubeadm distribution installs it. */
export const containerdRuntime: ContainerRuntime = {
  name: 'containerd',
  requiredBinaries: ['containerd', 'containerd-shim-runc-v2', 'runc'],
  configPath: CONTAINERD_CONFIG_PATH,
  renderConfig: renderContainerdConfig,
  serviceUnit: { name: 'containerd.service', content: CONTAINERD_UNIT },
  socketPath: CONTAINERD_SOCKET_PATH,
  cniBinDir: CNI_BIN_DIR,
  // /opt/containerd: containerd's `opt` plugin makes it at its first start.
  ownedDirectories: ['/var/lib/containerd', '/run/containerd', '/opt/containerd'],
  imageImportBinary: 'ctr',
  // k8s.io is the namespace the CRI plugin (and so the kubelet) takes images from.
  imageImportCommand: (archive) =>
    `${BIN_DIR}/ctr --address ${CONTAINERD_SOCKET_PATH} -n k8s.io images import '${archive.replace(/'/g, `'\\''`)}'`,
};

function clusterRoleBinding(name: string, role: string, subject: { kind: string; name: string }): KubeObject {
  return {
    apiVersion: RBAC,
    kind: 'ClusterRoleBinding',
    metadata: { name },
    roleRef: { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name: role },
    subjects: [{ apiGroup: RBAC_GROUP, ...subject }],
  };
}

/**
 * kubeadm's node bootstrap RBAC (cmd/kubeadm/app/phases/bootstraptoken/node),
 * which its skipped `bootstrap-token` phase would have made: bootstrap tokens
 * may post CSRs, have them approved, and read Nodes; nodes may renew.
 */
export function kubeadmBootstrapObjects(): KubeObject[] {
  const group = { kind: 'Group', name: DEFAULT_BOOTSTRAP_TOKEN_GROUP };
  return [
    clusterRoleBinding('kubeadm:kubelet-bootstrap', 'system:node-bootstrapper', group),
    clusterRoleBinding(
      'kubeadm:node-autoapprove-bootstrap',
      'system:certificates.k8s.io:certificatesigningrequests:nodeclient',
      group,
    ),
    clusterRoleBinding(
      'kubeadm:node-autoapprove-certificate-rotation',
      'system:certificates.k8s.io:certificatesigningrequests:selfnodeclient',
      { kind: 'Group', name: 'system:nodes' },
    ),
    {
      apiVersion: RBAC,
      kind: 'ClusterRole',
      metadata: { name: 'kubeadm:get-nodes' },
      rules: [{ apiGroups: [''], resources: ['nodes'], verbs: ['get'] }],
    },
    clusterRoleBinding('kubeadm:get-nodes', 'kubeadm:get-nodes', group),
  ];
}

/** The kubeadm driver. */
export const kubeadmDistribution: Distribution = {
  name: 'kubeadm',
  apiPort: 6443,
  requiredBinaries: ['kubeadm', 'kubelet', ...containerdRuntime.requiredBinaries],
  binDir: BIN_DIR,
  configPath: (role, setup) =>
    role === 'control-plane' && setup !== 'join' ? KUBEADM_INIT_CONFIG_PATH : KUBEADM_JOIN_CONFIG_PATH,
  renderServerConfig: renderKubeadmServerConfig,
  renderAgentConfig: renderKubeadmJoinConfig,
  // One kubelet for both roles: kubeadm decides what it runs.
  serviceUnit: (_role, options) => ({
    name: 'kubelet.service',
    content: KUBELET_UNIT,
    dropIns: [
      { name: '10-kubeadm.conf', content: KUBELET_KUBEADM_DROP_IN },
      ...(options?.kubeletKubeconfig
        ? [{ name: KUBELET_EDGE_DROP_IN_NAME, content: renderKubeletEdgeDropIn(options.kubeletKubeconfig) }]
        : []),
    ],
  }),
  caPath: KUBEADM_CA_PATH,
  adminKubeconfigPath: KUBEADM_ADMIN_KUBECONFIG_PATH,
  nodeKubeconfigPath: KUBEADM_KUBELET_KUBECONFIG_PATH,
  // The cluster CA signs the kubelet's client certificates (TLS bootstrap and rotation); kubeadm join writes it here.
  nodeClientCaPath: KUBEADM_CA_PATH,
  // /etc/kubernetes/tmp: kubeadm upgrade's own backups (a copy of etcd's data among them), which
  // kubeadm reset leaves behind.
  ownedDirectories: [
    '/etc/kubernetes/manifests',
    '/etc/kubernetes/pki',
    '/etc/kubernetes/tmp',
    '/var/lib/kubelet',
    '/var/lib/etcd',
  ],
  ownedFiles: [
    KUBEADM_ADMIN_KUBECONFIG_PATH,
    '/etc/kubernetes/super-admin.conf',
    KUBEADM_KUBELET_KUBECONFIG_PATH,
    '/etc/kubernetes/bootstrap-kubelet.conf',
    '/etc/kubernetes/controller-manager.conf',
    '/etc/kubernetes/scheduler.conf',
  ],
  joinCredential: ({ token }) => formatBootstrapToken(token),
  runtime: containerdRuntime,
  setupCommand: (role, setup) =>
    role === 'control-plane' && setup !== 'join'
      ? {
          command: `${KUBEADM_BIN} init --config ${KUBEADM_INIT_CONFIG_PATH}`,
          description: `set up the control plane (kubeadm init --config ${KUBEADM_INIT_CONFIG_PATH})`,
          timeoutMs: KUBEADM_INIT_TIMEOUT_MS,
        }
      : {
          command: `${KUBEADM_BIN} join --config ${KUBEADM_JOIN_CONFIG_PATH}`,
          description: `join ${role === 'control-plane' ? 'another control plane' : 'the node'} (kubeadm join --config ${KUBEADM_JOIN_CONFIG_PATH})`,
          timeoutMs: KUBEADM_JOIN_TIMEOUT_MS,
        },
  certsUpload: {
    secretName: KUBEADM_CERTS_SECRET,
    caEntry: 'ca.crt',
    configPath: KUBEADM_UPLOAD_CERTS_CONFIG_PATH,
    command: {
      // The key stays in the file: not on a command line, and not printed (--skip-certificate-key-print).
      command: `${KUBEADM_BIN} init phase upload-certs --upload-certs --skip-certificate-key-print --config ${KUBEADM_UPLOAD_CERTS_CONFIG_PATH}`,
      description: `upload the control-plane certificates (kubeadm init phase upload-certs --config ${KUBEADM_UPLOAD_CERTS_CONFIG_PATH})`,
      timeoutMs: KUBEADM_UPLOAD_CERTS_TIMEOUT_MS,
    },
  },
  resetCommand: `if [ -x ${KUBEADM_BIN} ]; then ${KUBEADM_BIN} reset -f; fi`,
  bootstrapObjects: kubeadmBootstrapObjects,
  nodeTunnel: {
    kubeletCredentialsPath: '/var/lib/kubelet/pki/kubelet-client-current.pem',
    // The API server's own: from the cluster CA, for the addresses nodes already reach the control plane at.
    servingCertPath: '/etc/kubernetes/pki/apiserver.crt',
    servingKeyPath: '/etc/kubernetes/pki/apiserver.key',
  },
  networkCleanupScript: () =>
    [
      'for link in cni0 flannel.1 flannel-v6.1 kube-ipvs0 cilium_host cilium_net cilium_vxlan vxlan.calico; do',
      '  if ip link show "$link" >/dev/null 2>&1; then ip link delete "$link"; fi',
      'done',
      'if command -v iptables-save >/dev/null 2>&1 && iptables-save 2>/dev/null | grep -qE "KUBE-|CNI-|flannel|cali-"; then',
      '  iptables-save | grep -vE "KUBE-|CNI-|flannel|cali-" | iptables-restore',
      'fi',
    ].join('\n'),
};
