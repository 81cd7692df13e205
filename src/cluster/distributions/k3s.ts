/**
 * The k3s driver (the default distribution): one binary, `k3s server` for a
 * control plane and `k3s agent` for a node, configured through
 * /etc/rancher/k3s/config.yaml (rendered with js-yaml from edgeadm's
 * options), joined with a `K10<ca hash>::<id>.<secret>` token that edgeadm
 * builds from the CA it verified by pin.
 */
import { dump } from 'js-yaml';
import { buildK3sToken } from '../../trust/k3s-token.js';
import { K3S_SERVER_CA_PATH } from '../../trust/local-ca.js';
import type { AgentConfigInput, Distribution, ServerConfigInput } from './distribution.js';
import { K3S_AGENT_UNIT, K3S_SERVER_UNIT } from './k3s-units.js';

/** Where k3s reads its configuration. */
export const K3S_CONFIG_PATH = '/etc/rancher/k3s/config.yaml';
/** The admin kubeconfig k3s writes (server https://127.0.0.1:6443). */
export const K3S_ADMIN_KUBECONFIG_PATH = '/etc/rancher/k3s/k3s.yaml';
/** The kubelet kubeconfig of a k3s agent. */
export const K3S_NODE_KUBECONFIG_PATH = '/var/lib/rancher/k3s/agent/kubelet.kubeconfig';
/** The CA that signs a k3s agent's kubelet client certificate. */
export const K3S_NODE_CLIENT_CA_PATH = '/var/lib/rancher/k3s/agent/client-ca.crt';
/**
 * Where k3s imports airgap image archives (.tar, .tar.gz, .tar.zst, ...) into
 * its embedded containerd each time it starts: the k3s docs' air-gap install
 * ("Manually Deploy Images": copy the archives to
 * /var/lib/rancher/k3s/agent/images/), and k3s pkg/agent/containerd, which
 * preloads the files of the agent's `images` directory before the kubelet runs.
 */
export const K3S_AIRGAP_IMAGES_DIR = '/var/lib/rancher/k3s/agent/images';

function labelList(labels: Record<string, string>): string[] {
  return Object.entries(labels).map(([key, value]) => `${key}=${value}`);
}

/** The k3s server's config.yaml. Pure, so tests check it without a host. */
export function renderK3sServerConfig(input: ServerConfigInput): string {
  const config: Record<string, unknown> = {
    'node-name': input.nodeName,
    'advertise-address': input.advertiseAddress,
    'node-ip': input.advertiseAddress,
    'tls-san': [...new Set([input.advertiseAddress, ...input.certSans])],
    'write-kubeconfig-mode': '0600',
  };
  if (Object.keys(input.nodeLabels).length > 0) config['node-label'] = labelList(input.nodeLabels);
  if (input.podCidr) config['cluster-cidr'] = input.podCidr;
  if (input.serviceCidr) config['service-cidr'] = input.serviceCidr;
  if (input.isClusterInit) config['cluster-init'] = true;
  if (input.joinServer) config.server = input.joinServer;
  if (input.joinToken) config.token = input.joinToken;
  return `# Written by edgeadm init; edgeadm reset removes it.\n${dump(config, { lineWidth: -1 })}`;
}

/** The k3s agent's config.yaml; it holds the join token (mode 0600). */
export function renderK3sAgentConfig(input: AgentConfigInput): string {
  const config: Record<string, unknown> = {
    server: input.server,
    token: input.joinCredential,
    'node-name': input.nodeName,
  };
  if (Object.keys(input.nodeLabels).length > 0) config['node-label'] = labelList(input.nodeLabels);
  if (input.nodeTaints && input.nodeTaints.length > 0) config['node-taint'] = input.nodeTaints;
  // k3s passes kubelet-arg values to its kubelet, and a value given there wins over k3s's own.
  if (input.kubeletKubeconfig) config['kubelet-arg'] = [`kubeconfig=${input.kubeletKubeconfig}`];
  return `# Written by edgeadm join; edgeadm reset removes it.\n${dump(config, { lineWidth: -1 })}`;
}

/** A k3s agent's data directory: the certificates its supervisor gives it at every start. */
const K3S_AGENT_DIR = '/var/lib/rancher/k3s/agent';

/** The k3s driver. */
export const k3sDistribution: Distribution = {
  name: 'k3s',
  apiPort: 6443,
  requiredBinaries: ['k3s'],
  binDir: '/usr/local/bin',
  configPath: () => K3S_CONFIG_PATH,
  renderServerConfig: renderK3sServerConfig,
  renderAgentConfig: renderK3sAgentConfig,
  serviceUnit: (role) =>
    role === 'control-plane'
      ? { name: 'k3s.service', content: K3S_SERVER_UNIT }
      : { name: 'k3s-agent.service', content: K3S_AGENT_UNIT },
  caPath: K3S_SERVER_CA_PATH,
  adminKubeconfigPath: K3S_ADMIN_KUBECONFIG_PATH,
  nodeKubeconfigPath: K3S_NODE_KUBECONFIG_PATH,
  nodeClientCaPath: K3S_NODE_CLIENT_CA_PATH,
  serverTokenPath: '/var/lib/rancher/k3s/server/token',
  // /etc/rancher/node holds the node password the agent makes at its first start (k3s pkg/agent/config,
  // ensureNodePassword); the server checks later starts against it, so it goes with the rest.
  ownedDirectories: ['/etc/rancher/k3s', '/etc/rancher/node', '/var/lib/rancher/k3s', '/run/k3s'],
  airgapImagesDir: K3S_AIRGAP_IMAGES_DIR,
  // k3s's supervisor signs every node's kubelet serving certificate with the server CA, for the node
  // name, localhost, 127.0.0.1 and the node IPs (k3s pkg/server/handlers, ServingKubeletCert).
  edgeSupervisor: {
    servingCertPath: `${K3S_AGENT_DIR}/serving-kubelet.crt`,
    servingKeyPath: `${K3S_AGENT_DIR}/serving-kubelet.key`,
    serverCaPath: `${K3S_AGENT_DIR}/server-ca.crt`,
    agentClientCertificates: [
      {
        commonName: 'system:kube-proxy',
        certFile: `${K3S_AGENT_DIR}/client-kube-proxy.crt`,
        keyFile: `${K3S_AGENT_DIR}/client-kube-proxy.key`,
      },
      {
        commonName: 'system:k3s-controller',
        certFile: `${K3S_AGENT_DIR}/client-k3s-controller.crt`,
        keyFile: `${K3S_AGENT_DIR}/client-k3s-controller.key`,
      },
    ],
  },
  joinCredential: ({ caPem, token }) => buildK3sToken({ caBundle: caPem, credentials: token }),
  networkCleanupScript: () =>
    [
      'for link in cni0 flannel.1 flannel-v6.1 kube-ipvs0 flannel-wg flannel-wg-v6; do',
      '  if ip link show "$link" >/dev/null 2>&1; then ip link delete "$link"; fi',
      'done',
      'if command -v iptables-save >/dev/null 2>&1 && iptables-save 2>/dev/null | grep -qE "KUBE-|CNI-|flannel"; then',
      '  iptables-save | grep -vE "KUBE-|CNI-|flannel" | iptables-restore',
      'fi',
    ].join('\n'),
};
