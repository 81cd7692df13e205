/**
 * The runtime phase of init and join: the container runtime a distribution
 * needs beside it (kubeadm: containerd), installed from the package that the
 * package phase unpacked. Its binaries are already in place (the package
 * phase installs bin/); this phase installs the CNI plugins from cni/,
 * writes the runtime's configuration and unit, starts it, waits for its
 * socket and imports the package's airgap images (`images/*.tar`), each
 * once (the install state keeps their SHA-256s), so that kubeadm finds its
 * control-plane images without a registry. Everything is recorded in the install state before it is written,
 * so reset removes it. k3s embeds containerd, so the phase is skipped for it
 * and says so.
 */
import { dirname } from 'node:path/posix';
import { EdgeadmError } from '../errors.js';
import { execOrThrow } from '../hosts/host.js';
import type { Phase } from '../workflow/phase.js';
import { waitForHostFiles } from './host-files.js';
import type { NodeData } from './node-context.js';
import { hostPackagePaths, installPackageFiles } from './package-phase.js';
import { serviceFilesOf } from '../hosts/service-manager.js';
import { cgroupDriverOf } from './distributions/distribution.js';

/** How long the runtime may take to open its socket after it starts. */
export const RUNTIME_SOCKET_TIMEOUT_MS = 60_000;
/** How long one image archive may take to import. */
export const IMAGE_IMPORT_TIMEOUT_MS = 10 * 60_000;
/** Airgap image archives in a package that the runtime imports. */
const IMAGE_ARCHIVE = /^images\/[^/]+\.tar$/;

/** CAP_SYS_RESOURCE, the capability that lowering an OOM score needs (capability(7)). */
const CAP_SYS_RESOURCE = 24n;

/**
 * Whether processes on the host may lower their OOM score: its bounding set
 * holds CAP_SYS_RESOURCE. Read from /proc/self/status of a root shell; a
 * host that cannot say (no /proc) is taken to be able to.
 */
export async function canLowerOomScores(host: NodeData['host']): Promise<boolean> {
  const result = await host.exec("awk '/^CapBnd:/ { print $2 }' /proc/self/status", { sudo: true, readOnly: true });
  const mask = result.stdout.trim();
  if (result.exitCode !== 0 || !/^[0-9a-f]+$/i.test(mask)) return true;
  return ((BigInt(`0x${mask}`) >> CAP_SYS_RESOURCE) & 1n) === 1n;
}

/** Makes the runtime phase. */
export function runtimePhase<C extends NodeData>(): Phase<C> {
  return {
    name: 'runtime',
    summary: 'Install and start the container runtime (containerd, for kubeadm; k3s embeds its own)',
    runIf: (ctx) => ctx.distribution.runtime !== undefined,
    skipReason: (ctx) => `${ctx.distribution.name} embeds its own container runtime (containerd)`,
    async run(ctx) {
      const runtime = ctx.distribution.runtime;
      if (!runtime) return 'unchanged';
      const { host, state, serviceManager } = ctx;
      const unit = runtime.serviceUnit;

      const serviceFiles = serviceFilesOf(serviceManager, unit);
      // Everything recorded first, then asked about, saved and created together: three round trips, not one per directory.
      state.file(runtime.configPath);
      for (const file of serviceFiles) state.file(file);
      state.update((s) => ({ ...s, serviceManager: serviceManager.kind }));
      state.service(unit.name);
      await state.prepareDirectories({
        claim: runtime.ownedDirectories,
        ensure: [runtime.cniBinDir, dirname(runtime.configPath), ...serviceFiles.map((file) => dirname(file))],
      });
      await state.save();

      let isChanged = await installPackageFiles(ctx, { from: 'cni/', to: runtime.cniBinDir });
      const cgroupDriver = cgroupDriverOf(serviceManager.kind);
      const isOomScoreRestricted = !(await canLowerOomScores(host));
      if (isOomScoreRestricted) {
        ctx.say(
          `${host.name} cannot lower OOM scores (no CAP_SYS_RESOURCE, as in a container): ${runtime.name} keeps pods' OOM scores at or above its own (restrict_oom_score_adj)`,
        );
      }
      const runtimeConfig = runtime.renderConfig({ cgroupDriver, isOomScoreRestricted });
      const config = await host.put(Buffer.from(runtimeConfig), runtime.configPath, {
        mode: 0o644,
        sudo: true,
        description: `write the ${runtime.name} configuration ${runtime.configPath} (${cgroupDriver} cgroups)`,
      });
      // Under --dry-run the host's plan says what would be written and started ("Would …").
      const tell = (line: string): void => {
        if (!ctx.isDryRun) ctx.say(line);
      };
      tell(config.skipped ? `${runtime.configPath} unchanged` : `wrote ${runtime.configPath}`);
      const isUnitChanged = await serviceManager.install(host, unit);
      tell(isUnitChanged ? `wrote the unit ${unit.name}` : `unit ${unit.name} unchanged`);
      const outcome = await serviceManager.ensureRunning(host, unit, {
        isRestartNeeded: !config.skipped || isUnitChanged,
      });
      if (!config.skipped || isUnitChanged || outcome !== 'already-running') isChanged = true;
      tell(outcome === 'already-running' ? `${unit.name} already running` : `${unit.name} ${outcome}`);

      if (ctx.isDryRun) {
        ctx.say(`Would wait for the ${runtime.name} socket ${runtime.socketPath}`);
      } else {
        await waitForHostFiles(host, [runtime.socketPath], {
          timeoutMs: RUNTIME_SOCKET_TIMEOUT_MS,
          what: runtime.name,
        });
        ctx.say(`${runtime.name} is up (${runtime.socketPath})`);
      }

      const images = ctx.package.manifest.files.filter((file) => IMAGE_ARCHIVE.test(file.path));
      if (images.length > 0 && !ctx.package.manifest.files.some((f) => f.path === `bin/${runtime.imageImportBinary}`)) {
        throw new EdgeadmError(
          `the install package ${ctx.package.manifest.name} has airgap images but no bin/${runtime.imageImportBinary} to import them`,
          { code: 'E_PACKAGE_INCOMPLETE', exitCode: 3 },
        );
      }
      const { dir } = hostPackagePaths(ctx.package.manifest.name);
      for (const image of images) {
        if (state.state.importedImages?.includes(image.sha256)) continue;
        const command = runtime.imageImportCommand(`${dir}/${image.path}`);
        await execOrThrow(host, command, {
          sudo: true,
          timeoutMs: IMAGE_IMPORT_TIMEOUT_MS,
          description: `import the airgap images ${image.path} into ${runtime.name} (${command})`,
        });
        state.update((s) => ({ ...s, importedImages: [...(s.importedImages ?? []), image.sha256] }));
        await state.save();
        isChanged = true;
        ctx.say(`imported ${image.path}`);
      }
      return isChanged ? 'changed' : 'unchanged';
    },
  };
}
