import { Flags } from '@oclif/core';
import { outputFlags } from '../../cli/flags/output-flag.js';
import { trustedKeyFlags } from '../../cli/package-trust-flags.js';
import { commandClock } from '../../cli/test-clock.js';
import { ValidationError } from '../../errors.js';
import { fleetUpgrade, type FleetUpgradeResult } from '../../fleet/fleet-upgrade.js';
import { inventoryFlags, rolloutFlags, fleetRunInput } from '../../cli/flags/fleet-flags.js';
import { FleetCommand } from '../../cli/fleet-command.js';
import { parseFleetUpgradeRequest } from '../../fleet/fleet-request.js';
import type { FleetHost, FleetInventory } from '../../fleet/inventory/types.js';

export default class FleetUpgrade extends FleetCommand<typeof FleetUpgrade> {
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
    ...trustedKeyFlags,
    force: Flags.boolean({ summary: "Nodes' drains evict bare Pods and emptyDir Pods, and delete past budgets." }),
    'drain-timeout': Flags.string({ summary: "How long a node's drain may take (default 5m)." }),
    'gate-timeout': Flags.string({ summary: 'How long each health gate may take before the rollback (default 5m).' }),
    'window-start': Flags.string({ summary: 'Daily maintenance window start, HH:MM UTC (with --window-end).' }),
    'window-end': Flags.string({ summary: 'Daily maintenance window end, HH:MM UTC (may be past midnight).' }),
    window: Flags.string({ summary: 'One maintenance window as an ISO 8601 interval: START/END or START/PT6H.' }),
  };

  async run(): Promise<FleetUpgradeResult> {
    const { flags } = this;
    const request = parseFleetUpgradeRequest({
      ...fleetRunInput(flags),
      installPackage: flags['install-pkg-path'],
      isForced: flags.force,
      drainTimeout: flags['drain-timeout'],
      gateTimeout: flags['gate-timeout'],
      windowStart: flags['window-start'],
      windowEnd: flags['window-end'],
      window: flags.window,
    });
    return this.runFleetPlan({
      name: 'upgrade',
      request: request.run,
      work: (options, inventory) =>
        fleetUpgrade({
          ...options,
          apiThrough: apiThroughOf(inventory),
          installPackage: request.installPackage,
          trustedKeyFiles: flags['trusted-key'] ?? inventory.trustedKeys ?? [],
          onPackageWarning: (line) => this.warnAlways(line),
          isForced: request.isForced,
          deadlines: request.deadlines,
          ...(request.window === undefined ? {} : { window: request.window }),
          now: commandClock(process.env),
        }),
      showRole: true,
      notes: (result) => (result.stopReason === 'maintenance-window' ? [windowNote(result)] : []),
    });
  }
}

/** The control plane nodes are drained through: the inventory's first. */
function apiThroughOf(inventory: FleetInventory): FleetHost {
  const apiThrough = inventory.hosts.find((host) => host.role === 'control-plane');
  if (apiThrough === undefined) {
    throw new ValidationError(`${inventory.file} names no control plane: nodes are drained through one`, {
      code: 'E_FLEET_NO_CONTROL_PLANE',
    });
  }
  return apiThrough;
}

/** What a run stopped by the end of its maintenance window says about resuming. */
function windowNote(result: FleetUpgradeResult): string {
  return result.resumeAt === undefined
    ? `The maintenance window ${result.window ?? ''} is over: give a new one and --resume ${result.runId}.`
    : `Stopped at the end of the maintenance window; it opens again at ${result.resumeAt}: run with --resume ${result.runId} then.`;
}
