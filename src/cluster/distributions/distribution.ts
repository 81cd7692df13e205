/**
 * The interface every distribution driver (k3s, kubeadm) implements: where
 * its binaries, configuration, CA and kubeconfigs live, how its
 * configuration files and service units are rendered, how a joining node's
 * credentials are built, and what reset must clean up. Drivers are pure
 * descriptions; the phases in src/cluster do the work through a Host.
 */
import type { KubeObject } from '../../kube/client.js';
import type { BootstrapToken } from '../../trust/bootstrap-token.js';
import type { ServiceManagerKind, ServiceUnit } from '../../hosts/service-manager.js';

/** The distributions edgeadm knows. */
export type DistributionName = 'k3s' | 'kubeadm';

/** What a control plane's configuration says. */
export interface ServerConfigInput {
  nodeName: string;
  /** How the kubelet and the runtime manage cgroups (kubeadm); {@link cgroupDriverOf}. Default `systemd`. */
  cgroupDriver?: CgroupDriver;
  nodeLabels: Record<string, string>;
  advertiseAddress: string;
  /** Extra subject alternative names of the API server certificate. */
  certSans: string[];
  podCidr?: string;
  serviceCidr?: string;
  /** Start an HA-capable (embedded etcd) control plane. */
  isClusterInit?: boolean;
  /** The Kubernetes version of the install package (kubeadm pins its control plane to it). */
  kubernetesVersion?: string;
  /** Join the control plane at this URL instead of starting a cluster (another control plane). */
  joinServer?: string;
  /** The credential another control plane joins with (k3s: the server token; kubeadm: the bootstrap token). A secret. */
  joinToken?: string;
  /** The shared address of the control planes, `host:port` (kubeadm: ClusterConfiguration.controlPlaneEndpoint). */
  controlPlaneEndpoint?: string;
  /**
   * The key the control-plane certificates are encrypted with (kubeadm:
   * InitConfiguration.certificateKey for the upload, JoinConfiguration
   * controlPlane.certificateKey for another control plane). A secret.
   */
  certificateKey?: string;
  /** The CA bundle discovery verified, for another control plane (kubeadm pins it again in its own discovery). */
  caPem?: string;
  /** The API server sends its cluster egress through edgeadm's node tunnel (init --enable-edge, a distribution with one). */
  isEgressThroughNodeTunnel?: boolean;
}

/** What a container runtime's configuration depends on beyond the distribution. */
export interface RuntimeConfigOptions {
  cgroupDriver: CgroupDriver;
  /**
   * The host cannot lower OOM scores (it lacks CAP_SYS_RESOURCE, as a host
   * that is itself a container does): the runtime keeps every container's
   * OOM score at or above its own instead of failing to start pods whose
   * score the kubelet set below zero.
   */
  isOomScoreRestricted: boolean;
}

/** How the kubelet and the container runtime create cgroups. */
export type CgroupDriver = 'systemd' | 'cgroupfs';

/**
 * The cgroup driver for a host: systemd's where systemd runs the services
 * (what kubeadm recommends), cgroupfs where there is no systemd to ask
 * (EDGEADM_SERVICE_MANAGER=direct). The kubelet and containerd must agree,
 * and both follow the host's service manager.
 */
export function cgroupDriverOf(serviceManager: ServiceManagerKind): CgroupDriver {
  return serviceManager === 'systemd' ? 'systemd' : 'cgroupfs';
}

/** What a joining node's configuration says. */
export interface AgentConfigInput {
  nodeName: string;
  nodeLabels: Record<string, string>;
  /** The API server, `https://host:port`, as discovery verified it. */
  server: string;
  /** The distribution's join credential (a secret). */
  joinCredential: string;
  /** The CA bundle discovery verified (kubeadm pins it again in its own discovery). */
  caPem?: string;
  /** Taints the node registers with, `key=value:Effect`. */
  nodeTaints?: string[];
  /**
   * A kubeconfig the node's kubelet uses instead of the one the agent
   * writes: the edge-proxy's, so that the kubelet's traffic goes through it.
   */
  kubeletKubeconfig?: string;
}

/** What a role's service unit depends on beyond the role. */
export interface ServiceUnitOptions {
  /** The kubeconfig the node's kubelet uses instead of its own (the edge-proxy's); see {@link AgentConfigInput}. */
  kubeletKubeconfig?: string;
}

/**
 * A container runtime the distribution needs installed beside it (kubeadm:
 * containerd). k3s embeds its own and has none.
 */
export interface ContainerRuntime {
  /** For messages: `containerd`. */
  readonly name: string;
  /** Binaries the install package must carry under bin/ for it. */
  readonly requiredBinaries: readonly string[];
  /** Its configuration file and text. */
  readonly configPath: string;
  renderConfig(options: RuntimeConfigOptions): string;
  readonly serviceUnit: ServiceUnit;
  /** The socket that answers once the runtime is up. */
  readonly socketPath: string;
  /** Where the package's cni/ plugins are installed. */
  readonly cniBinDir: string;
  /** Directories the runtime owns outright, removed with their content by reset. */
  readonly ownedDirectories: readonly string[];
  /** The binary that imports the package's airgap images (under bin/ when images/ has any). */
  readonly imageImportBinary: string;
  /** The command that imports one airgap image archive (`images/*.tar`) into the runtime. */
  imageImportCommand(archivePath: string): string;
}

/**
 * A one-shot command that completes a node after its service runs
 * (`kubeadm init --config …`, `kubeadm join --config …`). k3s needs none:
 * its service does everything.
 */
