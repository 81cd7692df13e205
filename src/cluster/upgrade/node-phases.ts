/**
 * The phases of `upgrade node` (cordon, drain, package, backup, swap,
 * restart, the Ready gate, uncordon) and of its rollback, as data over one
 * narrow context ({@link UpgradeNodeData}); node.ts decides where to start
 * and runs them. See node.ts for what is swapped and why.
 */
import { execOrThrow, type Host } from '../../hosts/host.js';
import { SYSTEMD_UNIT_DIR, type ServiceManager, type ServiceUnit } from '../../hosts/service-manager.js';
import type { KubeClient } from '../../kube/client.js';
import type { Logger } from '../../log/run-log.js';
import type { ResolvedPackage } from '../../packages/source.js';
import type { Phase } from '../../workflow/phase.js';
import type { Distribution } from '../distributions/distribution.js';
import { K3S_CONFIG_PATH } from '../distributions/k3s.js';
import { EDGE_PROXY_UNIT_NAME } from '../edge-proxy-unit.js';
import { NODE_TUNNEL_AGENT_UNIT_NAME } from '../node-tunnel-units.js';
import type { EdgeadmBinary } from '../edge-node-phase.js';
import { readHostFile } from '../host-files.js';
import { stagePackage } from '../package-phase.js';
import type { StateRecorder } from '../state.js';
import { cordonNode, drainNode, uncordonNode } from './drain.js';
import { nodeReadyGate, type GateTarget } from './health-gates.js';
import { BACKUP_TIMEOUT_MS } from './limits.js';
import { KUBEADM_UPGRADE_NODE_TIMEOUT_MS } from './node-limits.js';
import { NODE_UPGRADE_BACKUP_DIR, writeNodeUpgradeState, type NodeUpgradeState } from './node-state.js';
import { SYSTEM_TOOLS } from '../../hosts/system-tools.js';
import { installVerified } from '../verified-install.js';
import {
  backupHashesScript,
  backupRestoreInstall,
  checkBackup,
  parseBackupHashes,
  privateBackupDirScript,
  restoreHashes,
} from './backup-hashes.js';
import { UPGRADE_DIR } from './upgrade-state.js';
import { packageBinaryInstall, shellQuote } from './upgrade-steps.js';

/** The kubelet configuration `kubeadm upgrade node` rewrites on a node (backed up and restored with the binaries). */
export const KUBEADM_KUBELET_CONFIG_PATH = '/var/lib/kubelet/config.yaml';

/** One binary the upgrade replaces. */
interface SwappedBinary {
  /** Its name in the backup. */
  name: string;
  /** Where it is installed. */
  target: string;
  /** Where the new one comes from on the node: the staged package, or (edgeadm) an upload of this binary. */
  source: { kind: 'package'; name: string } | { kind: 'upload'; from: string };
}

/** What the phases depend on. */
export interface UpgradeNodeData {
  /** The node. */
  host: Host;
  /** The control plane the API is reached through. */
  controlPlane: Host;
  client: KubeClient;
  isDryRun: false;
  distribution: Distribution;
  serviceManager: ServiceManager;
  package: ResolvedPackage;
  /** The node's install state (the new package's files, for reset). */
  state: StateRecorder;
  upgrade: NodeUpgradeState;
  isEdge: boolean;
  edgeadmBinary?: EdgeadmBinary;
  /** An earlier run's state is being finished. */
  isResuming: boolean;
  isForced: boolean;
  drainTimeoutMs: number;
  gateTimeoutMs: number;
  logger: Logger;
  say(line: string): void;
}

export async function setStep(ctx: UpgradeNodeData, step: NodeUpgradeState['step'], failure?: string): Promise<void> {
  ctx.upgrade = { ...ctx.upgrade, step, ...(failure === undefined ? {} : { failure }) };
  await writeNodeUpgradeState(ctx.host, ctx.upgrade);
}

