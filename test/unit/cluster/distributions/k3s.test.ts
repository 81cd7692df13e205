import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import {
  k3sDistribution,
  renderK3sAgentConfig,
  renderK3sServerConfig,
} from '../../../../src/cluster/distributions/k3s.js';
import { K3S_AGENT_UNIT, K3S_SERVER_UNIT } from '../../../../src/cluster/distributions/k3s-units.js';
import { distributionFor } from '../../../../src/cluster/distributions/index.js';
import { effectiveUnitOf } from '../../../../src/hosts/direct-unit.js';

const execStartOf = (content: string): string => effectiveUnitOf({ name: 'unit.service', content }).execStart;
import { parseK3sToken } from '../../../../src/trust/k3s-token.js';
import { createCa } from '../../../../src/trust/pki.js';

describe('k3s server config.yaml', () => {
  it('renders the flags into the keys k3s reads', () => {
    const text = renderK3sServerConfig({
      nodeName: 'cp-1',
      nodeLabels: { site: 'store-42', tier: 'edge' },
      advertiseAddress: '10.0.0.10',
      certSans: ['api.example.com', '10.0.0.10'],
      podCidr: '10.42.0.0/16',
      serviceCidr: '10.43.0.0/16',
    });
    expect(load(text)).toEqual({
      'node-name': 'cp-1',
      'advertise-address': '10.0.0.10',
      'node-ip': '10.0.0.10',
      'tls-san': ['10.0.0.10', 'api.example.com'],
      'write-kubeconfig-mode': '0600',
      'node-label': ['site=store-42', 'tier=edge'],
      'cluster-cidr': '10.42.0.0/16',
      'service-cidr': '10.43.0.0/16',
    });
  });

  it('leaves out what was not asked for, and sets cluster-init for HA', () => {
    const config = load(
      renderK3sServerConfig({
        nodeName: 'cp-1',
        nodeLabels: {},
        advertiseAddress: '10.0.0.10',
        certSans: [],
        isClusterInit: true,
      }),
    ) as Record<string, unknown>;
    expect(config).not.toHaveProperty('node-label');
    expect(config).not.toHaveProperty('cluster-cidr');
    expect(config['cluster-init']).toBe(true);
  });
});

describe('k3s agent config.yaml', () => {
  it('points the agent at the verified server with the join token', () => {
    const config = load(
      renderK3sAgentConfig({
        nodeName: 'edge-1',
        nodeLabels: { site: 'a' },
        server: 'https://10.0.0.10:6443',
        joinCredential: 'K10abc::abcdef.0123456789abcdef',
      }),
    );
    expect(config).toEqual({
      server: 'https://10.0.0.10:6443',
      token: 'K10abc::abcdef.0123456789abcdef',
      'node-name': 'edge-1',
      'node-label': ['site=a'],
    });
  });

  it('gives an edge node its taint and points its kubelet at the edge-proxy kubeconfig', () => {
    const config = load(
      renderK3sAgentConfig({
        nodeName: 'edge-1',
        nodeLabels: {},
        server: 'https://10.0.0.10:6443',
        joinCredential: 'K10abc::abcdef.0123456789abcdef',
        nodeTaints: ['edgeadm.io/edge=true:NoSchedule'],
        kubeletKubeconfig: '/etc/edgeadm/edge-proxy/kubelet.kubeconfig',
      }),
    ) as Record<string, unknown>;
    expect(config['node-taint']).toEqual(['edgeadm.io/edge=true:NoSchedule']);
    expect(config['kubelet-arg']).toEqual(['kubeconfig=/etc/edgeadm/edge-proxy/kubelet.kubeconfig']);
  });

  it('builds the K10 join credential from the verified CA and the bootstrap token', async () => {
    const ca = await createCa({ commonName: 'test-ca' });
    const credential = k3sDistribution.joinCredential({
      caPem: ca.certPem,
      token: { id: 'abcdef', secret: '0123456789abcdef' },
    });
    const parsed = parseK3sToken(credential);
    expect(parsed.credentials).toEqual({
      kind: 'bootstrap-token',
      token: { id: 'abcdef', secret: '0123456789abcdef' },
    });
    expect(parsed.caHash).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('k3s units', () => {
  it('are embedded byte for byte as in assets/systemd', () => {
    expect(K3S_SERVER_UNIT).toBe(
      readFileSync(new URL('../../../../assets/systemd/k3s.service', import.meta.url), 'utf8'),
    );
    expect(K3S_AGENT_UNIT).toBe(
      readFileSync(new URL('../../../../assets/systemd/k3s-agent.service', import.meta.url), 'utf8'),
    );
  });

  it('start k3s server and k3s agent from the installed binary', () => {
    expect(execStartOf(k3sDistribution.serviceUnit('control-plane').content)).toBe('/usr/local/bin/k3s server');
    expect(execStartOf(k3sDistribution.serviceUnit('worker').content)).toBe('/usr/local/bin/k3s agent');
  });
});

describe('distributionFor', () => {
  it('gives k3s and kubeadm, and rejects unknown names', () => {
    expect(distributionFor('k3s').name).toBe('k3s');
    expect(distributionFor('kubeadm').name).toBe('kubeadm');
    expect(() => distributionFor('microk8s')).toThrow(expect.objectContaining({ code: 'E_DISTRIBUTION_UNKNOWN' }));
  });
});
