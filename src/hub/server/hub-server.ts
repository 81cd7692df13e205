/**
 * `hub serve`: one TLS port for everything. A connection that asks for the
 * tunnel protocol by ALPN becomes a tunnel (the agent authenticated by its
 * client certificate); every other connection is HTTPS for the operator
 * API, discovery, registration, health, metrics and the kube proxy.
 *
 * A short constructor that wires the hub's parts, each with one job:
 * - the store and the replicas' coordination (injected; SQLite and a single
 *   replica by default);
 * - the tunnel registry (tunnel-registry.ts): the tunnels this replica
 *   holds, their claims, the silence sweep;
 * - the HTTPS front (https-front.ts): the server, the admission gate, the
 *   socket deadlines, the session-ticket key;
 * - the controllers that run on one replica at a time
 *   (run-once-controllers.ts), started and stopped by the `controllers` lead;
 * - the links to the other replicas (peer-link.ts): operator requests for a
 *   cluster whose tunnel another replica holds are forwarded to it;
 * - rollouts across replicas (peer-rollouts.ts, fleet-connections.ts): the
 *   leader's controller sees every connected cluster, hands copies to the
 *   replica holding each tunnel, and takes the reports the others forward.
 *
 * This file keeps first-start setup (CA, admin credential, `admin.yaml`),
 * the reaction to changes other replicas made, and shutdown.
 */
import { mkdirSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { EdgeadmError } from '../../errors.js';
import type { Logger } from '../../log/run-log.js';
import type { OpenedHubStore, ReplicaInfo, StoreChange } from '../store/coordination.js';
import type { HubContext } from '../api/hub-context.js';
import { localHubIdentity, type HubIdentity } from '../identity/hub-identity.js';
import type { HubPki } from '../identity/hub-pki.js';
import { startHttpsFront, type HttpsFront } from '../front/https-front.js';
import { newReplicaId } from '../store/local-coordination.js';
import { HubMetrics } from '../metrics/hub-metrics.js';
import { issueReplicaCredentials } from '../replicas/peer-link.js';
import { RunOnceControllers } from '../rollouts/run-once-controllers.js';
import { DEFAULT_HUB_DEADLINES, type HubDeadlines } from '../front/socket-deadlines.js';
import { openHubStore, type EtcdStoreOptions } from './open-store.js';
import { TunnelRegistry } from '../replicas/tunnel-registry.js';
import { HubStopping } from './hub-stopping.js';
import { wireRollouts } from './rollout-wiring.js';
import type { RebalanceSettings } from '../replicas/rebalancer.js';
import { wireHealth } from '../health/health-wiring.js';
import { ClusterListCache } from '../store/cluster-list-cache.js';
import { handleRequest, handleUpgrade, type ServingParts } from './routes.js';
import { webClusterChanged } from '../web/web-state.js';

export { HUB_STORE_FILE } from './open-store.js';
/** The admin's hub config under the data directory. */
export const ADMIN_CONFIG_FILE = 'admin.yaml';

/**
 * This replica, as the store opener is told of it. Its URLs are empty then:
 * the port is listened on only once the store gave the hub its identity
 * (the CA it serves under), and they are set on `coordination.self` before
 * `coordination.join()`.
 */
export type ReplicaSelf = Omit<ReplicaInfo, 'startedAt'> & { startedAt: string };

/**
 * Opens the store and the coordination for this replica. `hub serve --store
 * etcd` passes one that opens etcd; without one the hub opens SQLite under
 * its data directory, as its only replica.
 */
export type HubStoreOpener = (self: ReplicaSelf) => Promise<OpenedHubStore & { identity?: HubIdentity }>;

/** Options of {@link startHub}. */
export interface HubServerOptions {
  /** `host:port` to listen on (`0.0.0.0:9443`, `[::]:9443`, `127.0.0.1:0`). */
  listen: string;
  dataDir: string;
  /** Host the hub is reached at, written into configs and the discovery document. Defaults to the listen host. */
  advertiseAddress?: string | undefined;
  /** A CA to adopt on first start. */
  caCertFile?: string | undefined;
  caKeyFile?: string | undefined;
  /** Most TLS handshakes in progress at once; `MAX_PENDING_HANDSHAKES` (limits.ts) by default. */
  maxPendingHandshakes?: number;
  /** Most connections waiting for a handshake place; `MAX_QUEUED_HANDSHAKES` (limits.ts) by default. */
  maxQueuedHandshakes?: number;
  /** Socket deadlines other than the defaults of limits.ts (tests make them short). */
  deadlines?: Partial<HubDeadlines>;
  /** The clock expiry decisions read; the system clock by default (tests set the time instead of sleeping). */
  clock?: () => Date;
  /** Keep the hub's state in etcd (several replicas) instead of SQLite under the data directory. */
  etcd?: EtcdStoreOptions | undefined;
  /**
   * The store and coordination; by default `openHubStore` (open-store.ts):
   * etcd when `etcd` is given, else SQLite under `dataDir` and a single replica.
   * An opener that returns no identity keeps the CA and keys under `dataDir`.
   */
  openStore?: HubStoreOpener;
  /** This replica's id; random by default. */
  replicaId?: string;
  /** How the agents are spread over the replicas again; the hub's limits by default (tests make them small). */
  rebalance?: RebalanceSettings;
  logger: Logger;
}

/** A running hub. */
export interface RunningHub {
  /** `https://host:port` as advertised. */
  url: string;
  /** The actual listening port. */
  port: number;
  caPin: string;
  adminConfigPath: string;
  /** Whether this start created the CA and the admin credential. */
  isFirstStart: boolean;
  /** This replica's id. */
  replicaId: string;
  /** Graceful shutdown: stop accepting, drain tunnels and requests, close the store. */
  close(): Promise<void>;
  /**
   * Stops as a killed process would, as far as one process allows: every
   * socket is destroyed at once, nothing is drained, no claim or lead is
   * withdrawn (they go when the replica's lease runs out). The controllers
   * are stopped so that nothing of this replica keeps acting. For tests of a
   * replica's death.
   */
  crash(): Promise<void>;
}
/** Splits `host:port` / `[v6]:port`. */
export function parseListenAddress(listen: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(listen);
  const port = Number(match?.[3]);
  if (!match || port > 65_535) {
    throw new EdgeadmError(`invalid --listen ${JSON.stringify(listen)}: expected host:port`, {
      code: 'E_HUB_LISTEN_INVALID',
      exitCode: 3,
      hints: ['For example --listen 0.0.0.0:9443 or --listen [::]:9443.'],
    });
  }
  return { host: match[1] ?? (match[2] || '0.0.0.0'), port };
}

function urlHost(host: string): string {
  return isIP(host) === 6 ? `[${host}]` : host;
}

/** `openHubStore` with the hub's options: etcd when asked for, else SQLite under the data directory. */
function defaultOpener(options: HubServerOptions, logger: Logger): HubStoreOpener {
  return (self) =>
    openHubStore({
      dataDir: options.dataDir,
      replica: self,
      ...(options.etcd === undefined ? {} : { etcd: options.etcd }),
      ...(options.caCertFile === undefined ? {} : { caCertFile: options.caCertFile }),
      ...(options.caKeyFile === undefined ? {} : { caKeyFile: options.caKeyFile }),
      onWarning: (message) => logger.warn(message),
    });
}

/**
 * Opens the store and coordination for replica `replicaId`, and the hub's
 * identity and PKI: the store's own (etcd) or files under the data directory.
 */
async function openReplicaStore(
  options: HubServerOptions,
  replicaId: string,
  names: string[],
): Promise<OpenedHubStore & { identity: HubIdentity; pki: HubPki }> {
  const opener = options.openStore ?? defaultOpener(options, options.logger);
  const opened = await opener({ id: replicaId, advertiseUrl: '', peerUrl: '', startedAt: new Date().toISOString() });
  const { store, coordination } = opened;
  try {
    // The coordination's id is the replica certificate's CN: the two must agree.
    if (coordination.self.id !== replicaId) {
      throw new Error(`the store opener named this replica ${coordination.self.id}, not ${replicaId}`);
    }
    const identity =
      opened.identity ??
      localHubIdentity({
        dataDir: options.dataDir,
        store,
        ...(options.caCertFile === undefined ? {} : { caCertFile: options.caCertFile }),
        ...(options.caKeyFile === undefined ? {} : { caKeyFile: options.caKeyFile }),
      });
    return { store, coordination, identity, pki: await identity.ensurePki(names) };
  } catch (error) {
    await coordination.close().catch(() => undefined);
    await store.close().catch(() => undefined);
    throw error;
  }
}

/** The registry's deadlines of a tunnel: to be accepted, and of silence once accepted. */
function tunnelLiveness(deadlines: HubDeadlines): { acceptTimeoutMs: number; silenceMs: number; sweepMs: number } {
  return {
    acceptTimeoutMs: deadlines.tunnelAcceptMs,
    silenceMs: deadlines.tunnelSilenceMs,
    sweepMs: deadlines.tunnelSweepMs,
  };
}

/** Starts the hub. */
export async function startHub(options: HubServerOptions): Promise<RunningHub> {
  const { logger } = options;
  const { host, port } = parseListenAddress(options.listen);
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  const adminConfigPath = join(options.dataDir, ADMIN_CONFIG_FILE);
  const advertiseHost = options.advertiseAddress ?? (host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host);
  const replicaId = options.replicaId ?? newReplicaId();
  // The store first: it holds the hub's identity (with etcd, the CA every replica serves under).
  const { store, coordination, identity, pki } = await openReplicaStore(options, replicaId, [advertiseHost, host]);
  const deadlines: HubDeadlines = { ...DEFAULT_HUB_DEADLINES, ...options.deadlines };
  const metrics = new HubMetrics();

  // The port is listened on first (its number is part of this replica's address); connections
  // that arrive before the store is open wait for it.
  const serving = Promise.withResolvers<ServingParts>();
  serving.promise.catch(() => undefined);
  // A port already taken: the store opened above is closed again.
  const front: HttpsFront = await startHttpsFront({
    host,
    port,
    listen: options.listen,
    pki,
    identity,
    deadlines,
    handshakes: options,
    metrics,
    logger,
    onTunnel: (socket) => {
      serving.promise.then(({ tunnels }) => tunnels.accept(socket)).catch(() => socket.destroy());
    },
    onRequest: (req, res) => {
      serving.promise.then((parts) => handleRequest(parts, req, res)).catch(() => res.destroy());
    },
    onUpgrade: (req, socket, head) => {
      serving.promise.then(({ context }) => handleUpgrade(context, req, socket, head)).catch(() => socket.destroy());
    },
  }).catch(async (error: unknown) => {
    await coordination.close().catch(() => undefined);
    await store.close().catch(() => undefined);
    throw error;
  });
  const advertiseUrl = `https://${urlHost(advertiseHost)}:${front.port}`;
  // Known now that the port listens; other replicas read them once this replica joins.
  Object.assign(coordination.self, { advertiseUrl, peerUrl: advertiseUrl });
  const tunnels = new TunnelRegistry({ store, coordination, metrics, logger, ...tunnelLiveness(deadlines) });
  const peerCredentials = await issueReplicaCredentials(pki, replicaId);
  const context: HubContext = {
    store,
    pki,
    metrics,
    logger,
    advertiseUrl,
    tunnels: tunnels.tunnels,
    closeTunnel: (cluster) => tunnels.close(cluster),
    now: options.clock ?? (() => new Date()),
    coordination,
    peerCredentials,
    clusterList: new ClusterListCache({ store }),
  };

  const rollouts = wireRollouts(context, tunnels, coordination, peerCredentials, options.rebalance);
  context.health = wireHealth(context, tunnels);
  const controllers = new RunOnceControllers({
    store,
    coordination,
    delivery: rollouts.fleetDelivery,
    context,
    connected: () => rollouts.fleet.connected(),
    logger,
  });
  let stopWatch = (): void => {};
  let isFirstStart: boolean;
  try {
    await coordination.join();
    // What other replicas (or this one) changed: a tunnel held here for a deleted cluster or a
    // revoked certificate is closed.
    stopWatch = coordination.watch((change) => onStoreChange(change, context, tunnels));
    // Every replica's tunnels before the controllers: the leader hands copies to clusters wherever they are.
    await rollouts.start();
    await controllers.start();
    tunnels.startSweep();
    isFirstStart = await identity.ensureAdmin({
      path: adminConfigPath,
      server: context.advertiseUrl,
      caPem: pki.ca.certPem,
    });
  } catch (error) {
    stopWatch();
    rollouts.stop();
    front.destroyAll();
    await controllers.stop().catch(() => undefined);
    await coordination.close().catch(() => undefined);
    await store.close().catch(() => undefined);
    serving.reject(error);
    throw error;
  }
  serving.resolve({ context, tunnels, rolloutDelivery: rollouts.delivery });
  logger.info(`hub serving on ${context.advertiseUrl}`);

  const stopping = new HubStopping({
    logger,
    stopWatch,
    tunnels,
    front,
    controllers,
    reportFollowers: rollouts.followers,
    stopRollouts: rollouts.stop,
    coordination,
    store,
  });
  return {
    url: context.advertiseUrl,
    port: front.port,
    caPin: pki.caPin,
    adminConfigPath,
    isFirstStart,
    replicaId,
    close: () => stopping.close(),
    crash: () => stopping.crash(),
  };
}

/** Acts on a change heard from the store (made by this replica or another). */
function onStoreChange(change: StoreChange, context: HubContext, tunnels: TunnelRegistry): void {
  switch (change.kind) {
    case 'cluster-deleted':
      context.clusterList?.invalidate();
      if (tunnels.tunnels.has(change.cluster)) {
        context.logger.info(`cluster ${change.cluster} was deleted; closing its tunnel`);
        tunnels.close(change.cluster);
      }
      context.rollouts?.clustersChanged();
      return;
    case 'certificate-revoked':
      tunnels.closeBySerial(change.serial);
      return;
    case 'clusters-changed':
      context.rollouts?.clustersChanged();
      webClusterChanged(context, change.cluster);
      return;
    default:
      // Users and tokens are read from the store at every request; rollouts live in the leader's controller.
      return;
  }
}
