/**
 * `fleet check`: host check on every host of an inventory, one SSH connection
 * per host and one per bastion for the whole run. A host that does not fit
 * (a failing preflight check) or cannot be reached is a failed host, with the
 * failing checks or the connection error as the reason.
 */
import { PreflightError } from '../errors.js';
import { closeSharedJumps, connectHost, type HostConnectOptions } from '../hosts/connect.js';
import { checkClusterHost } from '../cluster/installed-host-check.js';
import type { HostCheckReport } from '../hosts/host-check.js';
import type { SshConnection } from '../hosts/ssh-connection.js';
import type { Logger } from '../log/run-log.js';
import {
  fleetHostEntries,
  fleetRunSummary,
  runFleet,
  type FleetHostEntry,
  type FleetRunOptions,
  type FleetRunSummary,
} from './fleet-run.js';
import { fleetHostConnectOptions } from './host-connect.js';

/** Options of {@link fleetCheck}. */
export interface FleetCheckOptions extends Omit<FleetRunOptions, 'command' | 'task'> {
  /** Connection settings from the command's flags; the inventory's win. */
  connect: Omit<HostConnectOptions, 'host'>;
  /** For per-host connection logs (the run log). */
  logger: Logger;
}

/** One host in the report. */
export interface FleetCheckHostEntry extends FleetHostEntry {
  /** The failing checks' ids, when the host was reached but does not fit. */
  failingChecks?: string[];
  /** The full host check report, when the host was reached. */
  report?: HostCheckReport;
}

/** The `fleet check` result (its `--json` document). */
export interface FleetCheckResult extends FleetRunSummary {
  hosts: FleetCheckHostEntry[];
  /** True when every host was checked and fits. */
  isFit: boolean;
}

/** Runs host check over the fleet. */
export async function fleetCheck(options: FleetCheckOptions): Promise<FleetCheckResult> {
  const reports = new Map<string, HostCheckReport>();
  const sharedJumps = new Map<string, SshConnection>();
  let run;
  try {
    run = await runFleet({
      ...options,
      command: 'check',
      task: async (fleetHost, context) => {
        context.setPhase('connect');
        const host = await connectHost({
          ...fleetHostConnectOptions(fleetHost, { ...options.connect, logger: options.logger }, sharedJumps),
        });
        try {
          context.log(`connected to ${host.name}`);
          context.setPhase('check');
          const report = await checkClusterHost(host, { role: fleetHost.role });
          reports.set(fleetHost.name, report);
          const failing = report.checks.filter((check) => check.status === 'fail');
          for (const check of failing) context.log(`check ${check.id} failed: ${check.reason}`);
          if (!report.isFit) {
            throw new PreflightError(
              `failing checks: ${failing.map((check) => `${check.id} (${check.reason})`).join('; ')}`,
              { code: 'E_PREFLIGHT' },
            );
          }
        } finally {
          await host.close();
        }
      },
    });
  } finally {
    await closeSharedJumps(sharedJumps);
  }
  const hosts = fleetHostEntries(run.state, options.hosts).map((entry): FleetCheckHostEntry => {
    const report = reports.get(entry.host);
    const failingChecks = report?.checks.filter((check) => check.status === 'fail').map((check) => check.id);
    return {
      ...entry,
      ...(failingChecks === undefined || failingChecks.length === 0 ? {} : { failingChecks }),
      ...(report === undefined ? {} : { report }),
    };
  });
  return { ...fleetRunSummary(run), hosts, isFit: hosts.every((entry) => entry.status === 'done') };
}