/** The binaries replaced, in swap order (kubeadm before the kubelet: `kubeadm upgrade node` runs between). */
function swappedBinaries(ctx: UpgradeNodeData): SwappedBinary[] {
  const bin = ctx.distribution.binDir;
  const fromPackage = (name: string): SwappedBinary => ({
    name,
    target: `${bin}/${name}`,
    source: { kind: 'package', name },
  });
  const binaries =
    ctx.distribution.name === 'k3s' ? [fromPackage('k3s')] : [fromPackage('kubeadm'), fromPackage('kubelet')];
  const edge = ctx.edgeadmBinary;
  if (ctx.isEdge && edge !== undefined) {
    binaries.push({
      name: 'edgeadm',
      target: edge.path,
      source: edge.kind === 'package' ? { kind: 'package', name: 'edgeadm' } : edge,
    });
  }
  return binaries;
}

/** The configuration file the upgrade may change (k3s: none, but config.yaml is kept with the binary). */
function configFile(ctx: UpgradeNodeData): string {
  return ctx.distribution.name === 'k3s' ? K3S_CONFIG_PATH : KUBEADM_KUBELET_CONFIG_PATH;
}

/** A unit as installed on the node (with what join wrote into it), else the distribution's. */
async function installedUnit(ctx: UpgradeNodeData, fallback: ServiceUnit): Promise<ServiceUnit> {
  const path = `${SYSTEMD_UNIT_DIR}/${fallback.name}`;
  if (!(await ctx.host.exists(path, { sudo: true }))) return fallback;
  return { ...fallback, content: await readHostFile(ctx.host, path) };
}

/** Restarts an edgeadm service of an edge node where join installed it (the swap replaced the binary it runs). */
async function restartEdgeService(ctx: UpgradeNodeData, name: string): Promise<void> {
  const unit = await installedUnit(ctx, { name, content: '' });
  if (unit.content !== '') await ctx.serviceManager.ensureRunning(ctx.host, unit, { isRestartNeeded: true });
}

/**
 * Restarts the edge-proxy (edge nodes; on the cache it has), then the node's
 * service, then the node tunnel agent (kubeadm edge nodes): a process keeps
 * running the binary it started from, so without a restart the agent would
 * go on as the old edgeadm after the swap.
 */
async function restartServices(ctx: UpgradeNodeData): Promise<void> {
  if (ctx.isEdge) await restartEdgeService(ctx, EDGE_PROXY_UNIT_NAME);
  const unit = await installedUnit(ctx, ctx.distribution.serviceUnit('worker'));
  await ctx.serviceManager.ensureRunning(ctx.host, unit, { isRestartNeeded: true });
  if (ctx.isEdge) await restartEdgeService(ctx, NODE_TUNNEL_AGENT_UNIT_NAME);
}

function gateTarget(ctx: UpgradeNodeData, version: string): GateTarget {
  return {
    host: ctx.controlPlane,
    distribution: ctx.distribution,
    nodeName: ctx.upgrade.nodeName,
    version,
    timeoutMs: ctx.gateTimeoutMs,
  };
}

const isPastDrain = (ctx: UpgradeNodeData): boolean =>
  ctx.upgrade.step === 'backed-up' || ctx.upgrade.step === 'swapped';

function cordonPhase(): Phase<UpgradeNodeData> {
  return {
    name: 'cordon',
    summary: 'Mark the Node unschedulable (remembering whether it already was)',
    runIf: (ctx) => !isPastDrain(ctx),
    skipReason: () => 'drained already (resuming)',
    async run(ctx) {
      const wasUnschedulable = await cordonNode(ctx.client, ctx.upgrade.nodeName);
      // On a resumed upgrade the earlier run cordoned the Node: what it was before that is recorded already.
      if (!ctx.isResuming) ctx.upgrade = { ...ctx.upgrade, wasUnschedulable };
      await setStep(ctx, 'draining');
      if (wasUnschedulable) ctx.say(`${ctx.upgrade.nodeName} is unschedulable already`);
      return wasUnschedulable ? 'unchanged' : 'changed';
    },
  };
}

