/**
 * `edgeadm upgrade apply` for one control plane: the skew check, then
 * phases and, when a gate fails, an automatic rollback to the backup. The
 * k3s phases are here (preflight, package, backup, swap, restart, health
 * gates); the kubeadm ones in kubeadm-upgrade-phases.ts, with the same
 * state file, gates and resume.
 *
 * The datastore backup: the k3s server directory (`/var/lib/rancher/k3s/server`:
 * the SQLite database with its WAL, or embedded etcd's data, the TLS files and
 * tokens that belong to it) is archived with the service stopped. With no
 * writer, the files are a consistent copy of the database, without needing
 * `sqlite3` on the host; the service has to stop for the swap anyway, so the
 * stop costs only the time of the archive. The binary and config.yaml are
 * copied beside it and every file's SHA-256 is listed in the backup's
 * manifest and in the state file, which a rollback checks the backup
 * against before it restores anything (backup-hashes.ts).
 *
 * Idempotence: the step reached is kept on the host (upgrade-state.ts). A
 * re-run that finds an unfinished upgrade of the same package resumes it
 * (without backing up again once the backup is complete); one that finds a
 * rollback under way finishes it; one that finds the upgrade done says so.
 */
import { join } from 'node:path';
import { EdgeadmError, ValidationError, isEdgeadmError } from '../../errors.js';
import { connectHost } from '../../hosts/connect.js';
import { DryRunHost } from '../../hosts/dry-run-host.js';
import { execOrThrow } from '../../hosts/host.js';
import { selectServiceManager, type ServiceManagerKind } from '../../hosts/service-manager.js';
import { edgeadmHome, type Logger } from '../../log/run-log.js';
import { resolveTrustedPackage } from '../../packages/package-trust.js';
import type { WorkflowEventSink } from '../../workflow/events.js';
import type { Phase } from '../../workflow/phase.js';
import type { DistributionName } from '../distributions/distribution.js';
import { K3S_CONFIG_PATH } from '../distributions/k3s.js';
import { refuseForeignPackage, stagePackage } from '../package-phase.js';
import { installVerified } from '../verified-install.js';
import { SYSTEM_TOOLS } from '../../hosts/system-tools.js';
import { runClusterWorkflow } from '../run-workflow.js';
import { StateRecorder, emptyState, loadState } from '../state.js';
import type { UpgradeApplyRequest } from './apply-request.js';
import { apiReadyGate, gateClient, nodeReadyGate, systemPodsGate } from './health-gates.js';
import { packageRecordPhase } from '../package-record.js';
import { parseKubeVersion } from './kube-version.js';
import { BACKUP_TIMEOUT_MS } from './limits.js';
import { distributionOn } from './plan.js';
import { edgeKubeProxyUpgradePhase } from './edge-kube-proxy-upgrade.js';
import {
  kubeadmAbandonBackup,
  kubeadmLocalApiServer,
  kubeadmRollbackPhase,
  kubeadmUpgradePhases,
} from './kubeadm-upgrade-phases.js';
import {
  backupHashesScript,
  backupRestoreInstall,
  checkBackup,
  parseBackupHashes,
  privateBackupDirScript,
  restoreHashes,
} from './backup-hashes.js';
import {
  diskSpacePreflight,
  gateTarget,
  isPastBackup,
  packageBinaryInstall,
  setStep,
  shellQuote,
  type UpgradeApplyData,
} from './upgrade-steps.js';
import { upgradeToRun } from './upgrade-start.js';
import { UPGRADE_BACKUP_DIR, UPGRADE_DIR, isUnfinished, type UpgradeState } from './upgrade-state.js';

/** The k3s server directory: the datastore and what belongs with it. */
export const K3S_SERVER_DIR = '/var/lib/rancher/k3s/server';

function binaryPath(ctx: UpgradeApplyData): string {
  return `${ctx.distribution.binDir}/k3s`;
}

function unit(ctx: UpgradeApplyData): { name: string; content: string } {
  return ctx.distribution.serviceUnit('control-plane');
}

