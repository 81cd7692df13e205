/**
 * The tunnel agent's systemd unit as `register-cloud` renders it, checked by
 * the real `systemd-analyze`: `verify` finds nothing to say, and `security`
 * rates it no worse than the exposure level the README records.
 */
import { describe, expect, it } from 'vitest';
import { renderTunnelAgentUnit } from '../../../src/registration/agent-unit.js';
import { hasSystemdAnalyze, recordedExposure, unitExposure, verifyUnit } from '../../support/systemd-analyze.js';

const NAME = 'edgeadm-tunnel-agent.service';

describe('edgeadm-tunnel-agent.service as register-cloud writes it', () => {
  // An executable that exists here, so verify checks the rest of the unit.
  const rendered = renderTunnelAgentUnit({ edgeadmBinary: '/usr/bin/env', dataDir: '/var/lib/edgeadm/agent' });

  it('runs `agent tunnel` on the data dir and restarts on crashes', () => {
    expect(rendered).toMatch(/^ExecStart=\/usr\/bin\/env agent tunnel --data-dir \/var\/lib\/edgeadm\/agent$/m);
    expect(rendered).toMatch(/^Restart=always$/m);
    expect(rendered).not.toContain('{{');
  });

  it.skipIf(!hasSystemdAnalyze)('passes systemd-analyze verify without a warning', () => {
    expect(verifyUnit(NAME, rendered)).toBe('');
  });

  it.skipIf(!hasSystemdAnalyze)('is rated by systemd-analyze security no worse than the README records', () => {
    const { exposure, report } = unitExposure(NAME, rendered);
    expect(exposure, report).toBeLessThanOrEqual(recordedExposure(NAME));
    // The points the unit exists for, as systemd reads them.
    expect(report).toMatch(/✓ User=\/DynamicUser=\s+Service runs under a static non-root user identity/);
    expect(report).toMatch(/✓ CapabilityBoundingSet=~CAP_SYS_ADMIN/);
    expect(report).toMatch(/✓ ProtectHome=\s+Service has no access to home directories/);
    expect(report).toMatch(/✓ SystemCallFilter=~@privileged/);
  });
});
