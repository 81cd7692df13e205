import { Flags } from '@oclif/core';
import { fleetJoin, type FleetJoinResult } from '../../fleet/fleet-join.js';
import { outputFlags } from '../../cli/flags/output-flag.js';
import { listFlag } from '../../cli/flags/node-flags.js';
import { inventoryFlags, rolloutFlags, fleetRunInput, fleetPackageFlags } from '../../cli/flags/fleet-flags.js';
import { FleetCommand } from '../../cli/fleet-command.js';
import { parseFleetJoinRequest } from '../../fleet/fleet-request.js';
import { requiredTokenDiscoveryFlags } from '../../cli/flags/discovery-flags.js';
import { dryRunFlag, ignorePreflightErrorsFlag, skipPhasesFlag } from '../../cli/flags/run-flags.js';

export default class FleetJoin extends FleetCommand<typeof FleetJoin> {
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
    ...fleetPackageFlags,
    endpoint: Flags.string({ summary: 'The API server, host:port.', required: true }),
    ...requiredTokenDiscoveryFlags,
    'dry-run': dryRunFlag('Print per host what would be done; change nothing.'),
    'ignore-preflight-errors': ignorePreflightErrorsFlag,
    'skip-phases': skipPhasesFlag,
  };

  async run(): Promise<FleetJoinResult> {
    const { flags } = this;
    // Parsed once, before the inventory is read or any host reached: the token, pins, timeout and endpoint.
    const request = parseFleetJoinRequest({
      ...fleetRunInput(flags),
      endpoint: flags.endpoint,
      token: flags.token,
      caCertHashes: flags['discovery-token-ca-cert-hash'] ?? [],
      isUnsafeSkipCaVerification: flags['discovery-token-unsafe-skip-ca-verification'],
      discoveryTimeout: flags['discovery-timeout'],
      installPackage: flags['install-pkg-path'],
      distribution: flags.distribution,
      isDryRun: flags['dry-run'],
      ignorePreflightErrors: listFlag(flags['ignore-preflight-errors']) ?? [],
      skipPhases: listFlag(flags['skip-phases']) ?? [],
    });
    return this.runFleetPlan({
      name: 'join',
      request: request.run,
      select: (inventory) => inventory.hosts.filter((host) => host.role === 'worker'),
      work: (options, inventory) =>
        fleetJoin({
          ...options,
          discovery: request.discovery,
          isDryRun: request.isDryRun,
          ...(request.distribution === undefined ? {} : { distribution: request.distribution }),
          installPackage: request.installPackage,
          ignorePreflightErrors: request.ignorePreflightErrors,
          ...(request.skipPhases.length > 0 ? { skipPhases: request.skipPhases } : {}),
          trustedKeyFiles: flags['trusted-key'] ?? inventory.trustedKeys ?? [],
          onPackageWarning: (line) => this.warnAlways(line),
        }),
    });
  }
}
