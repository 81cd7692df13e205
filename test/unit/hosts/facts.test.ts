import { describe, expect, it } from 'vitest';
import { FACTS_SCRIPT, normalizeArch, parseFacts, parseIpAddr, parseListeningPorts } from '../../../src/hosts/facts.js';

/** Output of FACTS_SCRIPT on a Debian 12 VM (abridged where long). */
const OUTPUT = `@@edgeadm-facts:os-release
PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
ID=debian
@@edgeadm-facts:uname
Linux
6.1.0-18-amd64
x86_64
@@edgeadm-facts:nproc
4
@@edgeadm-facts:meminfo
MemTotal:        8052000 kB
MemFree:         1000000 kB
MemAvailable:    6000000 kB
SwapTotal:       2097148 kB
SwapFree:        2097148 kB
@@edgeadm-facts:swaps
Filename				Type		Size		Used		Priority
/dev/vda3                               partition	2097148		0		-2
@@edgeadm-facts:hostname
store-042
@@edgeadm-facts:addresses
1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever
2: eth0    inet 10.42.0.5/24 brd 10.42.0.255 scope global dynamic eth0\\       valid_lft 86000sec preferred_lft 86000sec
2: eth0    inet6 fe80::1/64 scope link \\       valid_lft forever preferred_lft forever
3: vlan10@eth0    inet 192.168.10.2/24 scope global vlan10\\       valid_lft forever preferred_lft forever
@@edgeadm-facts:init
systemd
@@edgeadm-facts:tcp
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 0100007F:2A7A 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 100 0 0 10 0
   2: 052A000A:0016 0A2A0001:D431 01 00000000:00000000 02:00000000 00000000     0        0 3 4 0000000000000000 20 4 30 10 -1
  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4 1 0000000000000000 100 0 0 10 0
@@edgeadm-facts:modules
overlay
nf_conntrack
@@edgeadm-facts:modules-builtin
@@edgeadm-facts:modules-available
/kernel/fs/overlayfs/overlay.ko:
/kernel/net/bridge/br_netfilter.ko.xz:
@@edgeadm-facts:filesystems
nodev	sysfs
nodev	overlay
@@edgeadm-facts:bridge-sysctls
@@edgeadm-facts:sysctls
net/ipv4/ip_forward=1
net/bridge/bridge-nf-call-iptables
net/bridge/bridge-nf-call-ip6tables
@@edgeadm-facts:timesync
ntp-synchronized=yes
daemon=systemd-timesyn
@@edgeadm-facts:date
1700000100
@@edgeadm-facts:disk
path=/var/lib
/dev/vda1        30832548 10000000  19242876      35% /
path=/
/dev/vda1        30832548 10000000  19242876      35% /
`;

