/**
 * Test hosts ready for a real kubelet, and what "the host is as before"
 * means for them. Used by the real suites and `npm run demo -- --real`.
 *
 * What the rig sets on each test host, and why (none of it is something
 * edgeadm sets on an operator's host; each is a prerequisite kubeadm's own
 * documentation asks of the operator, or stands in for a CNI plugin the
 * operator would install):
 * - its own cgroup subtree and namespace (startTestHosts' `cgroups`), as a
 *   container runtime gives a node, so three kubelets on one machine never
 *   share `/kubepods`;
 * - `net.ipv4.ip_forward=1` and `net.bridge.bridge-nf-call-iptables=1` in the
 *   host's network namespace (kubeadm's preflight requires both);
 * - a default route (through this machine's end of the hosts' network), as
 *   a site's router gives a host: the kubelet takes its node address from
 *   the default route's interface, and without one a Node has no address
 *   (the API server then cannot reach its kubelet for logs and exec);
 * - a CNI configuration: the `bridge` plugin with `host-local` addresses from
 *   the host's own /24 of the pod network, and routes to the other hosts'
 *   /24s (what a flannel host-gw backend would do), so pods on different
 *   nodes reach each other;
 * - an empty /lib/modules on this machine (kube-proxy's DaemonSet mounts it;
 *   this kernel has its modules built in).
 */
import { mkdirSync } from 'node:fs';
import type { TestHost, TestHosts } from '../test-hosts.js';
import { TMPFS_DIRS } from '../test-hosts.js';

/** The pod network the rig's hosts share (edgeadm init's default), one /24 per host. */
export const RIG_POD_NETWORK = '10.42';

/** The /24 of the pod network a host's pods get addresses from. */
export function podSubnetOf(hosts: TestHosts, host: TestHost): string {
  return `${RIG_POD_NETWORK}.${hosts.targets.indexOf(host) + 1}.0/24`;
}

/** Sets what the rig sets on every host (see the module comment). Idempotent. */
export async function prepareRigHosts(hosts: TestHosts): Promise<void> {
  mkdirSync('/lib/modules', { recursive: true });
  await Promise.all(
    hosts.targets.map((host) => {
      const conflist = {
        cniVersion: '0.4.0',
        name: 'edgeadm-rig',
        plugins: [
          {
            type: 'bridge',
            bridge: 'cni0',
            isGateway: true,
            ipMasq: true,
            hairpinMode: true,
            ipam: {
              type: 'host-local',
              ranges: [[{ subnet: podSubnetOf(hosts, host) }]],
              routes: [{ dst: '0.0.0.0/0' }],
            },
          },
          { type: 'portmap', capabilities: { portMappings: true } },
        ],
      };
      const routes = hosts.targets
        .filter((other) => other !== host)
        .map((other) => `ip route replace ${podSubnetOf(hosts, other)} via ${other.address}`);
      // The root namespace's end of the hosts' network (.1), as a site's router.
      const gateway = host.address.replace(/\.\d+$/, '.1');
      return hosts.run(
        host,
        [
          'set -e',
          'sysctl -qw net.ipv4.ip_forward=1',
          'sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null || true',
          'mkdir -p /etc/cni/net.d',
          `printf '%s\\n' '${JSON.stringify(conflist)}' > /etc/cni/net.d/10-edgeadm-rig.conflist`,
          `ip route replace default via ${gateway}`,
          ...routes,
        ].join('\n'),
      );
    }),
  );
}

/**
 * Everything of a host that a cluster could leave behind: the files under
 * the install directories, its mounts, its processes (other than sshd), its
 * network links and its cgroups. Two equal snapshots mean "as before".
 */
export async function hostSnapshot(hosts: TestHosts, host: TestHost): Promise<Record<string, string>> {
  const section = (name: string, script: string): string => `echo "@@ ${name}"; { ${script}; } 2>/dev/null | sort`;
  const out = await hosts.run(
    host,
    [
      // The install directories' own modes are left out: they are the harness's tmpfs mount points (a host has
      // none of them before init; reset empties a mount point rather than removing it). /run/xtables.lock is the
      // lock file any iptables command makes, reset's own network cleanup included.
      section(
        'files',
        `find ${[...TMPFS_DIRS, '/etc/cni', '/run'].join(' ')} -xdev -mindepth 1 ! -path /run/xtables.lock -printf '%p %y %m\\n'`,
      ),
      // Mount points by path and type (ids and options change from mount to mount).
      // Other test harnesses' network namespaces, seen below the host's own /run, come and go with those
      // harnesses: left out.
      section('mounts', "awk '{ print $5, $(NF-2) }' /proc/self/mountinfo | grep -v '^/run/netns/eadmt'"),
      section(
        'processes',
        'for p in $(cat /sys/fs/cgroup/pids/cgroup.procs); do [ "$p" = $$ ] || cat /proc/$p/comm 2>/dev/null; done | grep -vx -e sshd -e sh -e cat -e sort -e awk -e find -e grep',
      ),
      section('links', "ip -o link show | awk -F': ' '{ print $2 }' | sed 's/@.*//'"),
      section('cgroups', 'cd /sys/fs/cgroup && find . -mindepth 2 -type d'),
    ].join('\n'),
  );
  const sections: Record<string, string> = {};
  let current = '';
  for (const line of out.split('\n')) {
    if (line.startsWith('@@ ')) {
      current = line.slice(3);
      sections[current] = '';
    } else if (current) sections[current] += `${line}\n`;
  }
  return sections;
}

/** What differs between two snapshots, section by section, for a failure message. */
export function snapshotDifference(before: Record<string, string>, after: Record<string, string>): string[] {
  const lines: string[] = [];
  for (const name of Object.keys(before)) {
    const was = new Set((before[name] ?? '').split('\n').filter(Boolean));
    const now = new Set((after[name] ?? '').split('\n').filter(Boolean));
    for (const line of now) if (!was.has(line)) lines.push(`${name}: + ${line}`);
    for (const line of was) if (!now.has(line)) lines.push(`${name}: - ${line}`);
  }
  return lines;
}
