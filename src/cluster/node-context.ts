/**
 * What the phases shared by init and join (preflight, package, service
 * start) need: the host, the distribution, the service manager, the install
 * state, the verified package, and a way to tell the operator what happens.
 * Each workflow's data interface (InitData, JoinData) extends it.
 */
import type { HostFacts } from '../hosts/facts.js';
import type { Host } from '../hosts/host.js';
import type { Logger } from '../log/run-log.js';
import type { ResolvedPackage } from '../packages/source.js';
import type { Distribution, NodeSetup } from './distributions/distribution.js';
import type { ServiceManager } from '../hosts/service-manager.js';
import type { StateRecorder } from './state.js';

/** The role a workflow gives the host. */
export type ClusterRole = 'control-plane' | 'worker';

/** The data every node workflow carries. */
export interface NodeData {
  /** The host acted on; a DryRunHost (reading from the real one) under --dry-run. */
  host: Host;
  isDryRun: boolean;
  role: ClusterRole;
  /** The host joins an existing cluster (join), rather than starting one (init). */
  isJoining?: boolean;
  distribution: Distribution;
  serviceManager: ServiceManager;
  state: StateRecorder;
  /** The install package, verified on this machine before anything reaches the host. */
  package: ResolvedPackage;
  /** Preflight check ids to ignore (`all` ignores every one). */
  ignorePreflightErrors: string[];
  /** Filled in by preflight. */
  facts?: HostFacts;
  logger: Logger;
  /** A line for the operator, prefixed with its phase (`[package] uploaded …`). */
  say(line: string): void;
}

/** How the workflow sets the host up: init starts the cluster, join joins it (also as another control plane). */
export function setupOf(ctx: Pick<NodeData, 'isJoining'>): NodeSetup {
  return ctx.isJoining ? 'join' : 'init';
}
