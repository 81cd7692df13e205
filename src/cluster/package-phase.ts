/**
 * The package phase of init and join: the install package, already verified
 * on this machine, is uploaded to the host (skipped when the host has it),
 * its SHA-256 checked on the host by the upload itself, unpacked into a
 * directory named after the package (so versions sit side by side), the
 * unpacked tree checked against the manifest, and its binaries installed
 * into the distribution's bin directory and checked again there. Every step
 * checks before it changes, so a re-run after a dropped connection resumes
 * where it stopped.
 *
 * Why check on the host what `package verify` already checked: the host's
 * tar is another program than edgeadm's reader, and the bytes installed must
 * be the bytes verified even if the two ever disagree. The unpacked tree is
 * root-only (0700) from the moment it is created, so nobody else on the host
 * can change it between the check and the install.
 */
import { EdgeadmError } from '../errors.js';
import { execOrThrow } from '../hosts/host.js';
import { SYSTEM_TOOLS, sha256OfFile } from '../hosts/system-tools.js';
import { PackageError, PackageErrorCode } from '../packages/errors.js';
import {
  ALLOWED_PACKAGE_BINARIES,
  AIRGAP_IMAGES_DIR,
  isAirgapImage,
  modeBits,
  unexpectedBinaries,
} from '../packages/manifest.js';
import { createHash } from 'node:crypto';
import { compareUnpackedTree, throwOnTreeProblems, unpackedTreeListingCommand } from '../packages/unpacked-tree.js';
import type { Phase } from '../workflow/phase.js';
import type { NodeData } from './node-context.js';
import { readVerifiedInstall, verifiedInstallScript, type VerifiedInstall } from './verified-install.js';
import { uploadProgress } from './upload-progress.js';

/** Where packages are kept on a host. */
export const HOST_PACKAGE_DIR = '/var/lib/edgeadm/packages';
/** The file inside an unpacked package that names the archive it came from. */
export const UNPACKED_MARKER = '.edgeadm-archive-sha256';
/** How long unpacking may take. */
export const UNPACK_TIMEOUT_MS = 10 * 60_000;

function quote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** Where a package's archive and unpacked tree go on the host. */
export function hostPackagePaths(packageName: string): { archive: string; dir: string } {
  return { archive: `${HOST_PACKAGE_DIR}/${packageName}.tar.gz`, dir: `${HOST_PACKAGE_DIR}/${packageName}` };
}

/** A directory of the unpacked package whose regular files go into a directory of the host. */
export interface PackageFileGroup {
  /** The package's directory, with its trailing slash (`bin/`). */
  from: string;
  /** Where its files go. */
  to: string;
  /** Whether `to` is created (and recorded) when missing; otherwise it must exist. */
  isCreated?: boolean;
}

/**
 * Installs the regular files directly under `from` (`bin/`, `cni/`) of the
 * unpacked package into `to`, with the modes the manifest gives, recording
 * each target first; files already there with the right SHA-256 are kept.
 * True when something was installed.
 */
export async function installPackageFiles(ctx: NodeData, options: { from: string; to: string }): Promise<boolean> {
  return installPackageGroups(ctx, [options]);
}

/**
 * {@link installPackageFiles} for several groups at once. Every target (and
 * every directory created for one) is recorded in one save before the first
 * is written; then one command creates the missing directories, installs
 * every file whose target does not already have its SHA-256, and hashes
 * every target, which edgeadm compares with the manifest: a package with
 * binaries and airgap images took nine commands for this, now three. A dry
 * run asks file by file, read-only, so that its plan lists only what would
 * change.
 */
