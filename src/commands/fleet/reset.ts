import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { distributionFor } from '../../cluster/distributions/index.js';
import { requestedServiceManager } from '../../hosts/service-manager.js';
import { ExitCode, ValidationError } from '../../errors.js';
import { runFleetWithProgress } from '../../cli/fleet-run.js';
import { outputFlags } from '../../cli/flags/output-flag.js';
import { renderFleetReport } from '../../fleet/fleet-report.js';
import { fleetReset, type FleetResetResult } from '../../fleet/fleet-reset.js';
import { limitHosts } from '../../fleet/inventory/limit.js';
import { loadInventory } from '../../fleet/inventory/load-inventory.js';
import { edgeadmHome } from '../../log/run-log.js';
import { listFlag } from '../../cli/flags/node-flags.js';
import {
  fleetConnectOptionsFromFlags,
  inventoryFlags,
  rolloutFlags,
  rolloutOptionsFromFlags,
} from '../../cli/flags/fleet-flags.js';
import { counted } from '../../log/counted.js';

export default class FleetReset extends BaseCommand<typeof FleetReset> {
  static override summary = 'Reset every host of an inventory.';
  static override description =
    'Runs edgeadm reset on every host (one SSH connection each, one per bastion), in waves and within the failure ' +
    'budget. The exit code is 1 when any host failed or was not started; --resume continues a stopped run.';
  static override examples = [
    '<%= config.bin %> fleet reset -i inventory.yaml --dry-run --force',
    '<%= config.bin %> fleet reset -i inventory.yaml --limit stores --force --max-failures 2',
  ];
  static override flags = {
    ...outputFlags,
    ...inventoryFlags,
    ...rolloutFlags,
    force: Flags.boolean({
      summary: 'Reset without asking (hosts without an install state lose what the distribution is known to write).',
    }),
    'dry-run': Flags.boolean({ summary: 'List per host what would be stopped and removed; change nothing.' }),
    distribution: Flags.string({ summary: 'k3s (default).' }),
    'skip-phases': Flags.string({ summary: 'Phases to skip, comma-separated.', multiple: true }),
  };

  async run(): Promise<FleetResetResult> {
    const { flags } = this;
    if (!flags.force && !flags['dry-run']) {
      throw new ValidationError('fleet reset removes the cluster from every host: pass --force, or --dry-run to see', {
        code: 'E_RESET_NOT_CONFIRMED',
      });
    }
    const inventory = await loadInventory(flags.inventory);
    for (const warning of inventory.warnings) this.logger.warn(warning);
    const hosts = flags.resume === undefined ? limitHosts(inventory.hosts, flags.limit) : inventory.hosts;
    const result: FleetResetResult = await runFleetWithProgress(
      this,
      { title: `fleet reset of ${counted(hosts.length, 'host')}` },
      (signal, progress) =>
        fleetReset({
          inventoryFile: flags.inventory,
          hosts,
          edgeadmHome: edgeadmHome(),
          ...(flags.resume === undefined ? {} : { resume: flags.resume }),
          rollout: { ...rolloutOptionsFromFlags(flags), signal },
          connect: fleetConnectOptionsFromFlags(flags, {
            env: process.env,
            redactor: this.redactor,
            logger: this.logger,
          }),
          logger: this.logger,
          redact: (text) => this.redactor.redact(text),
          isDryRun: flags['dry-run'],
          isForced: flags.force,
          distribution: distributionFor(flags.distribution ?? 'k3s'),
          requestedServiceManager: requestedServiceManager(process.env),
          ...(flags['skip-phases'] ? { skipPhases: listFlag(flags['skip-phases']) ?? [] } : {}),
          onEvent: (event, state) => progress.onEvent(event, state),
          onWorkflowEvent: (event) => this.emitEvent({ ...event }),
        }),
    );
    if (!this.jsonEnabled()) {
      for (const line of renderFleetReport(result.hosts)) this.log(line);
      this.log(`run ${result.runId}: ${result.runDir} (host logs there)`);
    }
    if (result.hosts.some((entry) => entry.status !== 'done')) process.exitCode = ExitCode.General;
    return result;
  }
}