describe('parseFacts', () => {
  const facts = parseFacts(OUTPUT, { ports: [22, 6443, 10874, 8080], localEpochSeconds: 1700000000 });

  it('reads OS, kernel, arch, CPUs, memory and swap', () => {
    expect(facts.hostname).toBe('store-042');
    expect(facts.os).toEqual({ id: 'debian', versionId: '12', prettyName: 'Debian GNU/Linux 12 (bookworm)' });
    expect(facts.kernel).toEqual({ name: 'Linux', release: '6.1.0-18-amd64' });
    expect(facts.arch).toBe('amd64');
    expect(facts.machine).toBe('x86_64');
    expect(facts.cpus).toBe(4);
    expect(facts.memory).toEqual({ totalBytes: 8052000 * 1024, availableBytes: 6000000 * 1024 });
    expect(facts.swap).toEqual({ totalBytes: 2097148 * 1024, devices: 1 });
    expect(facts.initSystem).toBe('systemd');
  });

  it('reads addresses, without the @parent of stacked interfaces', () => {
    expect(facts.addresses.map((a) => `${a.interface} ${a.address}/${a.prefixLength} ${a.scope}`)).toEqual([
      'lo 127.0.0.1/8 host',
      'eth0 10.42.0.5/24 global',
      'eth0 fe80::1/64 link',
      'vlan10 192.168.10.2/24 global',
    ]);
  });

  it('tells free ports from ports with a listener (IPv4 and IPv6, any address; not connected sockets)', () => {
    expect(facts.ports).toEqual([
      { port: 22, isFree: false },
      { port: 6443, isFree: true },
      { port: 10874, isFree: false },
      { port: 8080, isFree: false },
    ]);
  });

  it('knows which kernel modules are loaded, built in, installable or missing', () => {
    expect(facts.kernelModules).toEqual({ overlay: 'loaded', br_netfilter: 'available' });
    const builtin = parseFacts(
      OUTPUT.replace('overlay\nnf_conntrack', '').replace(
        '@@edgeadm-facts:bridge-sysctls\n',
        '@@edgeadm-facts:bridge-sysctls\npresent\n',
      ),
      { ports: [] },
    );
    expect(builtin.kernelModules).toEqual({ overlay: 'builtin', br_netfilter: 'builtin' });
    const bare = parseFacts(
      OUTPUT.replace(
        /@@edgeadm-facts:modules\n[\s\S]*?@@edgeadm-facts:bridge-sysctls\n/,
        '@@edgeadm-facts:bridge-sysctls\n',
      ),
      {
        ports: [],
      },
    );
    expect(bare.kernelModules).toEqual({ overlay: 'missing', br_netfilter: 'missing' });
  });

  it('reads sysctls, null when the key does not exist', () => {
    expect(facts.sysctls).toEqual({
      'net.ipv4.ip_forward': '1',
      'net.bridge.bridge-nf-call-iptables': null,
      'net.bridge.bridge-nf-call-ip6tables': null,
    });
  });

  it('reads time sync, clock skew and disk space', () => {
    expect(facts.timeSync).toEqual({ isSynchronized: true, daemons: ['systemd-timesyn'] });
    expect(facts.clockSkewSeconds).toBe(100);
    expect(parseFacts(OUTPUT, { ports: [], localEpochSeconds: 1700000100.4 }).clockSkewSeconds).toBe(0);
    expect(parseFacts(OUTPUT, { ports: [] }).clockSkewSeconds).toBeNull();
    expect(facts.disks).toEqual([
      { path: '/var/lib', mountPoint: '/', totalBytes: 30832548 * 1024, availableBytes: 19242876 * 1024 },
      { path: '/', mountPoint: '/', totalBytes: 30832548 * 1024, availableBytes: 19242876 * 1024 },
    ]);
  });

  it('survives a host that printed almost nothing', () => {
    const sparse = parseFacts('@@edgeadm-facts:hostname\nbox\n', { ports: [6443] });
    expect(sparse).toMatchObject({ hostname: 'box', cpus: 0, arch: 'unknown', initSystem: 'unknown', disks: [] });
    expect(sparse.ports).toEqual([{ port: 6443, isFree: true }]);
  });
});

describe('fact helpers', () => {
  it('maps uname -m to Kubernetes arch names', () => {
    expect(normalizeArch('x86_64')).toBe('amd64');
    expect(normalizeArch('aarch64')).toBe('arm64');
    expect(normalizeArch('armv7l')).toBe('arm');
    expect(normalizeArch('mips')).toBe('mips');
  });

  it('parses /proc/net/tcp listeners only', () => {
    expect([...parseListeningPorts(OUTPUT.split('@@edgeadm-facts:tcp\n')[1]!)].sort((a, b) => a - b)).toEqual([
      22, 8080, 10874,
    ]);
  });

  it('parses ip -o addr lines', () => {
    expect(parseIpAddr('2: eth0    inet 10.0.0.1/16 scope global eth0')).toEqual([
      { interface: 'eth0', family: 'inet', address: '10.0.0.1', prefixLength: 16, scope: 'global' },
    ]);
  });

  it('uses only portable shell: no bashisms in the facts script', () => {
    expect(FACTS_SCRIPT).not.toMatch(/\[\[|\$\(\(|function |source /);
  });
});
