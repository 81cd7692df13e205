import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EDGE_PROXY_UNIT_TEMPLATE } from '../../../src/cluster/edge-proxy-unit.js';
import {
  DirectServiceManager,
  SystemdServiceManager,
  environmentOf,
  requestedServiceManager,
  selectServiceManager,
  serviceFilesOf,
} from '../../../src/hosts/service-manager.js';
import { DryRunHost } from '../../../src/hosts/dry-run-host.js';
import { effectiveUnitOf, renderDirectLauncher } from '../../../src/hosts/direct-unit.js';

describe('choosing a service manager', () => {
  it('uses systemd where it runs and refuses a host without it unless direct is asked for', () => {
    expect(selectServiceManager({ requested: undefined, initSystem: 'systemd', hostName: 'h' })).toBeInstanceOf(
      SystemdServiceManager,
    );
    expect(() => selectServiceManager({ requested: undefined, initSystem: 'init', hostName: 'h' })).toThrow(
      expect.objectContaining({ code: 'E_NO_SYSTEMD', exitCode: 2 }),
    );
    expect(selectServiceManager({ requested: 'direct', initSystem: 'init', hostName: 'h' })).toBeInstanceOf(
      DirectServiceManager,
    );
  });

  it('reads EDGEADM_SERVICE_MANAGER and rejects other values', () => {
    expect(requestedServiceManager({})).toBeUndefined();
    expect(requestedServiceManager({ EDGEADM_SERVICE_MANAGER: 'direct' })).toBe('direct');
    expect(() => requestedServiceManager({ EDGEADM_SERVICE_MANAGER: 'openrc' })).toThrow(
      expect.objectContaining({ code: 'E_SERVICE_MANAGER_INVALID' }),
    );
  });
});

describe('systemd plans', () => {
  it('writes the unit, reloads systemd, and enables the service with --now', async () => {
    const host = new DryRunHost({ name: 'plan' });
    const manager = new SystemdServiceManager();
    const unit = { name: 'k3s.service', content: '[Service]\nExecStart=/usr/local/bin/k3s server\n' };
    expect(await manager.install(host, unit)).toBe(true);
    expect(await manager.ensureRunning(host, unit, { isRestartNeeded: false })).toBe('started');
    expect(host.plan.map((step) => step.command ?? step.path)).toEqual([
      '/etc/systemd/system/k3s.service',
      'systemctl daemon-reload',
      "systemctl enable --now 'k3s.service'",
    ]);
  });
});

describe('units with drop-ins', () => {
  it('writes the drop-in beside the unit and reloads systemd when only the drop-in is new', async () => {
    const host = new DryRunHost({ name: 'plan' });
    const manager = new SystemdServiceManager();
    const unit = {
      name: 'kubelet.service',
      content: '[Service]\nExecStart=/usr/local/bin/kubelet\n',
      dropIns: [{ name: '10-kubeadm.conf', content: '[Service]\nExecStart=\nExecStart=/usr/local/bin/kubelet --x\n' }],
    };
    expect(await manager.install(host, unit)).toBe(true);
    expect(host.plan.map((step) => step.command ?? step.path)).toEqual([
      '/etc/systemd/system/kubelet.service',
      '/etc/systemd/system/kubelet.service.d/10-kubeadm.conf',
      'systemctl daemon-reload',
    ]);
    expect(serviceFilesOf(manager, unit)).toEqual([
      '/etc/systemd/system/kubelet.service',
      '/etc/systemd/system/kubelet.service.d/10-kubeadm.conf',
    ]);
  });
});

describe('the direct service manager', () => {
  it('writes a launcher for the unit and starts it detached, as its own process group', async () => {
    const manager = new DirectServiceManager();
    const host = new DryRunHost({ name: 'plan' });
    await manager.ensureRunning(
      host,
      {
        name: 'a.service',
        content: '[Service]\nUser=edgeadm-agent\nGroup=edgeadm-agent\nExecStart=/usr/local/bin/edgeadm agent tunnel\n',
      },
      { isRestartNeeded: false },
    );
    const launcher = host.plan.find((step) => step.path === '/var/lib/edgeadm/services/a.service.sh');
    expect(launcher?.mode).toBe('0700');
    const started = host.plan.map((step) => step.command ?? '').find((command) => command.includes('setsid'));
    expect(started).toContain("setsid nohup /bin/sh '/var/lib/edgeadm/services/a.service.sh' <");
    expect(manager.filesOf('a.service')).toContain('/var/lib/edgeadm/services/a.service.sh');
  });
});

describe('the direct service manager and Environment= (newcomer point 1)', () => {
  it('starts the unit with its Environment=, as systemd would, also under User=', () => {
    const launcher = renderDirectLauncher(
      'a.service',
      effectiveUnitOf({
        name: 'a.service',
        content:
          '[Service]\nUser=edgeadm-agent\nEnvironment=MALLOC_ARENA_MAX=2\nEnvironment=EDGEADM_HOME=/var/lib/edgeadm/agent\nExecStart=/usr/local/bin/edgeadm agent tunnel\n',
      }),
    );
    expect(launcher).toContain("export MALLOC_ARENA_MAX='2'");
    expect(launcher).toContain("export EDGEADM_HOME='/var/lib/edgeadm/agent'");
    expect(launcher).toContain(
      "exec setpriv --reuid='edgeadm-agent' --regid='edgeadm-agent' --init-groups -- /usr/local/bin/edgeadm agent tunnel",
    );
  });
});

describe('environmentOf', () => {
  it('reads Environment= as systemd does: quoted assignments keep their spaces, later ones win, an empty line resets', () => {
    const unit = [
      '[Service]',
      'Environment="NODE_OPTIONS=--max-semi-space-size=1 --jitless"',
      "Environment=A=1 'B=two words' C=3",
      'Environment=A=4',
      'ExecStart=/bin/true',
    ].join('\n');
    expect(environmentOf(unit)).toEqual({
      NODE_OPTIONS: '--max-semi-space-size=1 --jitless',
      A: '4',
      B: 'two words',
      C: '3',
    });
    expect(environmentOf(`${unit}\nEnvironment=\nEnvironment=D=5`)).toEqual({ D: '5' });
  });

  it("gives the edge-proxy unit's memory settings, which the edge-proxy benchmark measures with --unit-env", () => {
    // bench/edge-proxy/run.js reads assets/systemd/edgeadm-edge-proxy.service with this function.
    const asset = readFileSync(new URL('../../../assets/systemd/edgeadm-edge-proxy.service', import.meta.url), 'utf8');
    expect(environmentOf(asset)).toEqual(environmentOf(EDGE_PROXY_UNIT_TEMPLATE));
    expect(environmentOf(asset)).toEqual({
      NODE_OPTIONS: '--max-semi-space-size=1 --jitless',
      MALLOC_ARENA_MAX: '1',
      MALLOC_TRIM_THRESHOLD_: '131072',
      MALLOC_MMAP_THRESHOLD_: '131072',
    });
  });
});
