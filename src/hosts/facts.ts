/**
 * Host facts: what a machine is (OS, kernel, arch, CPUs, memory, swap,
 * hostname, addresses, init system) and what a Kubernetes node needs to know
 * about it (free ports, kernel modules, sysctls, time sync, disk space).
 *
 * One portable `sh` script collects everything in one round trip, printing
 * raw files and command output in marked sections; {@link parseFacts} turns
 * that text into {@link HostFacts}. The parser is pure, so every decision is
 * tested without a host, and the script needs nothing beyond a POSIX shell,
 * /proc and coreutils or busybox (`ip` and `timedatectl` are used when there).
 */
import type { ExecOptions, ExecResult, FactsOptions } from './host.js';
import { HostCommandError } from './host.js';

/** Kernel modules Kubernetes nodes need: overlayfs for container images, br_netfilter for pod traffic. */
export const REQUIRED_KERNEL_MODULES = ['overlay', 'br_netfilter'] as const;
export type KernelModuleName = (typeof REQUIRED_KERNEL_MODULES)[number];

/** sysctls that Kubernetes networking needs set to 1. */
export const REQUIRED_SYSCTLS = [
  'net.ipv4.ip_forward',
  'net.bridge.bridge-nf-call-iptables',
  'net.bridge.bridge-nf-call-ip6tables',
] as const;

/** Directories whose free space matters: container images and cluster state live under /var/lib. */
export const DISK_PATHS = ['/var/lib', '/'] as const;

/** How long the facts script may run. */
export const FACTS_TIMEOUT_MS = 30_000;

/** Whether a kernel module is usable. */
export type KernelModuleState =
  /** Loaded as a module now. */
  | 'loaded'
  /** Compiled into the kernel (or its effect is present without a module list). */
  | 'builtin'
  /** Installed but not loaded: `modprobe` would load it. */
  | 'available'
  /** Not found anywhere. */
  | 'missing';

/** One address of a network interface. */
export interface HostAddress {
  interface: string;
  family: 'inet' | 'inet6';
  address: string;
  prefixLength: number;
  scope: string;
}

/** Free space of one filesystem. */
export interface DiskSpace {
  /** The path asked about (`/var/lib`). */
  path: string;
  /** Where its filesystem is mounted. */
  mountPoint: string;
  totalBytes: number;
  availableBytes: number;
}

/** Everything edgeadm knows about a host. */
export interface HostFacts {
  hostname: string;
  os: {
    /** `ID` from os-release (`debian`, `ubuntu`), or `unknown`. */
    id: string;
    versionId: string;
    prettyName: string;
  };
  kernel: { name: string; release: string };
  /** Go/Kubernetes arch name: `amd64`, `arm64`, `arm`, … (the raw `uname -m` when unmapped). */
  arch: string;
  /** `uname -m` as the host reports it. */
  machine: string;
  cpus: number;
  memory: { totalBytes: number; availableBytes: number };
  swap: { totalBytes: number; devices: number };
  addresses: HostAddress[];
  /** `systemd` when /run/systemd/system exists, else the name of PID 1. */
  initSystem: string;
  /** Each asked-for TCP port, and whether nothing listens on it. */
  ports: Array<{ port: number; isFree: boolean }>;
  kernelModules: Record<KernelModuleName, KernelModuleState>;
  /** Each {@link REQUIRED_SYSCTLS} value, or null when the key does not exist (module not loaded). */
  sysctls: Record<string, string | null>;
  timeSync: {
    /** What the host says about NTP sync, or null when it cannot say. */
    isSynchronized: boolean | null;
    /** Time daemons found running. */
    daemons: string[];
  };
  /** Host clock minus this machine's clock, in whole seconds (0 within measurement error). */
  clockSkewSeconds: number | null;
  disks: DiskSpace[];
}

const SECTION = '@@edgeadm-facts:';

