/**
 * What init, join and reset set up before their phases run: the install
 * package verified on this machine (nothing reaches a host before that), the
 * host connected (wrapped in a DryRunHost under --dry-run), its service
 * manager chosen, and its install state loaded.
 */
import { join } from 'node:path';
import { ValidationError } from '../errors.js';
import { connectHost, type HostConnectOptions } from '../hosts/connect.js';
import { DryRunHost } from '../hosts/dry-run-host.js';
import type { Host } from '../hosts/host.js';
import { edgeadmHome } from '../log/run-log.js';
import type { Logger } from '../log/run-log.js';
import type { ResolvedPackage } from '../packages/source.js';
import { resolveTrustedPackage } from '../packages/package-trust.js';
import type { Distribution } from './distributions/distribution.js';
import { distributionFor } from './distributions/index.js';
import { selectServiceManager, type ServiceManager, type ServiceManagerKind } from '../hosts/service-manager.js';
import { StateRecorder } from './state.js';
import type { WorkflowEventSink } from '../workflow/events.js';

/** Options of {@link prepareNode}. */
export interface PrepareNodeOptions {
  connect: HostConnectOptions;
  isDryRun: boolean;
  distribution: string;
  /** `--install-pkg-path`: a file or an http(s) URL. */
  installPackage: string | undefined;
  /**
   * The package, already resolved and verified (a fleet run verifies each
   * package once for all its hosts); `installPackage` is then not read.
   */
  resolvedPackage?: ResolvedPackage;
  /** Public key files allowed to sign the package (read here, before any host); none: its origin is not checked. */
  trustedKeyFiles?: readonly string[];
  /** Where the loud line goes when the package's origin is not checked (besides the run log). */
  onWarning?: ((line: string) => void) | undefined;
  requestedServiceManager: ServiceManagerKind | undefined;
  logger: Logger;
}

/** A host ready for a node workflow. Close `host` when done. */
export interface PreparedNode {
  host: Host;
  distribution: Distribution;
  serviceManager: ServiceManager;
  state: StateRecorder;
  package: ResolvedPackage;
}

/** Verifies the package, connects, and loads what the phases need. */
export async function prepareNode(options: PrepareNodeOptions): Promise<PreparedNode> {
  const distribution = distributionFor(options.distribution);
  if (!options.resolvedPackage && !options.installPackage) {
    throw new ValidationError('no install package: pass --install-pkg-path (a file or an http(s) URL)', {
      code: 'E_NO_PACKAGE',
      hints: ['edgeadm package build makes one from a directory with bin/k3s.'],
    });
  }
  const pkg =
    options.resolvedPackage ??
    (await resolveTrustedPackage(options.installPackage!, {
      cacheDir: join(edgeadmHome(), 'packages'),
      trustedKeyFiles: options.trustedKeyFiles,
      warn: (line) => {
        if (options.onWarning) options.onWarning(line);
        else options.logger.warn(line);
      },
    }));
  if (pkg.manifest.distribution !== distribution.name) {
    throw new ValidationError(
      `the install package ${pkg.manifest.name} is for ${pkg.manifest.distribution}, not ${distribution.name}`,
      { code: 'E_PACKAGE_DISTRIBUTION' },
    );
  }
  const real = await connectHost({ ...options.connect, logger: options.logger });
  try {
    const host = options.isDryRun ? new DryRunHost({ fallback: real }) : real;
    // Both only read the host: asked at once, they cost one round trip.
    const [facts, state] = await Promise.all([real.facts(), StateRecorder.open(host)]);
    const serviceManager = selectServiceManager({
      requested: options.requestedServiceManager,
      initSystem: facts.initSystem,
      hostName: real.name,
    });
    return { host, distribution, serviceManager, state, package: pkg };
  } catch (error) {
    await real.close();
    throw error;
  }
}

/** How a node workflow's command reaches its host and reports (what `initHost` and `joinHost` take). */
export interface NodeHostOptions {
  connect: HostConnectOptions;
  requestedServiceManager: ServiceManagerKind | undefined;
  logger: Logger;
  onLine: (line: string) => void;
  /** Warnings a person must see whatever the output mode (the package's unchecked origin); `onLine` when absent. */
  onWarning?: (line: string) => void;
  onEvent?: WorkflowEventSink;
}

/**
 * Prepares the node a request names ({@link prepareNode}), runs `workflow`
 * on it, and closes the connection whatever the workflow did.
 */
export async function withPreparedNode<R>(
  request: { run: { isDryRun: boolean }; distribution: string; installPackage: string; trustedKeyFiles: string[] },
  options: NodeHostOptions,
  workflow: (node: PreparedNode) => Promise<R>,
): Promise<R> {
  const node = await prepareNode({
    connect: options.connect,
    isDryRun: request.run.isDryRun,
    distribution: request.distribution,
    installPackage: request.installPackage,
    trustedKeyFiles: request.trustedKeyFiles,
    onWarning: options.onWarning ?? options.onLine,
    requestedServiceManager: options.requestedServiceManager,
    logger: options.logger,
  });
  try {
    return await workflow(node);
  } finally {
    await node.host.close();
  }
}