/** Stages the new package on the host (shared with init and join). */
function stagePackagePhase(): Phase<UpgradeApplyData> {
  return {
    name: 'package',
    summary: 'Upload the new install package, unpack it and check it against its manifest on the host',
    async run(ctx) {
      return (await stagePackage(ctx)) ? 'changed' : 'unchanged';
    },
  };
}

/** Stops k3s and backs up the server directory, the binary and config.yaml, with a manifest of hashes. */
function backupPhase(): Phase<UpgradeApplyData> {
  return {
    name: 'backup',
    summary: 'Stop k3s; back up its datastore (the server directory), binary and config.yaml with their SHA-256',
    runIf: (ctx) => !isPastBackup(ctx),
    skipReason: () => 'the backup is already complete',
    async run(ctx) {
      await setStep(ctx, 'backing-up');
      await ctx.serviceManager.stop(ctx.host, unit(ctx).name);
      const partial = `${UPGRADE_BACKUP_DIR}.partial`;
      const t = SYSTEM_TOOLS;
      const backup = await execOrThrow(
        ctx.host,
        [
          'set -e',
          `${t.rm} -rf ${partial}`,
          privateBackupDirScript([UPGRADE_DIR, partial]),
          `${t.cp} -p ${shellQuote(binaryPath(ctx))} ${partial}/k3s`,
          `${t.cp} -p ${K3S_CONFIG_PATH} ${partial}/config.yaml`,
          `${t.tar} -C ${shellQuote(K3S_SERVER_DIR.slice(0, K3S_SERVER_DIR.lastIndexOf('/')))} -cf ${partial}/server.tar server`,
          backupHashesScript(partial, 'k3s config.yaml server.tar'),
          `${t.sync} ${partial}/*`,
          `${t.rm} -rf ${UPGRADE_BACKUP_DIR}`,
          `${t.mv} ${partial} ${UPGRADE_BACKUP_DIR}`,
          `${t.sync} ${UPGRADE_DIR}`,
        ].join('\n'),
        {
          sudo: true,
          timeoutMs: BACKUP_TIMEOUT_MS,
          description: `back up ${K3S_SERVER_DIR}, ${binaryPath(ctx)} and ${K3S_CONFIG_PATH} into ${UPGRADE_BACKUP_DIR}`,
        },
      );
      ctx.upgrade = { ...ctx.upgrade, backupSha256: parseBackupHashes(backup.stdout) };
      await setStep(ctx, 'backed-up');
      ctx.say(`backed up ${ctx.upgrade.from} into ${UPGRADE_BACKUP_DIR}`);
      return 'changed';
    },
  };
}

/** Installs the new binary atomically. */
function swapPhase(): Phase<UpgradeApplyData> {
  return {
    name: 'swap',
    summary:
      "Install the package's k3s binary atomically (written beside the old one, flushed, checked against the manifest, renamed, checked again)",
    async run(ctx) {
      const target = binaryPath(ctx);
      const { installed } = await installVerified(ctx.host, [packageBinaryInstall(ctx.package, 'k3s', target)], {
        description: `install ${target} from ${ctx.package.manifest.name}, atomically, checked before and after the rename`,
      });
      await setStep(ctx, 'swapped');
      return installed.length > 0 ? 'changed' : 'unchanged';
    },
  };
}

/** Starts k3s on the new binary. */
function restartPhase(): Phase<UpgradeApplyData> {
  return {
    name: 'restart',
    summary: 'Start k3s on the new binary',
    async run(ctx) {
      await ctx.serviceManager.ensureRunning(ctx.host, unit(ctx), { isRestartNeeded: true });
      return 'changed';
    },
  };
}

