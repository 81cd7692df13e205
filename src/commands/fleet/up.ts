import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { requestedServiceManager } from '../../cluster/service-manager.js';
import { ExitCode } from '../../errors.js';
import { runFleetWithProgress } from '../../cli/fleet-run.js';
import { renderFleetReport } from '../../fleet/fleet-report.js';
import { controlPlaneOf, fleetUp, type FleetUpResult } from '../../fleet/fleet-up.js';
import { limitHosts } from '../../fleet/inventory/limit.js';
import { loadInventory } from '../../fleet/inventory/load-inventory.js';
import { edgeadmHome } from '../../log/run-log.js';
import { listFlag } from '../init/phase/node-flags.js';
import { fleetConnectOptionsFromFlags, inventoryFlags, rolloutFlags, rolloutOptionsFromFlags } from './fleet-flags.js';

/** How long the nodes' discovery keeps trying (join's default). */
const DISCOVERY_TIMEOUT = '5m0s';

export default class FleetUp extends BaseCommand<typeof FleetUp> {
  static override summary = 'Bring up control planes and join every node of an inventory.';
  static override description =
    "Inits the inventory's control-plane host (nothing changes when it already runs), then " +
    'joins every node with its join token and the CA pin, in waves and within the failure budget. ' +
    'The exit code is 1 when any node failed or was not started. Preview with "fleet plan".';
  static override examples = [
    '<%= config.bin %> fleet up -i inventory.yaml --canary 2 --wave-size 20%',
    '<%= config.bin %> fleet up -i hosts.yml --install-pkg-path ./pkg.tar.gz --max-failures 5 --json',
  ];
  static override flags = {
    ...inventoryFlags,
    ...rolloutFlags,
    'install-pkg-path': Flags.string({ summary: 'The install package for hosts whose inventory entry names none.' }),
    distribution: Flags.string({ summary: 'k3s (default).' }),
    'kubeconfig-out': Flags.string({ summary: 'Write the admin kubeconfig to this file.' }),
    'ignore-preflight-errors': Flags.string({ summary: 'Preflight check ids that only warn.', multiple: true }),
  };

  async run(): Promise<FleetUpResult> {
    const { flags } = this;
    const inventory = await loadInventory(flags.inventory);
    for (const warning of inventory.warnings) this.logger.warn(warning);
    const controlPlane = controlPlaneOf(inventory.hosts);
    const nodes = inventory.hosts.filter((host) => host.role === 'worker');
    const selected = flags.resume === undefined ? limitHosts(nodes, flags.limit) : nodes;
    const result: FleetUpResult = await runFleetWithProgress(
      this,
      { title: `fleet up: joining ${selected.length} nodes`, isWrapped: false },
      (signal, progress) =>
        fleetUp({
          inventoryFile: flags.inventory,
          controlPlane,
          nodes: selected,
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
          distribution: flags.distribution ?? 'k3s',
          installPackage: flags['install-pkg-path'],
          requestedServiceManager: requestedServiceManager(process.env),
          addSecret: (secret) => this.redactor.addSecret(secret),
          discoveryTimeout: DISCOVERY_TIMEOUT,
          ignorePreflightErrors: listFlag(flags['ignore-preflight-errors']) ?? [],
          ...(flags['kubeconfig-out'] === undefined ? {} : { kubeconfigOut: flags['kubeconfig-out'] }),
          onControlPlaneLine: (line) => this.logToStderr(`${controlPlane.name}: ${line}`),
          onEvent: (event, state) => progress.onEvent(event, state),
        }),
    );
    if (!this.jsonEnabled()) {
      this.log(`control plane ${result.controlPlane.host}: ${result.controlPlane.server}`);
      for (const line of renderFleetReport(result.hosts)) this.log(line);
      this.log(`run ${result.runId}: ${result.runDir} (host logs there)`);
    }
    if (result.hosts.some((entry) => entry.status !== 'done')) process.exitCode = ExitCode.General;
    return result;
  }
}
