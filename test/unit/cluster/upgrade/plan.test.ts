import { describe, expect, it } from 'vitest';
import {
  formatUpgradePlan,
  parseUpgradePlanRequest,
  type UpgradePlanResult,
} from '../../../../src/cluster/upgrade/plan.js';

const connect = { host: 'root@10.0.0.10' };

describe('the upgrade plan request', () => {
  it('is parsed once, refusing an empty package path before anything is read', () => {
    expect(parseUpgradePlanRequest({ connect, installPkgPath: './pkg.tar.gz' })).toEqual({
      connect,
      packageSource: './pkg.tar.gz',
      trustedKeyFiles: [],
    });
    expect(parseUpgradePlanRequest({ connect, installPkgPath: undefined })).toEqual({ connect, trustedKeyFiles: [] });
    expect(() => parseUpgradePlanRequest({ connect, installPkgPath: '  ' })).toThrow(
      expect.objectContaining({ code: 'E_USAGE', exitCode: 3 }),
    );
  });
});

describe('the plan for people', () => {
  const result: UpgradePlanResult = {
    host: 'root@10.0.0.10:22',
    distribution: 'k3s',
    isHa: false,
    controlPlanes: 1,
    nodes: 2,
    edgeNodes: 1,
    apiServerVersion: 'v1.31.4+k3s1',
    package: { name: 'edge-k3s', file: './new.tar.gz', distribution: 'k3s', kubernetesVersion: 'v1.32.1+k3s1' },
    target: 'v1.32.1+k3s1',
    hosts: [
      {
        host: 'cp1',
        role: 'control-plane',
        isEdge: false,
        from: 'v1.31.4+k3s1',
        to: 'v1.32.1+k3s1',
        action: 'upgrade',
        step: 1,
        actions: ['back up the datastore'],
        refusals: [],
      },
      {
        host: 'shop-17',
        role: 'node',
        isEdge: true,
        from: 'v1.32.1+k3s1',
        to: 'v1.32.1+k3s1',
        action: 'none',
        actions: [],
        refusals: [],
      },
    ],
    isReadOnly: true,
  };

  it('lists hosts in upgrade order with their step, what would be done, and what is already done', () => {
    const lines = formatUpgradePlan(result);
    expect(lines[0]).toBe(
      'Cluster read through root@10.0.0.10:22: k3s, 1 control plane, 2 nodes (1 edge); API server v1.31.4+k3s1',
    );
    expect(lines).toContain('1. cp1      control plane v1.31.4+k3s1 -> v1.32.1+k3s1');
    expect(lines).toContain('     - back up the datastore');
    expect(lines).toContain('   shop-17  edge node     v1.32.1+k3s1 -> v1.32.1+k3s1  already at v1.32.1+k3s1');
    expect(lines.at(-1)).toBe('Nothing was changed on any host.');
  });
});
