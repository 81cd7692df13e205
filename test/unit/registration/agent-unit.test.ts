import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../../src/errors.js';
import { checkServiceDataDir } from '../../../src/registration/agent-install.js';
import {
  TUNNEL_AGENT_UNIT_TEMPLATE,
  TUNNEL_AGENT_USER,
  renderTunnelAgentUnit,
} from '../../../src/registration/agent-unit.js';

describe('the embedded tunnel agent unit', () => {
  it('is byte for byte assets/systemd/edgeadm-tunnel-agent.service', () => {
    const asset = readFileSync(
      new URL('../../../assets/systemd/edgeadm-tunnel-agent.service', import.meta.url),
      'utf8',
    );
    expect(TUNNEL_AGENT_UNIT_TEMPLATE).toBe(asset);
  });

  it('fills in the binary and the data dir, which is also the only place it writes', () => {
    const unit = renderTunnelAgentUnit({ edgeadmBinary: '/usr/local/bin/edgeadm', dataDir: '/var/lib/edgeadm/agent' });
    expect(unit).toMatch(/^ExecStart=\/usr\/local\/bin\/edgeadm agent tunnel --data-dir \/var\/lib\/edgeadm\/agent$/m);
    expect(unit).toMatch(/^ReadWritePaths=\/var\/lib\/edgeadm\/agent$/m);
    expect(unit).toMatch(/^Environment=EDGEADM_HOME=\/var\/lib\/edgeadm\/agent$/m);
    expect(unit).not.toContain('{{');
  });

  it('restarts the agent after a crash, but not after the hub refused it for good (exit 4)', () => {
    expect(TUNNEL_AGENT_UNIT_TEMPLATE).toMatch(/^Restart=always$/m);
    expect(TUNNEL_AGENT_UNIT_TEMPLATE).toMatch(new RegExp(`^RestartPreventExitStatus=${ExitCode.Refused}$`, 'm'));
  });

  it('runs as its own user with no capability, and cannot see home directories', () => {
    const unit = renderTunnelAgentUnit({ edgeadmBinary: '/usr/local/bin/edgeadm', dataDir: '/var/lib/edgeadm/agent' });
    expect(unit).toMatch(new RegExp(`^User=${TUNNEL_AGENT_USER}$`, 'm'));
    expect(unit).toMatch(new RegExp(`^Group=${TUNNEL_AGENT_USER}$`, 'm'));
    expect(unit).toMatch(/^CapabilityBoundingSet=$/m);
    expect(unit).toMatch(/^AmbientCapabilities=$/m);
    expect(unit).toMatch(/^ProtectHome=yes$/m);
    expect(unit).toMatch(/^RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX$/m);
    expect(unit).toMatch(/^MemoryMax=\d+M$/m);
    // The agent runs V8's JIT, which this setting would abort at start.
    expect(unit).not.toMatch(/^MemoryDenyWriteExecute=/m);
  });

  it('refuses data dirs the service could not see', () => {
    for (const hidden of [
      '/root/agent',
      '/home/ops/agent',
      '/run/user/0/agent',
      '/tmp/agent',
      '/var/tmp',
      '//root/x',
    ]) {
      expect(() => checkServiceDataDir(hidden)).toThrow(expect.objectContaining({ code: 'E_AGENT_DATA_DIR' }));
    }
    for (const fine of ['/var/lib/edgeadm/agent', '/rootfs/agent', '/opt/homes/agent', '/srv/tmp/agent']) {
      expect(() => checkServiceDataDir(fine)).not.toThrow();
    }
  });

  it('refuses data dirs that a unit file or a shell would misread', () => {
    for (const bad of ['relative/dir', '/var/lib/a b', '/var/lib/$(id)', '/var/lib/../etc', "/var/'x"]) {
      expect(() => checkServiceDataDir(bad)).toThrow(expect.objectContaining({ code: 'E_AGENT_DATA_DIR' }));
    }
    expect(() => checkServiceDataDir('/var/lib/edgeadm/agent-2')).not.toThrow();
  });
});
