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
import { EdgeadmError, PreflightError, ValidationError, isEdgeadmError } from '../../errors.js';
import { connectHost } from '../../hosts/connect.js';
import type { Host } from '../../hosts/host.js';
import { selectServiceManager, type ServiceManagerKind } from '../../hosts/service-manager.js';
import { KubeClient } from '../../kube/client.js';
import { kubeCredentialsOf } from '../../kube/kubeconfig.js';
import { edgeadmHome, type Logger } from '../../log/run-log.js';
import type { ResolvedPackage } from '../../packages/source.js';
import { resolveTrustedPackage } from '../../packages/package-trust.js';
import type { WorkflowEventSink } from '../../workflow/events.js';
import type { Phase } from '../../workflow/phase.js';
import type { Distribution } from '../distributions/distribution.js';
import { resolveEdgeadmBinary, runningEdgeadm } from '../edge-node-phase.js';
import { readHostFile } from '../host-files.js';
import { refuseForeignPackage } from '../package-phase.js';
import { runClusterWorkflow } from '../run-workflow.js';
import { StateRecorder, emptyState, loadState } from '../state.js';
import type { ClusterHost, ClusterSnapshot } from './cluster-versions.js';
import { parseKubeVersion, type KubeVersion } from './kube-version.js';
import type { UpgradeNodeRequest } from './node-request.js';
import { nodeSkewViolations } from './node-skew.js';
import {
  NODE_UPGRADE_BACKUP_DIR,
  isNodeUpgradeUnfinished,
  readNodeUpgradeState,
  type NodeUpgradeState,
} from './node-state.js';
import { distributionOn, readCluster, reachableServer } from './plan.js';

import { setStep, upgradeNodePhases, upgradeNodeRollbackPhases, type UpgradeNodeData } from './node-phases.js';

export { upgradeNodePhases, upgradeNodeRollbackPhases, type UpgradeNodeData } from './node-phases.js';

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
  /** Warnings a person must see whatever the output mode (the package's unchecked origin); `onLine` when absent. */
  onWarning?: (line: string) => void;
  onEvent?: WorkflowEventSink;
  /** A connection to the control plane to use (not closed here): `fleet upgrade` shares one. */
  controlPlaneHost?: Host;
  /** The verified package (`fleet upgrade` verifies it once for the run). */
  resolvedPackage?: ResolvedPackage;
}

/** The request's package, verified against its trusted keys on this machine. */
function verifiedPackageOf(request: UpgradeNodeRequest, options: UpgradeNodeOptions): Promise<ResolvedPackage> {
  return resolveTrustedPackage(request.packageSource, {
    cacheDir: join(edgeadmHome(), 'packages'),
    trustedKeyFiles: request.trustedKeyFiles,
    warn: options.onWarning ?? options.onLine,
  });
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
 * The state to run from: the saved one when it is unfinished (same package
 * only), else a fresh one once the skew policy allows it; undefined when the
 * node runs the target already.
 */
function startingState(input: {
  host: Host;
  snapshot: ClusterSnapshot;
  node: ClusterHost;
  target: KubeVersion;
  pkg: ResolvedPackage;
  saved: NodeUpgradeState | undefined;
  onLine: (line: string) => void;
}): NodeUpgradeState | undefined {
  const { host, node, target, pkg, saved } = input;
  if (saved !== undefined && isNodeUpgradeUnfinished(saved.step)) {
    if (saved.to !== target.text || saved.package !== pkg.manifest.name) {
      throw new EdgeadmError(
        `an upgrade of ${host.name} to ${saved.to} (${saved.package}) is unfinished (step ${saved.step}); run it again with that package to finish it or roll it back`,
        { code: 'E_UPGRADE_IN_PROGRESS' },
      );
    }
    input.onLine(`[upgrade] resuming the upgrade ${saved.from} -> ${saved.to} from step "${saved.step}"`);
    return saved;
  }
  const violations = nodeSkewViolations(input.snapshot, node.name, target);
  if (violations.length > 0) {
    throw new PreflightError(
      `the upgrade of ${node.name} to ${target.text} breaks the Kubernetes version skew policy:\n${violations.map((v) => `  - ${v.message}`).join('\n')}`,
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
  if (node.kubelet.text === target.text) return undefined;
  return {
    version: 1,
    step: 'draining',
    from: node.kubelet.text,
    to: target.text,
    package: pkg.manifest.name,
    nodeName: node.name,
    wasUnschedulable: false,
  };
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
  const pkg = options.resolvedPackage ?? (await verifiedPackageOf(request, options));
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
    // Before the node is cordoned: a refusal here changes nothing.
    await refuseForeignPackage({ host, package: pkg, isDryRun: false });
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
    const isResuming = saved !== undefined && isNodeUpgradeUnfinished(saved.step);
    const upgrade = startingState({ host, snapshot, node: me, target, pkg, saved, onLine: options.onLine });
    if (upgrade === undefined) return { ...base, from: me.kubelet.text, outcome: 'already-done' };
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
      throw rolledBack(ctx, failure, error);
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

function rolledBack(ctx: UpgradeNodeData, failure: string, cause?: unknown): EdgeadmError {
  return new EdgeadmError(
    `the upgrade of ${ctx.host.name} to ${ctx.upgrade.to} failed and was rolled back: ${failure}. ${ctx.upgrade.from} runs again, and the Node is ${ctx.upgrade.wasUnschedulable ? 'still cordoned, as before' : 'uncordoned'}`,
    {
      code: 'E_UPGRADE_ROLLED_BACK',
      hints: [
        `The backup stays in ${NODE_UPGRADE_BACKUP_DIR}. Look at the new binary's log on the node before trying again.`,
      ],
      // The failure's own code (E_PACKAGE_STAGED_MISMATCH, a gate's) for scripts that tell them apart.
      details: { from: ctx.upgrade.from, to: ctx.upgrade.to, failure, ...failureCodeOf(cause) },
      ...(cause === undefined ? {} : { cause }),
    },
  );
}

function failureCodeOf(cause: unknown): { failureCode?: string } {
  return isEdgeadmError(cause) ? { failureCode: cause.code } : {};
}
