/**
 * `fleet join`: the join workflow on every node of an inventory (its
 * control-plane hosts are left alone), with kubeadm's token and CA pin trust
 * model, one SSH connection per host and one per bastion for the whole run.
 * `fleet up` runs it over its joining control planes too: a control-plane
 * host of the run joins with `--control-plane --certificate-key`.
 * Each node's labels and edge flag come from the inventory; its package from
 * the inventory or `--install-pkg-path`, verified once for the whole run
 * before any host is reached, and uploaded only to hosts that do not have it.
 * The packages say the distribution (k3s or kubeadm); see {@link runDistribution}.
 */
import { runJoin } from '../cluster/join.js';
import { ValidationError } from '../errors.js';
import { prepareNode } from '../cluster/prepare.js';
import type { ServiceManagerKind } from '../hosts/service-manager.js';
import { closeSharedJumps, type HostConnectOptions } from '../hosts/connect.js';
import type { SshConnection } from '../hosts/ssh-connection.js';
import type { Logger } from '../log/run-log.js';
import type { DiscoveryRequest } from '../trust/discovery.js';
import type { WorkflowEventSink } from '../workflow/events.js';
import {
  fleetHostEntries,
  fleetRunSummary,
  runFleet,
  type FleetHostEntry,
  type FleetRunOptions,
  type FleetRunSummary,
} from './fleet-run.js';
import { FleetPackages, runDistribution, type FleetPackageTrust } from './fleet-packages.js';
import { fleetHostConnectOptions } from './host-connect.js';
import { sharedDiscovery } from './shared-discovery.js';
import { withSiteLabels } from '../sites/site-label.js';

/** Options of {@link fleetJoin}. */
export interface FleetJoinOptions extends Omit<FleetRunOptions, 'command' | 'task'> {
  /** The command the run state records (`fleet up` runs are `up`); default `join`. */
  command?: string;
  /** Joins the run's control-plane hosts as control planes (`fleet up`). A secret. */
  certificateKey?: string;
  connect: Omit<HostConnectOptions, 'host'>;
  logger: Logger;
  isDryRun: boolean;
  /** `--distribution`: checked against the packages, which decide when it is absent. */
  distribution?: string;
  /** Package for hosts whose inventory entry names none. */
  installPackage: string | undefined;
  requestedServiceManager: ServiceManagerKind | undefined;
  /** Every host's discovery, parsed once for the run (fleet-request.ts): token, pins, endpoint, timeout. */
  discovery: DiscoveryRequest;
  ignorePreflightErrors: string[];
  /** Phase paths of join, checked by the request. */
  skipPhases?: string[];
  /** Told each host's workflow events, named by the host's inventory name (`--output jsonl`). */
  onWorkflowEvent?: WorkflowEventSink;
  /** The run's verified packages (`fleet up` shares its own); a fresh set when absent. */
  packages?: FleetPackages;
  /** `--trusted-key` files: every package must be signed by one of them; none: origins are not checked. */
  trustedKeyFiles?: string[];
  /** Where the loud line goes when a package's origin is not checked. */
  onPackageWarning?: (line: string) => void;
  /** Bastion connections to share (`fleet up` shares its own); the caller then closes them. */
  sharedJumps?: Map<string, SshConnection>;
}

/** One node in the report. */
export interface FleetJoinHostEntry extends FleetHostEntry {
  /** Whether the join changed the host (false when it had already joined). */
  isChanged?: boolean;
  node?: { name: string; isReady: boolean };
}

/** The `fleet join` result (its `--json` document). */
export interface FleetJoinResult extends FleetRunSummary {
  isDryRun: boolean;
  hosts: FleetJoinHostEntry[];
}

