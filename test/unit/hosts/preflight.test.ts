import { describe, expect, it } from 'vitest';
import type { HostFacts } from '../../../src/hosts/facts.js';
import { formatBytes, portsForRole, runPreflight, summarizePreflight } from '../../../src/hosts/preflight.js';

const GiB = 1024 ** 3;

/** A host that passes everything for a control plane. */
function goodFacts(overrides: Partial<HostFacts> = {}): HostFacts {
  return {
    hostname: 'store-042',
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
      { port: 6443, isFree: true },
      { port: 10250, isFree: true },
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
    ...overrides,
  };
}

function statusOf(
  facts: HostFacts,
  id: string,
  role: 'control-plane' | 'worker' = 'control-plane',
  expectedArch?: string,
) {
  const result = runPreflight(facts, { role, ...(expectedArch ? { expectedArch } : {}) }).find((r) => r.id === id);
  return result && { status: result.status, reason: result.reason };
}

describe('preflight', () => {
  it('passes a host that has everything, with a reason for each check', () => {
    const results = runPreflight(goodFacts(), { role: 'control-plane', expectedArch: 'amd64' });
    expect(results.every((r) => r.status === 'pass')).toBe(true);
    expect(results.every((r) => r.reason.length > 0)).toBe(true);
    expect(summarizePreflight(results)).toEqual({ pass: results.length, warn: 0, fail: 0 });
  });

  it('needs 2 CPUs and 1 GiB for a control plane, less for a worker', () => {
    const small = goodFacts({ cpus: 1, memory: { totalBytes: 768 * 1024 ** 2, availableBytes: 0 } });
    expect(statusOf(small, 'cpu')).toEqual({ status: 'fail', reason: '1 CPU; a control plane needs at least 2' });
    expect(statusOf(small, 'memory')?.status).toBe('fail');
    expect(statusOf(small, 'cpu', 'worker')?.status).toBe('pass');
    expect(statusOf(small, 'memory', 'worker')?.status).toBe('pass');
    // A 1 GiB machine reports a bit less as MemTotal; that still counts.
    expect(statusOf(goodFacts({ memory: { totalBytes: 0.95 * GiB, availableBytes: 0 } }), 'memory')?.status).toBe(
      'pass',
    );
  });

  it('warns about swap', () => {
    expect(statusOf(goodFacts({ swap: { totalBytes: 2 * GiB, devices: 1 } }), 'swap')).toMatchObject({
      status: 'warn',
      reason: expect.stringContaining('swap is on (2 GiB)'),
    });
  });

  it('fails when 6443 or 10250 is taken; a worker needs only 10250', () => {
    const busy = goodFacts({
      ports: [
        { port: 6443, isFree: false },
        { port: 10250, isFree: true },
      ],
    });
    expect(statusOf(busy, 'port-6443')).toEqual({
      status: 'fail',
      reason: 'something already listens on TCP port 6443, which the Kubernetes API server needs',
    });
    expect(statusOf(busy, 'port-6443', 'worker')).toBeUndefined();
    expect(portsForRole('control-plane')).toEqual([6443, 10250]);
    expect(portsForRole('worker')).toEqual([10250]);
    expect(statusOf(goodFacts({ ports: [] }), 'port-10250')?.status).toBe('warn');
  });

  it('judges kernel modules: loaded or built in passes, installable warns, missing fails', () => {
    const facts = (overlay: HostFacts['kernelModules']['overlay']) =>
      goodFacts({ kernelModules: { overlay, br_netfilter: 'loaded' } });
    expect(statusOf(facts('builtin'), 'kernel-module-overlay')?.status).toBe('pass');
    expect(statusOf(facts('available'), 'kernel-module-overlay')).toMatchObject({
      status: 'warn',
      reason: expect.stringContaining('modprobe overlay'),
    });
    expect(statusOf(facts('missing'), 'kernel-module-overlay')?.status).toBe('fail');
  });

  it('judges sysctls, and blames a missing bridge sysctl on a missing br_netfilter', () => {
    const off = goodFacts({ sysctls: { 'net.ipv4.ip_forward': '0', 'net.bridge.bridge-nf-call-iptables': '0' } });
    expect(statusOf(off, 'sysctl-net.ipv4.ip_forward')?.status).toBe('warn');
    expect(statusOf(off, 'sysctl-net.bridge.bridge-nf-call-iptables')?.status).toBe('warn');
    const noModule = goodFacts({
      sysctls: { 'net.ipv4.ip_forward': '1', 'net.bridge.bridge-nf-call-iptables': null },
      kernelModules: { overlay: 'loaded', br_netfilter: 'missing' },
    });
    expect(statusOf(noModule, 'sysctl-net.bridge.bridge-nf-call-iptables')).toMatchObject({
      status: 'fail',
      reason: expect.stringContaining('br_netfilter'),
    });
    const notLoaded = goodFacts({
      sysctls: { 'net.ipv4.ip_forward': '1', 'net.bridge.bridge-nf-call-iptables': null },
      kernelModules: { overlay: 'loaded', br_netfilter: 'available' },
    });
    expect(statusOf(notLoaded, 'sysctl-net.bridge.bridge-nf-call-iptables')?.status).toBe('warn');
  });

  it('judges time sync and clock skew', () => {
    expect(statusOf(goodFacts({ timeSync: { isSynchronized: false, daemons: [] } }), 'time-sync')?.status).toBe('warn');
    expect(statusOf(goodFacts({ timeSync: { isSynchronized: null, daemons: ['chronyd'] } }), 'time-sync')).toEqual({
      status: 'pass',
      reason: 'time daemon running: chronyd',
    });
    expect(statusOf(goodFacts({ timeSync: { isSynchronized: null, daemons: [] } }), 'time-sync')?.status).toBe('warn');
    expect(statusOf(goodFacts({ clockSkewSeconds: -45 }), 'clock-skew')).toEqual({
      status: 'warn',
      reason: "the host's clock is 45 s behind this machine's",
    });
    expect(statusOf(goodFacts({ clockSkewSeconds: 600 }), 'clock-skew')?.status).toBe('fail');
    expect(statusOf(goodFacts({ clockSkewSeconds: null }), 'clock-skew')).toBeUndefined();
  });

  it('judges free disk space under /var/lib', () => {
    const disk = (free: number) =>
      goodFacts({ disks: [{ path: '/var/lib', mountPoint: '/var', totalBytes: 100 * GiB, availableBytes: free }] });
    expect(statusOf(disk(1 * GiB), 'disk-space')?.status).toBe('fail');
    expect(statusOf(disk(5 * GiB), 'disk-space')?.status).toBe('warn');
    expect(statusOf(disk(5 * GiB), 'disk-space', 'worker')?.status).toBe('pass');
    expect(statusOf(goodFacts({ disks: [] }), 'disk-space')?.status).toBe('warn');
  });

  it("checks the arch against the package's only when one is expected", () => {
    expect(statusOf(goodFacts({ arch: 'arm64', machine: 'aarch64' }), 'arch', 'control-plane', 'amd64')).toEqual({
      status: 'fail',
      reason: 'the host is arm64 (aarch64), but amd64 is expected',
    });
    expect(statusOf(goodFacts(), 'arch')).toBeUndefined();
  });

  it('warns when the init system is not systemd', () => {
    expect(statusOf(goodFacts({ initSystem: 'openrc' }), 'init-system')?.status).toBe('warn');
  });

  it('formats sizes for people', () => {
    expect(formatBytes(GiB)).toBe('1 GiB');
    expect(formatBytes(1.5 * GiB)).toBe('1.5 GiB');
    expect(formatBytes(512 * 1024 ** 2)).toBe('512 MiB');
  });
});
