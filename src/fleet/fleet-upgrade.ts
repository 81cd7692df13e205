/**
 * `fleet upgrade`: every host of an inventory to the version of one install
 * package, verified once for the run. The control planes go first, one at a
 * time, through `upgrade apply`'s own workflow ({@link applyUpgrade}); a
 * control plane that fails stops the run before any node starts. Then the
 * nodes, through `upgrade node`'s ({@link upgradeNode}), in waves with the
 * fleet's concurrency and failure budget, all through the inventory's first
 * control plane (one shared SSH connection). A maintenance window, when
 * given, is asked before each host starts: outside it no host starts, the
 * hosts running finish, and the run stops with the time it opens again.
 *
 * Every step is the per-host workflow's, so a resumed run (or a host's
 * retry) finishes what an interruption left on the host, or finds it done.
 */
import { join } from 'node:path';
import { applyUpgrade } from '../cluster/upgrade/apply.js';
import { parseKubeVersion } from '../cluster/upgrade/kube-version.js';
import { upgradeNode, type UpgradeNodeResult } from '../cluster/upgrade/node.js';
import { readCluster } from '../cluster/upgrade/plan.js';
import { ValidationError } from '../errors.js';
import { closeSharedJumps, connectHost, type HostConnectOptions } from '../hosts/connect.js';
import type { Host } from '../hosts/host.js';
import type { ServiceManagerKind } from '../hosts/service-manager.js';
import type { SshConnection } from '../hosts/ssh-connection.js';
import type { Logger } from '../log/run-log.js';
import { resolveTrustedPackage } from '../packages/package-trust.js';
import type { WorkflowEventSink } from '../workflow/events.js';
import {
  fleetHostEntries,
  fleetRunSummary,
  runFleet,
  type FleetHostEntry,
  type FleetRunOptions,
  type FleetRunSummary,
  type FleetStage,
} from './fleet-run.js';
import { fleetHostConnectOptions } from './host-connect.js';
import type { FleetHost } from './inventory/types.js';
import { isWindowOpen, nextOpening, windowClosedMessage, type MaintenanceWindow } from './maintenance-window.js';

/** Options of {@link fleetUpgrade}. */
export interface FleetUpgradeOptions extends Omit<FleetRunOptions, 'command' | 'task' | 'stages'> {
  connect: Omit<HostConnectOptions, 'host'>;
  logger: Logger;
  /** `--install-pkg-path`: the new package, for every host. */
  installPackage: string;
  /** `--trusted-key` files: the package must be signed by one of them; none: its origin is not checked. */
  trustedKeyFiles?: string[];
  /** Where the loud line goes when the package's origin is not checked. */
  onPackageWarning?: (line: string) => void;
  requestedServiceManager: ServiceManagerKind | undefined;
  /** `--force`: nodes' drains evict what kubectl drain would refuse without it. */
  isForced: boolean;
  /** How long a node's drain may take, and each health gate before the rollback (ms; fleet-request.ts). */
  deadlines: { drainTimeoutMs: number; gateTimeoutMs: number };
  /**
   * The control plane the nodes are drained and watched through: the
   * inventory's first (given apart from `hosts`, which `--limit` may have
   * narrowed to nodes); default: the first control plane of `hosts`.
   */
  apiThrough?: FleetHost;
  /** When new hosts may start; absent: any time. */
  window?: MaintenanceWindow;
  /** The clock the window is read with (tests inject one). */
  now: () => Date;
  /** Told each host's workflow events, named by the host's inventory name. */
  onWorkflowEvent?: WorkflowEventSink;
}

/** One host in the report. */
export interface FleetUpgradeHostEntry extends FleetHostEntry {
  from?: string;
  to?: string;
  /** upgraded, or already-done (it ran the target already). */
  outcome?: 'upgraded' | 'already-done';
}

