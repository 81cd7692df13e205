/**
 * `fleet up`: init the inventory's control plane (a re-run finds it done and
 * changes nothing there), then join every node with that
 * token and the cluster CA's pin, as `fleet join` does. The node rollout is a
 * `join` run: `--resume` continues it.
 */
import { resolveInitSettings } from '../cluster/config.js';
import { runInit } from '../cluster/init.js';
import { prepareNode } from '../cluster/prepare.js';
import { EdgeadmError, ValidationError } from '../errors.js';
import { closeSharedJumps } from '../hosts/connect.js';
import type { SshConnection } from '../hosts/ssh-connection.js';
import { fleetJoin, type FleetJoinOptions, type FleetJoinResult } from './fleet-join.js';
import { FleetPackages } from './fleet-packages.js';
import { fleetHostConnectOptions } from './host-connect.js';
import type { FleetHost } from './inventory/types.js';

/** Options of {@link fleetUp}. */
export interface FleetUpOptions extends Omit<
  FleetJoinOptions,
  'hosts' | 'endpoint' | 'token' | 'caCertHashes' | 'isUnsafeSkipCaVerification' | 'isDryRun'
> {
  /** Every host of the inventory: one control-plane host, and the nodes (after `--limit`). */
  controlPlane: FleetHost;
  nodes: FleetHost[];
  /** Where to write the admin kubeconfig, if anywhere. */
  kubeconfigOut?: string;
  /** Told the join token as soon as it is known, so that it is redacted everywhere. */
  addSecret: (secret: string) => void;
  /** Each line of the control plane's init workflow. */
  onControlPlaneLine?: (line: string) => void;
}

/** The `fleet up` result. */
export interface FleetUpResult extends FleetJoinResult {
  controlPlane: { host: string; isChanged: boolean; server: string };
}

/** The token in init's join command (`<id>.<secret>`; a placeholder when init could not read it). */
const JOIN_COMMAND_TOKEN = /--token ([a-z0-9]{6}\.[a-z0-9]{16})(?:\s|$)/;

/** The one control-plane host of an inventory for `fleet up`. */
export function controlPlaneOf(hosts: FleetHost[]): FleetHost {
  const controlPlanes = hosts.filter((host) => host.role === 'control-plane');
  if (controlPlanes.length !== 1) {
    throw new ValidationError(
      `fleet up needs exactly one control-plane host in the inventory, not ${controlPlanes.length}`,
      {
        code: 'E_FLEET_CONTROL_PLANE',
        hints: ['Joining extra control-plane hosts is not built yet; list one under controlPlane (or control_plane).'],
      },
    );
  }
  return controlPlanes[0]!;
}

/** Brings the fleet up. */
export async function fleetUp(options: FleetUpOptions): Promise<FleetUpResult> {
  const { controlPlane } = options;
  const settings = resolveInitSettings({
    flags: {
      distribution: options.distribution,
      nodeLabels: controlPlane.labels,
      enableEdge: controlPlane.isEdge,
      ...((controlPlane.packagePath ?? options.installPackage)
        ? { installPackage: controlPlane.packagePath ?? options.installPackage! }
        : {}),
    },
  });
  // One verification per package and one connection per bastion, for the control plane and the nodes alike.
  const packages = new FleetPackages(options.edgeadmHome);
  const sharedJumps = new Map<string, SshConnection>();
  try {
    return await upWith(options, settings, packages, sharedJumps);
  } finally {
    await closeSharedJumps(sharedJumps);
  }
}

async function upWith(
  options: FleetUpOptions,
  settings: ReturnType<typeof resolveInitSettings>,
  packages: FleetPackages,
  sharedJumps: Map<string, SshConnection>,
): Promise<FleetUpResult> {
  const { controlPlane } = options;
  // Every package is verified before any host is reached, the nodes' too.
  await packages.forHosts(options.nodes, options.installPackage);
  const prepared = await prepareNode({
    connect: fleetHostConnectOptions(controlPlane, { ...options.connect, logger: options.logger }, sharedJumps),
    isDryRun: false,
    distribution: settings.distribution,
    installPackage: settings.installPackage,
    ...(settings.installPackage === undefined
      ? {}
      : { resolvedPackage: await packages.resolve(settings.installPackage) }),
    requestedServiceManager: options.requestedServiceManager,
    logger: options.logger,
  });
  const { distribution: _name, installPackage, ...rest } = settings;
  let init;
  try {
    init = await runInit({
      ...prepared,
      ...rest,
      isDryRun: false,
      installPackagePath: installPackage!,
      ignorePreflightErrors: options.ignorePreflightErrors,
      ...(options.kubeconfigOut === undefined ? {} : { kubeconfigOut: options.kubeconfigOut }),
      logger: options.logger,
      onLine: (line) => {
        options.logger.info(line);
        options.onControlPlaneLine?.(line);
      },
    });
  } finally {
    await prepared.host.close();
  }
  // init keeps one join token and reuses it on a re-run, so that nodes that
  // already joined see the same configuration and stay unchanged; the join
  // command is where init reports it.
  const token = JOIN_COMMAND_TOKEN.exec(init.joinCommand ?? '')?.[1];
  if (init.server === undefined || init.caCertHash === undefined || token === undefined) {
    throw new EdgeadmError(`init on ${controlPlane.name} did not report the API server, the CA pin and a join token`, {
      code: 'E_FLEET_INIT',
      hints: ['Create a token on the control plane ("edgeadm token create") and use "edgeadm fleet join".'],
    });
  }
  options.addSecret(token);
  const joined = await fleetJoin({
    ...options,
    hosts: options.nodes,
    isDryRun: false,
    token,
    endpoint: new URL(init.server).host,
    caCertHashes: [init.caCertHash],
    isUnsafeSkipCaVerification: false,
    packages,
    sharedJumps,
  });
  return {
    ...joined,
    controlPlane: { host: controlPlane.name, isChanged: init.isChanged, server: init.server },
  };
}
