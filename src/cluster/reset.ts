/**
 * The reset workflow: take a host back to how it was before init or join.
 *
 * distribution-reset → stop-services → stop-workloads → remove-files →
 * cleanup-network → remove-state
 *
 * What goes comes from the install state (/var/lib/edgeadm/state), which
 * init and join fill as they write. Without a state, reset refuses unless
 * `--force`, and then removes what the distribution is known to write.
 * Under --dry-run it lists what would go and changes nothing. A directory
 * that is a mount point (a separate disk for /var/lib/kubelet, say) is
 * emptied rather than removed, as `kubeadm reset` does.
 */
import { EdgeadmError } from '../errors.js';
import { connectHost, type HostConnectOptions } from '../hosts/connect.js';
import { DryRunHost } from '../hosts/dry-run-host.js';
import { execOrThrow, type Host } from '../hosts/host.js';
import type { Logger } from '../log/run-log.js';
import type { Phase } from '../workflow/phase.js';
import { AGENT_UNIT_NAME } from '../registration/agent-install.js';
import type { PhaseResult } from '../workflow/runner.js';
import type { Distribution } from './distributions/distribution.js';
import { DEFAULT_DISTRIBUTION, distributionFor } from './distributions/index.js';
import { EDGE_KUBELET_KUBECONFIG } from './edge-node-phase.js';
import { runClusterWorkflow } from './run-workflow.js';
import type { WorkflowEventSink } from '../workflow/events.js';
import {
  DIRECT_SERVICE_DIR,
  DirectServiceManager,
  SystemdServiceManager,
  serviceFilesOf,
  type ServiceManager,
  type ServiceManagerKind,
} from '../hosts/service-manager.js';
import type { ResetRequest } from './reset-request.js';
import { STATE_FILE, directoriesToRemove, emptyState, loadState, type InstallState } from './state.js';

/** What the reset phases depend on. */
export interface ResetData {
  host: Host;
  isDryRun: boolean;
  distribution: Distribution;
  state: InstallState;
  serviceManager: ServiceManager;
  logger: Logger;
  say(line: string): void;
  removed: string[];
}

function quote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

function holdsState(dir: string): boolean {
  return STATE_FILE.startsWith(`${dir}/`);
}

/**
 * Whether a directory init created is shared with services init did not
 * start: the direct service manager's directory and its parents
 * (register-cloud's tunnel agent keeps its launcher and pid file there, and
 * its data beside them). Such a directory is never removed whole: init's own
 * files in it are recorded and removed one by one, and the directory goes
 * only once empty.
 */
function isShared(dir: string): boolean {
  return dir === DIRECT_SERVICE_DIR || DIRECT_SERVICE_DIR.startsWith(`${dir}/`);
}

/** The recorded directories reset removes whole (the outermost of each tree), deepest first; none shared. */
function ownedDirectories(state: InstallState): string[] {
  return directoriesToRemove(state.directories.filter((dir) => !isShared(dir)));
}

/** Removes a path; a directory that is a mount point is emptied instead. */
function removeCommand(path: string): string {
  const p = quote(path);
  return `if mountpoint -q ${p} 2>/dev/null; then find ${p} -mindepth 1 -maxdepth 1 -exec rm -rf {} +; else rm -rf ${p}; fi`;
}

/**
 * Where the container runtime and the kubelet mount things that outlive
 * their services, beyond the directories the install state records: pod
 * network namespaces (/run/netns/cni-*) and the runtimes' state.
 */
export const WORKLOAD_MOUNT_ROOTS = ['/run/containerd', '/run/k3s', '/var/lib/kubelet'] as const;

/**
 * The pods' network namespaces, as containerd's CNI setup names them
 * (/run/netns/cni-<uuid>). Only those: /run/netns also holds the host's own
 * named namespaces (`ip netns add`), which are not the cluster's.
 */
const POD_NETNS_PREFIX = '/run/netns/cni-';