function drainPhase(): Phase<UpgradeNodeData> {
  return {
    name: 'drain',
    summary: "Evict the node's Pods through the eviction API (DaemonSet and static Pods stay), within --drain-timeout",
    runIf: (ctx) => !isPastDrain(ctx),
    skipReason: () => 'drained already (resuming)',
    async run(ctx) {
      const result = await drainNode({
        client: ctx.client,
        nodeName: ctx.upgrade.nodeName,
        isForced: ctx.isForced,
        timeoutMs: ctx.drainTimeoutMs,
        onLine: (line) => ctx.say(line.replace(/^\[drain\] /, '')),
      });
      ctx.say(`${result.evicted.length} Pods evicted, ${result.skipped.length} left alone`);
      return result.evicted.length > 0 ? 'changed' : 'unchanged';
    },
  };
}

function stagePackagePhase(): Phase<UpgradeNodeData> {
  return {
    name: 'package',
    summary: 'Upload the new install package, unpack it and check it against its manifest on the node',
    async run(ctx) {
      return (await stagePackage(ctx)) ? 'changed' : 'unchanged';
    },
  };
}

function backupPhase(): Phase<UpgradeNodeData> {
  return {
    name: 'backup',
    summary: 'Back up the binaries and the configuration the upgrade replaces, with their SHA-256',
    runIf: (ctx) => !isPastDrain(ctx),
    skipReason: () => 'the backup is already complete',
    async run(ctx) {
      const partial = `${NODE_UPGRADE_BACKUP_DIR}.partial`;
      const names = swappedBinaries(ctx).map((b) => b.name);
      const config = configFile(ctx);
      const t = SYSTEM_TOOLS;
      const backup = await execOrThrow(
        ctx.host,
        [
          'set -e',
          `${t.rm} -rf ${partial}`,
          privateBackupDirScript([UPGRADE_DIR, partial]),
          ...swappedBinaries(ctx).map((b) => `${t.cp} -p ${shellQuote(b.target)} ${partial}/${b.name}`),
          `if [ -f ${shellQuote(config)} ]; then ${t.cp} -p ${shellQuote(config)} ${partial}/config; fi`,
          backupHashesScript(partial, `${names.join(' ')} $( [ -f ${partial}/config ] && echo config )`),
          `${t.sync} ${partial}/*`,
          `${t.rm} -rf ${NODE_UPGRADE_BACKUP_DIR}`,
          `${t.mv} ${partial} ${NODE_UPGRADE_BACKUP_DIR}`,
        ].join('\n'),
        {
          sudo: true,
          timeoutMs: BACKUP_TIMEOUT_MS,
          description: `back up ${[...swappedBinaries(ctx).map((b) => b.target), config].join(', ')} into ${NODE_UPGRADE_BACKUP_DIR}`,
        },
      );
      ctx.upgrade = { ...ctx.upgrade, backupSha256: parseBackupHashes(backup.stdout) };
      await setStep(ctx, 'backed-up');
      ctx.say(`backed up ${ctx.upgrade.from} into ${NODE_UPGRADE_BACKUP_DIR}`);
      return 'changed';
    },
  };
}

/** Installs one new binary unless it is in place already; true when it changed. */
async function swapBinary(ctx: UpgradeNodeData, binary: SwappedBinary): Promise<boolean> {
  if (binary.source.kind === 'upload') {
    const upload = await ctx.host.put(binary.source.from, binary.target, {
      mode: 0o755,
      sudo: true,
      description: `upload this edgeadm to ${binary.target}`,
    });
    return !upload.skipped;
  }
  const { installed } = await installVerified(
    ctx.host,
    [packageBinaryInstall(ctx.package, binary.source.name, binary.target)],
    { description: `install ${binary.target} from ${ctx.package.manifest.name}, atomically, checked` },
  );
  return installed.length > 0;
}

