/**
 * The node tunnel server's state as Prometheus text: the tunnels connected,
 * when each node was last heard from, the bytes each node's connections
 * carried, and the API server's CONNECTs by where they went. Counters live
 * here; the egress server bumps them.
 *
 * Pure: no I/O.
 */
import type { Route } from './routing.js';

/** Where a CONNECT went, or why it did not. */
export type ConnectOutcome = Route['kind'] | 'invalid' | 'tunnel_failed';

/** One node's live tunnel, as the registry reports it. */
export interface TunnelGauge {
  node: string;
  /** Epoch ms. */
  connectedAt: number;
  /** Epoch ms: the last time the agent sent anything (pings included), to within the silence sweep. */
  lastHeardAt: number;
}

/** Counts CONNECTs by outcome and relayed bytes by node. */
export class NodeTunnelCounters {
  readonly connects = new Map<ConnectOutcome, number>();
  /** Per node: bytes from the API server to the kubelet, and back. */
  readonly bytes = new Map<string, { toNode: number; fromNode: number }>();

  countConnect(outcome: ConnectOutcome): void {
    this.connects.set(outcome, (this.connects.get(outcome) ?? 0) + 1);
  }

  addBytes(node: string, toNode: number, fromNode: number): void {
    const entry = this.bytes.get(node) ?? { toNode: 0, fromNode: 0 };
    entry.toNode += toNode;
    entry.fromNode += fromNode;
    this.bytes.set(node, entry);
  }
}

const label = (value: string): string => value.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));

/** Renders the Prometheus text exposition format (version 0.0.4). */
export function renderNodeTunnelMetrics(tunnels: readonly TunnelGauge[], counters: NodeTunnelCounters): string {
  const lines = [
    '# HELP edgeadm_node_tunnel_connected Edge nodes whose tunnel agent is connected.',
    '# TYPE edgeadm_node_tunnel_connected gauge',
    `edgeadm_node_tunnel_connected ${tunnels.length}`,
    '# HELP edgeadm_node_tunnel_last_seen_seconds When each connected node last sent anything (Unix time).',
    '# TYPE edgeadm_node_tunnel_last_seen_seconds gauge',
    ...tunnels.map(
      (t) => `edgeadm_node_tunnel_last_seen_seconds{node="${label(t.node)}"} ${Math.floor(t.lastHeardAt / 1000)}`,
    ),
    "# HELP edgeadm_node_tunnel_connected_since_seconds When each connected node's tunnel came up (Unix time).",
    '# TYPE edgeadm_node_tunnel_connected_since_seconds gauge',
    ...tunnels.map(
      (t) => `edgeadm_node_tunnel_connected_since_seconds{node="${label(t.node)}"} ${Math.floor(t.connectedAt / 1000)}`,
    ),
    "# HELP edgeadm_node_tunnel_bytes_total Bytes relayed through a node's tunnel, by direction (to_node: from the API server).",
    '# TYPE edgeadm_node_tunnel_bytes_total counter',
    ...[...counters.bytes].flatMap(([node, bytes]) => [
      `edgeadm_node_tunnel_bytes_total{node="${label(node)}",direction="to_node"} ${bytes.toNode}`,
      `edgeadm_node_tunnel_bytes_total{node="${label(node)}",direction="from_node"} ${bytes.fromNode}`,
    ]),
    "# HELP edgeadm_node_tunnel_connects_total The API server's CONNECTs by outcome.",
    '# TYPE edgeadm_node_tunnel_connects_total counter',
    ...[...counters.connects].map(
      ([outcome, count]) => `edgeadm_node_tunnel_connects_total{outcome="${outcome}"} ${count}`,
    ),
  ];
  return `${lines.join('\n')}\n`;
}
