/**
 * The package phase of init and join: the install package, already verified
 * on this machine, is uploaded to the host (skipped when the host has it),
 * its SHA-256 checked on the host by the upload itself, unpacked into a directory named after
 * the package (so versions sit side by side), and its binaries installed
 * into the distribution's bin directory. Every step checks before it
 * changes, so a re-run after a dropped connection resumes where it stopped.
 */
import { EdgeadmError } from '../errors.js';
import { execOrThrow } from '../hosts/host.js';
import { modeBits } from '../packages/manifest.js';
import type { Phase } from '../workflow/phase.js';
import type { NodeData } from './node-context.js';

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

/**
 * Installs the regular files directly under `from` (`bin/`, `cni/`) of the
 * unpacked package into `to`, with the modes the manifest gives, recording
 * each target first; files already there with the right SHA-256 are kept.
 * True when something was installed.
 */
export async function installPackageFiles(ctx: NodeData, options: { from: string; to: string }): Promise<boolean> {
  const { host, state } = ctx;
  const { dir } = hostPackagePaths(ctx.package.manifest.name);
  const files = ctx.package.manifest.files.filter(
    (file) => file.path.startsWith(options.from) && !file.path.slice(options.from.length).includes('/'),
  );
  const targetOf = (file: (typeof files)[number]): string => `${options.to}/${file.path.slice(options.from.length)}`;
  // Every target recorded before the first is written, in one save.
  for (const file of files) state.file(targetOf(file));
  await state.save();
  let isChanged = false;
  for (const file of files) {
    const target = targetOf(file);
    if ((await host.sha256(target, { sudo: true })) === file.sha256) continue;
    await execOrThrow(
      host,
      `install -m ${modeBits(file.mode).toString(8)} ${quote(`${dir}/${file.path}`)} ${quote(target)}`,
      { sudo: true, description: `install ${target} from the package (sha256 ${file.sha256.slice(0, 12)}…)` },
    );
    isChanged = true;
    ctx.say(`installed ${target}`);
  }
  return isChanged;
}

/** Makes the package phase. */
export function packagePhase<C extends NodeData>(): Phase<C> {
  return {
    name: 'package',
    summary: 'Upload the install package, verify it on the host, unpack it and install its binaries',
    async run(ctx) {
      const { host, state } = ctx;
      const pkg = ctx.package;
      const { archive, dir } = hostPackagePaths(pkg.manifest.name);
      let isChanged = false;

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
      });
      if (!upload.skipped) isChanged = true;
      ctx.say(upload.skipped ? `${archive} already on the host` : `uploaded ${archive}`);

      // No second check here: put hashes the bytes on the host before it
      // renames them into place, and skips only a file whose SHA-256 it
      // found equal, so the archive at `archive` is the verified package.
      // (A second `sha256sum` would read the whole archive on every host again.)
      const marker = await host.exec(`cat ${quote(`${dir}/${UNPACKED_MARKER}`)}`, { sudo: true, readOnly: true });
      if (marker.exitCode === 0 && marker.stdout.trim() === pkg.archiveSha256) {
        ctx.say(`${dir} already unpacked`);
      } else {
        const staging = `${dir}.partial`;
        await execOrThrow(
          host,
          [
            'set -e',
            `rm -rf ${quote(staging)}`,
            `mkdir -p ${quote(staging)}`,
            `tar -xzf ${quote(archive)} -C ${quote(staging)} --no-same-owner`,
            `printf '%s\\n' ${pkg.archiveSha256} > ${quote(`${staging}/${UNPACKED_MARKER}`)}`,
            `rm -rf ${quote(dir)}`,
            `mv ${quote(staging)} ${quote(dir)}`,
          ].join('\n'),
          { sudo: true, timeoutMs: UNPACK_TIMEOUT_MS, description: `unpack ${archive} into ${dir}` },
        );
        isChanged = true;
        ctx.say(`unpacked into ${dir}`);
      }

      const binaries = pkg.manifest.files.filter((file) => /^bin\/[^/]+$/.test(file.path));
      for (const name of ctx.distribution.requiredBinaries) {
        if (!binaries.some((file) => file.path === `bin/${name}`)) {
          throw new EdgeadmError(`the install package ${pkg.manifest.name} has no bin/${name}`, {
            code: 'E_PACKAGE_INCOMPLETE',
            exitCode: 3,
          });
        }
      }
      if (await installPackageFiles(ctx, { from: 'bin/', to: ctx.distribution.binDir })) isChanged = true;
      return isChanged ? 'changed' : 'unchanged';
    },
  };
}
