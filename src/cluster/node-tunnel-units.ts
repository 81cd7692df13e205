/**
 * The node tunnel's two systemd units: the server on a kubeadm control plane
 * (init --enable-edge) and the agent on each edge node (join --enable-edge).
 * See src/node-tunnel/README.md for what they do.
 */
import { ValidationError } from '../errors.js';

/** The control plane's unit. */
export const NODE_TUNNEL_SERVER_UNIT_NAME = 'edgeadm-node-tunnel-server.service';
/** An edge node's unit. */
export const NODE_TUNNEL_AGENT_UNIT_NAME = 'edgeadm-node-tunnel.service';
/** Where the server keeps its run logs (EDGEADM_HOME). */
export const NODE_TUNNEL_SERVER_DATA_DIR = '/var/lib/edgeadm/node-tunnel-server';
/** Where the agent keeps its run logs (EDGEADM_HOME). */
export const NODE_TUNNEL_AGENT_DATA_DIR = '/var/lib/edgeadm/node-tunnel';

/** Paths, URLs and names may not carry what systemd's command line would split or expand. */
const UNIT_SAFE = /^[A-Za-z0-9@%+=:,./_[\]-]+$/;

function checked<T extends Record<string, string>>(input: T, unit: string): T {
  for (const [what, value] of Object.entries(input)) {
    if (!UNIT_SAFE.test(value)) {
      throw new ValidationError(`the ${what} ${JSON.stringify(value)} cannot go into the ${unit} unit's command line`, {
        code: 'E_EDGE_UNIT_VALUE',
      });
    }
  }
  return input;
}

/** What the server's unit is made from. */
export interface NodeTunnelServerUnitInput {
  edgeadmBin: string;
  kubeconfig: string;
  socket: string;
  /** The directory of the socket (and of the API server's egress configuration), the one place it writes. */
  socketDir: string;
  listen: string;
  caFile: string;
  tlsCert: string;
  tlsKey: string;
}

/**
 * The server's unit text. Pure.
 *
 * @throws {ValidationError} `E_EDGE_UNIT_VALUE` for a value with spaces, quotes or `$`.
 */
export function renderNodeTunnelServerUnit(input: NodeTunnelServerUnitInput): string {
  const v = checked({ ...input }, 'node tunnel server');
  return `# edgeadm node tunnel server: the API server reaches edge nodes' kubelets
# (logs, exec, port-forward) through the tunnels the nodes open to it.
# Installed by "edgeadm init --enable-edge" (kubeadm).
[Unit]
Description=edgeadm node tunnel server (the API server to edge nodes' kubelets)
Documentation=https://github.com/edgeadm/edgeadm
Wants=network-online.target
After=network-online.target kubelet.service

[Service]
Type=simple
ExecStart=${v.edgeadmBin} agent node-tunnel-server --kubeconfig ${v.kubeconfig} --socket ${v.socket} --listen ${v.listen} --ca-file ${v.caFile} --tls-cert ${v.tlsCert} --tls-key ${v.tlsKey}
Restart=always
RestartSec=2
Environment=EDGEADM_HOME=${NODE_TUNNEL_SERVER_DATA_DIR}
StateDirectory=edgeadm/node-tunnel-server
StateDirectoryMode=0700
UMask=0077
LimitNOFILE=65536
# It reads the admin kubeconfig and the API server's key (root's, 0600),
# listens on its port and its socket; nothing else.
CapabilityBoundingSet=
NoNewPrivileges=yes
ProtectSystem=strict
ReadWritePaths=${NODE_TUNNEL_SERVER_DATA_DIR} ${v.socketDir}
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX
MemoryMax=256M

[Install]
WantedBy=multi-user.target
`;
}

/** What an edge node's agent unit is made from. */
export interface NodeTunnelAgentUnitInput {
  edgeadmBin: string;
  server: string;
  nodeName: string;
  caFile: string;
  credentials: string;
}

/**
 * An edge node's agent unit text. Pure.
 *
 * @throws {ValidationError} `E_EDGE_UNIT_VALUE` for a value with spaces, quotes or `$`.
 */
export function renderNodeTunnelAgentUnit(input: NodeTunnelAgentUnitInput): string {
  const v = checked({ ...input }, 'node tunnel agent');
  return `# edgeadm node tunnel agent: keeps a connection out to the control plane so
# that the API server reaches this node's kubelet (logs, exec, port-forward)
# behind NAT. Installed by "edgeadm join --enable-edge" (kubeadm).
[Unit]
Description=edgeadm node tunnel agent (the API server to this node's kubelet)
Documentation=https://github.com/edgeadm/edgeadm
Wants=network-online.target
After=network-online.target kubelet.service

[Service]
Type=simple
ExecStart=${v.edgeadmBin} agent node-tunnel --server ${v.server} --node-name ${v.nodeName} --ca-file ${v.caFile} --credentials ${v.credentials}
Restart=always
RestartSec=5
Environment=EDGEADM_HOME=${NODE_TUNNEL_AGENT_DATA_DIR}
StateDirectory=edgeadm/node-tunnel
StateDirectoryMode=0700
UMask=0077
# It reads the kubelet's client certificate (root's, 0600) and talks TCP.
CapabilityBoundingSet=
NoNewPrivileges=yes
ProtectSystem=strict
ReadWritePaths=${NODE_TUNNEL_AGENT_DATA_DIR}
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX
MemoryMax=128M

[Install]
WantedBy=multi-user.target
`;
}
