/**
 * The edge-proxy's systemd unit as join renders it, checked by the real
 * `systemd-analyze`, with and without the kubelet certificate mapping:
 * `verify` finds nothing to say, and `security` rates it no worse than the
 * exposure level the README records.
 */
import { describe, expect, it } from 'vitest';
import { renderEdgeProxyUnit } from '../../../src/cluster/edge-proxy-unit.js';
import { hasSystemdAnalyze, recordedExposure, unitExposure, verifyUnit } from '../../support/systemd-analyze.js';

const NAME = 'edgeadm-edge-proxy.service';

describe('edgeadm-edge-proxy.service as join writes it', () => {
  const base = {
    // An executable that exists here, so verify checks the rest of the unit.
    edgeadmBin: '/usr/bin/env',
    upstreamKubeconfig: '/var/lib/rancher/k3s/agent/kubelet.kubeconfig',
    cacheMaxBytes: '256Mi',
    cacheMaxEntries: 10000,
  };
  const withCertificate = renderEdgeProxyUnit({
    ...base,
    clientCertificate: {
      commonName: 'system:node:edge-1',
      certFile: '/var/lib/rancher/k3s/agent/client-kubelet.crt',
      keyFile: '/var/lib/rancher/k3s/agent/client-kubelet.key',
      caFile: '/var/lib/rancher/k3s/agent/client-ca.crt',
    },
  });

  it.skipIf(!hasSystemdAnalyze)('passes systemd-analyze verify without a warning for a token node', () => {
    expect(verifyUnit(NAME, renderEdgeProxyUnit(base))).toBe('');
  });

  it.skipIf(!hasSystemdAnalyze)('passes systemd-analyze verify with the kubelet certificate mapping', () => {
    expect(verifyUnit(NAME, withCertificate)).toBe('');
  });

  it.skipIf(!hasSystemdAnalyze)('is rated by systemd-analyze security no worse than the README records', () => {
    for (const unit of [renderEdgeProxyUnit(base), withCertificate]) {
      const { exposure, report } = unitExposure(NAME, unit);
      expect(exposure, report).toBeLessThanOrEqual(recordedExposure(NAME));
      expect(report).toMatch(/✓ CapabilityBoundingSet=~CAP_SYS_ADMIN/);
      expect(report).toMatch(/✓ RestrictAddressFamilies=~AF_PACKET/);
      expect(report).toMatch(/✓ SystemCallFilter=~@privileged/);
      expect(report).toMatch(/✓ MemoryDenyWriteExecute=/);
    }
  });
});
