/**
 * The interface every distribution driver (k3s, kubeadm) implements: where
 * its binaries, configuration, CA and kubeconfigs live, how its
 * configuration files and service units are rendered, how a joining node's
 * credentials are built, and what reset must clean up. Drivers are pure
 * descriptions; the phases in src/cluster do the work through a Host.
 */
import type { BootstrapToken } from '../../trust/bootstrap-token.js';
import type { ServiceUnit } from '../service-manager.js';

/** The distributions edgeadm knows. */
export type DistributionName = 'k3s' | 'kubeadm';

/** What a control plane's configuration says. */
export interface ServerConfigInput {
  nodeName: string;
  nodeLabels: Record<string, string>;
  advertiseAddress: string;
  /** Extra subject alternative names of the API server certificate. */
  certSans: string[];
  podCidr?: string;
  serviceCidr?: string;
  /** Start an HA-capable (embedded etcd) control plane. */
  isClusterInit?: boolean;
  /** Join the control plane at this URL instead of starting a cluster (another control plane). */
  joinServer?: string;
  /** The credential another control plane joins with (k3s: the server token). A secret. */
  joinToken?: string;
}

/** What a joining node's configuration says. */
export interface AgentConfigInput {
  nodeName: string;
  nodeLabels: Record<string, string>;
  /** The API server, `https://host:port`, as discovery verified it. */
  server: string;
  /** The distribution's join credential (a secret). */
  joinCredential: string;
  /** Taints the node registers with, `key=value:Effect`. */
  nodeTaints?: string[];
  /**
   * A kubeconfig the node's kubelet uses instead of the one the agent
   * writes: the edge-proxy's, so that the kubelet's traffic goes through it.
   */
  kubeletKubeconfig?: string;
}

/** A distribution driver. */
export interface Distribution {
  readonly name: DistributionName;
  /** The API server port. */
  readonly apiPort: number;
  /** Binaries the install package must carry under bin/. */
  readonly requiredBinaries: readonly string[];
  /** Where binaries are installed. */
  readonly binDir: string;
  /** The configuration file of a control plane / joining node. */
  configPath(role: 'control-plane' | 'worker'): string;
  renderServerConfig(input: ServerConfigInput): string;
  renderAgentConfig(input: AgentConfigInput): string;
  /** The service unit of a role. */
  serviceUnit(role: 'control-plane' | 'worker'): ServiceUnit;
  /** The cluster CA the control plane writes. */
  readonly caPath: string;
  /** The admin kubeconfig the control plane writes (its server may be a loopback address). */
  readonly adminKubeconfigPath: string;
  /** The kubeconfig a joined node's agent uses (client credentials of the node). */
  readonly nodeKubeconfigPath: string;
  /** The credential another control plane joins with, on the first one (k3s: the server token). */
  readonly serverTokenPath?: string;
  /** The CA that signs the node's client certificate (the edge-proxy checks the kubelet against it). */
  readonly nodeClientCaPath?: string;
  /** Directories the distribution owns outright, removed with their content by reset. */
  readonly ownedDirectories: readonly string[];
  /** The join credential for a node, from the CA bundle discovery verified and the bootstrap token. */
  joinCredential(options: { caPem: string; token: BootstrapToken }): string;
  /** A shell script that removes the network interfaces and iptables rules the distribution created. */
  networkCleanupScript(): string;
}