export interface SetupCommand {
  command: string;
  description: string;
  timeoutMs: number;
}

/**
 * How a node is set up: it starts the cluster (`init`) or joins one
 * (`join`: a worker, or another control plane).
 */
export type NodeSetup = 'init' | 'join';

/**
 * A distribution that uploads the control-plane certificates itself
 * (kubeadm: `kubeadm init phase upload-certs`), into a Secret whose entries
 * are each AES-256-GCM encrypted with the certificate key (nonce first, tag
 * last), readable by bootstrap tokens. edgeadm runs the upload and checks
 * the Secret; it never reads or sends the keys itself.
 */
export interface CertsUpload {
  /** The Secret in kube-system. */
  readonly secretName: string;
  /** Its entry with the cluster CA certificate (checked against the CA discovery verified). */
  readonly caEntry: string;
  /** Where the upload's configuration, holding the certificate key (mode 0600), is written while it runs. */
  readonly configPath: string;
  /** The command that uploads, reading the key from {@link configPath}. */
  readonly command: SetupCommand;
}

/**
 * For a distribution whose node agent asks its server's supervisor for its
 * configuration and certificates at every start (k3s): what an edge node's
 * edge-proxy stands in for that supervisor with (src/edge/k3s-supervisor.ts).
 */
export interface EdgeSupervisor {
  /**
   * The node's own serving certificate, signed by the server CA for
   * 127.0.0.1 and localhost, and its key: the proxy serves with it, so the
   * agent's TLS check of its server passes unchanged (k3s: the kubelet
   * serving certificate the supervisor issues every node at every start).
   */
  readonly servingCertPath: string;
  readonly servingKeyPath: string;
  /** The server CA the agent writes, which the kubelet then trusts the proxy with. */
  readonly serverCaPath: string;
  /** The agent's other parts that reach the API server through the proxy once the agent points at it: CN and files. */
  readonly agentClientCertificates: ReadonlyArray<{ commonName: string; certFile: string; keyFile: string }>;
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
  /** The configuration file of a control plane / joining node (`setup` defaults to init for a control plane). */
  configPath(role: 'control-plane' | 'worker', setup?: NodeSetup): string;
  renderServerConfig(input: ServerConfigInput): string;
  renderAgentConfig(input: AgentConfigInput): string;
  /**
   * The service unit of a role. With `kubeletKubeconfig` (an edge node), the
   * unit sends the kubelet to that kubeconfig where the distribution does
   * that in its unit (kubeadm: a drop-in); k3s does it in its configuration.
   */
  serviceUnit(role: 'control-plane' | 'worker', options?: ServiceUnitOptions): ServiceUnit;
  /** The cluster CA the control plane writes. */
  readonly caPath: string;
  /** The admin kubeconfig the control plane writes (its server may be a loopback address). */
  readonly adminKubeconfigPath: string;
  /** The kubeconfig a joined node's agent uses (client credentials of the node). */
  readonly nodeKubeconfigPath: string;
  /** The credential another control plane joins with, on the first one (k3s: the server token, which edgeadm uploads). */
  readonly serverTokenPath?: string;
  /** How the distribution uploads the control-plane certificates itself (kubeadm), instead of edgeadm. */
  readonly certsUpload?: CertsUpload;
  /** The CA that signs the node's client certificate (the edge-proxy checks the kubelet against it). */
  readonly nodeClientCaPath?: string;
  /** Directories the distribution owns outright, removed with their content by reset. */
  readonly ownedDirectories: readonly string[];
  /** The join credential for a node, from the CA bundle discovery verified and the bootstrap token. */
  joinCredential(options: { caPem: string; token: BootstrapToken }): string;
  /** A shell script that removes the network interfaces and iptables rules the distribution created. */
  networkCleanupScript(): string;
  /** Files the distribution writes outside its owned directories (kubeconfigs), removed by reset. */
  readonly ownedFiles?: readonly string[];
  /**
   * Where the distribution imports airgap image archives from when its
   * service starts; the package phase installs the package's images/ there.
   * Unset when edgeadm imports them itself (the runtime's `imageImportCommand`).
   */
  readonly airgapImagesDir?: string;
  /** The container runtime to install before the node's service (none: the distribution embeds one). */
  readonly runtime?: ContainerRuntime;
  /** The command that completes a node once its configuration is written and its service runs. */
  setupCommand?(role: 'control-plane' | 'worker', setup?: NodeSetup): SetupCommand;
  /** The command that undoes {@link setupCommand} (run first by reset, and after a failed setup). */
  readonly resetCommand?: string;
  /** With --enable-edge, the agent's supervisor goes through the edge-proxy too (k3s); none: only the kubelet does. */
  readonly edgeSupervisor?: EdgeSupervisor;
  /** Objects the control plane needs so that bootstrap tokens let nodes join (kubeadm's node bootstrap RBAC). */
  bootstrapObjects?(): KubeObject[];
  /**
   * With --enable-edge, the API server reaches edge nodes' kubelets through
   * edgeadm's node tunnel (kubeadm); none: the distribution has its own
   * (k3s's agent tunnel).
   */
  readonly nodeTunnel?: NodeTunnelFiles;
}

/** The files the node tunnel takes its identities from. */
export interface NodeTunnelFiles {
  /** On a node: the kubelet's client certificate and key, one PEM file the kubelet rotates. */
  readonly kubeletCredentialsPath: string;
  /** On the control plane: a serving certificate from the cluster CA for the API server's addresses, and its key. */
  readonly servingCertPath: string;
  readonly servingKeyPath: string;
}
