import { describe, expect, it } from 'vitest';
import { renderSiteGridUnit, SITE_GRID_KUBECONFIG } from '../../../src/cluster/edge-site-grid-phase.js';

describe('the site grid controller unit', () => {
  const unit = renderSiteGridUnit({
    edgeadmBin: '/usr/local/bin/edgeadm',
    kubeconfig: SITE_GRID_KUBECONFIG,
    server: 'https://10.0.0.10:6443',
  });

  it('runs the controller with its own kubeconfig, after the autonomy controller', () => {
    expect(unit).toContain(
      'ExecStart=/usr/local/bin/edgeadm agent site-grid-controller --kubeconfig /etc/edgeadm/site-grid-controller/kubeconfig --server https://10.0.0.10:6443',
    );
    expect(unit).toMatch(/^After=.* edgeadm-autonomy\.service$/m);
    expect(unit).toMatch(/^Description=edgeadm site grid controller/m);
  });

  it("keeps the autonomy unit's sandbox, writing only its own directory", () => {
    expect(unit).toContain('ReadWritePaths=/var/lib/edgeadm/site-grid-controller');
    expect(unit).toContain('StateDirectory=edgeadm/site-grid-controller');
    expect(unit).toContain('CapabilityBoundingSet=\n');
    expect(unit).not.toMatch(/autonomy controller|agent autonomy|edgeadm\/autonomy/);
  });
});
