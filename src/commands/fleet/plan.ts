import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { PLANNABLE_COMMANDS, planFleet, type FleetPlanEntry } from '../../fleet/fleet-plan.js';
import { controlPlanesOf } from '../../fleet/fleet-up.js';
import { limitHosts } from '../../fleet/inventory/limit.js';
import { loadInventory } from '../../fleet/inventory/load-inventory.js';
import { parseCountSpec } from '../../fleet/rollout.js';
import { inventoryFlags } from '../../cli/flags/fleet-flags.js';
import { counted } from '../../log/counted.js';

/** The `fleet plan` result. */
export interface FleetPlanResult {
  inventory: string;
  format: string;
  command: string;
  hosts: FleetPlanEntry[];
}

export default class FleetPlan extends BaseCommand<typeof FleetPlan> {
  static override summary = 'Show what a fleet run would do, per host.';
  static override description =
    'Reads the inventory and prints each host, how it is reached, its wave and its action. Connects nowhere.';
  static override examples = [
    '<%= config.bin %> fleet plan -i inventory.yaml',
    '<%= config.bin %> fleet plan -i hosts.yml --for reset --limit stores --json',
  ];
  static override flags = {
    ...inventoryFlags,
    for: Flags.option({ options: PLANNABLE_COMMANDS, default: 'up' })({ summary: 'The fleet command to plan.' }),
    canary: Flags.integer({ summary: 'Size of the first wave.', min: 0 }),
    'wave-size': Flags.string({ summary: 'Hosts per wave after the canary: N or P%.' }),
  };

  async run(): Promise<FleetPlanResult> {
    const inventory = await loadInventory(this.flags.inventory);
    for (const warning of inventory.warnings) this.logToStderr(`warning: ${warning}`);
    // As fleet up runs: every control plane (checked as fleet up checks them), and the nodes --limit selects.
    const controlPlanes = this.flags.for === 'up' ? controlPlanesOf(inventory) : undefined;
    const hosts = planFleet({
      command: this.flags.for,
      hosts:
        controlPlanes === undefined
          ? limitHosts(inventory.hosts, this.flags.limit)
          : [
              controlPlanes.first,
              ...controlPlanes.joining,
              ...limitHosts(
                inventory.hosts.filter((host) => host.role === 'worker'),
                this.flags.limit,
              ),
            ],
      ...(controlPlanes?.endpoint === undefined ? {} : { controlPlaneEndpoint: controlPlanes.endpoint }),
      ...(this.flags.canary === undefined ? {} : { canary: this.flags.canary }),
      ...(this.flags['wave-size'] === undefined
        ? {}
        : { waveSize: parseCountSpec(this.flags['wave-size'], '--wave-size') }),
    });
    this.log(
      `fleet ${this.flags.for} over ${counted(hosts.length, 'host')} of ${this.flags.inventory} (${inventory.format} inventory):`,
    );
    for (const entry of hosts) {
      const via = entry.via.length > 0 ? ` via ${entry.via.join(' -> ')}` : '';
      this.log(`  wave ${entry.wave}  ${entry.host} (${entry.role}, ${entry.target}${via}): would ${entry.action}`);
    }
    return { inventory: this.flags.inventory, format: inventory.format, command: this.flags.for, hosts };
  }
}
