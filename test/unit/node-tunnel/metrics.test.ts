import { describe, expect, it } from 'vitest';
import { NodeTunnelCounters, renderNodeTunnelMetrics } from '../../../src/node-tunnel/metrics.js';

describe('the node tunnel metrics', () => {
  it('count tunnels, last seen per node, bytes per node and direction, and CONNECTs by outcome', () => {
    const counters = new NodeTunnelCounters();
    counters.countConnect('tunnel');
    counters.countConnect('tunnel');
    counters.countConnect('offline');
    counters.addBytes('edge-1', 100, 2000);
    counters.addBytes('edge-1', 5, 7);
    const text = renderNodeTunnelMetrics(
      [{ node: 'edge-1', connectedAt: 1_000_000, lastHeardAt: 1_005_999 }],
      counters,
    );
    expect(text).toContain('edgeadm_node_tunnel_connected 1\n');
    expect(text).toContain('edgeadm_node_tunnel_last_seen_seconds{node="edge-1"} 1005\n');
    expect(text).toContain('edgeadm_node_tunnel_connected_since_seconds{node="edge-1"} 1000\n');
    expect(text).toContain('edgeadm_node_tunnel_bytes_total{node="edge-1",direction="to_node"} 105\n');
    expect(text).toContain('edgeadm_node_tunnel_bytes_total{node="edge-1",direction="from_node"} 2007\n');
    expect(text).toContain('edgeadm_node_tunnel_connects_total{outcome="tunnel"} 2\n');
    expect(text).toContain('edgeadm_node_tunnel_connects_total{outcome="offline"} 1\n');
  });

  it('say no tunnel is connected when none is', () => {
    expect(renderNodeTunnelMetrics([], new NodeTunnelCounters())).toContain('edgeadm_node_tunnel_connected 0\n');
  });
});