export async function installPackageGroups(ctx: NodeData, groups: readonly PackageFileGroup[]): Promise<boolean> {
  const { state } = ctx;
  const installs = groups.flatMap((group) =>
    ctx.package.manifest.files
      .filter((file) => file.path.startsWith(group.from) && !file.path.slice(group.from.length).includes('/'))
      .map((file) => ({ file, target: `${group.to}/${file.path.slice(group.from.length)}` })),
  );
  // Every target recorded before the first is written, in one save.
  for (const { target } of installs) state.file(target);
  const toCreate = groups.filter((group) => group.isCreated).map((group) => group.to);
  if (ctx.isDryRun) {
    await state.save();
    let isChanged = false;
    for (const { file, target } of installs) {
      const isInstalled = await changeUnless(ctx, {
        isDone: isInstalledTest(target, file.sha256),
        change: verifiedInstallScript([verifiedInstall(ctx, file, target)]),
        description: installDescription(target, file.sha256),
      });
      if (!isInstalled) continue;
      isChanged = true;
      ctx.say(`would install ${target}`);
    }
    return isChanged;
  }
  const missingDirs = await state.prepareDirectories({ ensure: toCreate, isCreatedByCaller: true });
  await state.save();
  const mkdirs = missingDirs.length > 0 ? `${SYSTEM_TOOLS.mkdir} -p ${missingDirs.map(quote).join(' ')}` : undefined;
  if (installs.length === 0) {
    if (mkdirs !== undefined) {
      await execOrThrow(ctx.host, mkdirs, { sudo: true, description: `create ${missingDirs.join(', ')}` });
    }
    return false;
  }
  // The one install primitive of every path (verified-install.ts): each staged copy checked before its rename.
  // One command with the directories it needs: a round trip per host saved on every join of a fleet.
  const verified = installs.map(({ file, target }) => verifiedInstall(ctx, file, target));
  const result = await execOrThrow(
    ctx.host,
    [...(mkdirs === undefined ? [] : ['set -e', mkdirs]), verifiedInstallScript(verified)].join('\n'),
    {
      sudo: true,
      description:
        installs.length === 1
          ? installDescription(installs[0]!.target, installs[0]!.file.sha256)
          : `install ${installs.length} files from the package and check their SHA-256`,
    },
  );
  const { installed } = readVerifiedInstall(verified, result.stdout, ctx.host.name);
  for (const target of installed) ctx.say(`installed ${target}`);
  return installed.length > 0;
}

function verifiedInstall(
  ctx: Pick<NodeData, 'package'>,
  file: { path: string; sha256: string; mode: string },
  target: string,
): VerifiedInstall {
  return {
    source: `${hostPackagePaths(ctx.package.manifest.name).dir}/${file.path}`,
    target,
    mode: modeBits(file.mode),
    sha256: file.sha256,
    what: `${file.path} of the package ${ctx.package.manifest.name}`,
  };
}

function isInstalledTest(target: string, sha256: string): string {
  return `[ -f ${quote(target)} ] && [ "$(${sha256OfFile(quote(target))})" = ${sha256} ]`;
}

function installDescription(target: string, sha256: string): string {
  return `install ${target} from the package (sha256 ${sha256.slice(0, 12)}…)`;
}

/** What the unpack command prints first: whether it unpacked or found the package already there. */
const ALREADY_UNPACKED = 'edgeadm: already unpacked';
const FRESHLY_UNPACKED = 'edgeadm: unpacked';

/** What {@link changeUnless} prints on the host when there was nothing to do. */
const ALREADY_DONE = 'edgeadm: already done';

/**
 * Runs `change` (as root) unless the shell test `isDone` holds on the host.
 * A real run asks and acts in one command, one round trip; a dry run asks
 * first, read-only (a real host answers when there is one), so that its plan
 * lists only what would change. True when the change ran, or would.
 */
async function changeUnless(
  ctx: Pick<NodeData, 'host' | 'isDryRun'>,
  step: { isDone: string; change: string; description: string; timeoutMs?: number },
): Promise<boolean> {
  const timeout = step.timeoutMs === undefined ? {} : { timeoutMs: step.timeoutMs };
  if (ctx.isDryRun) {
    const check = await ctx.host.exec(`if ${step.isDone}; then echo '${ALREADY_DONE}'; fi`, {
      sudo: true,
      readOnly: true,
      description: `check whether to ${step.description}`,
    });
    if (check.exitCode === 0 && check.stdout.trim() === ALREADY_DONE) return false;
    await execOrThrow(ctx.host, step.change, { sudo: true, description: step.description, ...timeout });
    return true;
  }
  const result = await execOrThrow(
    ctx.host,
    `if ${step.isDone}; then echo '${ALREADY_DONE}'; exit 0; fi\n${step.change}`,
    { sudo: true, description: step.description, ...timeout },
  );
  return result.stdout.trim() !== ALREADY_DONE;
}

/** Refuses a package holding the name edgeadm marks an unpacked tree with on the host. */
function refuseReservedEntry(manifest: NodeData['package']['manifest']): void {
  if (!manifest.files.some((file) => file.path === UNPACKED_MARKER)) return;
  throw new PackageError(
    PackageErrorCode.Manifest,
    `the install package ${manifest.name} holds ${UNPACKED_MARKER}, a name edgeadm keeps for itself on the host`,
    { entry: UNPACKED_MARKER },
  );
}

/**
 * Uploads the verified package to the host (skipped when it is there), unpacks
 * it into its own directory and checks the unpacked tree against the
 * manifest; installs nothing. True when something changed. `upgrade apply`
 * stages a new package with it before it swaps the binaries itself.
 */
