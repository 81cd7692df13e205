/**
 * The fleet commands' requests, each parsed and checked once, before any
 * I/O (the inventory is read after, the hosts reached after that): which
 * hosts (`-i`, `--limit`, `--resume`), the rollout (waves and budget as
 * counts or percentages), and each command's own settings (join's token,
 * pins and discovery timeout; upgrade's deadlines and maintenance window;
 * the phases to skip). The workflows take them as they are and parse
 * nothing again. A leaf: it imports no fleet workflow.
 */
import { joinPhases } from '../cluster/join.js';
import { parseUpgradeNodeRequest } from '../cluster/upgrade/node-request.js';
import { ValidationError } from '../errors.js';
import { parseDiscoveryRequest, parseDiscoveryTimeout, type DiscoveryRequest } from '../trust/discovery.js';
import { validatePhasePaths } from '../workflow/runner.js';
import { parseMaintenanceWindow, type MaintenanceWindow } from './maintenance-window.js';
import { parseCountSpec, type RolloutOptions } from './rollout.js';

/** How long the nodes' discovery keeps trying when not told (join's default). */
export const DEFAULT_FLEET_DISCOVERY_TIMEOUT = '5m0s';

/** The rollout's settings: everything of a rollout but its state, task and events. */
export type RolloutSettings = Omit<RolloutOptions, 'state' | 'task' | 'onEvent' | 'signal'>;

/** What every fleet run is given. */
export interface FleetRunInput {
  inventory: string;
  limit?: string | undefined;
  resume?: string | undefined;
  concurrency: number;
  canary?: number | undefined;
  /** `N` or `P%`. */
  waveSize?: string | undefined;
  /** `N` or `P%`. */
  maxFailures?: string | undefined;
  retries: number;
}

/** Which hosts, and how the run goes over them. */
export interface FleetRunRequest {
  inventoryFile: string;
  /** `--limit`: names, groups or globs (applied once the inventory is read). */
  limit?: string;
  /** `--resume`: a run id or `last`; the run's own hosts then, not `--limit`. */
  resume?: string;
  rollout: RolloutSettings;
}

/** Parses what every fleet run is given. */
export function parseFleetRunRequest(input: FleetRunInput): FleetRunRequest {
  return {
    inventoryFile: input.inventory,
    ...(input.limit === undefined ? {} : { limit: input.limit }),
    ...(input.resume === undefined ? {} : { resume: input.resume }),
    rollout: {
      concurrency: input.concurrency,
      retries: input.retries,
      ...(input.canary === undefined ? {} : { canary: input.canary }),
      ...(input.waveSize === undefined ? {} : { waveSize: parseCountSpec(input.waveSize, '--wave-size') }),
      ...(input.maxFailures === undefined ? {} : { maxFailures: parseCountSpec(input.maxFailures, '--max-failures') }),
    },
  };
}

/** What `fleet join` is given. */
export interface FleetJoinInput extends FleetRunInput {
  endpoint: string;
  /** `<id>.<secret>`. A credential. */
  token: string;
  caCertHashes: readonly string[];
  isUnsafeSkipCaVerification: boolean;
  /** A Go duration; {@link DEFAULT_FLEET_DISCOVERY_TIMEOUT} when absent. */
  discoveryTimeout?: string | undefined;
  installPackage?: string | undefined;
  distribution?: string | undefined;
  isDryRun: boolean;
  ignorePreflightErrors: readonly string[];
  skipPhases: readonly string[];
}

/** `fleet join`, parsed. */
export interface FleetJoinRequest {
  run: FleetRunRequest;
  /** Every host's discovery: the token, the pins, the endpoint and the timeout. */
  discovery: DiscoveryRequest;
  installPackage?: string;
  distribution?: string;
  isDryRun: boolean;
  ignorePreflightErrors: string[];
  /** Phase paths of join, each known. */
  skipPhases: string[];
}

/**
 * Parses `fleet join`'s input: the discovery checks of join (token, pins,
 * timeout, endpoint), then the phases to skip, then the run.
 */
export function parseFleetJoinRequest(input: FleetJoinInput): FleetJoinRequest {
  const discovery = parseDiscoveryRequest({
    endpoint: input.endpoint,
    token: input.token,
    caCertHashes: input.caCertHashes,
    isUnsafeSkipCaVerification: input.isUnsafeSkipCaVerification,
    timeoutMs: parseDiscoveryTimeout(input.discoveryTimeout ?? DEFAULT_FLEET_DISCOVERY_TIMEOUT),
  });
  validatePhasePaths(joinPhases(), [...input.skipPhases], '--skip-phases');
  return {
    run: parseFleetRunRequest(input),
    discovery,
    ...(input.installPackage === undefined ? {} : { installPackage: input.installPackage }),
    ...(input.distribution === undefined ? {} : { distribution: input.distribution }),
    isDryRun: input.isDryRun,
    ignorePreflightErrors: [...input.ignorePreflightErrors],
    skipPhases: [...input.skipPhases],
  };
}

