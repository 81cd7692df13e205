/**
 * `edgeadm upgrade node`: one node (not a control plane) to the version of
 * a new install package, through a control plane of its cluster: the skew
 * check, then phases (cordon, drain, package, backup, swap, restart, the
 * Ready gate, uncordon) and, when the node is not Ready at the new version
 * within the gate's deadline, a rollback to the backed-up binaries and
 * configuration, Ready at the old version, and uncordoned.
 *
 * The cluster is read, and the node cordoned, drained, uncordoned and
 * watched, with the control plane's admin kubeconfig (as `upgrade plan`
 * reads it): a node's own credentials may not evict Pods.
 *
 * What is swapped: k3s: the k3s binary (the agent runs from it); kubeadm:
 * kubeadm first, then `kubeadm upgrade node` (the node's kubelet
 * configuration, as kubeadm's procedure does it), then the kubelet. An edge
 * node (Node label `edgeadm.io/edge=true`) also gets the new edgeadm for its
 * edge-proxy (the package's bin/edgeadm, or this single binary), and its
 * cache directory is never touched: the proxy restarts on the cache it had.
 * Every binary is swapped atomically (written beside, flushed, renamed), and
 * the old ones keep running until the restart.
 *
 * Idempotence: the step reached is kept on the node (node-state.ts). A
 * re-run finishes an unfinished upgrade of the same package (or the
 * rollback under way), finds a finished one done, and uncordons only a node
 * that this upgrade cordoned.
 */
import { join } from 'node:path';
import { EdgeadmError, PreflightError, ValidationError } from '../../errors.js';
import { connectHost } from '../../hosts/connect.js';
import { execOrThrow, type Host } from '../../hosts/host.js';
import {
  SYSTEMD_UNIT_DIR,
  selectServiceManager,
  type ServiceManager,
  type ServiceManagerKind,
  type ServiceUnit,
} from '../../hosts/service-manager.js';
import { KubeClient } from '../../kube/client.js';
import { kubeCredentialsOf } from '../../kube/kubeconfig.js';
import { edgeadmHome, type Logger } from '../../log/run-log.js';
import { resolvePackageSource, type ResolvedPackage } from '../../packages/source.js';
import type { WorkflowEventSink } from '../../workflow/events.js';
import type { Phase } from '../../workflow/phase.js';
import type { Distribution } from '../distributions/distribution.js';
import { K3S_CONFIG_PATH } from '../distributions/k3s.js';
import { EDGE_PROXY_UNIT_NAME } from '../edge-proxy-unit.js';
import { resolveEdgeadmBinary, runningEdgeadm, type EdgeadmBinary } from '../edge-node-phase.js';
import { readHostFile } from '../host-files.js';
import { hostPackagePaths, stagePackage } from '../package-phase.js';
import { runClusterWorkflow } from '../run-workflow.js';
import { StateRecorder, emptyState, loadState } from '../state.js';
import { clusterVersionsOf, type ClusterSnapshot } from './cluster-versions.js';
import { cordonNode, drainNode, uncordonNode } from './drain.js';
import { nodeReadyGate, type GateTarget } from './health-gates.js';
import { minorOf, minorsAhead, parseKubeVersion, type KubeVersion } from './kube-version.js';
import { BACKUP_TIMEOUT_MS } from './limits.js';
import { KUBEADM_UPGRADE_NODE_TIMEOUT_MS } from './node-limits.js';
import type { UpgradeNodeRequest } from './node-request.js';
import {
  NODE_UPGRADE_BACKUP_DIR,
  isNodeUpgradeUnfinished,
  readNodeUpgradeState,
  writeNodeUpgradeState,
  type NodeUpgradeState,
} from './node-state.js';
import { distributionOn, readCluster, reachableServer } from './plan.js';
import { SKEW_RULES, applyStep, skewViolations, type SkewRule } from './skew.js';
import { BACKUP_MANIFEST } from './upgrade-state.js';

/** The kubelet configuration `kubeadm upgrade node` rewrites on a node (backed up and restored with the binaries). */
export const KUBEADM_KUBELET_CONFIG_PATH = '/var/lib/kubelet/config.yaml';

