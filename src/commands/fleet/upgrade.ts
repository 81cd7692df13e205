import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { runFleetWithProgress } from '../../cli/fleet-run.js';
import { outputFlags } from '../../cli/flags/output-flag.js';
import { commandClock } from '../../cli/test-clock.js';
import { ExitCode, ValidationError } from '../../errors.js';
import { renderFleetReport } from '../../fleet/fleet-report.js';
import { fleetUpgrade, type FleetUpgradeResult } from '../../fleet/fleet-upgrade.js';
import { limitHosts } from '../../fleet/inventory/limit.js';
import { loadInventory } from '../../fleet/inventory/load-inventory.js';
import { parseMaintenanceWindow } from '../../fleet/maintenance-window.js';
import { requestedServiceManager } from '../../hosts/service-manager.js';
import { counted } from '../../log/counted.js';
import { edgeadmHome } from '../../log/run-log.js';
import {
  fleetConnectOptionsFromFlags,
  inventoryFlags,
  rolloutFlags,
  rolloutOptionsFromFlags,
} from '../../cli/flags/fleet-flags.js';

export default class FleetUpgrade extends BaseCommand<typeof FleetUpgrade> {
  static override summary = 'Upgrade every host of an inventory to a new install package, within a maintenance window.';
  static override description =
    'Control planes first, one at a time, as "upgrade apply" does them (backup, swap, health gates, rollback); a ' +
    'control plane that fails stops the run before any node. Then the nodes, as "upgrade node" does them (cordon, ' +
    'drain, swap, Ready at the new version, uncordon; rollback), in waves within --concurrency and --max-failures, ' +
    'through the first control plane. Outside the maintenance window no new host starts: the hosts running finish, ' +
    'and the run stops (exit code 1) saying when the window opens again; --resume continues it then. Every step is ' +
    'idempotent: a resumed run finishes what an interruption left, or finds it done.';
  static override examples = [
    '<%= config.bin %> fleet upgrade -i inventory.yaml --install-pkg-path ./edge-k3s-v1.32.1+k3s1-amd64.tar.gz --window-start 22:00 --window-end 04:00',
    '<%= config.bin %> fleet upgrade -i inventory.yaml --install-pkg-path ./pkg.tar.gz --concurrency 20 --max-failures 5% --json',
    '<%= config.bin %> fleet upgrade -i inventory.yaml --install-pkg-path ./pkg.tar.gz --resume last',
  ];
  static override flags = {
    ...outputFlags,
    ...inventoryFlags,
    ...rolloutFlags,
    'install-pkg-path': Flags.string({ summary: 'The new install package, for every host.', required: true }),
    force: Flags.boolean({ summary: "Nodes' drains evict bare Pods and emptyDir Pods, and delete past budgets." }),
    'drain-timeout': Flags.string({ summary: "How long a node's drain may take (default 5m)." }),
    'gate-timeout': Flags.string({ summary: 'How long each health gate may take before the rollback (default 5m).' }),
    'window-start': Flags.string({ summary: 'Daily maintenance window start, HH:MM UTC (with --window-end).' }),
    'window-end': Flags.string({ summary: 'Daily maintenance window end, HH:MM UTC (may be past midnight).' }),
    window: Flags.string({ summary: 'One maintenance window as an ISO 8601 interval: START/END or START/PT6H.' }),
  };

  async run(): Promise<FleetUpgradeResult> {
    const { flags } = this;
    const window = parseMaintenanceWindow({
      start: flags['window-start'],
      end: flags['window-end'],
      interval: flags.window,
    });
    const inventory = await loadInventory(flags.inventory);
    for (const warning of inventory.warnings) this.logger.warn(warning);
    const apiThrough = inventory.hosts.find((host) => host.role === 'control-plane');
    if (apiThrough === undefined) {
      throw new ValidationError(`${flags.inventory} names no control plane: nodes are drained through one`, {
        code: 'E_FLEET_NO_CONTROL_PLANE',
      });
    }
    const hosts = flags.resume === undefined ? limitHosts(inventory.hosts, flags.limit) : inventory.hosts;
    const result = await runFleetWithProgress(
      this,
      { title: `fleet upgrade of ${counted(hosts.length, 'host')}` },
      (signal, progress) =>
        fleetUpgrade({
          inventoryFile: flags.inventory,
          hosts,
          apiThrough,
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
          installPackage: flags['install-pkg-path'],
          requestedServiceManager: requestedServiceManager(process.env),
          isForced: flags.force,
          ...(flags['drain-timeout'] === undefined ? {} : { drainTimeout: flags['drain-timeout'] }),
          ...(flags['gate-timeout'] === undefined ? {} : { gateTimeout: flags['gate-timeout'] }),
          ...(window === undefined ? {} : { window }),
          now: commandClock(process.env),
          onEvent: (event, state) => progress.onEvent(event, state),
          onWorkflowEvent: (event) => this.emitEvent({ ...event }),
        }),
    );
    if (!this.jsonEnabled()) {
      for (const line of renderFleetReport(
        result.hosts.map((h) => ({ ...h, role: h.role })),
        { showRole: true },
      )) {
        this.log(line);
      }
      if (result.stopReason === 'maintenance-window') {
        this.log(
          result.resumeAt === undefined
            ? `The maintenance window ${result.window ?? ''} is over: give a new one and --resume ${result.runId}.`
            : `Stopped at the end of the maintenance window; it opens again at ${result.resumeAt}: run with --resume ${result.runId} then.`,
        );
      }
      this.log(`run ${result.runId}: ${result.runDir} (host logs there)`);
    }
    if (result.hosts.some((entry) => entry.status !== 'done')) process.exitCode = ExitCode.General;
    return result;
  }
}
