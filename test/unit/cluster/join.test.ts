import { describe, expect, it } from 'vitest';
import { checkEdgeJoinMatches } from '../../../src/cluster/join.js';
import { emptyState } from '../../../src/cluster/state.js';

describe('a join of a node joined with --enable-edge (newcomer point 5)', () => {
  const edgeNode = {
    ...emptyState(),
    role: 'worker' as const,
    services: ['k3s-agent.service', 'edgeadm-edge-proxy.service'],
  };

  it('is refused without --enable-edge, before anything changes', () => {
    expect(() => checkEdgeJoinMatches(edgeNode, false, 'root@10.1.0.1:22')).toThrow(
      expect.objectContaining({ code: 'E_EDGE_JOIN_MISMATCH', exitCode: 3 }),
    );
  });

  it('goes on with --enable-edge, and on a node that never ran the edge-proxy', () => {
    expect(() => checkEdgeJoinMatches(edgeNode, true, 'root@10.1.0.1:22')).not.toThrow();
    expect(() => checkEdgeJoinMatches(emptyState(), false, 'root@10.1.0.2:22')).not.toThrow();
  });
});
