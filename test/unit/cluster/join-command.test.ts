import { describe, expect, it } from 'vitest';
import { clusterJoinTraits, renderJoinCommand } from '../../../src/cluster/join-command.js';
import { KubeApiError, type KubeClient } from '../../../src/kube/client.js';

const base = {
  address: '10.0.0.10:6443',
  token: 'abcdef.0123456789abcdef',
  caPin: `sha256:${'a'.repeat(64)}`,
};

/** A client whose cluster holds exactly these kube-system ConfigMaps. */
function clusterWith(configMaps: string[], status?: number): KubeClient {
  return {
    get: async (path: string) => {
      if (status !== undefined) throw new KubeApiError({ method: 'GET', path, status, message: 'forbidden' });
      const name = path.split('/').pop()!;
      return configMaps.includes(name) ? { metadata: { name } } : undefined;
    },
  } as unknown as KubeClient;
}

describe('the printed join command', () => {
  it('names kubeadm and --enable-edge when the cluster has them, and neither for a plain k3s cluster', () => {
    expect(renderJoinCommand({ ...base, distribution: 'k3s', isEdge: false })).toBe(
      `edgeadm join 10.0.0.10:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash ${base.caPin}`,
    );
    expect(
      renderJoinCommand({ ...base, installPackagePath: '/pkg.tar.gz', distribution: 'kubeadm', isEdge: true }),
    ).toBe(
      `edgeadm join 10.0.0.10:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash ${base.caPin} --install-pkg-path /pkg.tar.gz --distribution kubeadm --enable-edge`,
    );
    expect(renderJoinCommand({ ...base, distribution: 'k3s', isEdge: true })).toMatch(/ --enable-edge$/);
  });

  it("tells the distribution from kubeadm's kubeadm-config and an edge cluster from edgeadm-edge", async () => {
    expect(await clusterJoinTraits(clusterWith([]))).toEqual({ distribution: 'k3s', isEdge: false });
    expect(await clusterJoinTraits(clusterWith(['kubeadm-config']))).toEqual({
      distribution: 'kubeadm',
      isEdge: false,
    });
    expect(await clusterJoinTraits(clusterWith(['edgeadm-edge']))).toEqual({ distribution: 'k3s', isEdge: true });
    expect(await clusterJoinTraits(clusterWith(['kubeadm-config', 'edgeadm-edge']))).toEqual({
      distribution: 'kubeadm',
      isEdge: true,
    });
  });

  it('is a clear error, not a k3s guess, when the kubeconfig may not read them', async () => {
    await expect(clusterJoinTraits(clusterWith([], 403))).rejects.toMatchObject({ code: 'E_JOIN_COMMAND_UNKNOWN' });
  });
});
