/**
 * What every fleet command does around its workflow, once: read the
 * inventory (its warnings logged), pick the hosts (`--limit`, or the
 * resumed run's own), run the workflow with the common options (SSH
 * settings from the flags, the rollout and its Ctrl-C signal, progress,
 * events, redaction), print the report (not with `--json`), and exit 1 when
 * a host did not finish. A fleet command's `run()` parses its request and
 * names its workflow.
 */
import type { Command } from '@oclif/core';
import { ExitCode } from '../errors.js';
import type { FleetRunRequest } from '../fleet/fleet-request.js';
import { renderFleetReport, type FleetReportRow } from '../fleet/fleet-report.js';
import type { FleetRunOptions } from '../fleet/fleet-run.js';
import { limitHosts } from '../fleet/inventory/limit.js';
import { loadInventory } from '../fleet/inventory/load-inventory.js';
import type { FleetHost, FleetInventory } from '../fleet/inventory/types.js';
import type { HostConnectOptions } from '../hosts/connect.js';
import { requestedServiceManager, type ServiceManagerKind } from '../hosts/service-manager.js';
import { counted } from '../log/counted.js';
import { edgeadmHome, type Logger } from '../log/run-log.js';
import type { WorkflowEventSink } from '../workflow/events.js';
import { BaseCommand } from './base-command.js';
import { fleetConnectOptionsFromFlags } from './flags/fleet-flags.js';
import type { SshFlagValues } from './flags/ssh-flags.js';
import { runFleetWithProgress } from './fleet-run.js';
import type { FleetProgress } from '../fleet/fleet-progress.js';

/** The options every fleet workflow takes, filled in by the runner. */
export interface FleetCommonOptions extends Pick<
  FleetRunOptions,
  'inventoryFile' | 'hosts' | 'edgeadmHome' | 'resume' | 'rollout' | 'onEvent' | 'redact'
> {
  connect: Omit<HostConnectOptions, 'host'>;
  logger: Logger;
  requestedServiceManager: ServiceManagerKind | undefined;
  onWorkflowEvent: WorkflowEventSink;
}

/** A fleet run's result, as the runner reports it. */
export interface FleetCommandResult {
  runId: string;
  runDir: string;
  hosts: readonly FleetReportRow[];
}

/** How one fleet command runs its workflow. */
export interface FleetCommandPlan<R extends FleetCommandResult> {
  /** The command's name in the progress title (`fleet join of 3 hosts`). */
  name: string;
  request: FleetRunRequest;
  /** The hosts the command works on; every host of the inventory by default. */
  select?: (inventory: FleetInventory) => FleetHost[];
  /** The workflow, given the common options. */
  work: (options: FleetCommonOptions, inventory: FleetInventory) => Promise<R>;
  /** Shows each host's role in the report. */
  showRole?: boolean;
  /** Lines printed after the report, before the run id. */
  notes?: (result: R) => string[];
  /** Whether the run failed (exit code 1); by default, when any host did not finish. */
  isFailed?: (result: R) => boolean;
  /** Whether the run keeps a log per host (named after the run id); true by default. */
  hasHostLogs?: boolean;
}

/** A command that runs a fleet workflow over an inventory. */
export abstract class FleetCommand<T extends typeof Command> extends BaseCommand<T> {
  // Restated: oclif's manifest collects static properties up the class chain only while each class has some.
  static override enableJsonFlag = true;

  /** Runs `plan`'s workflow over the inventory; see the module comment. */
  protected async runFleetPlan<R extends FleetCommandResult>(plan: FleetCommandPlan<R>): Promise<R> {
    const { request } = plan;
    const inventory = await this.readInventory(request);
    const candidates = plan.select?.(inventory) ?? inventory.hosts;
    // A resumed run keeps its own host list; the inventory is where their settings are looked up.
    const hosts = request.resume === undefined ? limitHosts(candidates, request.limit) : candidates;
    const title = `fleet ${plan.name} of ${counted(hosts.length, 'host')}`;
    const result = await runFleetWithProgress(this, { title }, (signal, progress) =>
      plan.work(this.fleetOptions(request, hosts, signal, progress), inventory),
    );
    this.reportFleetRun(result, plan);
    return result;
  }

  /** The inventory, its warnings logged. */
  protected async readInventory(request: FleetRunRequest): Promise<FleetInventory> {
    const inventory = await loadInventory(request.inventoryFile);
    for (const warning of inventory.warnings) this.logger.warn(warning);
    return inventory;
  }

  /** The options every fleet workflow takes, for `hosts`. */
  protected fleetOptions(
    request: FleetRunRequest,
    hosts: FleetHost[],
    signal: AbortSignal,
    progress: Pick<FleetProgress, 'onEvent'>,
  ): FleetCommonOptions {
    return {
      inventoryFile: request.inventoryFile,
      hosts,
      edgeadmHome: edgeadmHome(),
      ...(request.resume === undefined ? {} : { resume: request.resume }),
      rollout: { ...request.rollout, signal },
      connect: this.fleetConnect(),
      logger: this.logger,
      redact: (text) => this.redactor.redact(text),
      requestedServiceManager: requestedServiceManager(process.env),
      onEvent: (event, state) => progress.onEvent(event, state),
      onWorkflowEvent: (event) => this.emitEvent({ ...event }),
    };
  }

  /** Connection settings for every host from the SSH flags (the inventory's per-host settings win). */
  protected fleetConnect(): Omit<HostConnectOptions, 'host'> {
    return fleetConnectOptionsFromFlags(this.flags as SshFlagValues, {
      env: process.env,
      redactor: this.redactor,
      logger: this.logger,
    });
  }

  /** The report (not with --json), and exit code 1 when the run failed. */
  protected reportFleetRun<R extends FleetCommandResult>(
    result: R,
    plan: Pick<FleetCommandPlan<R>, 'showRole' | 'notes' | 'isFailed' | 'hasHostLogs'>,
  ): void {
    if (!this.jsonEnabled()) {
      for (const line of renderFleetReport([...result.hosts], { showRole: plan.showRole === true })) this.log(line);
      for (const line of plan.notes?.(result) ?? []) this.log(line);
      this.log(`run ${result.runId}: ${result.runDir}${plan.hasHostLogs === false ? '' : ' (host logs there)'}`);
    }
    const isFailed = plan.isFailed?.(result) ?? result.hosts.some((entry) => entry.status !== 'done');
    if (isFailed) process.exitCode = ExitCode.General;
  }
}
