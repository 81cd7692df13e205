/**
 * What the phases of `upgrade apply` share, whatever the distribution: the
 * data they depend on, the step record on the host, the atomic install of
 * one file, the health gate's target. The k3s phases (apply.ts) and the
 * kubeadm phases (kubeadm-upgrade-phases.ts) are built on these, and so
 * are the node-level upgrades (node-phases.ts): every file they put into
 * place goes through verified-install.ts, the one install primitive.
 */
import { EdgeadmError, PreflightError } from '../../errors.js';
import { execOrThrow, type Host } from '../../hosts/host.js';
import type { Phase } from '../../workflow/phase.js';
import type { ServiceManager } from '../../hosts/service-manager.js';
import type { Logger } from '../../log/run-log.js';
import type { ResolvedPackage } from '../../packages/source.js';
import type { Distribution } from '../distributions/distribution.js';
import { hostPackagePaths } from '../package-phase.js';
import type { StateRecorder } from '../state.js';
import type { VerifiedInstall } from '../verified-install.js';
import type { GateTarget } from './health-gates.js';
import { DISK_HEADROOM_KIB } from './limits.js';
import { UPGRADE_DIR, writeUpgradeState, type UpgradeState } from './upgrade-state.js';

/** What the phases depend on. */
export interface UpgradeApplyData {
  host: Host;
  isDryRun: boolean;
  distribution: Distribution;
  serviceManager: ServiceManager;
  package: ResolvedPackage;
  /** The install state recorder (the new package's files, for reset). */
  state: StateRecorder;
  /** The upgrade state, as it stands. */
  upgrade: UpgradeState;
  gateTimeoutMs: number;
  /** This control plane's own API server, when the admin kubeconfig names a shared endpoint (kubeadm). */
  apiServerUrl?: string;
  logger: Logger;
  say(line: string): void;
}

/** A value as one single-quoted shell word. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** Records the step reached (in memory, and on the host unless dry run). */
export async function setStep(ctx: UpgradeApplyData, step: UpgradeState['step'], failure?: string): Promise<void> {
  ctx.upgrade = { ...ctx.upgrade, step, ...(failure === undefined ? {} : { failure }) };
  if (!ctx.isDryRun) await writeUpgradeState(ctx.host, ctx.upgrade);
}

/** Whether the backup is complete (a resumed run does not take it again). */
export const isPastBackup = (ctx: UpgradeApplyData): boolean =>
  ctx.upgrade.step === 'backed-up' || ctx.upgrade.step === 'swapped';

/** What a health gate of this upgrade waits for, at `version`. */
export function gateTarget(ctx: UpgradeApplyData, version: string): GateTarget {
  return {
    host: ctx.host,
    distribution: ctx.distribution,
    nodeName: ctx.upgrade.nodeName,
    version,
    timeoutMs: ctx.gateTimeoutMs,
    ...(ctx.apiServerUrl === undefined ? {} : { server: ctx.apiServerUrl }),
  };
}

/**
 * The install of the package's `bin/<name>` as `target`, for the one
 * install primitive (verified-install.ts): the staged copy must have the
 * manifest's SHA-256 before it replaces the running binary.
 *
 * @throws {EdgeadmError} `E_PACKAGE_INCOMPLETE` when the package has no such binary.
 */
export function packageBinaryInstall(pkg: ResolvedPackage, name: string, target: string): VerifiedInstall {
  const file = pkg.manifest.files.find((f) => f.path === `bin/${name}`);
  if (file === undefined) {
    throw new EdgeadmError(`the install package ${pkg.manifest.name} has no bin/${name}`, {
      code: 'E_PACKAGE_INCOMPLETE',
      exitCode: 3,
    });
  }
  return {
    source: `${hostPackagePaths(pkg.manifest.name).dir}/bin/${name}`,
    target,
    mode: 0o755,
    sha256: file.sha256,
    what: `bin/${name} of the package ${pkg.manifest.name}`,
  };
}

/** The SHA-256 the package's manifest gives for `path`, or undefined when the package has no such file. */
export function packageFileSha256(ctx: UpgradeApplyData, path: string): string | undefined {
  return ctx.package.manifest.files.find((f) => f.path === path)?.sha256;
}

/** What {@link diskSpacePreflight} measures. */
export interface DiskSpaceNeeds {
  /** What the backup copies (their size is what it needs). */
  backupPaths: string[];
  /** The package's binaries (`bin/<name>`) that are written beside the installed ones. */
  binaries: string[];
}

/**
 * The preflight phase: the package has the binaries, and the host has room
 * for the backup and the package under the upgrade directory and for each
 * new binary beside the old one in the bin directory. Reads only.
 */
export function diskSpacePreflight(needs: DiskSpaceNeeds): Phase<UpgradeApplyData> {
  return {
    name: 'preflight',
    summary: 'Check the package has the binaries and the host has room for the backup and the new files',
    isCheck: true,
    runIf: (ctx) => !isPastBackup(ctx),
    skipReason: () => 'the backup is already complete (resuming)',
    async run(ctx) {
      for (const name of needs.binaries) {
        if (packageFileSha256(ctx, `bin/${name}`) === undefined) {
          throw new EdgeadmError(`the install package ${ctx.package.manifest.name} has no bin/${name}`, {
            code: 'E_PACKAGE_INCOMPLETE',
            exitCode: 3,
          });
        }
      }
      const unpackedKib = Math.ceil(ctx.package.manifest.files.reduce((sum, f) => sum + (f.size ?? 0), 0) / 1024);
      const archiveKib = Math.ceil(ctx.package.archiveBytes / 1024);
      const probe = await execOrThrow(
        ctx.host,
        [
          `du -sk ${needs.backupPaths.map(shellQuote).join(' ')} 2>/dev/null | awk '{s+=$1} END {print s+0}'`,
          `d=${UPGRADE_DIR}; while [ ! -d "$d" ]; do d=$(dirname "$d"); done; df -Pk "$d" | awk 'NR==2 {print $4}'`,
          `df -Pk ${shellQuote(ctx.distribution.binDir)} | awk 'NR==2 {print $4}'`,
        ].join('\n'),
        { sudo: true, readOnly: true, description: 'measure the backup and the free space' },
      );
      const [backupKib, freeKib, binFreeKib] = probe.stdout.trim().split('\n').map(Number);
      const needKib = (backupKib ?? 0) + unpackedKib + archiveKib + DISK_HEADROOM_KIB;
      if (freeKib !== undefined && freeKib < needKib) {
        throw new PreflightError(
          `${ctx.host.name} has ${freeKib} KiB free under ${UPGRADE_DIR}; the backup (${backupKib} KiB) and the package (${archiveKib + unpackedKib} KiB) need ${needKib} KiB`,
          {
            code: 'E_UPGRADE_DISK_SPACE',
            hints: ['Free space on the host (old packages under /var/lib/edgeadm/packages), then run again.'],
          },
        );
      }
      const binKib = Math.ceil(
        ctx.package.manifest.files
          .filter((f) => needs.binaries.some((name) => f.path === `bin/${name}`))
          .reduce((sum, f) => sum + (f.size ?? 0), 0) / 1024,
      );
      if (binFreeKib !== undefined && binFreeKib < binKib * 2) {
        throw new PreflightError(
          `${ctx.host.name} has ${binFreeKib} KiB free in ${ctx.distribution.binDir}; the new binaries are written beside the old ones (${binKib} KiB)`,
          { code: 'E_UPGRADE_DISK_SPACE' },
        );
      }
      ctx.say(`room for the backup (${backupKib} KiB) and the package (${archiveKib + unpackedKib} KiB)`);
    },
  };
}