/** What `fleet up` is given. */
export interface FleetUpInput extends FleetRunInput {
  installPackage?: string | undefined;
  distribution?: string | undefined;
  kubeconfigOut?: string | undefined;
  ignorePreflightErrors: readonly string[];
  isDryRun: boolean;
}

/** `fleet up`, parsed. */
export interface FleetUpRequest {
  run: FleetRunRequest;
  installPackage?: string;
  distribution?: string;
  kubeconfigOut?: string;
  ignorePreflightErrors: string[];
  /** How long the nodes' discovery keeps trying (join's default). */
  discoveryTimeoutMs: number;
  isDryRun: boolean;
}

/** Parses `fleet up`'s input. */
export function parseFleetUpRequest(input: FleetUpInput): FleetUpRequest {
  return {
    run: parseFleetRunRequest(input),
    ...(input.installPackage === undefined ? {} : { installPackage: input.installPackage }),
    ...(input.distribution === undefined ? {} : { distribution: input.distribution }),
    ...(input.kubeconfigOut === undefined ? {} : { kubeconfigOut: input.kubeconfigOut }),
    ignorePreflightErrors: [...input.ignorePreflightErrors],
    discoveryTimeoutMs: parseDiscoveryTimeout(DEFAULT_FLEET_DISCOVERY_TIMEOUT),
    isDryRun: input.isDryRun,
  };
}

/** What `fleet upgrade` is given. */
export interface FleetUpgradeInput extends FleetRunInput {
  installPackage: string;
  isForced: boolean;
  /** Go durations, as `upgrade node` takes them. */
  drainTimeout?: string | undefined;
  gateTimeout?: string | undefined;
  /** The daily window (`HH:MM` UTC), or one ISO 8601 interval. */
  windowStart?: string | undefined;
  windowEnd?: string | undefined;
  window?: string | undefined;
}

/** `fleet upgrade`, parsed. */
export interface FleetUpgradeRequest {
  run: FleetRunRequest;
  /** The new package, for every host (a file or an http(s) URL). */
  installPackage: string;
  isForced: boolean;
  /** How long a node's drain may take, and each health gate before the rollback (ms). */
  deadlines: { drainTimeoutMs: number; gateTimeoutMs: number };
  /** When new hosts may start; absent: any time. */
  window?: MaintenanceWindow;
}

/** Parses `fleet upgrade`'s input: the window, the deadlines (as `upgrade node` parses them), then the run. */
export function parseFleetUpgradeRequest(input: FleetUpgradeInput): FleetUpgradeRequest {
  const window = parseMaintenanceWindow({ start: input.windowStart, end: input.windowEnd, interval: input.window });
  const node = parseUpgradeNodeRequest({
    connect: {},
    controlPlane: {},
    installPkgPath: input.installPackage,
    drainTimeout: input.drainTimeout,
    gateTimeout: input.gateTimeout,
  });
  return {
    run: parseFleetRunRequest(input),
    installPackage: node.packageSource,
    isForced: input.isForced,
    deadlines: { drainTimeoutMs: node.drainTimeoutMs, gateTimeoutMs: node.gateTimeoutMs },
    ...(window === undefined ? {} : { window }),
  };
}

/** What `fleet reset` is given. */
export interface FleetResetInput extends FleetRunInput {
  isForced: boolean;
  isDryRun: boolean;
  distribution?: string | undefined;
  skipPhases?: readonly string[] | undefined;
}

/** `fleet reset`, parsed. */
export interface FleetResetRequest {
  run: FleetRunRequest;
  isForced: boolean;
  isDryRun: boolean;
  /** k3s unless told. */
  distribution: string;
  skipPhases?: string[];
}

/**
 * Parses `fleet reset`'s input.
 *
 * @throws {ValidationError} `E_RESET_NOT_CONFIRMED` without `--force` or `--dry-run`.
 */
export function parseFleetResetRequest(input: FleetResetInput): FleetResetRequest {
  if (!input.isForced && !input.isDryRun) {
    throw new ValidationError('fleet reset removes the cluster from every host: pass --force, or --dry-run to see', {
      code: 'E_RESET_NOT_CONFIRMED',
    });
  }
  return {
    run: parseFleetRunRequest(input),
    isForced: input.isForced,
    isDryRun: input.isDryRun,
    distribution: input.distribution ?? 'k3s',
    ...(input.skipPhases === undefined ? {} : { skipPhases: [...input.skipPhases] }),
  };
}