/**
 * The shell script of the stop-workloads phase. Stopping the kubelet and
 * containerd leaves their pods running (containerd's unit says
 * KillMode=process, so that a runtime restart keeps the pods): their
 * processes stay in the kubelet's cgroups (`kubepods`, `kubepods.slice`) and
 * are parented by `containerd-shim` processes of the `k8s.io` namespace, and
 * their volumes and root file systems stay mounted under /var/lib/kubelet
 * and /run/containerd, which `rm` then cannot remove. Only those processes
 * and mounts are touched: another container engine's (other namespaces,
 * other cgroups) is left alone. Prints the numbers of processes killed and
 * mounts unmounted. Pure.
 */
export function stopWorkloadsScript(mountRoots: readonly string[]): string {
  const roots = mountRoots.map((root) => root.replace(/[^A-Za-z0-9_./-]/g, '')).join('|');
  return [
    'killed=0',
    // The pods' processes, by the kubelet's cgroups (cgroup v1 and v2, systemd and cgroupfs drivers).
    'for procs in $(find /sys/fs/cgroup -maxdepth 3 -type d -name \'kubepods*\' 2>/dev/null | while read -r dir; do find "$dir" -name cgroup.procs; done); do',
    '  for pid in $(cat "$procs" 2>/dev/null); do kill -9 "$pid" 2>/dev/null && killed=$((killed+1)); done',
    'done',
    // The shims of the namespace the CRI plugin uses (k3s and containerd alike), of this host only: those in
    // this shell's mount namespace (a machine running several nodes, kind's or a test rig's, shares one PID
    // namespace). [m]: the pattern must not match this script's own command line, which pgrep -f reads too.
    'own=$(readlink /proc/self/ns/mnt)',
    `for pid in $(pgrep -f 'containerd-shi[m].* -namespace k8s[.]io' 2>/dev/null); do`,
    '  [ "$(readlink /proc/$pid/ns/mnt 2>/dev/null)" = "$own" ] || continue',
    '  kill -9 "$pid" 2>/dev/null && killed=$((killed+1))',
    'done',
    'unmounted=0',
    // Below the roots only (a root may be the operator's own mount, a disk for /var/lib/kubelet, which
    // remove-files empties). Deepest first; mountinfo escapes spaces as \\040. A path mounted more than once (the kubelet's
    // shared /var/lib/kubelet propagates its volume mounts) is unmounted again in the next round.
    'round=0',
    'while [ $round -lt 5 ]; do',
    `  mounts=$(awk '{ print $5 }' /proc/self/mountinfo | grep -E '^((${roots})/|${POD_NETNS_PREFIX})' | sort -r)`,
    '  [ -n "$mounts" ] || break',
    '  for mount in $mounts; do',
    '    umount "$mount" 2>/dev/null || umount -l "$mount" 2>/dev/null || continue',
    '    unmounted=$((unmounted+1))',
    '  done',
    '  round=$((round+1))',
    'done',
    // The files the pods' namespaces were mounted on, and /run/netns if nothing else is left in it.
    `rm -f ${POD_NETNS_PREFIX}*`,
    'rmdir /run/netns 2>/dev/null || true',
    // The kubelet's cgroups, emptied above, deepest first.
    'find /sys/fs/cgroup -maxdepth 3 -type d -name \'kubepods*\' 2>/dev/null | while read -r dir; do find "$dir" -depth -type d -exec rmdir {} \\; 2>/dev/null; done',
    'echo "$killed $unmounted"',
  ].join('\n');
}

/**
 * Where `upgrade apply` and `upgrade node` keep their step and their backup
 * (the old binaries, configuration and datastore, with the CA key and
 * tokens): not recorded in the install state, yet part of the cluster, so
 * reset removes it too. The same path as `UPGRADE_DIR` in
 * upgrade/upgrade-state.ts (a test holds them equal; reset does not import
 * the upgrade workflow).
 */
export const UPGRADE_STATE_DIR = '/var/lib/edgeadm/upgrade';

