import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../../src/errors.js';
import { checkServiceDataDir } from '../../../src/tunnel/agent-install.js';
import { TUNNEL_AGENT_UNIT_TEMPLATE, renderTunnelAgentUnit } from '../../../src/tunnel/agent-unit.js';

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

  it('refuses data dirs that a unit file or a shell would misread', () => {
    for (const bad of ['relative/dir', '/var/lib/a b', '/var/lib/$(id)', '/var/lib/../etc', "/var/'x"]) {
      expect(() => checkServiceDataDir(bad)).toThrow(expect.objectContaining({ code: 'E_AGENT_DATA_DIR' }));
    }
    expect(() => checkServiceDataDir('/var/lib/edgeadm/agent-2')).not.toThrow();
  });
});
