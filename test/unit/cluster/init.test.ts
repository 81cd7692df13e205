import { loadAll } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { k3sDistribution } from '../../../src/cluster/distributions/k3s.js';
import { kubeadmDistribution } from '../../../src/cluster/distributions/kubeadm.js';
import { serverConfigOf, type InitData } from '../../../src/cluster/init.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read parsed kubeadm YAML
type Doc = Record<string, any>;

function initData(overrides: Partial<InitData>): InitData {
  return {
    host: { name: 'root@10.0.0.10' },
    distribution: kubeadmDistribution,
    nodeName: 'cp-1',
    advertiseAddress: '10.0.0.10',
    nodeLabels: {},
    certSans: [],
    podCidr: '10.42.0.0/16',
    serviceCidr: '10.43.0.0/16',
    package: { manifest: { kubernetesVersion: 'v1.30.4' } },
    serviceManager: { kind: 'systemd' },
    ...overrides,
  } as unknown as InitData;
}

describe("init's control-plane configuration", () => {
  it("gives the kubelet the cgroup driver of the host's service manager: systemd's, or cgroupfs without systemd", () => {
    const driverOf = (kind: string): unknown =>
      (
        loadAll(
          kubeadmDistribution.renderServerConfig(serverConfigOf(initData({ serviceManager: { kind } } as never))),
        ) as Doc[]
      )[2]!.cgroupDriver;
    expect(driverOf('systemd')).toBe('systemd');
    expect(driverOf('direct')).toBe('cgroupfs');
  });

  it('with --control-plane-endpoint gives kubeadm the endpoint (default port) and the certificate its name', () => {
    const ctx = initData({ controlPlaneEndpoint: 'lb.example.com' });
    const [, cluster] = loadAll(kubeadmDistribution.renderServerConfig(serverConfigOf(ctx))) as Doc[];
    expect(cluster!.controlPlaneEndpoint).toBe('lb.example.com:6443');
    expect(cluster!.apiServer.certSANs).toEqual(['10.0.0.10', 'lb.example.com']);
  });

  it('keeps a port given with the endpoint', () => {
    const input = serverConfigOf(initData({ controlPlaneEndpoint: 'lb.example.com:7443' }));
    expect(input.controlPlaneEndpoint).toBe('lb.example.com:7443');
    expect(input.certSans).toEqual(['lb.example.com']);
  });

  it('without it, kubeadm gets the advertised address and k3s no cluster-init', () => {
    const [, cluster] = loadAll(kubeadmDistribution.renderServerConfig(serverConfigOf(initData({})))) as Doc[];
    expect(cluster!.controlPlaneEndpoint).toBe('10.0.0.10:6443');
    expect(serverConfigOf(initData({ distribution: k3sDistribution }))).not.toHaveProperty('isClusterInit');
  });
});