/** Removes what init and join recorded, and what upgrades left; shared directories only once empty (remove-state). */
const removeFilesPhase: Phase<ResetData> = {
  name: 'remove-files',
  summary: 'Remove every file and directory recorded in the install state, and what upgrades left',
  async run(ctx) {
    const files = ctx.state.files.filter((file) => file !== STATE_FILE);
    // Directories holding the state go last (remove-state), so that an interrupted reset can be re-run.
    const recorded = ownedDirectories(ctx.state);
    const directories = recorded.filter((dir) => !holdsState(dir));
    if (!recorded.some((dir) => UPGRADE_STATE_DIR.startsWith(`${dir}/`))) directories.push(UPGRADE_STATE_DIR);
    const existing: string[] = [];
    for (const path of [...files, ...directories]) {
      if (ctx.isDryRun || (await ctx.host.exists(path, { sudo: true }))) existing.push(path);
    }
    if (existing.length === 0) return 'unchanged';
    for (const path of existing) {
      await execOrThrow(ctx.host, removeCommand(path), { sudo: true, description: `remove ${path}` });
      ctx.removed.push(path);
    }
    if (!ctx.isDryRun) ctx.say(`removed ${existing.length} paths`);
    return 'changed';
  },
};

/** Removes the install state last, then the shared directories that are empty. */
const removeStatePhase: Phase<ResetData> = {
  name: 'remove-state',
  summary: 'Remove the install state',
  async run(ctx) {
    if (!ctx.isDryRun && !(await ctx.host.exists(STATE_FILE, { sudo: true }))) return 'unchanged';
    const paths = [STATE_FILE, ...ownedDirectories(ctx.state).filter(holdsState)];
    for (const path of paths) {
      await execOrThrow(ctx.host, `rm -rf ${quote(path)}`, { sudo: true, description: `remove ${path}` });
      ctx.removed.push(path);
    }
    // Shared directories last, deepest first, each only if nothing but init's own files was in it.
    const shared = [...new Set(ctx.state.directories.filter(isShared))].sort((a, b) => b.length - a.length);
    for (const dir of shared) {
      const removed = await ctx.host.exec(`rmdir ${quote(dir)} 2>/dev/null && echo removed || true`, {
        sudo: true,
      });
      if (removed.stdout.trim() === 'removed') ctx.removed.push(dir);
    }
    return 'changed';
  },
};

/** Says whether register-cloud's tunnel agent is still installed: it is not init's to remove. */
const checkTunnelAgentPhase: Phase<ResetData> = {
  name: 'check-tunnel-agent',
  summary: 'Say whether a tunnel agent register-cloud installed still runs here (reset leaves it to agent uninstall)',
  async run(ctx) {
    const unitFile = ctx.serviceManager.filesOf(AGENT_UNIT_NAME)[0];
    if (unitFile === undefined || ctx.isDryRun || !(await ctx.host.exists(unitFile, { sudo: true }))) {
      return 'unchanged';
    }
    ctx.say(
      `warning: ${AGENT_UNIT_NAME} (register-cloud's tunnel agent) is still installed: the cluster it serves is gone. ` +
        'Remove it with "edgeadm agent uninstall" (same --host), and revoke it at the hub with "edgeadm hub clusters delete NAME".',
    );
    return 'unchanged';
  },
};

