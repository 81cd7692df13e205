import { describe, expect, it } from 'vitest';
import { parseNodeTunnelAgentRequest, parseNodeTunnelServerRequest } from '../../../src/node-tunnel/request.js';

const agentFlags = {
  server: 'https://10.0.0.1:10350',
  'ca-file': '/etc/kubernetes/pki/ca.crt',
  'node-name': 'edge-1',
  credentials: '/var/lib/kubelet/pki/kubelet-client-current.pem',
  kubelet: '127.0.0.1:10250',
};

describe('the node tunnel requests', () => {
  it('parses the agent flags into addresses', () => {
    expect(parseNodeTunnelAgentRequest(agentFlags)).toEqual({
      server: 'https://10.0.0.1:10350',
      caFile: '/etc/kubernetes/pki/ca.crt',
      nodeName: 'edge-1',
      credentialsFile: '/var/lib/kubelet/pki/kubelet-client-current.pem',
      kubelet: { host: '127.0.0.1', port: 10250 },
    });
  });

  it.each([
    ['server', 'http://10.0.0.1:10350'],
    ['server', 'https://10.0.0.1:10350/path'],
    ['node-name', 'Edge_1'],
    ['credentials', 'relative.pem'],
    ['kubelet', '127.0.0.1'],
  ])('refuses --%s %s before anything is read', (flag, value) => {
    expect(() => parseNodeTunnelAgentRequest({ ...agentFlags, [flag]: value })).toThrow(
      expect.objectContaining({ code: 'E_NODE_TUNNEL_FLAG' }),
    );
  });

  it('parses the server flags, and refuses a listen address without a port', () => {
    const flags = {
      kubeconfig: '/etc/kubernetes/admin.conf',
      socket: '/etc/kubernetes/edgeadm/egress.sock',
      listen: '0.0.0.0:10350',
      'metrics-listen': '127.0.0.1:10351',
      'ca-file': '/etc/kubernetes/pki/ca.crt',
      'tls-cert': '/etc/kubernetes/pki/apiserver.crt',
      'tls-key': '/etc/kubernetes/pki/apiserver.key',
    };
    expect(parseNodeTunnelServerRequest(flags).listen).toEqual({ host: '0.0.0.0', port: 10350 });
    expect(parseNodeTunnelServerRequest({ ...flags, 'metrics-listen': 'none' }).metricsListen).toBeUndefined();
    expect(() => parseNodeTunnelServerRequest({ ...flags, listen: '0.0.0.0' })).toThrow(
      expect.objectContaining({ code: 'E_NODE_TUNNEL_FLAG' }),
    );
  });
});
