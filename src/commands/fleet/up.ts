import { Flags } from '@oclif/core';
import { initHostEvents, runFleetWithProgress } from '../../cli/fleet-run.js';
import { initPhases } from '../../cluster/init.js';
import { flattenPhases } from '../../workflow/phase.js';
import { outputFlags } from '../../cli/flags/output-flag.js';
import { planFleet, type FleetPlanEntry } from '../../fleet/fleet-plan.js';
import { controlPlanesOf, fleetUp, type FleetUpResult } from '../../fleet/fleet-up.js';
import { limitHosts } from '../../fleet/inventory/limit.js';
import { listFlag } from '../../cli/flags/node-flags.js';
import { inventoryFlags, rolloutFlags, fleetRunInput, fleetPackageFlags } from '../../cli/flags/fleet-flags.js';
import { counted } from '../../log/counted.js';
import { FleetCommand } from '../../cli/fleet-command.js';
import { parseFleetUpRequest, type FleetUpRequest } from '../../fleet/fleet-request.js';
import type { FleetControlPlanes } from '../../fleet/fleet-up.js';
import type { FleetHost } from '../../fleet/inventory/types.js';
import { dryRunFlag, ignorePreflightErrorsFlag } from '../../cli/flags/run-flags.js';

/** What `fleet up --dry-run` prints: the plan, as `fleet plan --for up`. */
export interface FleetUpDryRun {
  isDryRun: true;
  hosts: FleetPlanEntry[];
}

export default class FleetUp extends FleetCommand<typeof FleetUp> {
  static override summary = 'Bring up control planes and join every node of an inventory.';
  static override description =
    "Inits the inventory's first control-plane host (nothing changes when it already runs), joins the other " +
    'control-plane hosts to it one at a time (the inventory then names a control-plane endpoint), then joins every ' +
    'node with its join token and the CA pin, in waves and within the failure budget. A control plane that fails ' +
    'to join stops the run before any node starts. --limit selects nodes; the control planes always run. ' +
    'The exit code is 1 when any host failed or was not started. Preview with --dry-run or "fleet plan".';
  static override examples = [
    '<%= config.bin %> fleet up -i inventory.yaml --canary 2 --wave-size 20%',
    '<%= config.bin %> fleet up -i hosts.yml --install-pkg-path ./pkg.tar.gz --max-failures 5 --json',
  ];
  static override flags = {
    ...outputFlags,
    ...inventoryFlags,
    ...rolloutFlags,
    ...fleetPackageFlags,
    'ignore-preflight-errors': ignorePreflightErrorsFlag,
    'dry-run': dryRunFlag(
      'Print what would be done per host and in which wave (as "fleet plan --for up"); connects nowhere.',
    ),
    'kubeconfig-out': Flags.string({ summary: 'Write the admin kubeconfig to this file.' }),
  };

  async run(): Promise<FleetUpResult | FleetUpDryRun> {
    const { flags } = this;
    const request = parseFleetUpRequest({
      ...fleetRunInput(flags),
      installPackage: flags['install-pkg-path'],
      distribution: flags.distribution,
      kubeconfigOut: flags['kubeconfig-out'],
      ignorePreflightErrors: listFlag(flags['ignore-preflight-errors']) ?? [],
      isDryRun: flags['dry-run'],
    });
    const inventory = await this.readInventory(request.run);
    const controlPlanes = controlPlanesOf(inventory);
    const nodes = inventory.hosts.filter((host) => host.role === 'worker');
    const selected = request.run.resume === undefined ? limitHosts(nodes, request.run.limit) : nodes;
    if (request.isDryRun) return this.#dryRun(request, controlPlanes, selected);
    const joining = controlPlanes.joining.length;
    const title = `fleet up: joining ${joining > 0 ? `${counted(joining, 'control plane')} and ` : ''}${counted(selected.length, 'node')}`;
    const lastPhase = flattenPhases(initPhases()).at(-1)!.path;
    const result: FleetUpResult = await runFleetWithProgress(this, { title, isWrapped: false }, (signal, progress) =>
      fleetUp({
        ...this.fleetOptions(request.run, selected, signal, progress),
        controlPlanes,
        nodes: selected,
        ...(request.distribution === undefined ? {} : { distribution: request.distribution }),
        installPackage: request.installPackage,
        trustedKeyFiles: flags['trusted-key'] ?? inventory.trustedKeys ?? [],
        onPackageWarning: (line) => this.warnAlways(line),
        addSecret: (secret) => this.redactor.addSecret(secret),
        discoveryTimeoutMs: request.discoveryTimeoutMs,
        ignorePreflightErrors: request.ignorePreflightErrors,
        ...(request.kubeconfigOut === undefined ? {} : { kubeconfigOut: request.kubeconfigOut }),
        onControlPlaneLine: (line) => this.logToStderr(`${controlPlanes.first.name}: ${line}`),
        onWorkflowEvent: initHostEvents(this, { host: controlPlanes.first.name, lastPhase }),
      }),
    );
    return this.#report(result);
  }

  /** The report, redacted: error messages of the hosts may quote a command line with the token or certificate key. */
  #report(result: FleetUpResult): FleetUpResult {
    const report = this.redactor.redactValue(result);
    const { controlPlane } = report;
    if (!this.jsonEnabled()) {
      this.log(`control plane ${controlPlane.host}: ${controlPlane.server} (endpoint ${controlPlane.endpoint})`);
    }
    const controlPlaneRow = { host: controlPlane.host, role: 'control-plane (init)', status: 'done' as const };
    this.reportFleetRun({ ...report, hosts: [controlPlaneRow, ...report.hosts] }, { showRole: true });
    return report;
  }

  /** `--dry-run`: the plan, as `fleet plan --for up`; connects nowhere. */
  #dryRun(request: FleetUpRequest, controlPlanes: FleetControlPlanes, selected: FleetHost[]): FleetUpDryRun {
    const { rollout } = request.run;
    const hosts = planFleet({
      command: 'up',
      hosts: [controlPlanes.first, ...controlPlanes.joining, ...selected],
      ...(controlPlanes.endpoint === undefined ? {} : { controlPlaneEndpoint: controlPlanes.endpoint }),
      ...(rollout.canary === undefined ? {} : { canary: rollout.canary }),
      ...(rollout.waveSize === undefined ? {} : { waveSize: rollout.waveSize }),
    });
    this.log(
      `fleet up over ${counted(hosts.length, 'host')} of ${request.run.inventoryFile} (dry run: nothing is changed):`,
    );
    for (const entry of hosts) this.log(`  wave ${entry.wave}  ${entry.host} (${entry.role}): would ${entry.action}`);
    return { isDryRun: true, hosts };
  }
}
