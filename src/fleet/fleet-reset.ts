/**
 * `fleet reset`: the reset workflow on every host of an inventory, one SSH
 * connection per host and one per bastion for the whole run. Each host's
 * workflow lines go to its log in the run directory, and the phase it is in
 * is what the report names when it fails.
 */
import type { Distribution } from '../cluster/distributions/distribution.js';
import { runReset } from '../cluster/reset.js';
import type { ServiceManagerKind } from '../hosts/service-manager.js';
import { closeSharedJumps, connectHost, type HostConnectOptions } from '../hosts/connect.js';
import { DryRunHost } from '../hosts/dry-run-host.js';
import type { SshConnection } from '../hosts/ssh-connection.js';
import type { Logger } from '../log/run-log.js';
import type { WorkflowEventSink } from '../workflow/events.js';
import {
  fleetHostEntries,
  fleetRunSummary,
  runFleet,
  type FleetHostEntry,
  type FleetRunOptions,
  type FleetRunSummary,
} from './fleet-run.js';
import { fleetHostConnectOptions } from './host-connect.js';

/** Options of {@link fleetReset}. */
export interface FleetResetOptions extends Omit<FleetRunOptions, 'command' | 'task'> {
  connect: Omit<HostConnectOptions, 'host'>;
  logger: Logger;
  isDryRun: boolean;
  /** Reset hosts without an install state too (what the distribution is known to write). */
  isForced: boolean;
  distribution: Distribution;
  requestedServiceManager: ServiceManagerKind | undefined;
  skipPhases?: string[];
  /** Told each host's workflow events, named by the host's inventory name (`--output jsonl`). */
  onWorkflowEvent?: WorkflowEventSink;
}

/** One host in the report. */
export interface FleetResetHostEntry extends FleetHostEntry {
  /** Paths removed (none under --dry-run). */
  removed?: string[];
  /** Whether the host had an edgeadm install state. */
  hadState?: boolean;
}

/** The `fleet reset` result (its `--json` document). */
export interface FleetResetResult extends FleetRunSummary {
  isDryRun: boolean;
  hosts: FleetResetHostEntry[];
}

/** Runs reset over the fleet. */
export async function fleetReset(options: FleetResetOptions): Promise<FleetResetResult> {
  const outcomes = new Map<string, { removed: string[]; hadState: boolean }>();
  const sharedJumps = new Map<string, SshConnection>();
  let run;
  try {
    run = await runFleet({
      ...options,
      command: 'reset',
      task: async (fleetHost, context) => {
        context.setPhase('connect');
        const real = await connectHost(
          fleetHostConnectOptions(fleetHost, { ...options.connect, logger: options.logger }, sharedJumps),
        );
        const host = options.isDryRun ? new DryRunHost({ fallback: real }) : real;
        try {
          context.log(`connected to ${real.name}`);
          const result = await runReset({
            host,
            isDryRun: options.isDryRun,
            isForced: options.isForced,
            distribution: options.distribution,
            requestedServiceManager: options.requestedServiceManager,
            ...(options.skipPhases === undefined ? {} : { skipPhases: options.skipPhases }),
            logger: options.logger,
            onLine: (line) => context.log(line),
            // The phase the report names comes from the workflow's events, not from its lines.
            onEvent: (event) => {
              if (event.type === 'phase-started') context.setPhase(event.phase);
              options.onWorkflowEvent?.({ ...event, host: fleetHost.name });
            },
          });
          outcomes.set(fleetHost.name, { removed: result.removed, hadState: result.hadState });
        } finally {
          // A dry-run host closes the real one it wraps.
          await host.close();
        }
      },
    });
  } finally {
    await closeSharedJumps(sharedJumps);
  }
  const hosts = fleetHostEntries(run.state, options.hosts).map((entry): FleetResetHostEntry => {
    const outcome = outcomes.get(entry.host);
    return outcome === undefined ? entry : { ...entry, ...outcome };
  });
  return { ...fleetRunSummary(run), isDryRun: options.isDryRun, hosts };
}