function swapPhase(): Phase<UpgradeNodeData> {
  return {
    name: 'swap',
    summary:
      "Install the package's binaries atomically (k3s; kubeadm, `kubeadm upgrade node`, then the kubelet; edgeadm on edge nodes)",
    async run(ctx) {
      let isChanged = false;
      for (const binary of swappedBinaries(ctx)) {
        if (await swapBinary(ctx, binary)) {
          isChanged = true;
          ctx.say(`installed ${binary.target}`);
        }
        if (binary.name === 'kubeadm') {
          await execOrThrow(ctx.host, `${shellQuote(binary.target)} upgrade node`, {
            sudo: true,
            timeoutMs: KUBEADM_UPGRADE_NODE_TIMEOUT_MS,
            description: 'kubeadm upgrade node (the kubelet configuration of this node)',
          });
          ctx.say('kubeadm upgrade node done');
        }
      }
      await setStep(ctx, 'swapped');
      return isChanged ? 'changed' : 'unchanged';
    },
  };
}

function restartPhase(): Phase<UpgradeNodeData> {
  return {
    name: 'restart',
    summary:
      "Restart the edge-proxy (edge nodes, on its cache), the node's service and the node tunnel agent (kubeadm edge nodes) on the new binaries",
    async run(ctx) {
      await restartServices(ctx);
      return 'changed';
    },
  };
}

function readyPhase(): Phase<UpgradeNodeData> {
  return {
    name: 'node-ready',
    summary: 'The Node is Ready and its kubelet reports the new version, within --gate-timeout',
    isCheck: true,
    run: (ctx) => nodeReadyGate(gateTarget(ctx, ctx.upgrade.to)),
  };
}

function uncordonPhase(): Phase<UpgradeNodeData> {
  return {
    name: 'uncordon',
    summary: 'Make the Node schedulable again (unless it was cordoned before the upgrade)',
    async run(ctx) {
      if (!ctx.upgrade.wasUnschedulable) await uncordonNode(ctx.client, ctx.upgrade.nodeName);
      else ctx.say(`${ctx.upgrade.nodeName} stays unschedulable, as it was before the upgrade`);
      await setStep(ctx, 'done');
      return ctx.upgrade.wasUnschedulable ? 'unchanged' : 'changed';
    },
  };
}

/** The upgrade phases, in order. */
export function upgradeNodePhases(): Phase<UpgradeNodeData>[] {
  return [
    cordonPhase(),
    drainPhase(),
    stagePackagePhase(),
    backupPhase(),
    swapPhase(),
    restartPhase(),
    readyPhase(),
    uncordonPhase(),
  ];
}

/** The rollback phases: the backup restored, the old version Ready, the Node uncordoned. */
export function upgradeNodeRollbackPhases(): Phase<UpgradeNodeData>[] {
  return [
    {
      name: 'rollback',
      summary: 'Restore the backed-up binaries and configuration, and restart the old version',
      async run(ctx) {
        await setStep(ctx, 'rolling-back');
        const dir = NODE_UPGRADE_BACKUP_DIR;
        await checkBackup(ctx.host, dir, ctx.upgrade.backupSha256);
        const hashes = await restoreHashes(ctx.host, dir, ctx.upgrade.backupSha256);
        await installVerified(
          ctx.host,
          [
            ...swappedBinaries(ctx).map((b) => backupRestoreInstall(dir, b.name, b.target, 0o755, hashes)),
            backupRestoreInstall(dir, 'config', configFile(ctx), 0o600, hashes),
          ].filter((install) => install !== undefined),
          { description: `restore the binaries and configuration from ${dir}, checked`, timeoutMs: BACKUP_TIMEOUT_MS },
        );
        await restartServices(ctx);
        ctx.say(`restored ${ctx.upgrade.from} from ${NODE_UPGRADE_BACKUP_DIR}; restarted it`);
        return 'changed';
      },
    },
    {
      name: 'rollback-ready',
      summary: 'The Node is Ready at the old version; uncordoned',
      async run(ctx) {
        await nodeReadyGate(gateTarget(ctx, ctx.upgrade.from));
        if (!ctx.upgrade.wasUnschedulable) await uncordonNode(ctx.client, ctx.upgrade.nodeName);
        await setStep(ctx, 'rolled-back');
        return 'changed';
      },
    },
  ];
}
