/**
 * The node tunnel's systemd units as init and join render them, checked by
 * the real `systemd-analyze verify`, and their command lines as the
 * services will be started.
 */
import { describe, expect, it } from 'vitest';
import { renderNodeTunnelAgentUnit, renderNodeTunnelServerUnit } from '../../../src/cluster/node-tunnel-units.js';
import { hasSystemdAnalyze, verifyUnit } from '../../support/systemd-analyze.js';

const server = {
  // An executable that exists here, so verify checks the rest of the unit.
  edgeadmBin: '/usr/bin/env',
  kubeconfig: '/etc/kubernetes/admin.conf',
  socket: '/etc/kubernetes/edgeadm/egress.sock',
  socketDir: '/etc/kubernetes/edgeadm',
  listen: '0.0.0.0:10350',
  caFile: '/etc/kubernetes/pki/ca.crt',
  tlsCert: '/etc/kubernetes/pki/apiserver.crt',
  tlsKey: '/etc/kubernetes/pki/apiserver.key',
};
const agent = {
  edgeadmBin: '/usr/bin/env',
  server: 'https://10.0.0.1:10350',
  nodeName: 'edge-1',
  caFile: '/etc/kubernetes/pki/ca.crt',
  credentials: '/var/lib/kubelet/pki/kubelet-client-current.pem',
};

describe('the node tunnel units', () => {
  it.skipIf(!hasSystemdAnalyze)('pass systemd-analyze verify without a warning', () => {
    expect(verifyUnit('edgeadm-node-tunnel-server.service', renderNodeTunnelServerUnit(server))).toBe('');
    expect(verifyUnit('edgeadm-node-tunnel.service', renderNodeTunnelAgentUnit(agent))).toBe('');
  });

  it('start the server on its socket and port, and the agent towards the control plane as its node', () => {
    expect(renderNodeTunnelServerUnit(server)).toContain(
      'ExecStart=/usr/bin/env agent node-tunnel-server --kubeconfig /etc/kubernetes/admin.conf --socket /etc/kubernetes/edgeadm/egress.sock --listen 0.0.0.0:10350',
    );
    expect(renderNodeTunnelAgentUnit(agent)).toContain(
      'ExecStart=/usr/bin/env agent node-tunnel --server https://10.0.0.1:10350 --node-name edge-1',
    );
  });

  it('refuse a value systemd would split or expand', () => {
    expect(() => renderNodeTunnelAgentUnit({ ...agent, nodeName: 'edge-1 --kubelet 10.0.0.9:22' })).toThrow(
      expect.objectContaining({ code: 'E_EDGE_UNIT_VALUE' }),
    );
    expect(() => renderNodeTunnelServerUnit({ ...server, kubeconfig: '/etc/$HOME' })).toThrow(
      expect.objectContaining({ code: 'E_EDGE_UNIT_VALUE' }),
    );
  });
});
