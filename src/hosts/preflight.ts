/**
 * Preflight checks: whether a host, described by its {@link HostFacts}, can
 * be a Kubernetes node in the given role. Pure decisions, so every threshold
 * is tested without a host.
 *
 * Each result is `pass`, `warn` (works, or edgeadm or the operator can fix it
 * before install) or `fail` (will not work as it is), with the reason in
 * words that say what was found and what is needed.
 */
import type { HostFacts, KernelModuleName } from './facts.js';

export type PreflightStatus = 'pass' | 'warn' | 'fail';
export type NodeRole = 'control-plane' | 'worker';

/** One check's outcome. */
export interface PreflightResult {
  /** Stable identifier: `cpu`, `port-6443`, `kernel-module-overlay`, … */
  id: string;
  title: string;
  status: PreflightStatus;
  reason: string;
}

/** What to check against. */
export interface PreflightOptions {
  role: NodeRole;
  /** The arch of the install package, when known; the check is skipped without it. */
  expectedArch?: string;
}

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

/** Minimums per role. */
export const ROLE_REQUIREMENTS: Record<
  NodeRole,
  { minCpus: number; minMemoryBytes: number; minDiskBytes: number; recommendedDiskBytes: number; ports: number[] }
> = {
  'control-plane': {
    minCpus: 2,
    minMemoryBytes: 1 * GiB,
    minDiskBytes: 2 * GiB,
    recommendedDiskBytes: 10 * GiB,
    ports: [6443, 10250],
  },
  worker: {
    minCpus: 1,
    minMemoryBytes: 512 * MiB,
    minDiskBytes: 1 * GiB,
    recommendedDiskBytes: 5 * GiB,
    ports: [10250],
  },
};

/**
 * The kernel keeps some memory for itself, so a machine with 1 GiB of RAM
 * reports a little less as MemTotal; up to this share is still counted as 1 GiB.
 */
export const MEMORY_REPORTING_TOLERANCE = 0.9;
/** Clock skew that certificates (valid from "now") start to trip over. */
export const CLOCK_SKEW_WARN_SECONDS = 30;
/** Clock skew that breaks TLS and token expiry outright. */
export const CLOCK_SKEW_FAIL_SECONDS = 300;
/** The directory whose free space the disk check judges. */
export const DATA_DIR = '/var/lib';

/** The TCP ports a role needs free. */
export function portsForRole(role: NodeRole): number[] {
  return ROLE_REQUIREMENTS[role].ports;
}