/** The reset phase tree. */
export function resetPhases(): Phase<ResetData>[] {
  return [
    {
      name: 'distribution-reset',
      summary: "Run the distribution's own reset (kubeadm reset -f; k3s has none)",
      runIf: (ctx) => ctx.distribution.resetCommand !== undefined,
      skipReason: (ctx) => `${ctx.distribution.name} has no reset command of its own`,
      async run(ctx) {
        await execOrThrow(ctx.host, ctx.distribution.resetCommand!, {
          sudo: true,
          timeoutMs: DISTRIBUTION_RESET_TIMEOUT_MS,
          description: `undo the ${ctx.distribution.name} setup (${ctx.distribution.resetCommand!})`,
        });
        return 'changed';
      },
    },
    {
      name: 'stop-services',
      summary: 'Stop and disable the services init or join started',
      async run(ctx) {
        // Last started, first stopped: the kubelet before its container runtime.
        const units = new Set([
          ...[...ctx.state.services].reverse(),
          ctx.distribution.serviceUnit('control-plane').name,
          ctx.distribution.serviceUnit('worker').name,
          ...(ctx.distribution.runtime ? [ctx.distribution.runtime.serviceUnit.name] : []),
        ]);
        let isChanged = false;
        for (const unit of units) {
          const wasActive = ctx.isDryRun || (await ctx.serviceManager.isActive(ctx.host, unit));
          // Stopped whether or not it runs: a failing service may be between two starts (Restart=).
          await ctx.serviceManager.stop(ctx.host, unit);
          if (!wasActive) continue;
          ctx.say(`stopped ${unit}`);
          isChanged = true;
        }
        return isChanged ? 'changed' : 'unchanged';
      },
    },
    {
      name: 'stop-workloads',
      summary:
        "Stop what the services leave running (pods' processes and container shims) and unmount what they mounted",
      async run(ctx) {
        const mountRoots = [...new Set([...ctx.state.directories, ...WORKLOAD_MOUNT_ROOTS])];
        const result = await execOrThrow(ctx.host, stopWorkloadsScript(mountRoots), {
          sudo: true,
          description:
            "stop the pods' processes and container shims, unmount their volumes, root file systems and network namespaces",
        });
        const [killed = '0', unmounted = '0'] = result.stdout.trim().split(/\s+/);
        if (killed === '0' && unmounted === '0') return 'unchanged';
        ctx.say(`stopped ${killed} processes of pods and containers, unmounted ${unmounted} mounts`);
        return 'changed';
      },
    },
    removeFilesPhase,
    {
      name: 'cleanup-network',
      summary: 'Remove the network interfaces and iptables rules the distribution created',
      async run(ctx) {
        await execOrThrow(ctx.host, ctx.distribution.networkCleanupScript(), {
          sudo: true,
          description: `remove ${ctx.distribution.name}'s network interfaces (cni0, flannel.1) and iptables rules, if any`,
        });
        return 'unchanged';
      },
    },
    checkTunnelAgentPhase,
    removeStatePhase,
  ];
}

/** How long the distribution's own reset may take. */
export const DISTRIBUTION_RESET_TIMEOUT_MS = 5 * 60_000;

/** Everything `edgeadm reset` needs. */
export interface ResetOptions {
  host: Host;
  isDryRun: boolean;
  isForced: boolean;
  /** The distribution asked for; otherwise the one the install state names, else the default. */
  distribution?: Distribution;
  /** The service manager asked for; otherwise the one the state names, else systemd. */
  requestedServiceManager: ServiceManagerKind | undefined;
  skipPhases?: string[];
  logger: Logger;
  onLine: (line: string) => void;
  /** Told every phase's start and end as it happens (progress for the fleet and `--output jsonl`). */
  onEvent?: WorkflowEventSink;
}

/** What reset reports. */
export interface ResetResult {
  host: string;
  isDryRun: boolean;
  hadState: boolean;
  phases: PhaseResult[];
  removed: string[];
  plan?: string[];
  /** The role the install state named. */
  role?: 'control-plane' | 'worker';
}

/**
 * What is left to do after a reset, for people: the cluster still holds a
 * reset node's Node object (reset reaches the host, not the cluster), and a
 * node joined again under that name would find it, with its old taints.
 */
export function afterReset(result: ResetResult): string[] {
  if (result.isDryRun || result.role !== 'worker') return [];
  return [
    'Its Node object stays in the cluster (upgrade plan still counts it): delete it on a control plane with "kubectl delete node NAME",',
    'before this host joins again; a node that joins under the name of an existing Node keeps that Node as it was (its taints too).',
  ];
}

