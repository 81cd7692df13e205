/**
 * `fleet up`: init the inventory's first control-plane host (a re-run finds
 * it done and changes nothing there), join the other control-plane hosts to
 * it one at a time, then join every node with init's token and the cluster
 * CA's pin, as `fleet join` does.
 *
 * With more than one control-plane host, the first is started HA-capable
 * (`init --control-plane-endpoint --upload-certs`) and the others join with
 * `join --control-plane --certificate-key`. They join serially: each k3s
 * server that joins becomes an embedded-etcd member, and etcd adds members
 * one at a time; a member added before the previous one has started raises
 * the quorum beyond the members that run (two of two with one running), and
 * etcd refuses or the cluster stalls. A control plane that fails to join stops
 * the run before any node starts: nodes would otherwise join a cluster whose
 * membership is unhealthy. Control-plane joins and the node rollout are one
 * run (`up`), so `--resume` continues both and skips what finished.
 *
 * The same holds for kubeadm (the packages say which distribution; see
 * `runDistribution`): the upload is kubeadm's kubeadm-certs, whose 2-hour
 * life is renewed by the init that every run (a resumed one too) starts
 * with, so a control plane that joins hours after the first run still finds
 * the certificates under the kept key.
 */
import { parseInitRequest } from '../cluster/init-request.js';
import { parseDiscoveryRequest } from '../trust/discovery.js';
import { runInit, type InitResult } from '../cluster/init.js';
import { prepareNode } from '../cluster/prepare.js';
import { EdgeadmError, ValidationError } from '../errors.js';
import { closeSharedJumps } from '../hosts/connect.js';
import type { SshConnection } from '../hosts/ssh-connection.js';
import { fleetCertificateKey, keepFleetCertificateKey } from './fleet-certificate-key.js';
import { fleetJoin, fleetPackageTrust, type FleetJoinOptions, type FleetJoinResult } from './fleet-join.js';
import { FleetPackages, runDistribution } from './fleet-packages.js';
import type { FleetStage } from './fleet-run.js';
import { fleetHostConnectOptions } from './host-connect.js';
import { locatedInventoryError } from './inventory/inventory-error.js';
import type { FleetHost, FleetInventory } from './inventory/types.js';

/** The control-plane hosts of an inventory, as `fleet up` brings them up. */
export interface FleetControlPlanes {
  /** The host that is inited (the first control-plane host of the inventory). */
  first: FleetHost;
  /** The hosts that join it as control planes, one at a time, in inventory order. */
  joining: FleetHost[];
  /** The control planes' shared address (`host` or `host:port`), when the inventory sets one. */
  endpoint?: string;
}

/** Options of {@link fleetUp}. */
export interface FleetUpOptions extends Omit<FleetJoinOptions, 'hosts' | 'discovery' | 'isDryRun' | 'certificateKey'> {
  /** How long the nodes' discovery keeps trying (ms). */
  discoveryTimeoutMs: number;
  controlPlanes: FleetControlPlanes;
  /** The nodes (after `--limit`). */
  nodes: FleetHost[];
  /** Where to write the admin kubeconfig, if anywhere. */
  kubeconfigOut?: string;
  /** Told the join token and the certificate key as soon as they are known, so that they are redacted everywhere. */
  addSecret: (secret: string) => void;
  /** Each line of the first control plane's init workflow. */
  onControlPlaneLine?: (line: string) => void;
}

/** The inited control plane in the report. */
export interface FleetUpControlPlane {
  host: string;
  role: 'control-plane';
  isChanged: boolean;
  server: string;
  /** Where nodes and joining control planes reach the cluster (`host:port`). */
  endpoint: string;
}

/** The `fleet up` result: the inited control plane, then the run's joining control planes and nodes. */
export interface FleetUpResult extends FleetJoinResult {
  controlPlane: FleetUpControlPlane;
}

/** The token in init's join command (`<id>.<secret>`; a placeholder when init could not read it). */
const JOIN_COMMAND_TOKEN = /--token ([a-z0-9]{6}\.[a-z0-9]{16})(?:\s|$)/;
/** The address in init's join command: the control-plane endpoint, or the first control plane's. */
const JOIN_COMMAND_ADDRESS = /^edgeadm join (\S+) /;

