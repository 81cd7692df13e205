/** host check on a host edgeadm set up (newcomer point 7): its own service's ports are no failure. */
import { describe, expect, it } from 'vitest';
import { checkClusterHost } from '../../../src/cluster/installed-host-check.js';
import type { HostFacts } from '../../../src/hosts/facts.js';
import type { Host } from '../../../src/hosts/host.js';

const GiB = 1024 ** 3;
const FACTS: HostFacts = {
  hostname: 'cp1',
  os: { id: 'debian', versionId: '12', prettyName: 'Debian GNU/Linux 12' },
  kernel: { name: 'Linux', release: '6.1.0' },
  arch: 'amd64',
  machine: 'x86_64',
  cpus: 2,
  memory: { totalBytes: 4 * GiB, availableBytes: 3 * GiB },
  swap: { totalBytes: 0, devices: 0 },
  addresses: [],
  initSystem: 'systemd',
  ports: [
    { port: 6443, isFree: false },
    { port: 10250, isFree: false },
  ],
  kernelModules: { overlay: 'loaded', br_netfilter: 'loaded' },
  sysctls: {
    'net.ipv4.ip_forward': '1',
    'net.bridge.bridge-nf-call-iptables': '1',
    'net.bridge.bridge-nf-call-ip6tables': '1',
  },
  timeSync: { isSynchronized: true, daemons: [] },
  clockSkewSeconds: 0,
  disks: [{ path: '/var/lib', mountPoint: '/', totalBytes: 100 * GiB, availableBytes: 50 * GiB }],
};

/** A host whose install state says `role`, and whose k3s.service is active or not. */
function hostWith(options: { role?: string; isActive: boolean }): Host {
  const state = options.role
    ? JSON.stringify({
        formatVersion: 1,
        role: options.role,
        distribution: 'k3s',
        files: [],
        directories: [],
        services: [],
      })
    : '';
  return {
    name: 'root@10.0.0.10:22',
    facts: async () => FACTS,
    exec: async (command: string) => {
      if (command.startsWith('cat ')) return { exitCode: state ? 0 : 1, stdout: state, stderr: '' };
      if (command.startsWith('systemctl is-active'))
        return { exitCode: options.isActive ? 0 : 3, stdout: '', stderr: '' };
      return { exitCode: 1, stdout: '', stderr: '' };
    },
  } as unknown as Host;
}

describe('checkClusterHost', () => {
  it('passes the ports a running control plane edgeadm installed holds', async () => {
    const report = await checkClusterHost(hostWith({ role: 'control-plane', isActive: true }), {
      role: 'control-plane',
    });
    expect(report.isFit).toBe(true);
    expect(report.checks.find((check) => check.id === 'port-6443')).toMatchObject({
      status: 'pass',
      reason: 'in use by k3s.service, which edgeadm installed: this host already is a control-plane',
    });
  });

  it('still fails ports held by anything else', async () => {
    for (const host of [hostWith({ isActive: true }), hostWith({ role: 'control-plane', isActive: false })]) {
      const report = await checkClusterHost(host, { role: 'control-plane' });
      expect(report.isFit).toBe(false);
      expect(report.checks.find((check) => check.id === 'port-6443')?.status).toBe('fail');
    }
    const asWorker = await checkClusterHost(hostWith({ role: 'control-plane', isActive: true }), { role: 'worker' });
    expect(asWorker.checks.find((check) => check.id === 'port-10250')?.status).toBe('fail');
  });
});