/** Runs reset. */
export async function runReset(options: ResetOptions): Promise<ResetResult> {
  const loaded = await loadState(options.host);
  if (!loaded && !options.isForced) {
    throw new EdgeadmError(`${options.host.name} has no edgeadm install state (${STATE_FILE}): nothing to reset`, {
      code: 'E_RESET_NO_STATE',
      hints: [
        'Pass --force to remove what the distribution is known to write anyway (its data directories and units).',
      ],
    });
  }
  const distribution = options.distribution ?? distributionFor(loaded?.distribution ?? DEFAULT_DISTRIBUTION);
  const runtime = distribution.runtime;
  const state: InstallState = loaded ?? {
    ...emptyState(),
    files: [
      ...distribution.requiredBinaries.map((b) => `${distribution.binDir}/${b}`),
      distribution.configPath('control-plane'),
      ...(distribution.configPath('worker') === distribution.configPath('control-plane')
        ? []
        : [distribution.configPath('worker')]),
      ...(distribution.ownedFiles ?? []),
      ...(runtime ? [runtime.configPath] : []),
    ],
    directories: [...distribution.ownedDirectories, ...(runtime?.ownedDirectories ?? [])],
  };
  const kind = options.requestedServiceManager ?? state.serviceManager ?? 'systemd';
  const ctx: ResetData = {
    host: options.host,
    isDryRun: options.isDryRun,
    distribution,
    state,
    serviceManager: kind === 'direct' ? new DirectServiceManager() : new SystemdServiceManager(),
    logger: options.logger,
    say: () => undefined,
    removed: [],
  };
  if (!loaded) {
    const units = [
      distribution.serviceUnit('control-plane'),
      // An edge node's unit, so that its files (kubeadm's edge drop-in) go too.
      distribution.serviceUnit('worker', { kubeletKubeconfig: EDGE_KUBELET_KUBECONFIG }),
    ];
    if (runtime) units.push(runtime.serviceUnit);
    for (const unit of units) {
      for (const file of serviceFilesOf(ctx.serviceManager, unit)) {
        if (!state.files.includes(file)) state.files.push(file);
      }
    }
  }
  const report = await runClusterWorkflow(resetPhases(), ctx, {
    ...(options.skipPhases ? { skipPhases: options.skipPhases } : {}),
    onLine: options.onLine,
    ...(options.onEvent ? { onEvent: options.onEvent } : {}),
  });
  return {
    host: options.host.name,
    isDryRun: options.isDryRun,
    hadState: loaded !== undefined,
    phases: report.phases,
    removed: options.isDryRun ? [] : ctx.removed,
    ...(options.isDryRun ? { plan: report.plan } : {}),
    ...(loaded?.role === undefined ? {} : { role: loaded.role }),
  };
}

/** How {@link resetHost} reaches the host and reports. */
export interface ResetHostOptions {
  connect: HostConnectOptions;
  requestedServiceManager: ServiceManagerKind | undefined;
  logger: Logger;
  onLine: (line: string) => void;
  onEvent?: WorkflowEventSink;
}

/** `edgeadm reset`: connects (read-only under --dry-run), runs reset, and closes the connection. */
export async function resetHost(request: ResetRequest, options: ResetHostOptions): Promise<ResetResult> {
  const real = await connectHost({ ...options.connect, logger: options.logger });
  const host = request.isDryRun ? new DryRunHost({ fallback: real }) : real;
  try {
    return await runReset({
      host,
      isDryRun: request.isDryRun,
      isForced: request.isForced,
      ...(request.distribution === undefined ? {} : { distribution: distributionFor(request.distribution) }),
      requestedServiceManager: options.requestedServiceManager,
      skipPhases: request.skipPhases,
      logger: options.logger,
      onLine: options.onLine,
      ...(options.onEvent ? { onEvent: options.onEvent } : {}),
    });
  } finally {
    await host.close();
  }
}