/** The `fleet upgrade` result (its `--json` document). */
export interface FleetUpgradeResult extends FleetRunSummary {
  /** The package's version. */
  target: string;
  /** The window, as given, when there is one. */
  window?: string;
  /** When the window stopped the run: when it opens again (absent: an interval that is over). */
  resumeAt?: string;
  hosts: FleetUpgradeHostEntry[];
}

/** The inventory's control planes, in order; the first is the one nodes are upgraded through. */
function controlPlanesOf(hosts: readonly FleetHost[]): FleetHost[] {
  return hosts.filter((host) => host.role === 'control-plane');
}

/**
 * The maintenance window's gate, asked before each host, and when the run
 * may resume once the window closed it (absent: an interval that is over).
 */
function windowGate(
  window: MaintenanceWindow,
  now: () => Date,
): { startGate: NonNullable<FleetStage['rollout']['startGate']>; resumeAt: () => string | undefined } {
  let closedAt: Date | undefined;
  return {
    startGate: (state) => {
      const at = now();
      if (isWindowOpen(window, at)) return undefined;
      closedAt = at;
      return { reason: 'maintenance-window', message: windowClosedMessage(window, at, state.id) };
    },
    resumeAt: () => (closedAt === undefined ? undefined : nextOpening(window, closedAt)?.toISOString()),
  };
}

/**
 * Upgrades the fleet.
 *
 * @throws {ValidationError} `E_FLEET_NO_CONTROL_PLANE` when the inventory names no control plane.
 */
export async function fleetUpgrade(options: FleetUpgradeOptions): Promise<FleetUpgradeResult> {
  const first = options.apiThrough ?? controlPlanesOf(options.hosts)[0];
  if (first === undefined) {
    throw new ValidationError('fleet upgrade needs a control plane in the inventory: nodes are drained through it', {
      code: 'E_FLEET_NO_CONTROL_PLANE',
    });
  }
  // Verified once for the run, before any host: a bad package fails here (the deadlines were parsed by the request).
  const { deadlines } = options;
  const pkg = await resolveTrustedPackage(options.installPackage, {
    cacheDir: join(options.edgeadmHome, 'packages'),
    trustedKeyFiles: options.trustedKeyFiles,
    warn: options.onPackageWarning ?? ((line) => options.logger.warn(line)),
  });
  const target = parseKubeVersion(pkg.manifest.kubernetesVersion, `package ${pkg.manifest.name}`);
  const sharedJumps = new Map<string, SshConnection>();
  const connectOf = (host: FleetHost): HostConnectOptions & { host: string } =>
    fleetHostConnectOptions(host, { ...options.connect, logger: options.logger }, sharedJumps);
  let controlPlaneHost: Promise<Host> | undefined;
  const sharedControlPlane = (): Promise<Host> => {
    controlPlaneHost ??= connectHost(connectOf(first));
    return controlPlaneHost;
  };
  const outcomes = new Map<string, Pick<FleetUpgradeHostEntry, 'from' | 'to' | 'outcome'>>();
  const gate = options.window === undefined ? undefined : windowGate(options.window, options.now);
  const stages = upgradeStages(options.rollout, gate?.startGate);
  const onEvent = (fleetHost: FleetHost, context: { setPhase(phase: string): void }): WorkflowEventSink => {
    return (event) => {
      if (event.type === 'phase-started') context.setPhase(event.phase);
      options.onWorkflowEvent?.({ ...event, host: fleetHost.name });
    };
  };
  let run;
  try {
    run = await runFleet({
      ...options,
      command: 'upgrade',
      stages,
      task: async (fleetHost, context) => {
        if (fleetHost.role === 'control-plane') {
          context.setPhase('read');
          // A control plane at the target already is done: nothing to back up or swap.
          if (await runsVersion(connectOf(fleetHost), target.text)) {
            context.log(`${fleetHost.name} runs ${target.text} already`);
            outcomes.set(fleetHost.name, { from: target.text, to: target.text, outcome: 'already-done' });
            return;
          }
          const result = await applyUpgrade(
            {
              connect: connectOf(fleetHost),
              packageSource: options.installPackage,
              trustedKeyFiles: options.trustedKeyFiles ?? [],
              isDryRun: false,
              gateTimeoutMs: deadlines.gateTimeoutMs,
            },
            {
              logger: options.logger,
              requestedServiceManager: options.requestedServiceManager,
              onLine: (line) => context.log(line),
              onEvent: onEvent(fleetHost, context),
            },
          );
          outcomes.set(fleetHost.name, {
            from: result.from,
            to: result.to,
            outcome: result.outcome === 'already-done' ? 'already-done' : 'upgraded',
          });
          return;
        }
        context.setPhase('connect');
        const result: UpgradeNodeResult = await upgradeNode(
          {
            connect: connectOf(fleetHost),
            controlPlane: connectOf(first),
            packageSource: options.installPackage,
            trustedKeyFiles: options.trustedKeyFiles ?? [],
            isForced: options.isForced,
            ...deadlines,
          },
          {
            logger: options.logger,
            requestedServiceManager: options.requestedServiceManager,
            onLine: (line) => context.log(line),
            onEvent: onEvent(fleetHost, context),
            controlPlaneHost: await sharedControlPlane(),
            resolvedPackage: pkg,
          },
        );
        outcomes.set(fleetHost.name, { from: result.from, to: result.to, outcome: result.outcome });
      },
    });
  } finally {
    if (controlPlaneHost !== undefined) await (await controlPlaneHost.catch(() => undefined))?.close();
    await closeSharedJumps(sharedJumps);
  }
  const hosts = fleetHostEntries(run.state, options.hosts).map((entry): FleetUpgradeHostEntry => {
    const outcome = outcomes.get(entry.host);
    return outcome === undefined ? entry : { ...entry, ...outcome };
  });
  const resumeAt = run.state.stopReason === 'maintenance-window' ? gate?.resumeAt() : undefined;
  return {
    ...fleetRunSummary(run),
    target: target.text,
    ...(options.window === undefined ? {} : { window: options.window.text }),
    ...(resumeAt === undefined ? {} : { resumeAt }),
    hosts,
  };
}