/** The health gates, each with its deadline; the last one records the upgrade done. */
function healthPhase(): Phase<UpgradeApplyData> {
  return {
    name: 'health',
    summary: 'Wait for the health gates, each with its deadline',
    runIf: (ctx) => !ctx.isDryRun,
    skipReason: () => 'dry run',
    phases: [
      {
        name: 'api-ready',
        summary: 'The API server is ready and reports the new version',
        isCheck: true,
        run: (ctx) => apiReadyGate(gateTarget(ctx, ctx.upgrade.to)),
      },
      {
        name: 'node-ready',
        summary: 'This node is Ready at the new version',
        isCheck: true,
        run: (ctx) => nodeReadyGate(gateTarget(ctx, ctx.upgrade.to)),
      },
      {
        name: 'system-pods',
        summary: 'Every kube-system Pod is running',
        isCheck: true,
        async run(ctx) {
          await systemPodsGate(gateTarget(ctx, ctx.upgrade.to));
          await setStep(ctx, 'done');
        },
      },
    ],
  };
}

/** The upgrade phases of a distribution's control plane, in order. */
export function upgradeApplyPhases(distribution: DistributionName = 'k3s'): Phase<UpgradeApplyData>[] {
  if (distribution === 'kubeadm') {
    return [...kubeadmUpgradePhases(), healthPhase(), edgeKubeProxyUpgradePhase(), recordPhase()];
  }
  return [
    diskSpacePreflight({ backupPaths: [K3S_SERVER_DIR, `/usr/local/bin/k3s`, K3S_CONFIG_PATH], binaries: ['k3s'] }),
    stagePackagePhase(),
    backupPhase(),
    swapPhase(),
    restartPhase(),
    healthPhase(),
    recordPhase(),
  ];
}

/** Once healthy: the cluster's record of the package it runs (package-record.ts). */
function recordPhase(): Phase<UpgradeApplyData> {
  return packageRecordPhase<UpgradeApplyData>({
    action: 'upgrade',
    client: (ctx) => gateClient(gateTarget(ctx, ctx.upgrade.to)),
  });
}

/** The rollback phases: the backup restored, the old version started and checked. */
export function upgradeRollbackPhases(distribution: DistributionName = 'k3s'): Phase<UpgradeApplyData>[] {
  return [
    distribution === 'kubeadm' ? kubeadmRollbackPhase() : k3sRollbackPhase(),
    {
      name: 'rollback-health',
      summary: 'The old version answers and its node is Ready',
      isCheck: true,
      async run(ctx) {
        await apiReadyGate(gateTarget(ctx, ctx.upgrade.from));
        await nodeReadyGate(gateTarget(ctx, ctx.upgrade.from));
        await setStep(ctx, 'rolled-back');
      },
    },
  ];
}

/**
 * The k3s rollback: the binary and config.yaml, and on a single server its
 * datastore (in an HA control plane the datastore is its peers': one
 * server's etcd data restored alone would not rejoin them).
 */
function k3sRollbackPhase(): Phase<UpgradeApplyData> {
  return {
    name: 'rollback',
    summary: 'Restore the backed-up binary, config.yaml and datastore, and start the old version',
    async run(ctx) {
      await setStep(ctx, 'rolling-back');
      await ctx.serviceManager.stop(ctx.host, unit(ctx).name);
      const server = K3S_SERVER_DIR;
      const restoring = `${server}.edgeadm-restore`;
      const old = `${server}.edgeadm-replaced`;
      await checkBackup(ctx.host, UPGRADE_BACKUP_DIR, ctx.upgrade.backupSha256);
      const hashes = await restoreHashes(ctx.host, UPGRADE_BACKUP_DIR, ctx.upgrade.backupSha256);
      const t = SYSTEM_TOOLS;
      await installVerified(
        ctx.host,
        [
          backupRestoreInstall(UPGRADE_BACKUP_DIR, 'k3s', binaryPath(ctx), 0o755, hashes),
          backupRestoreInstall(UPGRADE_BACKUP_DIR, 'config.yaml', K3S_CONFIG_PATH, 0o600, hashes),
        ].filter((install) => install !== undefined),
        { description: `restore ${binaryPath(ctx)} and ${K3S_CONFIG_PATH} from ${UPGRADE_BACKUP_DIR}, checked` },
      );
      if (ctx.upgrade.isHa !== true) {
        await execOrThrow(
          ctx.host,
          [
            'set -e',
            `cd ${UPGRADE_BACKUP_DIR}`,
            `${t.rm} -rf ${restoring} ${old}`,
            `${t.mkdir} -p -m 700 ${restoring}`,
            `${t.tar} -C ${restoring} -xpf server.tar`,
            `${t.sync} ${restoring}`,
            `if [ -e ${server} ]; then ${t.mv} ${server} ${old}; fi`,
            `${t.mv} ${restoring}/server ${server}`,
            `${t.rm} -rf ${restoring} ${old}`,
            `${t.sync} ${server.slice(0, server.lastIndexOf('/'))}`,
          ].join('\n'),
          {
            sudo: true,
            timeoutMs: BACKUP_TIMEOUT_MS,
            description: `restore ${server} from ${UPGRADE_BACKUP_DIR}`,
          },
        );
      }
      await ctx.serviceManager.ensureRunning(ctx.host, unit(ctx), { isRestartNeeded: true });
      ctx.say(`restored ${ctx.upgrade.from} from ${UPGRADE_BACKUP_DIR}; started it`);
      return 'changed';
    },
  };
}