/** The script that prints every section {@link parseFacts} reads. */
export const FACTS_SCRIPT = [
  `s() { echo "${SECTION}$1"; }`,
  's os-release; cat /etc/os-release 2>/dev/null || cat /usr/lib/os-release 2>/dev/null',
  's uname; uname -s; uname -r; uname -m',
  "s nproc; nproc 2>/dev/null || grep -c '^processor' /proc/cpuinfo",
  's meminfo; cat /proc/meminfo',
  's swaps; cat /proc/swaps 2>/dev/null',
  's hostname; hostname 2>/dev/null || cat /proc/sys/kernel/hostname',
  's addresses; ip -o addr show 2>/dev/null',
  's init; if [ -d /run/systemd/system ]; then echo systemd; else cat /proc/1/comm 2>/dev/null; fi',
  's tcp; cat /proc/net/tcp /proc/net/tcp6 2>/dev/null',
  "s modules; cut -d' ' -f1 /proc/modules 2>/dev/null",
  `s modules-builtin; grep -oE '/(${REQUIRED_KERNEL_MODULES.join('|')})\\.ko' "/lib/modules/$(uname -r)/modules.builtin" 2>/dev/null`,
  `s modules-available; grep -oE '/(${REQUIRED_KERNEL_MODULES.join('|')})\\.ko[.a-z]*:' "/lib/modules/$(uname -r)/modules.dep" 2>/dev/null`,
  's filesystems; cat /proc/filesystems 2>/dev/null',
  's bridge-sysctls; [ -d /proc/sys/net/bridge ] && echo present',
  `s sysctls; for k in ${REQUIRED_SYSCTLS.map((key) => key.replace(/\./g, '/')).join(' ')}; do if [ -r "/proc/sys/$k" ]; then echo "$k=$(cat "/proc/sys/$k")"; else echo "$k"; fi; done`,
  's timesync',
  '[ -d /run/systemd/system ] && command -v timedatectl >/dev/null 2>&1 && echo "ntp-synchronized=$(timedatectl show -p NTPSynchronized --value 2>/dev/null)"',
  '[ -e /run/systemd/timesync/synchronized ] && echo "ntp-synchronized=yes"',
  "cat /proc/[0-9]*/comm 2>/dev/null | grep -xE 'chronyd|ntpd|systemd-timesyn|openntpd|ntpsec|timesyncd|ptp4l' | sort -u | sed 's/^/daemon=/'",
  's date; date +%s',
  `s disk; for p in ${DISK_PATHS.join(' ')}; do echo "path=$p"; df -Pk "$p" 2>/dev/null | tail -n +2; done`,
  'exit 0',
].join('\n');

/** What collectFacts needs of a host: just `exec`. */
export interface FactsSource {
  readonly name: string;
  exec(command: string, options?: ExecOptions): Promise<ExecResult>;
}

/** The facts script's output and when it ran, before parsing: what a host may keep and parse again. */
export interface RawFacts {
  output: string;
  /** This machine's clock at the middle of the script run, epoch seconds. */
  localEpochSeconds: number;
  /** Half the script's run time plus a second: skews within it count as 0. */
  measurementErrorSeconds: number;
}

/** Runs the facts script on a host, without parsing its output. */
export async function runFactsScript(host: FactsSource): Promise<RawFacts> {
  const before = Date.now();
  const result = await host.exec(FACTS_SCRIPT, {
    timeoutMs: FACTS_TIMEOUT_MS,
    readOnly: true,
    description: 'collect host facts',
  });
  const after = Date.now();
  if (result.exitCode !== 0) throw new HostCommandError(host.name, result, 'collect host facts');
  return {
    output: result.stdout,
    localEpochSeconds: (before + after) / 2000,
    measurementErrorSeconds: (after - before) / 2000 + 1,
  };
}

/** Facts from a run of the facts script, with the ports asked for now. */
export function factsFromRaw(raw: RawFacts, options: FactsOptions = {}): HostFacts {
  return parseFacts(raw.output, {
    ports: options.ports ?? [],
    localEpochSeconds: raw.localEpochSeconds,
    measurementErrorSeconds: raw.measurementErrorSeconds,
  });
}

/** Runs the facts script on a host and parses its output. */
export async function collectFacts(host: FactsSource, options: FactsOptions = {}): Promise<HostFacts> {
  return factsFromRaw(await runFactsScript(host), options);
}

/** What {@link parseFacts} needs besides the script output. */
export interface ParseFactsOptions {
  ports: number[];
  /** This machine's clock at the middle of the script run, for the skew. */
  localEpochSeconds?: number;
  /** Skews within this many seconds count as 0. */
  measurementErrorSeconds?: number;
}

