/**
 * The edge-proxy's systemd unit as join renders it, checked by the real
 * `systemd-analyze verify`, with and without the kubelet certificate mapping.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderEdgeProxyUnit } from '../../../src/cluster/edge-proxy-unit.js';

const hasSystemdAnalyze = existsSync('/usr/bin/systemd-analyze');

function verify(text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'unit-')), 'edgeadm-edge-proxy.service');
  writeFileSync(path, text);
  return execFileSync('systemd-analyze', ['verify', path], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

describe('edgeadm-edge-proxy.service as join writes it', () => {
  const base = {
    // An executable that exists here, so verify checks the rest of the unit.
    edgeadmBin: '/usr/bin/env',
    upstreamKubeconfig: '/var/lib/rancher/k3s/agent/kubelet.kubeconfig',
    cacheMaxBytes: '256Mi',
    cacheMaxEntries: 10000,
  };

  it.skipIf(!hasSystemdAnalyze)('passes systemd-analyze verify for a token node', () => {
    expect(verify(renderEdgeProxyUnit(base))).toBe('');
  });

  it.skipIf(!hasSystemdAnalyze)('passes systemd-analyze verify with the kubelet certificate mapping', () => {
    const unit = renderEdgeProxyUnit({
      ...base,
      clientCertificate: {
        commonName: 'system:node:edge-1',
        certFile: '/var/lib/rancher/k3s/agent/client-kubelet.crt',
        keyFile: '/var/lib/rancher/k3s/agent/client-kubelet.key',
        caFile: '/var/lib/rancher/k3s/agent/client-ca.crt',
      },
    });
    expect(verify(unit)).toBe('');
  });
});
