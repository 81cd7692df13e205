/**
 * The step both init's control-plane phase and join's node-join phase end
 * with: write the distribution's configuration file and service unit, and
 * start the service (restarting it when either changed), then run the
 * distribution's setup command once (kubeadm init/join). Everything written
 * is recorded in the install state first.
 */
import { dirname } from 'node:path/posix';
import type { PhaseOutcome } from '../workflow/phase.js';
import type { ServiceUnitOptions } from './distributions/distribution.js';
import { isSetupDone, runSetupOnce } from './distribution-setup.js';
import { setupOf, type NodeData } from './node-context.js';
import { serviceFilesOf } from '../hosts/service-manager.js';

/**
 * Writes `configText` and the role's unit (made with `unitOptions`), then
 * makes sure the service runs.
 */
export async function configureAndStartService(
  ctx: NodeData,
  configText: string,
  unitOptions: ServiceUnitOptions = {},
): Promise<PhaseOutcome> {
  const { host, state, distribution, serviceManager } = ctx;
  const configPath = distribution.configPath(ctx.role, setupOf(ctx));
  const unit = distribution.serviceUnit(ctx.role, unitOptions);
  state.update((s) => ({
    ...s,
    role: ctx.role,
    distribution: distribution.name,
    serviceManager: serviceManager.kind,
  }));
  const serviceFiles = serviceFilesOf(serviceManager, unit);
  // Everything recorded first, then asked about, saved and created together: three round trips, not one per directory.
  state.file(configPath);
  for (const file of distribution.ownedFiles ?? []) state.file(file);
  for (const file of serviceFiles) state.file(file);
  state.service(unit.name);
  await state.prepareDirectories({
    claim: distribution.ownedDirectories,
    ensure: [dirname(configPath), ...serviceFiles.map((file) => dirname(file))],
  });
  await state.save();

  // A set-up kubeadm node keeps the configuration it was set up with.
  const isDone = await isSetupDone(ctx, configText);
  const config = isDone
    ? { skipped: true }
    : await host.put(Buffer.from(configText), configPath, {
        mode: 0o600,
        sudo: true,
        description: `write the ${distribution.name} configuration ${configPath}`,
      });
  // Under --dry-run the host's plan says what would be written and started ("Would …"); these lines would claim it was.
  const tell = (line: string): void => {
    if (!ctx.isDryRun) ctx.say(line);
  };
  tell(config.skipped ? `${configPath} unchanged` : `wrote ${configPath}`);
  const isUnitChanged = await serviceManager.install(host, unit);
  tell(isUnitChanged ? `wrote the unit ${unit.name}` : `unit ${unit.name} unchanged`);
  const outcome = await serviceManager.ensureRunning(host, unit, {
    isRestartNeeded: !config.skipped || isUnitChanged,
  });
  tell(
    outcome === 'already-running' ? `${unit.name} already running` : `${unit.name} ${outcome} (${serviceManager.kind})`,
  );
  const isSetUp = await runSetupOnce(ctx, configText, isDone);
  return !config.skipped || isUnitChanged || outcome !== 'already-running' || isSetUp ? 'changed' : 'unchanged';
}