export async function stagePackage(
  ctx: Pick<NodeData, 'host' | 'state' | 'package' | 'isDryRun' | 'say'> & Partial<Pick<NodeData, 'facts'>>,
): Promise<boolean> {
  const { host, state } = ctx;
  const pkg = ctx.package;
  const { archive, dir } = hostPackagePaths(pkg.manifest.name);
  let isChanged = false;
  await refuseForeignPackage(ctx);

  // Recorded first, so that the save before the package directory is
  // created records the archive and its unpacked tree too.
  state.file(archive);
  state.update((s) => ({
    ...s,
    directories: s.directories.includes(dir) ? s.directories : [...s.directories, dir],
  }));
  await state.ensureDirectory(HOST_PACKAGE_DIR);
  await state.save();

  const upload = await host.put(pkg.file, archive, {
    sha256: pkg.archiveSha256,
    size: pkg.archiveBytes,
    mode: 0o600,
    sudo: true,
    description: `upload the install package ${pkg.manifest.name} to ${archive} (${pkg.archiveBytes} bytes)`,
    ...uploadProgress(pkg.manifest.name, pkg.archiveBytes, (line) => ctx.say(line)),
  });
  if (!upload.skipped) isChanged = true;
  if (upload.skipped) ctx.say(`${archive} already on the host`);
  else ctx.say(ctx.isDryRun ? `would upload ${archive}` : `uploaded ${archive}`);

  // No second check here: put hashes the bytes on the host before it
  // renames them into place, and skips only a file whose SHA-256 it
  // found equal, so the archive at `archive` is the verified package.
  // (A second `sha256sum` would read the whole archive on every host again.)
  const staging = `${dir}.partial`;
  refuseReservedEntry(pkg.manifest);
  const isMarked = `[ "$(${SYSTEM_TOOLS.cat} ${quote(`${dir}/${UNPACKED_MARKER}`)} 2>/dev/null)" = ${pkg.archiveSha256} ]`;
  if (ctx.isDryRun) {
    const isUnpacked = await changeUnless(ctx, {
      isDone: isMarked,
      change: `${SYSTEM_TOOLS.tar} -xzf ${quote(archive)} -C ${quote(staging)} --no-same-owner`,
      description: `unpack ${archive} into ${dir}, check every file against the manifest`,
    });
    if (isUnpacked) isChanged = true;
  } else {
    // One round trip: unpack unless done, then list the tree for the check.
    const unpack = await execOrThrow(
      host,
      [
        'set -e',
        `if ${isMarked}; then echo '${ALREADY_UNPACKED}'; cd ${quote(dir)}; else`,
        `${SYSTEM_TOOLS.rm} -rf ${quote(staging)}`,
        `${SYSTEM_TOOLS.mkdir} -m 700 ${quote(staging)}`,
        `${SYSTEM_TOOLS.tar} -xzf ${quote(archive)} -C ${quote(staging)} --no-same-owner`,
        `echo '${FRESHLY_UNPACKED}'; cd ${quote(staging)}; fi`,
        unpackedTreeListingCommand(),
      ].join('\n'),
      { sudo: true, description: `unpack ${archive} into ${dir} and list it`, timeoutMs: UNPACK_TIMEOUT_MS },
    );
    const isFresh = unpack.stdout.startsWith(`${FRESHLY_UNPACKED}\n`);
    if (!isFresh && !unpack.stdout.startsWith(`${ALREADY_UNPACKED}\n`)) {
      throw new EdgeadmError(`unpacking ${archive} on ${host.name} printed something unexpected; not checked`, {
        code: 'E_PACKAGE_UNPACK_OUTPUT',
        details: { host: host.name, stdout: unpack.stdout.slice(0, 200) },
      });
    }
    const listing = unpack.stdout.slice(unpack.stdout.indexOf('\n') + 1);
    const problems = compareUnpackedTree(listing, pkg.manifest, pkg.manifestSha256, {
      ...(isFresh ? {} : { extraFile: UNPACKED_MARKER }),
      ...(pkg.signatureBytes === undefined ? {} : { signatureSha256: sha256Hex(pkg.signatureBytes) }),
    });
    if (problems.length > 0) {
      // The refused tree goes, so that a re-run unpacks the verified archive afresh.
      const refused = isFresh ? staging : dir;
      await host.exec(`${SYSTEM_TOOLS.rm} -rf ${quote(refused)}`, {
        sudo: true,
        description: `remove the refused ${refused}`,
      });
    }
    throwOnTreeProblems(problems, {
      packageName: pkg.manifest.name,
      host: host.name,
      dir: isFresh ? staging : dir,
    });
    ctx.say(`checked ${pkg.manifest.files.length} unpacked files against the manifest`);
    if (isFresh) {
      await execOrThrow(
        host,
        [
          'set -e',
          `printf '%s\\n' ${pkg.archiveSha256} > ${quote(`${staging}/${UNPACKED_MARKER}`)}`,
          `${SYSTEM_TOOLS.rm} -rf ${quote(dir)}`,
          `${SYSTEM_TOOLS.mv} ${quote(staging)} ${quote(dir)}`,
        ].join('\n'),
        { sudo: true, description: `move the checked package into ${dir}` },
      );
      isChanged = true;
    }
    ctx.say(isFresh ? `unpacked into ${dir}` : `${dir} already unpacked`);
  }
  return isChanged;
}

