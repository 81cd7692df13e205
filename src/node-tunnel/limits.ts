/**
 * Every port, path, bound and timeout of the node tunnel, in one place.
 */

/** The control plane's port where edge nodes' tunnel agents connect (TLS, the kubelet's client certificate). */
export const NODE_TUNNEL_PORT = 10350;
/** The server's plain-HTTP /metrics and /healthz, on the control plane's loopback. */
export const NODE_TUNNEL_METRICS_LISTEN = '127.0.0.1:10351';
/** The kubelet's default port, where an edge node's agent carries the API server's connections. */
export const KUBELET_PORT = 10250;
/** Where init writes what the API server's egress selector reads, and where the server listens for it. */
export const EGRESS_DIR = '/etc/kubernetes/edgeadm';
/** The EgressSelectorConfiguration file (`--egress-selector-config-file`). */
export const EGRESS_CONFIG_PATH = `${EGRESS_DIR}/egress-selector.yaml`;
/** The Unix socket the API server sends its cluster egress to (HTTP CONNECT). */
export const EGRESS_SOCKET_PATH = `${EGRESS_DIR}/egress.sock`;
/** The Node label that marks an edge node (set by join --enable-edge). */
export const EDGE_NODE_LABEL = 'edgeadm.io/edge';

/** Largest CONNECT request head the server reads from the API server. */
export const CONNECT_HEAD_MAX_BYTES = 8 * 1024;
/** How long the API server has to send its CONNECT head once connected. */
export const CONNECT_HEAD_TIMEOUT_MS = 10_000;
/**
 * How long a node's agent has to answer a stream with its kubelet connected.
 * The API server itself puts no deadline on the CONNECT answer
 * (egressselector's tunnelHTTPConnect reads it without one), so this is the
 * bound a kubectl waits at most for a node that stalls.
 */
export const TUNNEL_OPEN_TIMEOUT_MS = 10_000;
/**
 * How long a node's tunnel has to answer the PING sent before each
 * connection: a tunnel whose link died without a word (a cut uplink sends
 * no FIN) is answered "offline" after this, not after the silence sweep.
 */
export const TUNNEL_PROBE_TIMEOUT_MS = 3_000;
/** How long a direct connection (an address that is no edge node's) may take to open. */
export const DIRECT_DIAL_TIMEOUT_MS = 10_000;
/** How long the agent's connection to its own kubelet may take to open. */
export const KUBELET_DIAL_TIMEOUT_MS = 5_000;
/**
 * A relayed connection with no bytes either way for this long is closed:
 * the kubelet's own default streamingConnectionIdleTimeout (4 h), so a quiet
 * `logs -f` or exec lives as long as it would without the tunnel.
 */
export const RELAY_IDLE_TIMEOUT_MS = 4 * 60 * 60_000;
/** How long the other side of a closed relay may still flush what it holds. */
export const RELAY_FLUSH_GRACE_MS = 5_000;
/** How long a TLS handshake on the tunnel port may take. */
export const TLS_HANDSHAKE_TIMEOUT_MS = 10_000;
/**
 * How often the server reads its TLS files again: `kubeadm certs renew` and
 * `kubeadm upgrade` replace the API server's certificate it serves with, and
 * kubelets rotate the cluster's node certificates against the same CA.
 */
export const TLS_RELOAD_INTERVAL_MS = 10 * 60_000;
/** How often the server lists Nodes (their addresses and labels). */
export const NODE_LIST_INTERVAL_MS = 10_000;
/** A CONNECT to an unknown address lists Nodes again if the last list is older than this. */
export const NODE_LIST_MIN_AGE_MS = 1_000;
/** How often the server looks at its tunnels: pings the quiet ones, closes the silent ones (TUNNEL_SILENCE_LIMIT_MS). */
export const SILENCE_SWEEP_INTERVAL_MS = 1_000;
/** A tunnel the server has read nothing from for this long is pinged (see TUNNEL_PROBE_TIMEOUT_MS). */
export const TUNNEL_QUIET_MS = 2_000;
