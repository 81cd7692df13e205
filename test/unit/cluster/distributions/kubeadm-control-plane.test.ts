/**
 * The kubeadm driver's configuration for more control planes (HA): the
 * shared endpoint and the upload's certificate key in init, and the
 * JoinConfiguration of another control plane.
 */
import { loadAll } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import {
  KUBEADM_UPLOAD_CERTS_CONFIG_PATH,
  kubeadmDistribution,
  renderKubeadmInitConfig,
  renderKubeadmServerConfig,
} from '../../../../src/cluster/distributions/kubeadm.js';
import type { ServerConfigInput } from '../../../../src/cluster/distributions/distribution.js';
import { caPinsOfPem } from '../../../../src/trust/ca-pin.js';
import { createCa } from '../../../../src/trust/pki.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read parsed kubeadm YAML
type Doc = Record<string, any>;

const KEY = 'c3'.repeat(32);
const first: ServerConfigInput = {
  nodeName: 'cp-1',
  nodeLabels: {},
  advertiseAddress: '10.0.0.10',
  certSans: ['lb.example.com'],
  kubernetesVersion: 'v1.30.4',
  controlPlaneEndpoint: 'lb.example.com:6443',
};

describe('kubeadm init with --control-plane-endpoint', () => {
  it('sets ClusterConfiguration.controlPlaneEndpoint and keeps it among the API server SANs', () => {
    const [init, cluster] = loadAll(renderKubeadmInitConfig(first)) as Doc[];
    expect(cluster!.controlPlaneEndpoint).toBe('lb.example.com:6443');
    expect(cluster!.apiServer.certSANs).toEqual(['10.0.0.10', 'lb.example.com']);
    // The init configuration never holds the certificate key.
    expect(init!).not.toHaveProperty('certificateKey');
  });

  it('puts the certificate key in the InitConfiguration of the upload only', () => {
    const [init, cluster] = loadAll(renderKubeadmServerConfig({ ...first, certificateKey: KEY })) as Doc[];
    expect(init!.kind).toBe('InitConfiguration');
    expect(init!.certificateKey).toBe(KEY);
    expect(cluster!.controlPlaneEndpoint).toBe('lb.example.com:6443');
  });

  it('uploads with kubeadm init phase upload-certs, the key read from a file and never printed', () => {
    const upload = kubeadmDistribution.certsUpload!;
    expect(upload.secretName).toBe('kubeadm-certs');
    expect(upload.configPath).toBe(KUBEADM_UPLOAD_CERTS_CONFIG_PATH);
    expect(upload.command.command).toBe(
      `/usr/local/bin/kubeadm init phase upload-certs --upload-certs --skip-certificate-key-print --config ${KUBEADM_UPLOAD_CERTS_CONFIG_PATH}`,
    );
  });
});

describe('kubeadm join --control-plane', () => {
  it('is a JoinConfiguration with discovery pinned to the verified CA and controlPlane with the key and address', async () => {
    const ca = await createCa({ commonName: 'test-ca' });
    const [join, ...rest] = loadAll(
      renderKubeadmServerConfig({
        nodeName: 'cp-2',
        nodeLabels: {},
        advertiseAddress: '10.0.0.11',
        certSans: ['10.0.0.10'],
        joinServer: 'https://10.0.0.10:6443',
        joinToken: 'abcdef.0123456789abcdef',
        certificateKey: KEY,
        caPem: ca.certPem,
      }),
    ) as Doc[];
    expect(rest).toEqual([]);
    expect(join!.apiVersion).toBe('kubeadm.k8s.io/v1beta4');
    expect(join!.kind).toBe('JoinConfiguration');
    expect(join!.discovery.bootstrapToken).toEqual({
      apiServerEndpoint: '10.0.0.10:6443',
      token: 'abcdef.0123456789abcdef',
      caCertHashes: caPinsOfPem(ca.certPem),
    });
    expect(join!.controlPlane).toEqual({
      localAPIEndpoint: { advertiseAddress: '10.0.0.11', bindPort: 6443 },
      certificateKey: KEY,
    });
    expect(join!.nodeRegistration.name).toBe('cp-2');
  });

  it('refuses to render without the verified CA or the certificate key', () => {
    const input: ServerConfigInput = {
      nodeName: 'cp-2',
      nodeLabels: {},
      advertiseAddress: '10.0.0.11',
      certSans: [],
      joinServer: 'https://10.0.0.10:6443',
      joinToken: 'abcdef.0123456789abcdef',
    };
    expect(() => renderKubeadmServerConfig({ ...input, certificateKey: KEY })).toThrow(
      expect.objectContaining({ code: 'E_KUBEADM_NO_CA' }),
    );
    expect(() => renderKubeadmServerConfig({ ...input, caPem: 'x' })).toThrow(
      expect.objectContaining({ code: 'E_FLAG_MISSING' }),
    );
  });

  it('is written where a joining node writes and run with kubeadm join, not kubeadm init', () => {
    expect(kubeadmDistribution.configPath('control-plane', 'join')).toBe(kubeadmDistribution.configPath('worker'));
    expect(kubeadmDistribution.setupCommand!('control-plane', 'join').command).toBe(
      '/usr/local/bin/kubeadm join --config /etc/kubernetes/edgeadm-kubeadm-join.yaml',
    );
    expect(kubeadmDistribution.configPath('control-plane')).toBe('/etc/kubernetes/edgeadm-kubeadm-init.yaml');
    expect(kubeadmDistribution.setupCommand!('control-plane', 'init').command).toContain('kubeadm init --config');
  });
});