/** Joins the nodes of the fleet. */
export async function fleetJoin(options: FleetJoinOptions): Promise<FleetJoinResult> {
  // Parsed once for the run, before any host: every host's join takes the same parsed request.
  const { discovery } = options;
  // Asked once for the whole run, when the first host needs it (src/fleet/shared-discovery.ts).
  const discoverOnce = sharedDiscovery({ logger: options.logger });
  const skipPhases = options.skipPhases ?? [];
  const outcomes = new Map<string, Pick<FleetJoinHostEntry, 'isChanged' | 'node'>>();
  const packages = await (
    options.packages ?? new FleetPackages(options.edgeadmHome, fleetPackageTrust(options))
  ).forHosts(options.hosts, options.installPackage);
  const distribution = runDistribution(packages, options.distribution);
  const sharedJumps = options.sharedJumps ?? new Map<string, SshConnection>();
  let run;
  try {
    run = await runFleet({
      ...options,
      command: options.command ?? 'join',
      task: async (fleetHost, context) => {
        const isControlPlane = fleetHost.role === 'control-plane';
        if (isControlPlane && options.certificateKey === undefined) {
          throw new ValidationError(`${fleetHost.name} is a control-plane host: fleet up joins it, not fleet join`, {
            code: 'E_FLEET_CONTROL_PLANE',
          });
        }
        context.setPhase('connect');
        const prepared = await prepareNode({
          connect: fleetHostConnectOptions(fleetHost, { ...options.connect, logger: options.logger }, sharedJumps),
          isDryRun: options.isDryRun,
          distribution,
          installPackage: fleetHost.packagePath ?? options.installPackage,
          resolvedPackage: packages.get(fleetHost.name)!,
          requestedServiceManager: options.requestedServiceManager,
          logger: options.logger,
        });
        try {
          context.log(`connected to ${prepared.host.name}`);
          const result = await runJoin({
            request: {
              distribution,
              // Resolved and verified already (packages.forHosts refused a host without one).
              installPackage: (fleetHost.packagePath ?? options.installPackage)!,
              trustedKeyFiles: options.trustedKeyFiles ?? [],
              discovery,
              // An inventory's edgeadm.io/site label brings the zone with it, as join --site does.
              nodeLabels: withSiteLabels(fleetHost.labels),
              // Edge nodes are workers: a control plane joins without the edge additions.
              enableEdge: fleetHost.isEdge && !isControlPlane,
              isControlPlane,
              ...(isControlPlane ? { certificateKey: options.certificateKey! } : {}),
              run: { isDryRun: options.isDryRun, ignorePreflightErrors: options.ignorePreflightErrors, skipPhases },
            },
            node: prepared,
            logger: options.logger,
            discover: discoverOnce,
            onLine: (line) => context.log(line),
            // The phase the report names comes from the workflow's events, not from its lines.
            onEvent: (event) => {
              if (event.type === 'phase-started') context.setPhase(event.phase);
              options.onWorkflowEvent?.({ ...event, host: fleetHost.name });
            },
          });
          outcomes.set(fleetHost.name, {
            isChanged: result.isChanged,
            ...(result.node === undefined ? {} : { node: result.node }),
          });
        } finally {
          await prepared.host.close();
        }
      },
    });
  } finally {
    if (options.sharedJumps === undefined) await closeSharedJumps(sharedJumps);
  }
  const hosts = fleetHostEntries(run.state, options.hosts).map((entry): FleetJoinHostEntry => {
    const outcome = outcomes.get(entry.host);
    return outcome === undefined ? entry : { ...entry, ...outcome };
  });
  return { ...fleetRunSummary(run), isDryRun: options.isDryRun, hosts };
}

/** The trust a run's packages are checked with, from its options. */
export function fleetPackageTrust(options: {
  trustedKeyFiles?: string[];
  onPackageWarning?: (line: string) => void;
  logger: Logger;
}): FleetPackageTrust {
  return {
    trustedKeyFiles: options.trustedKeyFiles,
    warn: options.onPackageWarning ?? ((line) => options.logger.warn(line)),
  };
}
