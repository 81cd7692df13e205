import { describe, expect, it } from 'vitest';
import { distributionFor, requireDistributionFeature } from '../../../../src/cluster/distributions/index.js';
import { runJoin } from '../../../../src/cluster/join.js';

describe('requireDistributionFeature', () => {
  it('lets k3s have control-plane joins and edge nodes', () => {
    expect(() => requireDistributionFeature(distributionFor('k3s'), 'control-plane-join')).not.toThrow();
    expect(() => requireDistributionFeature(distributionFor('k3s'), 'edge-node')).not.toThrow();
  });

  it('lets kubeadm have edge nodes', () => {
    expect(() => requireDistributionFeature(distributionFor('kubeadm'), 'edge-node')).not.toThrow();
  });

  it('refuses control-plane joins for kubeadm with E_NOT_BUILT (exit 3), naming the flags and the way out', () => {
    for (const feature of ['control-plane-join'] as const) {
      let caught: unknown;
      try {
        requireDistributionFeature(distributionFor('kubeadm'), feature);
      } catch (error) {
        caught = error;
      }
      expect(caught).toMatchObject({ code: 'E_NOT_BUILT', exitCode: 3 });
      expect((caught as Error).message).toMatch(/kubeadm distribution.*nothing was done/);
      expect((caught as { hints: string[] }).hints.join(' ')).toMatch(/--distribution k3s/);
    }
  });

  it('stops a kubeadm join --control-plane before the host is touched', async () => {
    const touched: string[] = [];
    const host = new Proxy({}, { get: (_target, key) => (touched.push(String(key)), () => undefined) });
    await expect(
      runJoin({
        host,
        distribution: distributionFor('kubeadm'),
        isControlPlane: true,
        enableEdge: false,
      } as unknown as Parameters<typeof runJoin>[0]),
    ).rejects.toMatchObject({ code: 'E_NOT_BUILT' });
    expect(touched).toEqual([]);
  });
});
