/**
 * The one way edgeadm puts a file into place on a host: init and join (the
 * package's binaries, CNI plugins and airgap images), `upgrade apply` (the
 * k3s swap, the kubeadm swap, both rollbacks), `upgrade node` (its swap and
 * rollback), and so the fleet commands, which run those workflows.
 *
 * Each file is copied beside its target (`<target>.edgeadm-new`), given its
 * mode and flushed, and that staged copy is hashed against the SHA-256 it
 * must have before it is renamed over the target: a copy that differs is
 * removed and the target is left as it was. After the rename the target is
 * hashed again. A cut at any moment leaves the old file or the new one,
 * whole. Issue #40: the upgrade swaps once renamed whatever `cp` wrote, and
 * init's `install` overwrote the target before its check.
 *
 * Every tool runs by absolute path (system-tools.ts), never through a PATH
 * that the package being installed can change.
 */
import { execOrThrow, type Host } from '../hosts/host.js';
import { SYSTEM_TOOLS, sha256OfFile } from '../hosts/system-tools.js';
import { PackageError, PackageErrorCode } from '../packages/errors.js';

/** The suffix of the staged copy written beside a target before it is renamed over it. */
export const STAGED_SUFFIX = '.edgeadm-new';

/** One file to put into place. */
export interface VerifiedInstall {
  /** Where the bytes are on the host (an unpacked package's file, a backup's). */
  source: string;
  /** Where they go. */
  target: string;
  /** The target's permission bits (0o755). */
  mode: number;
  /** The SHA-256 the target must have: the manifest's, or the backup's as recorded in the state file. */
  sha256: string;
  /** What the bytes are, for messages (`bin/k3s of the package k3s-v1.32.1`). */
  what: string;
}

/** What {@link installVerified} did. */
export interface VerifiedInstallResult {
  /** The targets written by this call (the others already had their SHA-256). */
  installed: string[];
}

/** Lines the script prints, one per file: `<mark> <index>[ <sha256>]`. */
const MARK = {
  kept: 'edgeadm-install: kept',
  installed: 'edgeadm-install: installed',
  stagedMismatch: 'edgeadm-install: staged-mismatch',
  installedMismatch: 'edgeadm-install: installed-mismatch',
} as const;

function quote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

function dirOf(path: string): string {
  return path.slice(0, path.lastIndexOf('/')) || '/';
}

/**
 * The host script for `installs`, in order: a target that already has its
 * SHA-256 is kept (and a staged copy left beside it by an interrupted run
 * removed); otherwise the staged copy is checked before the rename.
 * At the first mismatch it prints what it found and stops (exit 0, so that
 * the caller reads which file and raises a typed error); files after it are
 * not touched. Other failures (no space, no source) exit non-zero.
 */
export function verifiedInstallScript(installs: readonly VerifiedInstall[]): string {
  const t = SYSTEM_TOOLS;
  return [
    'set -e',
    ...installs.map((install, index) => {
      const target = quote(install.target);
      const staged = quote(`${install.target}${STAGED_SUFFIX}`);
      return [
        // Kept: a staged copy an interrupted run left beside it goes.
        `if [ -f ${target} ] && [ "$(${sha256OfFile(target)})" = ${install.sha256} ]; then ${t.rm} -f -- ${staged}; echo '${MARK.kept} ${index}'; else`,
        `${t.rm} -f -- ${staged}`,
        // No `--`: both paths are absolute.
        `${t.cp} ${quote(install.source)} ${staged}`,
        `${t.chmod} ${install.mode.toString(8)} ${staged}`,
        `${t.sync} ${staged}`,
        `s=$(${sha256OfFile(staged)})`,
        // The staged copy is what will become the target: refused here, the target is untouched.
        `if [ "$s" != ${install.sha256} ]; then ${t.rm} -f -- ${staged}; echo "${MARK.stagedMismatch} ${index} $s"; exit 0; fi`,
        `${t.mv} -f -- ${staged} ${target}`,
        `${t.sync} ${quote(dirOf(install.target))}`,
        `s=$(${sha256OfFile(target)})`,
        `if [ "$s" != ${install.sha256} ]; then echo "${MARK.installedMismatch} ${index} $s"; exit 0; fi`,
        `echo '${MARK.installed} ${index}'`,
        'fi',
      ].join('\n');
    }),
  ].join('\n');
}

/**
 * Reads the script's output: the targets installed, or the typed error for
 * the first file whose bytes were not the expected ones.
 *
 * @throws {PackageError} `E_PACKAGE_STAGED_MISMATCH` (the target left as it
 * was) or `E_PACKAGE_INSTALLED_MISMATCH` (the renamed target changed).
 */
export function readVerifiedInstall(
  installs: readonly VerifiedInstall[],
  stdout: string,
  hostName: string,
): VerifiedInstallResult {
  const installed: string[] = [];
  const done = new Set<number>();
  for (const line of stdout.split('\n')) {
    const match = /^(edgeadm-install: [a-z-]+) (\d+)(?: ([0-9a-f]*))?$/.exec(line.trim());
    if (!match) continue;
    const index = Number(match[2]);
    const install = installs[index];
    if (install === undefined) continue;
    const found = match[3] === undefined || match[3] === '' ? '(none)' : match[3];
    const details = { host: hostName, target: install.target, sha256: found, expectedSha256: install.sha256 };
    if (match[1] === MARK.stagedMismatch) {
      throw new PackageError(
        PackageErrorCode.StagedMismatch,
        `the copy of ${install.what} staged as ${install.target}${STAGED_SUFFIX} on ${hostName} has SHA-256 ${found}; it must be ${install.sha256}. It was removed, and ${install.target} was left as it was`,
        { entry: install.what, details },
      );
    }
    if (match[1] === MARK.installedMismatch) {
      throw new PackageError(
        PackageErrorCode.InstalledMismatch,
        `${install.target} on ${hostName}, installed from ${install.what}, has SHA-256 ${found}; the manifest says ${install.sha256}`,
        { entry: install.what, details },
      );
    }
    if (match[1] === MARK.installed) installed.push(install.target);
    done.add(index);
  }
  const missing = installs.findIndex((_, index) => !done.has(index));
  if (missing >= 0) {
    throw new PackageError(
      PackageErrorCode.InstalledMismatch,
      `installing ${installs[missing]!.target} on ${hostName} printed no result; it is not known to hold ${installs[missing]!.what}`,
      { entry: installs[missing]!.what, details: { host: hostName, target: installs[missing]!.target } },
    );
  }
  return { installed };
}

/**
 * Puts `installs` into place on `host` as root, in one command, each staged
 * copy checked before its rename and each target checked after it.
 *
 * @throws {PackageError} `E_PACKAGE_STAGED_MISMATCH`, `E_PACKAGE_INSTALLED_MISMATCH`.
 * @throws {HostCommandError} when the command fails otherwise (no space, a missing source).
 */
export async function installVerified(
  host: Host,
  installs: readonly VerifiedInstall[],
  options: { description: string; timeoutMs?: number },
): Promise<VerifiedInstallResult> {
  if (installs.length === 0) return { installed: [] };
  const result = await execOrThrow(host, verifiedInstallScript(installs), {
    sudo: true,
    description: options.description,
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
  });
  if (result.dryRun === true) return { installed: installs.map((install) => install.target) };
  return readVerifiedInstall(installs, result.stdout, host.name);
}