/** What `upgrade apply` returns (its `--json` document). */
export interface UpgradeApplyResult {
  host: string;
  from: string;
  to: string;
  /** upgraded: this run finished it; already-done: it was; would-upgrade: --dry-run. */
  outcome: 'upgraded' | 'already-done' | 'would-upgrade';
  /** Where the old version's backup is on the host. */
  backupDir: string;
  isDryRun: boolean;
  /** The step an earlier, interrupted run had reached, when this run resumed it. */
  resumedFrom?: UpgradeState['step'];
  /** Under --dry-run: `[phase] Would …` lines. */
  plan: string[];
}

/** Options of {@link applyUpgrade}. */
export interface ApplyUpgradeOptions {
  logger: Logger;
  requestedServiceManager: ServiceManagerKind | undefined;
  onLine: (line: string) => void;
  /** Warnings a person must see whatever the output mode (the package's unchecked origin); `onLine` when absent. */
  onWarning?: (line: string) => void;
  onEvent?: WorkflowEventSink;
}

/**
 * Upgrades one control plane from the package, or resumes an upgrade an
 * interruption left unfinished.
 *
 * @throws {PreflightError} `E_UPGRADE_SKEW` (nothing changed).
 * @throws {EdgeadmError} `E_UPGRADE_ROLLED_BACK` when a gate failed and the
 * old version runs again; `E_UPGRADE_IN_PROGRESS` when another package's
 * upgrade is unfinished on the host.
 */
