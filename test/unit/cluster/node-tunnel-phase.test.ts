import { describe, expect, it } from 'vitest';
import { k3sDistribution } from '../../../src/cluster/distributions/k3s.js';
import { kubeadmDistribution } from '../../../src/cluster/distributions/kubeadm.js';
import {
  egressSelectorPhase,
  nodeTunnelAgentPhase,
  nodeTunnelServerPhase,
  type NodeTunnelAgentData,
} from '../../../src/cluster/node-tunnel-phase.js';

type Ctx = NodeTunnelAgentData;
const ctxOf = (fields: Partial<Ctx>): Ctx =>
  ({ distribution: kubeadmDistribution, enableEdge: false, ...fields }) as Ctx;
const joinDeps = { nodeName: () => 'edge-1', discovery: () => Promise.reject(new Error('not asked')) };

describe('when the node tunnel phases run', () => {
  it('init --enable-edge on kubeadm: the egress selector and the server', () => {
    const init = ctxOf({ role: 'control-plane', enableEdge: true });
    expect(egressSelectorPhase<Ctx>().runIf!(init)).toBe(true);
    expect(nodeTunnelServerPhase<Ctx>().runIf!(init)).toBe(true);
  });

  it('k3s, and kubeadm without --enable-edge: none (k3s has its own tunnel)', () => {
    for (const ctx of [
      ctxOf({ role: 'control-plane', enableEdge: true, distribution: k3sDistribution }),
      ctxOf({ role: 'control-plane' }),
    ]) {
      expect(egressSelectorPhase<Ctx>().runIf!(ctx)).toBe(false);
      expect(nodeTunnelServerPhase<Ctx>().runIf!(ctx)).toBe(false);
    }
    const k3sEdge = ctxOf({ role: 'worker', enableEdge: true, distribution: k3sDistribution });
    expect(nodeTunnelAgentPhase<Ctx>(joinDeps).runIf!(k3sEdge)).toBe(false);
  });

  it('join --enable-edge of a kubeadm worker: the agent, and no egress selector on the worker', () => {
    const worker = ctxOf({ role: 'worker', enableEdge: true });
    const isEdgeCluster = (): Promise<boolean> => Promise.resolve(true);
    expect(egressSelectorPhase<Ctx>({ isEdgeCluster }).runIf!(worker)).toBe(false);
    expect(nodeTunnelAgentPhase<Ctx>(joinDeps).runIf!(worker)).toBe(true);
  });

  it('join --control-plane on kubeadm asks whether the cluster is an edge one, and then runs the server too', async () => {
    const controlPlane = ctxOf({ role: 'control-plane', say: () => undefined, isDryRun: false });
    const asked: string[] = [];
    const phase = egressSelectorPhase<Ctx>({
      isEdgeCluster: () => {
        asked.push('asked');
        return Promise.resolve(false);
      },
    });
    expect(phase.runIf!(controlPlane)).toBe(true);
    expect(await phase.run!(controlPlane)).toBe('unchanged');
    expect(asked).toEqual(['asked']);
    expect(nodeTunnelAgentPhase<Ctx>(joinDeps).runIf!(controlPlane)).toBe(false);
    expect(nodeTunnelAgentPhase<Ctx>(joinDeps).runIf!({ ...controlPlane, isEdgeCluster: true })).toBe(true);
  });
});