/**
 * The control-plane hosts of an inventory for `fleet up`.
 *
 * @throws {ValidationError} `E_FLEET_CONTROL_PLANE` without one;
 * `E_INVENTORY` (file, line, field) for several without an endpoint.
 */
export function controlPlanesOf(
  inventory: Pick<FleetInventory, 'hosts' | 'controlPlaneEndpoint' | 'controlPlaneEndpointLocation'>,
): FleetControlPlanes {
  const [first, ...joining] = inventory.hosts.filter((host) => host.role === 'control-plane');
  if (first === undefined) {
    throw new ValidationError('fleet up needs a control-plane host in the inventory', {
      code: 'E_FLEET_CONTROL_PLANE',
      hints: ['List it under controlPlane.hosts (edgeadm inventory) or in a control_plane group (Ansible).'],
    });
  }
  // No default to the first host's address: the endpoint goes into every
  // server certificate and into cluster-info, through which every node
  // registers, so a silent default would tie the cluster to one host.
  if (joining.length > 0 && inventory.controlPlaneEndpoint === undefined) {
    const names = [first, ...joining].map((host) => host.name).join(', ');
    throw locatedInventoryError(
      inventory.controlPlaneEndpointLocation,
      `${joining.length + 1} control-plane hosts (${names}) need a control-plane endpoint, the one address nodes and joining control planes reach them at`,
      [
        'Set it to a load balancer or DNS name in front of every control plane (TCP 6443): controlPlane.endpoint in an edgeadm inventory, control_plane_endpoint in an Ansible one.',
        `To use ${first.name}'s address (${first.address}), write it there: nodes then register through that one host, and none can join while it is down.`,
      ],
    );
  }
  return {
    first,
    joining,
    ...(inventory.controlPlaneEndpoint === undefined ? {} : { endpoint: inventory.controlPlaneEndpoint }),
  };
}

/** Brings the fleet up. */
export async function fleetUp(options: FleetUpOptions): Promise<FleetUpResult> {
  // One verification per package and one connection per bastion, for the control planes and the nodes alike.
  const packages = new FleetPackages(options.edgeadmHome, fleetPackageTrust(options));
  const sharedJumps = new Map<string, SshConnection>();
  try {
    return await upWith(options, packages, sharedJumps);
  } finally {
    await closeSharedJumps(sharedJumps);
  }
}

async function upWith(
  options: FleetUpOptions,
  packages: FleetPackages,
  sharedJumps: Map<string, SshConnection>,
): Promise<FleetUpResult> {
  const { first, joining } = options.controlPlanes;
  const runHosts = [...joining, ...options.nodes];
  // Every package is verified before any host is reached, and says the
  // distribution: the first control plane is inited with the one every
  // joining host gets, so none can be set up with the other's files.
  const distribution = runDistribution(
    await packages.forHosts([first, ...runHosts], options.installPackage),
    options.distribution,
  );
  const { init, certificateKey } = await initFirst({ ...options, distribution }, packages, sharedJumps);
  // init keeps one join token and reuses it on a re-run, so that hosts that
  // already joined see the same configuration and stay unchanged; the join
  // command is where init reports it, and the address to join.
  const token = JOIN_COMMAND_TOKEN.exec(init.joinCommand ?? '')?.[1];
  const endpoint = JOIN_COMMAND_ADDRESS.exec(init.joinCommand ?? '')?.[1];
  if (init.server === undefined || init.caCertHash === undefined || token === undefined || endpoint === undefined) {
    throw new EdgeadmError(`init on ${first.name} did not report the API server, the CA pin and a join token`, {
      code: 'E_FLEET_INIT',
      hints: ['Create a token on the control plane ("edgeadm token create") and use "edgeadm fleet join".'],
    });
  }
  options.addSecret(token);
  const joined = await fleetJoin({
    ...options,
    distribution,
    command: 'up',
    alsoResumes: ['join'],
    hosts: runHosts,
    isDryRun: false,
    // What init reported, parsed as the nodes' discovery: the same checks as a join's flags.
    discovery: parseDiscoveryRequest({
      endpoint,
      token,
      caCertHashes: [init.caCertHash],
      timeoutMs: options.discoveryTimeoutMs,
    }),
    ...(certificateKey === undefined ? {} : { certificateKey }),
    stages: upStages(options.rollout),
    // Wave 1 was the init of the first control plane (planFleet counts it so).
    firstWave: 2,
    packages,
    sharedJumps,
  });
  return {
    ...joined,
    controlPlane: { host: first.name, role: 'control-plane', isChanged: init.isChanged, server: init.server, endpoint },
  };
}