export async function applyUpgrade(
  request: UpgradeApplyRequest,
  options: ApplyUpgradeOptions,
): Promise<UpgradeApplyResult> {
  const pkg = await resolveTrustedPackage(request.packageSource, {
    cacheDir: join(edgeadmHome(), 'packages'),
    trustedKeyFiles: request.trustedKeyFiles,
    warn: options.onWarning ?? options.onLine,
  });
  const target = parseKubeVersion(pkg.manifest.kubernetesVersion, `package ${pkg.manifest.name}`);
  const real = await connectHost({ ...request.connect, logger: options.logger });
  const host = request.isDryRun ? new DryRunHost({ fallback: real }) : real;
  try {
    const distribution = await distributionOn(real);
    if (pkg.manifest.distribution !== distribution.name) {
      throw new ValidationError(
        `the install package ${pkg.manifest.name} is for ${pkg.manifest.distribution}, but ${real.name} runs ${distribution.name}`,
        { code: 'E_PACKAGE_DISTRIBUTION' },
      );
    }
    // Before the upgrade begins: a refusal here changes nothing and rolls nothing back.
    await refuseForeignPackage({ host: real, package: pkg, isDryRun: false });
    const base = { host: real.name, to: target.text, backupDir: UPGRADE_BACKUP_DIR, isDryRun: request.isDryRun };
    const start = await upgradeToRun(real, target, pkg.manifest.name, options.onLine);
    if (start.upgrade.step === 'done') return { ...base, from: start.upgrade.from, outcome: 'already-done', plan: [] };
    const { upgrade, resumedFrom } = start;
    const serviceManager = selectServiceManager({
      requested: options.requestedServiceManager,
      initSystem: (await real.facts()).initSystem,
      hostName: real.name,
    });
    const ctx: UpgradeApplyData = {
      host,
      isDryRun: request.isDryRun,
      distribution,
      serviceManager,
      package: pkg,
      state: new StateRecorder(host, (await loadState(real)) ?? emptyState()),
      upgrade,
      gateTimeoutMs: request.gateTimeoutMs,
      ...(distribution.name === 'kubeadm' ? optionalApiServer(await kubeadmLocalApiServer(real)) : {}),
      logger: options.logger,
      say: () => undefined,
    };
    const run = (phases: Phase<UpgradeApplyData>[]) =>
      runClusterWorkflow(phases, ctx, {
        onLine: options.onLine,
        ...(options.onEvent ? { onEvent: options.onEvent } : {}),
      });
    if (upgrade.step === 'rolling-back') {
      await run(upgradeRollbackPhases(distribution.name));
      throw rolledBack(ctx, upgrade.failure ?? 'an earlier run failed');
    }
    try {
      const report = await run(upgradeApplyPhases(distribution.name));
      return {
        ...base,
        from: upgrade.from,
        outcome: request.isDryRun ? 'would-upgrade' : 'upgraded',
        ...(resumedFrom === undefined ? {} : { resumedFrom }),
        plan: report.plan,
      };
    } catch (error) {
      if (request.isDryRun || !isUnfinished(ctx.upgrade.step)) throw error;
      const failure = (error as Error).message;
      // A failure once the service was stopped is undone here; if the host cannot be
      // reached (a cut connection), this fails too and the recorded step tells the re-run.
      try {
        if (ctx.upgrade.step === 'backing-up') {
          // The backup is incomplete and the old binaries untouched: the old version is started again.
          if (distribution.name === 'kubeadm') {
            await kubeadmAbandonBackup(ctx);
          } else {
            await ctx.serviceManager.ensureRunning(ctx.host, unit(ctx), { isRestartNeeded: false });
            await apiReadyGate(gateTarget(ctx, ctx.upgrade.from));
          }
          await setStep(ctx, 'rolled-back', failure);
        } else {
          await setStep(ctx, 'rolling-back', failure);
          await run(upgradeRollbackPhases(distribution.name));
        }
      } catch (rollbackError) {
        throw new EdgeadmError(
          `the upgrade of ${ctx.host.name} failed (${failure}) and the rollback could not finish: ${(rollbackError as Error).message}`,
          {
            code: 'E_UPGRADE_INTERRUPTED',
            hints: [
              `Run the same upgrade apply again: it finds the step reached in ${UPGRADE_DIR}/state.json and finishes the upgrade or the rollback.`,
            ],
            cause: rollbackError,
          },
        );
      }
      throw rolledBack(ctx, failure, error);
    }
  } finally {
    await host.close();
  }
}

function optionalApiServer(url: string | undefined): { apiServerUrl?: string } {
  return url === undefined ? {} : { apiServerUrl: url };
}

function rolledBack(ctx: UpgradeApplyData, failure: string, cause?: unknown): EdgeadmError {
  return new EdgeadmError(
    `the upgrade of ${ctx.host.name} to ${ctx.upgrade.to} failed and was rolled back: ${failure}. ${ctx.upgrade.from} runs again, ${
      // In an HA control plane the datastore is the peers' and is not restored (see the rollback phases).
      ctx.upgrade.isHa === true ? 'on the datastore its peers keep' : 'on its backed-up datastore'
    }`,
    {
      code: 'E_UPGRADE_ROLLED_BACK',
      hints: [
        `The backup stays in ${UPGRADE_BACKUP_DIR}. Look at the new binary's log on the host before trying again.`,
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