/**
 * Refuses, before anything reaches the host, a package that must not be
 * installed there: names under bin/ its distribution does not use (they
 * would shadow host tools in /usr/local/bin), and another architecture than
 * the host's. Called by the staging every install path runs first (init,
 * join, upgrade apply, upgrade node), so that no path can skip it; the
 * upgrades also call it before their first phase, so that the refusal
 * comes before the upgrade has begun (and nothing is rolled back).
 *
 * @throws {PackageError} `E_PACKAGE_UNEXPECTED_BINARY`, `E_PACKAGE_ARCH`.
 */
export async function refuseForeignPackage(
  ctx: Pick<NodeData, 'host' | 'package' | 'isDryRun'> & Partial<Pick<NodeData, 'facts'>>,
): Promise<void> {
  const { manifest } = ctx.package;
  const unexpected = unexpectedBinaries(manifest);
  if (unexpected.length > 0) {
    throw new PackageError(
      PackageErrorCode.UnexpectedBinary,
      `the install package ${manifest.name} holds ${unexpected.join(', ')}; a ${manifest.distribution} package installs only bin/{${ALLOWED_PACKAGE_BINARIES[manifest.distribution].join(',')}} (any other name in /usr/local/bin could shadow a tool of the host)`,
      { entry: unexpected[0]!, details: { unexpected } },
    );
  }
  // The facts preflight collected when it ran (init, join): no second run of the facts script.
  // A dry run with no host to read has no facts to compare with.
  const facts =
    ctx.facts ??
    (await ctx.host.facts().catch((error: unknown) => {
      if (ctx.isDryRun) return undefined;
      throw error;
    }));
  if (facts !== undefined && facts.arch !== manifest.arch) {
    throw new PackageError(
      PackageErrorCode.Arch,
      `the install package ${manifest.name} is built for ${manifest.arch}, and ${ctx.host.name} is ${facts.arch} (${facts.machine}); nothing was installed`,
      { entry: 'arch', details: { host: ctx.host.name, arch: facts.arch, packageArch: manifest.arch } },
    );
  }
}

/** Makes the package phase. */
export function packagePhase<C extends NodeData>(): Phase<C> {
  return {
    name: 'package',
    summary: 'Upload the install package, verify it on the host, unpack it and install its binaries',
    async run(ctx) {
      let isChanged = await stagePackage(ctx);
      const pkg = ctx.package;
      const binaries = pkg.manifest.files.filter((file) => /^bin\/[^/]+$/.test(file.path));
      for (const name of ctx.distribution.requiredBinaries) {
        if (!binaries.some((file) => file.path === `bin/${name}`)) {
          throw new EdgeadmError(`the install package ${pkg.manifest.name} has no bin/${name}`, {
            code: 'E_PACKAGE_INCOMPLETE',
            exitCode: 3,
          });
        }
      }
      const groups: PackageFileGroup[] = [{ from: 'bin/', to: ctx.distribution.binDir }];
      // Airgap images go where the distribution imports them at start (k3s:
      // agent/images), each file recorded so reset removes exactly these.
      const imagesDir = ctx.distribution.airgapImagesDir;
      const images = pkg.manifest.files.filter((file) => isAirgapImage(file.path, pkg.manifest.distribution));
      if (imagesDir !== undefined && images.length > 0) {
        groups.push({ from: AIRGAP_IMAGES_DIR, to: imagesDir, isCreated: true });
      }
      // Binaries and images in one command (after one save), not a command per file and per check.
      if (await installPackageGroups(ctx, groups)) isChanged = true;
      return isChanged ? 'changed' : 'unchanged';
    },
  };
}

function sha256Hex(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}
