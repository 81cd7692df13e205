import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { k3sDistribution } from '../../../src/cluster/distributions/k3s.js';
import {
  EDGE_PROXY_SERVING_CA,
  nodeIdentityOf,
  renderEdgeKubeletKubeconfig,
  renderEdgeUpstreamKubeconfig,
  resolveEdgeadmBinary,
} from '../../../src/cluster/edge-node-phase.js';
import { EDGE_PROXY_UNIT_TEMPLATE, renderEdgeProxyUnit } from '../../../src/cluster/edge-proxy-unit.js';
import { effectiveUnitOf } from '../../../src/hosts/direct-unit.js';

const execStartOf = (content: string): string => effectiveUnitOf({ name: 'unit.service', content }).execStart;

const k3sKubeletKubeconfig = `apiVersion: v1
kind: Config
clusters:
  - name: local
    cluster:
      server: https://127.0.0.1:6444
      certificate-authority: /var/lib/rancher/k3s/agent/server-ca.crt
users:
  - name: user
    user:
      client-certificate: /var/lib/rancher/k3s/agent/client-kubelet.crt
      client-key: /var/lib/rancher/k3s/agent/client-kubelet.key
contexts:
  - name: local
    context: { cluster: local, user: user }
current-context: local
`;

describe('the edgeadm binary for the edge-proxy', () => {
  const base = { packageName: 'pkg', binDir: '/usr/local/bin', execPath: '/opt/edgeadm-linux-x64' };

  it('comes from the package when it carries bin/edgeadm, else from the running single binary', () => {
    expect(resolveEdgeadmBinary({ ...base, packageFiles: ['bin/k3s', 'bin/edgeadm'], isSingleBinary: true })).toEqual({
      kind: 'package',
      path: '/usr/local/bin/edgeadm',
    });
    expect(resolveEdgeadmBinary({ ...base, packageFiles: ['bin/k3s'], isSingleBinary: true })).toEqual({
      kind: 'upload',
      from: '/opt/edgeadm-linux-x64',
      path: '/usr/local/bin/edgeadm',
    });
  });

  it('is a clear error when neither is there', () => {
    expect(() => resolveEdgeadmBinary({ ...base, packageFiles: ['bin/k3s'], isSingleBinary: false })).toThrow(
      expect.objectContaining({ code: 'E_EDGE_NO_BINARY', exitCode: 3 }),
    );
  });
});

describe("the node's identity through the edge-proxy", () => {
  it('maps a client-certificate node (k3s) by file, and gives the kubelet the proxy with the same user', () => {
    const identity = nodeIdentityOf(k3sKubeletKubeconfig, '/var/lib/rancher/k3s/agent/kubelet.kubeconfig');
    expect(identity.clientCertificate).toEqual({
      certFile: '/var/lib/rancher/k3s/agent/client-kubelet.crt',
      keyFile: '/var/lib/rancher/k3s/agent/client-kubelet.key',
    });
    const kubeconfig = load(renderEdgeKubeletKubeconfig(identity)) as {
      clusters: Array<{ cluster: Record<string, string> }>;
      users: Array<{ user: Record<string, string> }>;
    };
    expect(kubeconfig.clusters[0]!.cluster).toEqual({
      server: 'https://127.0.0.1:10261',
      'certificate-authority': EDGE_PROXY_SERVING_CA,
    });
    expect(kubeconfig.users[0]!.user['client-certificate']).toBe('/var/lib/rancher/k3s/agent/client-kubelet.crt');
  });

  it('maps a kubeadm node by the certificate file the kubelet rotates, in the kubelet.conf it wrote after TLS bootstrap', () => {
    const kubeadmKubeletConf = `apiVersion: v1
kind: Config
clusters:
  - name: kubernetes
    cluster:
      server: https://10.0.0.10:6443
      certificate-authority-data: LS0tLS1CRUdJTg==
users:
  - name: default-auth
    user:
      client-certificate: /var/lib/kubelet/pki/kubelet-client-current.pem
      client-key: /var/lib/kubelet/pki/kubelet-client-current.pem
contexts:
  - name: default-context
    context: { cluster: kubernetes, namespace: default, user: default-auth }
current-context: default-context
`;
    const identity = nodeIdentityOf(kubeadmKubeletConf, '/etc/kubernetes/kubelet.conf');
    // One file holds both (a symlink the kubelet re-points at each rotation); the proxy re-reads it when it changes.
    expect(identity.clientCertificate).toEqual({
      certFile: '/var/lib/kubelet/pki/kubelet-client-current.pem',
      keyFile: '/var/lib/kubelet/pki/kubelet-client-current.pem',
    });
    const kubeconfig = load(renderEdgeKubeletKubeconfig(identity)) as {
      users: Array<{ user: Record<string, string> }>;
    };
    expect(kubeconfig.users[0]!.user).toEqual({
      'client-certificate': '/var/lib/kubelet/pki/kubelet-client-current.pem',
      'client-key': '/var/lib/kubelet/pki/kubelet-client-current.pem',
    });
  });

  it('passes a token node through unmapped, and refuses credentials the proxy cannot act for', () => {
    const token = k3sKubeletKubeconfig.replace(/client-certificate: .*\n\s*client-key: .*\n/, 'token: abc\n');
    expect(nodeIdentityOf(token, '/k').clientCertificate).toBeUndefined();
    const plugin = k3sKubeletKubeconfig.replace(/client-certificate: .*\n\s*client-key: .*\n/, 'exec: {command: x}\n');
    expect(() => nodeIdentityOf(plugin, '/k')).toThrow(expect.objectContaining({ code: 'E_EDGE_NODE_CREDENTIALS' }));
  });
});