/** Runs every check on the facts. */
export function runPreflight(facts: HostFacts, options: PreflightOptions): PreflightResult[] {
  const need = ROLE_REQUIREMENTS[options.role];
  const roleName = options.role === 'control-plane' ? 'a control plane' : 'a worker';
  const results: PreflightResult[] = [];
  const add = (id: string, title: string, status: PreflightStatus, reason: string): void => {
    results.push({ id, title, status, reason });
  };

  add(
    'cpu',
    'CPUs',
    facts.cpus >= need.minCpus ? 'pass' : 'fail',
    `${facts.cpus} CPU${facts.cpus === 1 ? '' : 's'}; ${roleName} needs at least ${need.minCpus}`,
  );

  const memoryOk = facts.memory.totalBytes >= need.minMemoryBytes * MEMORY_REPORTING_TOLERANCE;
  add(
    'memory',
    'Memory',
    memoryOk ? 'pass' : 'fail',
    `${formatBytes(facts.memory.totalBytes)}; ${roleName} needs at least ${formatBytes(need.minMemoryBytes)}`,
  );

  add(
    'swap',
    'Swap',
    facts.swap.totalBytes > 0 ? 'warn' : 'pass',
    facts.swap.totalBytes > 0
      ? `swap is on (${formatBytes(facts.swap.totalBytes)}); the kubelet refuses to start with swap unless configured to allow it: turn it off (swapoff -a, and remove it from /etc/fstab)`
      : 'swap is off',
  );

  for (const port of need.ports) {
    const fact = facts.ports.find((p) => p.port === port);
    if (fact === undefined) add(`port-${port}`, `Port ${port}`, 'warn', `port ${port} was not checked`);
    else
      add(
        `port-${port}`,
        `Port ${port}`,
        fact.isFree ? 'pass' : 'fail',
        fact.isFree
          ? `TCP port ${port} is free`
          : `something already listens on TCP port ${port}, which ${portUse(port)} needs`,
      );
  }

  for (const name of ['overlay', 'br_netfilter'] as const) checkModule(facts, name, add);

  const forward = facts.sysctls['net.ipv4.ip_forward'] ?? null;
  add(
    'sysctl-net.ipv4.ip_forward',
    'net.ipv4.ip_forward',
    forward === '1' ? 'pass' : 'warn',
    forward === '1'
      ? 'is 1'
      : forward === null
        ? 'could not be read; pod traffic needs it set to 1'
        : `is ${forward}; pod traffic needs 1 (set it in /etc/sysctl.d before install)`,
  );

  const bridge = facts.sysctls['net.bridge.bridge-nf-call-iptables'] ?? null;
  const brModule = facts.kernelModules.br_netfilter;
  add(
    'sysctl-net.bridge.bridge-nf-call-iptables',
    'net.bridge.bridge-nf-call-iptables',
    bridge === '1' ? 'pass' : bridge === null && brModule === 'missing' ? 'fail' : 'warn',
    bridge === '1'
      ? 'is 1'
      : bridge === null
        ? brModule === 'missing'
          ? 'does not exist, and the br_netfilter module that provides it is missing'
          : 'appears once br_netfilter is loaded; Services need it set to 1'
        : `is ${bridge}; Services need 1 (set it in /etc/sysctl.d before install)`,
  );

  const sync = facts.timeSync;
  add(
    'time-sync',
    'Time sync',
    sync.isSynchronized === true || (sync.isSynchronized === null && sync.daemons.length > 0) ? 'pass' : 'warn',
    sync.isSynchronized === true
      ? 'the clock is synchronized (NTP)'
      : sync.isSynchronized === false
        ? 'NTP is not synchronized; certificates and tokens need a correct clock'
        : sync.daemons.length > 0
          ? `time daemon running: ${sync.daemons.join(', ')}`
          : 'no time synchronization found (no systemd-timesyncd, chronyd or ntpd); certificates and tokens need a correct clock',
  );

  if (facts.clockSkewSeconds !== null) {
    const skew = Math.abs(facts.clockSkewSeconds);
    add(
      'clock-skew',
      'Clock skew',
      skew >= CLOCK_SKEW_FAIL_SECONDS ? 'fail' : skew >= CLOCK_SKEW_WARN_SECONDS ? 'warn' : 'pass',
      skew === 0
        ? "the host's clock agrees with this machine's"
        : `the host's clock is ${skew} s ${facts.clockSkewSeconds > 0 ? 'ahead of' : 'behind'} this machine's`,
    );
  }

  const disk = facts.disks.find((d) => d.path === DATA_DIR) ?? facts.disks.find((d) => d.path === '/');
  if (disk === undefined) {
    add('disk-space', 'Disk space', 'warn', `free space under ${DATA_DIR} could not be read`);
  } else {
    const free = disk.availableBytes;
    add(
      'disk-space',
      'Disk space',
      free < need.minDiskBytes ? 'fail' : free < need.recommendedDiskBytes ? 'warn' : 'pass',
      `${formatBytes(free)} free under ${disk.path} (on ${disk.mountPoint}); ${roleName} needs ${formatBytes(need.minDiskBytes)}, ${formatBytes(need.recommendedDiskBytes)} recommended`,
    );
  }

  if (options.expectedArch !== undefined) {
    add(
      'arch',
      'Architecture',
      facts.arch === options.expectedArch ? 'pass' : 'fail',
      facts.arch === options.expectedArch
        ? `${facts.arch}, as expected`
        : `the host is ${facts.arch} (${facts.machine}), but ${options.expectedArch} is expected`,
    );
  }

  add(
    'init-system',
    'Init system',
    facts.initSystem === 'systemd' ? 'pass' : 'warn',
    facts.initSystem === 'systemd'
      ? 'systemd'
      : `${facts.initSystem}, not systemd: edgeadm installs its services as systemd units, which will not start here`,
  );

  return results;
}

function checkModule(
  facts: HostFacts,
  name: KernelModuleName,
  add: (id: string, title: string, status: PreflightStatus, reason: string) => void,
): void {
  const state = facts.kernelModules[name];
  const why = name === 'overlay' ? 'container images' : 'pod and Service traffic';
  const status: PreflightStatus = state === 'missing' ? 'fail' : state === 'available' ? 'warn' : 'pass';
  const reason =
    state === 'loaded'
      ? 'loaded'
      : state === 'builtin'
        ? 'built into the kernel'
        : state === 'available'
          ? `installed but not loaded; ${why} need it (modprobe ${name}, and list it in /etc/modules-load.d)`
          : `not found in this kernel; ${why} need it`;
  add(`kernel-module-${name}`, `Kernel module ${name}`, status, reason);
}

function portUse(port: number): string {
  if (port === 6443) return 'the Kubernetes API server';
  if (port === 10250) return 'the kubelet';
  return 'Kubernetes';
}

/** Counts of each status. */
export function summarizePreflight(results: PreflightResult[]): Record<PreflightStatus, number> {
  const counts: Record<PreflightStatus, number> = { pass: 0, warn: 0, fail: 0 };
  for (const result of results) counts[result.status]++;
  return counts;
}

/** `1.5 GiB`, `512 MiB`. */
export function formatBytes(bytes: number): string {
  if (bytes >= GiB) return `${(bytes / GiB).toFixed(bytes % GiB === 0 ? 0 : 1)} GiB`;
  if (bytes >= MiB) return `${(bytes / MiB).toFixed(0)} MiB`;
  return `${Math.round(bytes / 1024)} KiB`;
}