/** Turns the output of {@link FACTS_SCRIPT} into facts. */
export function parseFacts(output: string, options: ParseFactsOptions): HostFacts {
  const sections = splitSections(output);
  const lines = (name: string): string[] => (sections.get(name) ?? '').split('\n').filter((l) => l.trim() !== '');
  const osRelease = parseOsRelease(sections.get('os-release') ?? '');
  const [kernelName = 'unknown', kernelRelease = 'unknown', machine = 'unknown'] = lines('uname');
  const meminfo = parseMeminfo(sections.get('meminfo') ?? '');
  const listening = parseListeningPorts(sections.get('tcp') ?? '');
  const remoteEpoch = Number(lines('date')[0]);
  let clockSkewSeconds: number | null = null;
  if (Number.isFinite(remoteEpoch) && lines('date').length > 0 && options.localEpochSeconds !== undefined) {
    const skew = remoteEpoch - options.localEpochSeconds;
    clockSkewSeconds = Math.abs(skew) <= (options.measurementErrorSeconds ?? 1) ? 0 : Math.round(skew);
  }
  return {
    hostname: lines('hostname')[0]?.trim() ?? 'unknown',
    os: {
      id: osRelease.ID ?? 'unknown',
      versionId: osRelease.VERSION_ID ?? '',
      prettyName: osRelease.PRETTY_NAME ?? osRelease.NAME ?? 'unknown',
    },
    kernel: { name: kernelName, release: kernelRelease },
    arch: normalizeArch(machine),
    machine,
    cpus: Number.parseInt(lines('nproc')[0] ?? '', 10) || 0,
    memory: { totalBytes: meminfo.MemTotal ?? 0, availableBytes: meminfo.MemAvailable ?? meminfo.MemFree ?? 0 },
    swap: { totalBytes: meminfo.SwapTotal ?? 0, devices: Math.max(0, lines('swaps').length - 1) },
    addresses: parseIpAddr(sections.get('addresses') ?? ''),
    initSystem: lines('init')[0]?.trim() || 'unknown',
    ports: options.ports.map((port) => ({ port, isFree: !listening.has(port) })),
    kernelModules: parseKernelModules(sections),
    sysctls: parseSysctls(lines('sysctls')),
    timeSync: parseTimeSync(lines('timesync')),
    clockSkewSeconds,
    disks: parseDf(lines('disk')),
  };
}

function splitSections(output: string): Map<string, string> {
  const sections = new Map<string, string>();
  let current: string | undefined;
  let buffer: string[] = [];
  for (const line of output.split('\n')) {
    if (line.startsWith(SECTION)) {
      if (current !== undefined) sections.set(current, buffer.join('\n'));
      current = line.slice(SECTION.length).trim();
      buffer = [];
    } else if (current !== undefined) {
      buffer.push(line);
    }
  }
  if (current !== undefined) sections.set(current, buffer.join('\n'));
  return sections;
}