/** One binary the upgrade replaces. */
interface SwappedBinary {
  /** Its name in the backup. */
  name: string;
  /** Where it is installed. */
  target: string;
  /** Where the new one comes from on the node: the staged package, or (edgeadm) an upload of this binary. */
  source: { kind: 'package'; path: string; sha256: string } | { kind: 'upload'; from: string };
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

function quote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** Installs `source` as `target`: copied beside it, flushed, renamed over it; a cut leaves one or the other, whole. */
function atomicInstall(source: string, target: string, mode: string): string {
  const temporary = `${target}.edgeadm-new`;
  const dir = target.slice(0, target.lastIndexOf('/')) || '/';
  return [
    `cp ${quote(source)} ${quote(temporary)}`,
    `chmod ${mode} ${quote(temporary)}`,
    `sync ${quote(temporary)}`,
    `mv -f ${quote(temporary)} ${quote(target)}`,
    `sync ${quote(dir)}`,
  ].join('\n');
}

async function setStep(ctx: UpgradeNodeData, step: NodeUpgradeState['step'], failure?: string): Promise<void> {
  ctx.upgrade = { ...ctx.upgrade, step, ...(failure === undefined ? {} : { failure }) };
  await writeNodeUpgradeState(ctx.host, ctx.upgrade);
}

function packageFile(ctx: UpgradeNodeData, path: string): { path: string; sha256: string } {
  const file = ctx.package.manifest.files.find((f) => f.path === path);
  if (file === undefined) {
    throw new EdgeadmError(`the install package ${ctx.package.manifest.name} has no ${path}`, {
      code: 'E_PACKAGE_INCOMPLETE',
      exitCode: 3,
    });
  }
  return { path: `${hostPackagePaths(ctx.package.manifest.name).dir}/${path}`, sha256: file.sha256 };
}

/** The binaries replaced, in swap order (kubeadm before the kubelet: `kubeadm upgrade node` runs between). */
function swappedBinaries(ctx: UpgradeNodeData): SwappedBinary[] {
  const bin = ctx.distribution.binDir;
  const fromPackage = (name: string): SwappedBinary => ({
    name,
    target: `${bin}/${name}`,
    source: { kind: 'package', ...packageFile(ctx, `bin/${name}`) },
  });
  const binaries =
    ctx.distribution.name === 'k3s' ? [fromPackage('k3s')] : [fromPackage('kubeadm'), fromPackage('kubelet')];
  const edge = ctx.edgeadmBinary;
  if (ctx.isEdge && edge !== undefined) {
    binaries.push({
      name: 'edgeadm',
      target: edge.path,
      source: edge.kind === 'package' ? { kind: 'package', ...packageFile(ctx, 'bin/edgeadm') } : edge,
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

/** Restarts the edge-proxy (edge nodes; on the cache it has) and then the node's service. */
async function restartServices(ctx: UpgradeNodeData): Promise<void> {
  if (ctx.isEdge) {
    const unit = await installedUnit(ctx, { name: EDGE_PROXY_UNIT_NAME, content: '' });
    if (unit.content !== '') await ctx.serviceManager.ensureRunning(ctx.host, unit, { isRestartNeeded: true });
  }
  const unit = await installedUnit(ctx, ctx.distribution.serviceUnit('worker'));
  await ctx.serviceManager.ensureRunning(ctx.host, unit, { isRestartNeeded: true });
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
      await execOrThrow(
        ctx.host,
        [
          'set -e',
          `rm -rf ${partial}`,
          `mkdir -p -m 700 ${partial}`,
          ...swappedBinaries(ctx).map((b) => `cp -p ${quote(b.target)} ${partial}/${b.name}`),
          `if [ -f ${quote(config)} ]; then cp -p ${quote(config)} ${partial}/config; fi`,
          `(cd ${partial} && sha256sum ${names.join(' ')} $( [ -f config ] && echo config ) > ${BACKUP_MANIFEST})`,
          `sync ${partial}/*`,
          `rm -rf ${NODE_UPGRADE_BACKUP_DIR}`,
          `mv ${partial} ${NODE_UPGRADE_BACKUP_DIR}`,
        ].join('\n'),
        {
          sudo: true,
          timeoutMs: BACKUP_TIMEOUT_MS,
          description: `back up ${[...swappedBinaries(ctx).map((b) => b.target), config].join(', ')} into ${NODE_UPGRADE_BACKUP_DIR}`,
        },
      );
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
  const result = await execOrThrow(
    ctx.host,
    [
      'set -e',
      `if [ "$(sha256sum < ${quote(binary.target)} | cut -c1-64)" = ${binary.source.sha256} ]; then echo 'edgeadm: already swapped'; exit 0; fi`,
      atomicInstall(binary.source.path, binary.target, '755'),
    ].join('\n'),
    { sudo: true, description: `install ${binary.target} from ${ctx.package.manifest.name}, atomically` },
  );
  return !result.stdout.includes('edgeadm: already swapped');
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
          await execOrThrow(ctx.host, `${quote(binary.target)} upgrade node`, {
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
    summary: "Restart the edge-proxy (edge nodes, on its cache) and the node's service on the new binaries",
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
        const config = configFile(ctx);
        await execOrThrow(
          ctx.host,
          [
            'set -e',
            `cd ${NODE_UPGRADE_BACKUP_DIR}`,
            `sha256sum -c --quiet ${BACKUP_MANIFEST}`,
            ...swappedBinaries(ctx).map((b) => atomicInstall(`${NODE_UPGRADE_BACKUP_DIR}/${b.name}`, b.target, '755')),
            `if [ -f config ]; then ${atomicInstall(`${NODE_UPGRADE_BACKUP_DIR}/config`, config, '600').split('\n').join('; ')}; fi`,
          ].join('\n'),
          {
            sudo: true,
            timeoutMs: BACKUP_TIMEOUT_MS,
            description: `check ${NODE_UPGRADE_BACKUP_DIR} against its manifest and restore it`,
          },
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

/** What `upgrade node` returns (its `--json` document). */
export interface UpgradeNodeResult {
  /** The node as reached over SSH. */
  host: string;
  /** Its Node name. */
  nodeName: string;
  from: string;
  to: string;
  isEdge: boolean;
  /** upgraded: this run finished it; already-done: it was. */
  outcome: 'upgraded' | 'already-done';
  backupDir: string;
  /** The step an earlier, interrupted run had reached, when this run resumed it. */
  resumedFrom?: NodeUpgradeState['step'];
}

/** Options of {@link upgradeNode}. */
export interface UpgradeNodeOptions {
  logger: Logger;
  requestedServiceManager: ServiceManagerKind | undefined;
  onLine: (line: string) => void;
  onEvent?: WorkflowEventSink;
  /** A connection to the control plane to use (not closed here): `fleet upgrade` shares one. */
  controlPlaneHost?: Host;
  /** The verified package (`fleet upgrade` verifies it once for the run). */
  resolvedPackage?: ResolvedPackage;
}

/** The admin client of the control plane, reachable from this machine. */
async function adminClient(controlPlane: Host, distribution: Distribution): Promise<KubeClient> {
  const text = await readHostFile(controlPlane, distribution.adminKubeconfigPath);
  const credentials = await kubeCredentialsOf(text, {
    what: `${controlPlane.name}:${distribution.adminKubeconfigPath}`,
    readFile: (path) => readHostFile(controlPlane, path),
  });
  return new KubeClient({ ...credentials, server: await reachableServer(controlPlane, distribution, credentials) });
}

/**
 * The skew rules the node's new kubelet would break: newer than an API
 * server, further behind than allowed, or a minor downgrade. Pure.
 */
export function nodeSkewViolations(
  snapshot: ClusterSnapshot,
  nodeName: string,
  target: KubeVersion,
): Array<{ rule: SkewRule; message: string }> {
  const node = snapshot.hosts.find((h) => h.name === nodeName);
  const violations: Array<{ rule: SkewRule; message: string }> = [];
  if (node !== undefined && minorsAhead(target, node.kubelet) < 0) {
    violations.push({
      rule: 'no-minor-downgrade',
      message: `${nodeName} would go from ${node.kubelet.text} back to ${minorOf(target)}: ${SKEW_RULES['no-minor-downgrade']} (no-minor-downgrade)`,
    });
  }
  const after = applyStep(clusterVersionsOf(snapshot), { host: nodeName, role: 'node', to: target });
  for (const violation of skewViolations(after)) {
    if (violation.host === nodeName) violations.push({ rule: violation.rule, message: violation.message });
  }
  return violations;
}

/**
 * Upgrades one node from the package, or resumes an upgrade an interruption
 * left unfinished.
 *
 * @throws {PreflightError} `E_UPGRADE_SKEW` (nothing changed).
 * @throws {ValidationError} `E_UPGRADE_NOT_NODE` (a control plane, or not in the cluster), `E_PACKAGE_DISTRIBUTION`.
 * @throws {EdgeadmError} `E_DRAIN_*` (the node stays cordoned, nothing else changed; a re-run goes on),
 * `E_UPGRADE_ROLLED_BACK` (the old version runs, uncordoned), `E_UPGRADE_INTERRUPTED`, `E_UPGRADE_IN_PROGRESS`.
 */
export async function upgradeNode(
  request: UpgradeNodeRequest,
  options: UpgradeNodeOptions,
): Promise<UpgradeNodeResult> {
  const pkg =
    options.resolvedPackage ??
    (await resolvePackageSource(request.packageSource, { cacheDir: join(edgeadmHome(), 'packages') }));
  const target = parseKubeVersion(pkg.manifest.kubernetesVersion, `package ${pkg.manifest.name}`);
  const controlPlane =
    options.controlPlaneHost ?? (await connectHost({ ...request.controlPlane, logger: options.logger }));
  let host: Host | undefined;
  try {
    const distribution = await distributionOn(controlPlane);
    if (pkg.manifest.distribution !== distribution.name) {
      throw new ValidationError(
        `the install package ${pkg.manifest.name} is for ${pkg.manifest.distribution}, but the cluster of ${controlPlane.name} runs ${distribution.name}`,
        { code: 'E_PACKAGE_DISTRIBUTION' },
      );
    }
    host = await connectHost({ ...request.connect, logger: options.logger });
    const facts = await host.facts();
    const snapshot = await readCluster(controlPlane);
    const me = snapshot.hosts.find((h) => h.name === facts.hostname);
    if (me === undefined || me.role !== 'node') {
      throw new ValidationError(
        me === undefined
          ? `${host.name} (${facts.hostname}) is not a Node of the cluster of ${controlPlane.name}`
          : `${host.name} is a control plane: upgrade apply upgrades it, not upgrade node`,
        { code: 'E_UPGRADE_NOT_NODE' },
      );
    }
    const base = {
      host: host.name,
      nodeName: me.name,
      to: target.text,
      isEdge: me.isEdge,
      backupDir: NODE_UPGRADE_BACKUP_DIR,
    };
    const saved = await readNodeUpgradeState(host);
    let upgrade: NodeUpgradeState;
    const isResuming = saved !== undefined && isNodeUpgradeUnfinished(saved.step);
    if (isResuming) {
      if (saved.to !== target.text || saved.package !== pkg.manifest.name) {
        throw new EdgeadmError(
          `an upgrade of ${host.name} to ${saved.to} (${saved.package}) is unfinished (step ${saved.step}); run it again with that package to finish it or roll it back`,
          { code: 'E_UPGRADE_IN_PROGRESS' },
        );
      }
      upgrade = saved;
      options.onLine(`[upgrade] resuming the upgrade ${saved.from} -> ${saved.to} from step "${saved.step}"`);
    } else {
      const violations = nodeSkewViolations(snapshot, me.name, target);
      if (violations.length > 0) {
        throw new PreflightError(
          `the upgrade of ${me.name} to ${target.text} breaks the Kubernetes version skew policy:\n${violations.map((v) => `  - ${v.message}`).join('\n')}`,
          {
            code: 'E_UPGRADE_SKEW',
            hints: [
              'Upgrade the control planes first (edgeadm upgrade apply), one minor version at a time.',
              'The rules: https://kubernetes.io/releases/version-skew-policy/',
            ],
            details: { violations },
          },
        );
      }
      if (me.kubelet.text === target.text) return { ...base, from: me.kubelet.text, outcome: 'already-done' };
      upgrade = {
        version: 1,
        step: 'draining',
        from: me.kubelet.text,
        to: target.text,
        package: pkg.manifest.name,
        nodeName: me.name,
        wasUnschedulable: false,
      };
    }
    const serviceManager = selectServiceManager({
      requested: options.requestedServiceManager,
      initSystem: facts.initSystem,
      hostName: host.name,
    });
    const edgeadmBinary = me.isEdge
      ? resolveEdgeadmBinary({
          packageName: pkg.manifest.name,
          packageFiles: pkg.manifest.files.map((f) => f.path),
          binDir: distribution.binDir,
          ...runningEdgeadm(),
        })
      : undefined;
    const ctx: UpgradeNodeData = {
      host,
      controlPlane,
      client: await adminClient(controlPlane, distribution),
      isDryRun: false,
      distribution,
      serviceManager,
      package: pkg,
      state: new StateRecorder(host, (await loadState(host)) ?? emptyState()),
      upgrade,
      isEdge: me.isEdge,
      ...(edgeadmBinary === undefined ? {} : { edgeadmBinary }),
      isResuming,
      isForced: request.isForced,
      drainTimeoutMs: request.drainTimeoutMs,
      gateTimeoutMs: request.gateTimeoutMs,
      logger: options.logger,
      say: () => undefined,
    };
    const run = (phases: Phase<UpgradeNodeData>[]) =>
      runClusterWorkflow(phases, ctx, {
        onLine: options.onLine,
        ...(options.onEvent ? { onEvent: options.onEvent } : {}),
      });
    if (upgrade.step === 'rolling-back') {
      await run(upgradeNodeRollbackPhases());
      throw rolledBack(ctx, upgrade.failure ?? 'an earlier run failed');
    }
    try {
      await run(upgradeNodePhases());
    } catch (error) {
      // Before the backup, nothing on the node changed: the Node stays cordoned and a re-run goes on.
      if (ctx.upgrade.step !== 'backed-up' && ctx.upgrade.step !== 'swapped') throw error;
      const failure = (error as Error).message;
      try {
        await setStep(ctx, 'rolling-back', failure);
        await run(upgradeNodeRollbackPhases());
      } catch (rollbackError) {
        throw new EdgeadmError(
          `the upgrade of ${host.name} failed (${failure}) and the rollback could not finish: ${(rollbackError as Error).message}`,
          {
            code: 'E_UPGRADE_INTERRUPTED',
            hints: [
              'Run the same upgrade node again: it finds the step reached on the node and finishes the upgrade or the rollback.',
            ],
            cause: rollbackError,
          },
        );
      }
      throw rolledBack(ctx, failure);
    }
    return {
      ...base,
      from: upgrade.from,
      outcome: 'upgraded',
      ...(isResuming ? { resumedFrom: saved.step } : {}),
    };
  } finally {
    await host?.close();
    if (options.controlPlaneHost === undefined) await controlPlane.close();
  }
}

function rolledBack(ctx: UpgradeNodeData, failure: string): EdgeadmError {
  return new EdgeadmError(
    `the upgrade of ${ctx.host.name} to ${ctx.upgrade.to} failed and was rolled back: ${failure}. ${ctx.upgrade.from} runs again, and the Node is ${ctx.upgrade.wasUnschedulable ? 'still cordoned, as before' : 'uncordoned'}`,
    {
      code: 'E_UPGRADE_ROLLED_BACK',
      hints: [
        `The backup stays in ${NODE_UPGRADE_BACKUP_DIR}. Look at the new binary's log on the node before trying again.`,
      ],
      details: { from: ctx.upgrade.from, to: ctx.upgrade.to, failure },
    },
  );
}
