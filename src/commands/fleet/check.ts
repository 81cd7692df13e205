import { BaseCommand } from '../../cli/base-command.js';
import { ExitCode } from '../../errors.js';
import { fleetCheck, type FleetCheckResult } from '../../fleet/fleet-check.js';
import { renderFleetReport } from '../../fleet/fleet-report.js';
import { limitHosts } from '../../fleet/inventory/limit.js';
import { loadInventory } from '../../fleet/inventory/load-inventory.js';
import { edgeadmHome } from '../../log/run-log.js';
import {
  fleetConnectOptionsFromFlags,
  inventoryFlags,
  rolloutFlags,
  rolloutOptionsFromFlags,
} from '../../cli/flags/fleet-flags.js';
import { runFleetWithProgress } from '../../cli/fleet-run.js';
import { outputFlags } from '../../cli/flags/output-flag.js';
import { counted } from '../../log/counted.js';

export default class FleetCheck extends BaseCommand<typeof FleetCheck> {
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
    const inventory = await loadInventory(this.flags.inventory);
    for (const warning of inventory.warnings) this.logger.warn(warning);
    // A resumed run keeps its own host list; the inventory is where their settings are looked up.
    const hosts = this.flags.resume === undefined ? limitHosts(inventory.hosts, this.flags.limit) : inventory.hosts;
    const result: FleetCheckResult = await runFleetWithProgress(
      this,
      { title: `fleet check of ${counted(hosts.length, 'host')}` },
      (signal, progress) =>
        fleetCheck({
          inventoryFile: this.flags.inventory,
          hosts,
          edgeadmHome: edgeadmHome(),
          ...(this.flags.resume === undefined ? {} : { resume: this.flags.resume }),
          rollout: { ...rolloutOptionsFromFlags(this.flags), signal },
          connect: fleetConnectOptionsFromFlags(this.flags, {
            env: process.env,
            redactor: this.redactor,
            logger: this.logger,
          }),
          logger: this.logger,
          redact: (text) => this.redactor.redact(text),
          onEvent: (event, state) => progress.onEvent(event, state),
        }),
    );
    if (!this.jsonEnabled()) {
      for (const line of renderFleetReport(result.hosts)) this.log(line);
      this.log(`run ${result.runId}: ${result.runDir}`);
    }
    if (!result.isFit) process.exitCode = ExitCode.General;
    return result;
  }
}