/** Parses os-release (`KEY=value`, values optionally quoted). */
export function parseOsRelease(text: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const match = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (!match) continue;
    let value = match[2]!;
    if (/^(["']).*\1$/.test(value)) value = value.slice(1, -1).replace(/\\(["$`\\])/g, '$1');
    fields[match[1]!] = value;
  }
  return fields;
}

/** Maps `uname -m` to the arch names Kubernetes and Go use. */
export function normalizeArch(machine: string): string {
  const map: Record<string, string> = {
    x86_64: 'amd64',
    amd64: 'amd64',
    aarch64: 'arm64',
    arm64: 'arm64',
    armv7l: 'arm',
    armv7: 'arm',
    armv6l: 'arm',
    armhf: 'arm',
    i386: '386',
    i686: '386',
    ppc64le: 'ppc64le',
    s390x: 's390x',
    riscv64: 'riscv64',
  };
  return map[machine] ?? machine;
}

/** /proc/meminfo values in bytes. */
function parseMeminfo(text: string): Record<string, number> {
  const values: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const match = /^(\w+):\s+(\d+)(?:\s+kB)?/.exec(line);
    if (match) values[match[1]!] = Number(match[2]) * (line.includes('kB') ? 1024 : 1);
  }
  return values;
}

/** TCP ports with a socket in LISTEN state, from /proc/net/tcp and tcp6. */
export function parseListeningPorts(text: string): Set<number> {
  const LISTEN = '0A';
  const ports = new Set<number>();
  for (const line of text.split('\n')) {
    const fields = line.trim().split(/\s+/);
    // sl local_address rem_address st ...
    if (fields.length < 4 || !/^\d+:$/.test(fields[0]!) || fields[3] !== LISTEN) continue;
    const port = Number.parseInt(fields[1]!.split(':')[1] ?? '', 16);
    if (Number.isInteger(port)) ports.add(port);
  }
  return ports;
}

/** Parses `ip -o addr show`. */
export function parseIpAddr(text: string): HostAddress[] {
  const addresses: HostAddress[] = [];
  for (const line of text.split('\n')) {
    const match = /^\d+:\s+(\S+)\s+(inet6?)\s+([^/\s]+)\/(\d+)\b.*?\bscope\s+(\S+)/.exec(line);
    if (!match) continue;
    addresses.push({
      interface: match[1]!.replace(/@.*$/, ''),
      family: match[2] as 'inet' | 'inet6',
      address: match[3]!,
      prefixLength: Number(match[4]),
      scope: match[5]!,
    });
  }
  return addresses;
}

function parseKernelModules(sections: Map<string, string>): Record<KernelModuleName, KernelModuleState> {
  const words = (name: string): string[] => (sections.get(name) ?? '').split(/\s+/).filter(Boolean);
  const loaded = new Set(words('modules'));
  const moduleNames = (name: string): Set<string> =>
    new Set(words(name).map((path) => (/\/([\w-]+)\.ko/.exec(path)?.[1] ?? '').replace(/-/g, '_')));
  const builtin = moduleNames('modules-builtin');
  const available = moduleNames('modules-available');
  // Without a module list (a kernel built without modules), the feature's
  // presence is the evidence: overlay in /proc/filesystems, /proc/sys/net/bridge.
  const effects: Record<KernelModuleName, boolean> = {
    overlay: /\boverlay\b/.test(sections.get('filesystems') ?? ''),
    br_netfilter: (sections.get('bridge-sysctls') ?? '').includes('present'),
  };
  const state = (name: KernelModuleName): KernelModuleState => {
    if (loaded.has(name)) return 'loaded';
    if (builtin.has(name) || effects[name]) return 'builtin';
    if (available.has(name)) return 'available';
    return 'missing';
  };
  return { overlay: state('overlay'), br_netfilter: state('br_netfilter') };
}

function parseSysctls(lines: string[]): Record<string, string | null> {
  const values: Record<string, string | null> = Object.fromEntries(REQUIRED_SYSCTLS.map((key) => [key, null]));
  for (const line of lines) {
    const [path = '', value] = line.split('=');
    const key = path.trim().replace(/\//g, '.');
    if (key in values) values[key] = value === undefined ? null : value.trim();
  }
  return values;
}

function parseTimeSync(lines: string[]): HostFacts['timeSync'] {
  let isSynchronized: boolean | null = null;
  const daemons: string[] = [];
  for (const line of lines) {
    const [key, value = ''] = line.split('=');
    if (key === 'ntp-synchronized') {
      if (value === 'yes') isSynchronized = true;
      else if (value === 'no' && isSynchronized === null) isSynchronized = false;
    } else if (key === 'daemon' && value) {
      daemons.push(value);
    }
  }
  return { isSynchronized, daemons };
}

/** Parses the disk section: `path=<p>` lines, each followed by the `df -Pk` row of that path. */
function parseDf(lines: string[]): DiskSpace[] {
  const disks: DiskSpace[] = [];
  let path: string | undefined;
  for (const line of lines) {
    if (line.startsWith('path=')) {
      path = line.slice('path='.length).trim();
      continue;
    }
    // Filesystem 1024-blocks Used Available Capacity Mounted-on (the mount point may hold spaces).
    const fields = line.trim().split(/\s+/);
    if (path === undefined || fields.length < 6) continue;
    disks.push({
      path,
      mountPoint: fields.slice(5).join(' '),
      totalBytes: Number(fields[1]) * 1024,
      availableBytes: Number(fields[3]) * 1024,
    });
    path = undefined;
  }
  return disks;
}