describe('the edge-proxy unit', () => {
  it('is embedded byte for byte as in assets/systemd', () => {
    expect(EDGE_PROXY_UNIT_TEMPLATE).toBe(
      readFileSync(new URL('../../../assets/systemd/edgeadm-edge-proxy.service', import.meta.url), 'utf8'),
    );
  });

  it('runs the proxy with the node kubeconfig, the cache bounds and the kubelet certificate mapping', () => {
    const unit = renderEdgeProxyUnit({
      edgeadmBin: '/usr/local/bin/edgeadm',
      upstreamKubeconfig: '/var/lib/rancher/k3s/agent/kubelet.kubeconfig',
      cacheMaxBytes: '128Mi',
      cacheMaxEntries: 500,
      clientCertificate: {
        commonName: 'system:node:edge-1',
        certFile: '/a/client.crt',
        keyFile: '/a/client.key',
        caFile: '/a/client-ca.crt',
      },
    });
    expect(unit).not.toContain('{{');
    expect(execStartOf(unit).split(/\s+/)).toEqual([
      '/usr/local/bin/edgeadm',
      'agent',
      'edge-proxy',
      '--kubeconfig',
      '/var/lib/rancher/k3s/agent/kubelet.kubeconfig',
      '--listen',
      '127.0.0.1:10261',
      '--metrics-listen',
      '127.0.0.1:10262',
      '--cache-dir',
      '/var/lib/edgeadm/edge-proxy',
      '--cache-max-bytes',
      '128Mi',
      '--cache-max-entries',
      '500',
      '--log-file',
      '/var/log/edgeadm/edge-proxy.log',
      '--client-ca-file',
      '/a/client-ca.crt',
      '--client-cert-map',
      'system:node:edge-1=/a/client.crt,/a/client.key',
    ]);
  });

  it('keeps --jitless in NODE_OPTIONS, which MemoryDenyWriteExecute=yes needs, as one quoted assignment', () => {
    const unit = renderEdgeProxyUnit({
      edgeadmBin: '/usr/local/bin/edgeadm',
      upstreamKubeconfig: '/k',
      cacheMaxBytes: '1Mi',
      cacheMaxEntries: 1,
    });
    expect(unit).toMatch(/^MemoryDenyWriteExecute=yes$/m);
    // Unquoted, systemd would split the value at the space and drop "--jitless" (V8 then aborts under MDWE).
    const nodeOptions = unit.split('\n').filter((line) => line.includes('NODE_OPTIONS'));
    expect(nodeOptions).toEqual(['Environment="NODE_OPTIONS=--max-semi-space-size=1 --jitless"']);
    expect(unit).toMatch(/^CapabilityBoundingSet=$/m);
    expect(unit).toMatch(/^RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX$/m);
    expect(unit).toMatch(/^SystemCallFilter=@system-service$/m);
    expect(unit).toMatch(/^MemoryMax=\d+M$/m);
  });

  it("k3s: the proxy stands in for the supervisor, serving with the node's kubelet serving certificate, its upstream its own", () => {
    const supervisor = k3sDistribution.edgeSupervisor!;
    const unit = renderEdgeProxyUnit({
      edgeadmBin: '/usr/local/bin/edgeadm',
      upstreamKubeconfig: '/etc/edgeadm/edge-proxy/upstream.kubeconfig',
      cacheMaxBytes: '128Mi',
      cacheMaxEntries: 500,
      clientCertificate: {
        commonName: 'system:node:edge-1',
        certFile: '/a/client.crt',
        keyFile: '/a/client.key',
        caFile: '/a/client-ca.crt',
      },
      k3sSupervisor: {
        servingCertFile: supervisor.servingCertPath,
        servingKeyFile: supervisor.servingKeyPath,
        agentClientCertificates: supervisor.agentClientCertificates,
      },
    });
    const words = execStartOf(unit).split(/\s+/);
    expect(words.slice(words.indexOf('--client-ca-file'))).toEqual([
      '--client-ca-file',
      '/a/client-ca.crt',
      '--client-cert-map',
      'system:node:edge-1=/a/client.crt,/a/client.key',
      '--k3s-supervisor',
      '--tls-cert',
      '/var/lib/rancher/k3s/agent/serving-kubelet.crt',
      '--tls-key',
      '/var/lib/rancher/k3s/agent/serving-kubelet.key',
      '--client-cert-map',
      'system:kube-proxy=/var/lib/rancher/k3s/agent/client-kube-proxy.crt,/var/lib/rancher/k3s/agent/client-kube-proxy.key',
      '--client-cert-map',
      'system:k3s-controller=/var/lib/rancher/k3s/agent/client-k3s-controller.crt,/var/lib/rancher/k3s/agent/client-k3s-controller.key',
    ]);
    // Never the agent's own kubeconfig: once the agent points at the proxy, that names the proxy itself.
    expect(words[words.indexOf('--kubeconfig') + 1]).not.toBe(k3sDistribution.nodeKubeconfigPath);
  });

  it("k3s: the proxy's upstream is the real server with the node's identity; the kubelet trusts the server CA", () => {
    const identity = nodeIdentityOf(k3sKubeletKubeconfig, '/var/lib/rancher/k3s/agent/kubelet.kubeconfig');
    const upstream = load(
      renderEdgeUpstreamKubeconfig('https://10.0.0.1:6443', '/var/lib/rancher/k3s/agent/server-ca.crt', identity),
    ) as { clusters: Array<{ cluster: Record<string, string> }>; users: Array<{ user: Record<string, string> }> };
    expect(upstream.clusters[0]!.cluster).toEqual({
      server: 'https://10.0.0.1:6443',
      'certificate-authority': '/var/lib/rancher/k3s/agent/server-ca.crt',
    });
    expect(upstream.users[0]!.user['client-certificate']).toBe('/var/lib/rancher/k3s/agent/client-kubelet.crt');
    const kubelet = load(renderEdgeKubeletKubeconfig(identity, k3sDistribution.edgeSupervisor!.serverCaPath)) as {
      clusters: Array<{ cluster: Record<string, string> }>;
    };
    expect(kubelet.clusters[0]!.cluster).toEqual({
      server: 'https://127.0.0.1:10261',
      'certificate-authority': '/var/lib/rancher/k3s/agent/server-ca.crt',
    });
  });

  it('refuses a value that systemd would split or expand', () => {
    expect(() =>
      renderEdgeProxyUnit({
        edgeadmBin: '/usr/local/bin/edge adm',
        upstreamKubeconfig: '/k',
        cacheMaxBytes: '1Mi',
        cacheMaxEntries: 1,
      }),
    ).toThrow(expect.objectContaining({ code: 'E_EDGE_UNIT_VALUE' }));
  });
});