/** Inits the first control plane: HA-capable, with the credential uploaded, when others join it. */
async function initFirst(
  options: FleetUpOptions & { distribution: string },
  packages: FleetPackages,
  sharedJumps: Map<string, SshConnection>,
): Promise<{ init: InitResult; certificateKey?: string }> {
  const { first, joining, endpoint } = options.controlPlanes;
  const installPackage = first.packagePath ?? options.installPackage;
  // Parsed before the host is reached; the inventory's labels were checked when it was loaded.
  const parsed = {
    ...parseInitRequest({
      flags: {
        distribution: options.distribution,
        'install-pkg-path': installPackage,
        'enable-edge': first.isEdge,
        'control-plane-endpoint': endpoint,
        'kubeconfig-out': options.kubeconfigOut,
        'skip-kubeconfig': true,
        'ignore-preflight-errors': options.ignorePreflightErrors,
        'trusted-key': options.trustedKeyFiles,
      },
    }),
    nodeLabels: first.labels,
  };
  const prepared = await prepareNode({
    connect: fleetHostConnectOptions(first, { ...options.connect, logger: options.logger }, sharedJumps),
    isDryRun: false,
    distribution: parsed.distribution,
    installPackage: parsed.installPackage,
    resolvedPackage: await packages.resolve(parsed.installPackage),
    requestedServiceManager: options.requestedServiceManager,
    logger: options.logger,
  });
  try {
    // The key is the host's (kept from an earlier run) or new: made here, never typed by anyone.
    const key = joining.length > 0 ? await fleetCertificateKey(prepared.host) : undefined;
    if (key !== undefined) options.addSecret(key.key);
    const request = key === undefined ? parsed : { ...parsed, isUploadCerts: true, certificateKey: key.key };
    const init = await runInit({
      request,
      node: prepared,
      logger: options.logger,
      onLine: (line) => {
        options.logger.info(line);
        options.onControlPlaneLine?.(line);
      },
      onEvent: (event) => options.onWorkflowEvent?.({ ...event, host: first.name }),
    });
    // Kept only once init has uploaded with it; a failed init leaves nothing of it behind.
    if (key?.isNew) await keepFleetCertificateKey(prepared.host, prepared.state, key.key);
    return { init, ...(key === undefined ? {} : { certificateKey: key.key }) };
  } finally {
    await prepared.host.close();
  }
}

/**
 * The run's stages: the joining control planes one at a time, any failure
 * stopping the run; then the nodes with the rollout flags (waves, canary,
 * concurrency, failure budget). Retries and backoff apply to both.
 */
export function upStages(rollout: FleetUpOptions['rollout']): FleetStage[] {
  const { concurrency: _c, canary: _canary, waveSize: _w, maxFailures: _m, ...common } = rollout;
  return [
    {
      includes: (host) => host.role === 'control-plane',
      rollout: {
        ...common,
        concurrency: 1,
        // A wave each, as fleet plan shows them: they join one at a time.
        waveSize: { count: 1 },
        maxFailures: { count: 0 },
        budgetStop: {
          reason: 'control-plane-failed',
          message: 'not started: an earlier control plane did not join (control planes join one at a time)',
        },
      },
      blocksLaterStages: {
        reason: 'control-plane-failed',
        message: (failed) =>
          `not started: control plane ${failed.join(', ')} did not join, and a node would join an unhealthy cluster; fix it and --resume`,
      },
    },
    { includes: (host) => host.role !== 'control-plane', rollout },
  ];
}
