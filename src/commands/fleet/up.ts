import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { requestedServiceManager } from '../../hosts/service-manager.js';
import { ExitCode } from '../../errors.js';
import { initHostEvents, runFleetWithProgress } from '../../cli/fleet-run.js';
import { initPhases } from '../../cluster/init.js';
import { flattenPhases } from '../../workflow/phase.js';
import { outputFlags } from '../../cli/flags/output-flag.js';
import { planFleet, type FleetPlanEntry } from '../../fleet/fleet-plan.js';
import { renderFleetReport } from '../../fleet/fleet-report.js';
import { controlPlanesOf, fleetUp, type FleetUpResult } from '../../fleet/fleet-up.js';
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

/** How long the nodes' discovery keeps trying (join's default). */
const DISCOVERY_TIMEOUT = '5m0s';

/** What `fleet up --dry-run` prints: the plan, as `fleet plan --for up`. */
export interface FleetUpDryRun {
  isDryRun: true;
  hosts: FleetPlanEntry[];
}

export default class FleetUp extends BaseCommand<typeof FleetUp> {
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
    'install-pkg-path': Flags.string({ summary: 'The install package for hosts whose inventory entry names none.' }),
    distribution: Flags.string({
      summary: 'k3s or kubeadm; default: the one the install packages are for (they must agree with it).',
    }),
    'kubeconfig-out': Flags.string({ summary: 'Write the admin kubeconfig to this file.' }),
    'ignore-preflight-errors': Flags.string({ summary: 'Preflight check ids that only warn.', multiple: true }),
    'dry-run': Flags.boolean({
      summary: 'Print what would be done per host and in which wave (as "fleet plan --for up"); connects nowhere.',
    }),
  };

  async run(): Promise<FleetUpResult | FleetUpDryRun> {
    const { flags } = this;
    const inventory = await loadInventory(flags.inventory);
    for (const warning of inventory.warnings) this.logger.warn(warning);
    const controlPlanes = controlPlanesOf(inventory);
    const nodes = inventory.hosts.filter((host) => host.role === 'worker');
    const selected = flags.resume === undefined ? limitHosts(nodes, flags.limit) : nodes;
    const rollout = rolloutOptionsFromFlags(flags);
    if (flags['dry-run']) {
      const hosts = planFleet({
        command: 'up',
        hosts: [controlPlanes.first, ...controlPlanes.joining, ...selected],
        ...(controlPlanes.endpoint === undefined ? {} : { controlPlaneEndpoint: controlPlanes.endpoint }),
        ...(rollout.canary === undefined ? {} : { canary: rollout.canary }),
        ...(rollout.waveSize === undefined ? {} : { waveSize: rollout.waveSize }),
      });
      this.log(`fleet up over ${counted(hosts.length, 'host')} of ${flags.inventory} (dry run: nothing is changed):`);
      for (const entry of hosts) this.log(`  wave ${entry.wave}  ${entry.host} (${entry.role}): would ${entry.action}`);
      return { isDryRun: true, hosts };
    }
    const joining = controlPlanes.joining.length;
    const onInitEvent = initHostEvents(this, {
      host: controlPlanes.first.name,
      lastPhase: flattenPhases(initPhases()).at(-1)!.path,
    });
    const result: FleetUpResult = await runFleetWithProgress(
      this,
      {
        title: `fleet up: joining ${joining > 0 ? `${counted(joining, 'control plane')} and ` : ''}${counted(selected.length, 'node')}`,
        isWrapped: false,
      },
      (signal, progress) =>
        fleetUp({
          inventoryFile: flags.inventory,
          controlPlanes,
          nodes: selected,
          edgeadmHome: edgeadmHome(),
          ...(flags.resume === undefined ? {} : { resume: flags.resume }),
          rollout: { ...rollout, signal },
          connect: fleetConnectOptionsFromFlags(flags, {
            env: process.env,
            redactor: this.redactor,
            logger: this.logger,
          }),
          logger: this.logger,
          redact: (text) => this.redactor.redact(text),
          ...(flags.distribution === undefined ? {} : { distribution: flags.distribution }),
          installPackage: flags['install-pkg-path'],
          requestedServiceManager: requestedServiceManager(process.env),
          addSecret: (secret) => this.redactor.addSecret(secret),
          discoveryTimeout: DISCOVERY_TIMEOUT,
          ignorePreflightErrors: listFlag(flags['ignore-preflight-errors']) ?? [],
          ...(flags['kubeconfig-out'] === undefined ? {} : { kubeconfigOut: flags['kubeconfig-out'] }),
          onControlPlaneLine: (line) => this.logToStderr(`${controlPlanes.first.name}: ${line}`),
          onEvent: (event, state) => progress.onEvent(event, state),
          onWorkflowEvent: onInitEvent,
        }),
    );
    // Error messages of the hosts may quote a command line; the token and certificate key never reach the output.
    const report = this.redactor.redactValue(result);
    if (!this.jsonEnabled()) {
      const { controlPlane } = report;
      this.log(`control plane ${controlPlane.host}: ${controlPlane.server} (endpoint ${controlPlane.endpoint})`);
      const rows = [
        { host: controlPlane.host, role: 'control-plane (init)', status: 'done' as const },
        ...report.hosts,
      ];
      for (const line of renderFleetReport(rows, { showRole: true })) this.log(line);
      this.log(`run ${report.runId}: ${report.runDir} (host logs there)`);
    }
    if (report.hosts.some((entry) => entry.status !== 'done')) process.exitCode = ExitCode.General;
    return report;
  }
}
