import { fleetCheck, type FleetCheckResult } from '../../fleet/fleet-check.js';
import { inventoryFlags, rolloutFlags, fleetRunInput } from '../../cli/flags/fleet-flags.js';
import { outputFlags } from '../../cli/flags/output-flag.js';
import { FleetCommand } from '../../cli/fleet-command.js';
import { parseFleetRunRequest } from '../../fleet/fleet-request.js';

export default class FleetCheck extends FleetCommand<typeof FleetCheck> {
  static override summary = 'Run host check on every host of an inventory.';
  static override description =
    'Connects to every host (one SSH connection each, one per bastion for the whole run), collects its facts and runs ' +
    'the preflight checks for its role. Unreachable hosts and hosts with a failing check are reported as failed; the ' +
    'exit code is 1 when any host failed or was not started. The run state and a log per host are kept under ' +
    '$EDGEADM_HOME/fleet/runs/<id>.';
  static override examples = [
    '<%= config.bin %> fleet check -i inventory.yaml',
    '<%= config.bin %> fleet check -i hosts.yml --ssh-accept-new --json',
    '<%= config.bin %> fleet check -i inventory.yaml --limit stores --concurrency 50 --max-failures 5%',
  ];
  static override flags = { ...inventoryFlags, ...rolloutFlags, ...outputFlags };

  async run(): Promise<FleetCheckResult> {
    const request = parseFleetRunRequest(fleetRunInput(this.flags));
    return this.runFleetPlan({
      name: 'check',
      request,
      work: (options) => fleetCheck(options),
      hasHostLogs: false,
      isFailed: (result) => !result.isFit,
    });
  }
}
