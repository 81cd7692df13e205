import { Flags } from '@oclif/core';
import { distributionFor } from '../../cluster/distributions/index.js';
import { outputFlags } from '../../cli/flags/output-flag.js';
import { fleetReset, type FleetResetResult } from '../../fleet/fleet-reset.js';
import { listFlag } from '../../cli/flags/node-flags.js';
import { inventoryFlags, rolloutFlags, fleetRunInput } from '../../cli/flags/fleet-flags.js';
import { FleetCommand } from '../../cli/fleet-command.js';
import { parseFleetResetRequest } from '../../fleet/fleet-request.js';
import { dryRunFlag, skipPhasesFlag } from '../../cli/flags/run-flags.js';

export default class FleetReset extends FleetCommand<typeof FleetReset> {
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
    'dry-run': dryRunFlag('List per host what would be stopped and removed; change nothing.'),
    distribution: Flags.string({ summary: 'k3s (default).' }),
    'skip-phases': skipPhasesFlag,
  };

  async run(): Promise<FleetResetResult> {
    const { flags } = this;
    const request = parseFleetResetRequest({
      ...fleetRunInput(flags),
      isForced: flags.force,
      isDryRun: flags['dry-run'],
      distribution: flags.distribution,
      skipPhases: listFlag(flags['skip-phases']),
    });
    const distribution = distributionFor(request.distribution);
    return this.runFleetPlan({
      name: 'reset',
      request: request.run,
      work: (options) =>
        fleetReset({
          ...options,
          isDryRun: request.isDryRun,
          isForced: request.isForced,
          distribution,
          ...(request.skipPhases === undefined ? {} : { skipPhases: request.skipPhases }),
        }),
    });
  }
}
