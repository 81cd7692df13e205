import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { requestedServiceManager } from '../../hosts/service-manager.js';
import { ExitCode } from '../../errors.js';
import { fleetJoin, type FleetJoinResult } from '../../fleet/fleet-join.js';
import { runFleetWithProgress } from '../../cli/fleet-run.js';
import { outputFlags } from '../../cli/flags/output-flag.js';
import { renderFleetReport } from '../../fleet/fleet-report.js';
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

/** How long discovery keeps trying when --discovery-timeout is not given (join's default). */
const DEFAULT_DISCOVERY_TIMEOUT = '5m0s';

export default class FleetJoin extends BaseCommand<typeof FleetJoin> {
  static override summary = 'Join every node of an inventory.';
  static override description =
    'Runs edgeadm join on every non-control-plane host of the inventory, with its labels and edge flag, in waves ' +
    'and within the failure budget. Each host is verified against the token and CA pin before anything is installed. ' +
    'The exit code is 1 when any host failed or was not started; --resume continues a stopped run.';
  static override examples = [
    '<%= config.bin %> fleet join -i inventory.yaml --endpoint 10.0.0.10:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:<hash> --install-pkg-path ./pkg.tar.gz',
  ];
  static override flags = {
    ...outputFlags,
    ...inventoryFlags,
    ...rolloutFlags,
    endpoint: Flags.string({ summary: 'The API server, host:port.', required: true }),
    token: Flags.string({ summary: 'The bootstrap token, <id>.<secret>.', required: true }),
    'discovery-token-ca-cert-hash': Flags.string({ summary: 'Pin of the cluster CA, sha256:<hex>.', multiple: true }),
    'discovery-token-unsafe-skip-ca-verification': Flags.boolean({ summary: 'Trust the CA without a pin.' }),
    'discovery-timeout': Flags.string({
      summary: `How long discovery keeps trying. Default ${DEFAULT_DISCOVERY_TIMEOUT}.`,
    }),
    'install-pkg-path': Flags.string({ summary: 'The install package for hosts whose inventory entry names none.' }),
    distribution: Flags.string({
      summary: 'k3s or kubeadm; default: the one the install packages are for (they must agree with it).',
    }),
    'dry-run': Flags.boolean({ summary: 'Print per host what would be done; change nothing.' }),
    'ignore-preflight-errors': Flags.string({ summary: 'Preflight check ids that only warn.', multiple: true }),
    'skip-phases': Flags.string({ summary: 'Phases to skip, comma-separated.', multiple: true }),
  };

  async run(): Promise<FleetJoinResult> {
    const { flags } = this;
    // The token, pins, timeout and endpoint are parsed by fleetJoin, once, before any host is reached.
    const pins = flags['discovery-token-ca-cert-hash'] ?? [];
    this.redactor.addSecret(flags.token);
    const inventory = await loadInventory(flags.inventory);
    for (const warning of inventory.warnings) this.logger.warn(warning);
    const nodes = inventory.hosts.filter((host) => host.role === 'worker');
    const hosts = flags.resume === undefined ? limitHosts(nodes, flags.limit) : nodes;
    const result: FleetJoinResult = await runFleetWithProgress(
      this,
      { title: `fleet join of ${counted(hosts.length, 'host')}` },
      (signal, progress) =>
        fleetJoin({
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
          ...(flags.distribution === undefined ? {} : { distribution: flags.distribution }),
          installPackage: flags['install-pkg-path'],
          requestedServiceManager: requestedServiceManager(process.env),
          endpoint: flags.endpoint,
          token: flags.token,
          caCertHashes: pins,
          isUnsafeSkipCaVerification: flags['discovery-token-unsafe-skip-ca-verification'],
          discoveryTimeout: flags['discovery-timeout'] ?? DEFAULT_DISCOVERY_TIMEOUT,
          ignorePreflightErrors: listFlag(flags['ignore-preflight-errors']) ?? [],
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
