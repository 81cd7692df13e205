import { describe, expect, it } from 'vitest';
import { clusterSnapshotOf, type NodeObject } from '../../../../src/cluster/upgrade/cluster-versions.js';
import { parseKubeVersion } from '../../../../src/cluster/upgrade/kube-version.js';
import { nodeSkewViolations } from '../../../../src/cluster/upgrade/node-skew.js';
import { parseUpgradeNodeRequest } from '../../../../src/cluster/upgrade/node-request.js';

const node = (name: string, version: string, isControlPlane = false): NodeObject => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: {
    name,
    labels: isControlPlane ? ({ 'node-role.kubernetes.io/control-plane': 'true' } as Record<string, string>) : {},
  },
  status: { nodeInfo: { kubeletVersion: version } },
});

const snapshot = clusterSnapshotOf({
  distribution: 'k3s',
  nodes: [node('cp', 'v1.32.1+k3s1', true), node('n1', 'v1.31.4+k3s1')],
  apiServerPods: [],
  servedVersion: 'v1.32.1+k3s1',
});

describe('nodeSkewViolations', () => {
  it('allows a node to the API server minor, and refuses a kubelet newer than the API server', () => {
    expect(nodeSkewViolations(snapshot, 'n1', parseKubeVersion('v1.32.1+k3s1', 't'))).toEqual([]);
    const newer = nodeSkewViolations(snapshot, 'n1', parseKubeVersion('v1.33.0+k3s1', 't'));
    expect(newer.map((v) => v.rule)).toEqual(['kubelet-not-newer-than-api-server']);
  });

  it('refuses a minor downgrade of the node', () => {
    const down = nodeSkewViolations(snapshot, 'n1', parseKubeVersion('v1.30.9+k3s1', 't'));
    expect(down.map((v) => v.rule)).toContain('no-minor-downgrade');
  });
});

describe('parseUpgradeNodeRequest', () => {
  it('needs a package and a control plane, and positive deadlines', () => {
    const base = { connect: { host: 'n1' }, controlPlane: { host: 'cp' }, installPkgPath: 'p.tar.gz' };
    expect(parseUpgradeNodeRequest(base)).toMatchObject({ isForced: false, drainTimeoutMs: 300_000 });
    expect(() => parseUpgradeNodeRequest({ ...base, installPkgPath: ' ' })).toThrow(/--install-pkg-path/);
    expect(() => parseUpgradeNodeRequest({ ...base, controlPlane: undefined })).toThrow(/--control-plane/);
    expect(() => parseUpgradeNodeRequest({ ...base, drainTimeout: '0s' })).toThrow(/--drain-timeout must be positive/);
    expect(parseUpgradeNodeRequest({ ...base, drainTimeout: '90s', isForced: true })).toMatchObject({
      drainTimeoutMs: 90_000,
      isForced: true,
    });
  });
});