/**
 * The run's stages: the control planes one at a time, any failure stopping
 * the run before a node; then the nodes with the rollout flags. The window's
 * gate, when there is one, is asked before every host of both.
 */
export function upgradeStages(
  rollout: FleetUpgradeOptions['rollout'],
  startGate: FleetStage['rollout']['startGate'],
): FleetStage[] {
  const { concurrency: _c, canary: _canary, waveSize: _w, maxFailures: _m, ...common } = rollout;
  const withGate = <T extends object>(rollout: T): T => (startGate === undefined ? rollout : { ...rollout, startGate });
  return [
    {
      includes: (host) => host.role === 'control-plane',
      rollout: withGate({
        ...common,
        concurrency: 1,
        maxFailures: { count: 0 },
        budgetStop: {
          reason: 'control-plane-failed',
          message: 'not started: an earlier control plane was not upgraded (control planes go one at a time)',
        },
      }),
      blocksLaterStages: {
        reason: 'control-plane-failed',
        message: (failed) =>
          `not started: control plane ${failed.join(', ')} was not upgraded, and nodes go only after every control plane; fix it and --resume`,
      },
    },
    { includes: (host) => host.role !== 'control-plane', rollout: withGate(rollout) },
  ];
}

/** Whether the control plane at `connect` runs `version` (its API server and its kubelet). Only reads. */
async function runsVersion(connect: HostConnectOptions, version: string): Promise<boolean> {
  const host = await connectHost(connect);
  try {
    const facts = await host.facts();
    const me = (await readCluster(host)).hosts.find((h) => h.name === facts.hostname);
    return me !== undefined && (me.apiServer ?? me.kubelet).text === version && me.kubelet.text === version;
  } finally {
    await host.close();
  }
}
