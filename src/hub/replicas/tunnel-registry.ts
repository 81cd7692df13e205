/**
 * The tunnels this replica holds, by cluster: accepting a tunnel socket
 * (the agent's certificate checked at every connection), the newest
 * connection of a cluster replacing the older one, the claim of each tunnel
 * in the replicas' coordination (written at open, deleted at close, nothing
 * in between), and one sweep that closes tunnels whose agent went silent.
 *
 * Liveness stays in memory: the store sees a cluster's `lastSeen` when its
 * tunnel opens and when it closes, never per heartbeat (the operator API
 * shows a held tunnel's cluster as seen now).
 */
import type { PeerCertificate, TLSSocket } from 'node:tls';
import type { EdgeadmError } from '../../errors.js';
import type { Logger } from '../../log/run-log.js';
import { acceptTunnel, type HubTunnel, type TunnelVerdict } from '../../tunnel/hub-tunnel.js';
import { isWithinValidity } from '../identity/client-certificate.js';
import type { ReplicaCoordination } from '../store/coordination.js';
import type { HubMetrics } from '../metrics/hub-metrics.js';
import type { HubStore } from '../store/store.js';

/** What other parts of the hub do when a tunnel opens or closes. */
export interface TunnelListener {
  opened(tunnel: HubTunnel): void;
  closed(cluster: string): void;
}

/** Options of {@link TunnelRegistry}. */
export interface TunnelRegistryOptions {
  store: HubStore;
  coordination: ReplicaCoordination;
  metrics: HubMetrics;
  logger: Logger;
  /** How long an agent has to be accepted. */
  acceptTimeoutMs: number;
  /** How long an agent may send nothing before its tunnel is closed. */
  silenceMs: number;
  /** How often the silence sweep runs. */
  sweepMs: number;
}

/**
 * Policy for a tunnel's client certificate: within its validity period, not
 * revoked, names a registered cluster. Checked at every connection, resumed
 * TLS sessions included: a resumption carries the certificate and the chain
 * verdict of the session's first handshake, so revocation and expiry since
 * then are only seen here.
 */
export async function tunnelVerdict(store: HubStore, certificate: PeerCertificate): Promise<TunnelVerdict> {
  const cluster = String(certificate.subject?.CN ?? '');
  const serial = String(certificate.serialNumber ?? '').toLowerCase();
  if (!isWithinValidity(certificate)) {
    return { refusal: 'this certificate is expired or not yet valid' };
  }
  if (await store.isCertificateRevoked(serial)) return { refusal: 'this certificate has been revoked' };
  if ((await store.getCluster(cluster)) === undefined) {
    return { refusal: `no cluster named ${JSON.stringify(cluster)} is registered` };
  }
  return { cluster };
}

/** The tunnels held by this replica. */
export class TunnelRegistry {
  /** Open tunnels by cluster name (read by the kube proxy, the rollout delivery and the operator API). */
  readonly tunnels = new Map<string, HubTunnel>();
  readonly #serials = new Map<HubTunnel, string>();
  readonly #listeners: TunnelListener[] = [];
  readonly #options: TunnelRegistryOptions;
  #sweep: NodeJS.Timeout | undefined;
  #sweptAt = Date.now();

  constructor(options: TunnelRegistryOptions) {
    this.#options = options;
  }

  /** Adds a listener told of every tunnel opened or closed from now on. */
  listen(listener: TunnelListener): void {
    this.#listeners.push(listener);
  }

  /** Starts the silence sweep: one timer over all tunnels instead of one per tunnel. */
  startSweep(): void {
    const { silenceMs, sweepMs, logger } = this.#options;
    this.#sweep = setInterval(() => {
      const now = Date.now();
      // A sweep that ran late says the hub itself was too busy to read its sockets: judge no silence then.
      const isOnTime = now - this.#sweptAt < 2 * sweepMs;
      this.#sweptAt = now;
      if (!isOnTime) return;
      for (const tunnel of this.tunnels.values()) {
        if (tunnel.isSilent(now, silenceMs)) {
          logger.warn(`tunnel of cluster ${tunnel.cluster} is dead (nothing heard from its agent); closing it`);
          tunnel.destroy();
        }
      }
    }, sweepMs);
    this.#sweep.unref();
  }

  stopSweep(): void {
    clearInterval(this.#sweep);
  }

  /** Takes over a socket that asked for the tunnel protocol; resolves when its tunnel is gone. */
  async accept(socket: TLSSocket): Promise<void> {
    const { store, metrics, logger, coordination } = this.#options;
    let serial = '';
    let tunnel: HubTunnel;
    try {
      tunnel = await acceptTunnel({
        socket,
        authorize: (cert) => {
          serial = String(cert.serialNumber ?? '').toLowerCase();
          return tunnelVerdict(store, cert);
        },
        logger,
        acceptTimeoutMs: this.#options.acceptTimeoutMs,
      });
    } catch (error) {
      metrics.tunnelsRefused.inc();
      logger.warn(`${(error as EdgeadmError).code ?? 'E_TUNNEL'}: ${(error as Error).message}`);
      return;
    }
    const { cluster } = tunnel;
    const previous = this.tunnels.get(cluster);
    this.tunnels.set(cluster, tunnel);
    this.#serials.set(tunnel, serial);
    metrics.connectedAgents.set(this.tunnels.size);
    if (previous) {
      logger.info(`cluster ${cluster} reconnected; closing its previous tunnel`);
      previous.destroy();
    }
    logger.info(`cluster ${cluster} connected (${tunnel.hello.kubernetesVersion ?? 'version unknown'})`);
    await coordination
      .claimTunnel(cluster)
      .catch((error: Error) => logger.warn(`cannot record the tunnel of cluster ${cluster}: ${error.message}`));
    for (const listener of this.#listeners) listener.opened(tunnel);
    await this.#saveSeen(tunnel);
    // A draining tunnel (the agent's graceful stop) takes no new stream: the cluster is offline from now,
    // not when its last open stream ends up to TUNNEL_DRAIN_TIMEOUT_MS later.
    await tunnel.draining;
    if (this.tunnels.get(cluster) === tunnel) {
      this.tunnels.delete(cluster);
      metrics.connectedAgents.set(this.tunnels.size);
      await coordination
        .releaseTunnel(cluster)
        .catch((error: Error) => logger.debug(`cannot release the tunnel of cluster ${cluster}: ${error.message}`));
      for (const listener of this.#listeners) listener.closed(cluster);
      logger.info(`cluster ${cluster} disconnected`);
      await this.#saveSeen(tunnel);
    }
    await tunnel.closed;
    this.#serials.delete(tunnel);
    metrics.connectedAgents.set(this.tunnels.size);
  }

  /** Closes a cluster's tunnel at once, if this replica holds it (the cluster was deleted). */
  close(cluster: string): void {
    const tunnel = this.tunnels.get(cluster);
    if (tunnel === undefined) return;
    this.tunnels.delete(cluster);
    void this.#options.coordination.releaseTunnel(cluster).catch(() => undefined);
    for (const listener of this.#listeners) listener.closed(cluster);
    tunnel.destroy();
  }

  /** Closes every tunnel whose agent certificate has `serial` (it was revoked). */
  closeBySerial(serial: string): void {
    for (const [tunnel, held] of this.#serials) {
      if (held === serial && this.tunnels.get(tunnel.cluster) === tunnel) {
        this.#options.logger.info(`certificate of cluster ${tunnel.cluster} revoked; closing its tunnel`);
        this.close(tunnel.cluster);
      }
    }
  }

  /** Lets every tunnel finish its open streams (bounded), at shutdown. */
  async drainAll(): Promise<void> {
    await Promise.all([...this.tunnels.values()].map((tunnel) => tunnel.drain()));
  }

  /** Closes every tunnel at once, draining nothing (what a crash does). */
  destroyAll(): void {
    for (const tunnel of this.tunnels.values()) tunnel.destroy();
  }

  async #saveSeen(tunnel: HubTunnel): Promise<void> {
    await this.#options.store
      .updateClusterStatus(tunnel.cluster, {
        lastSeen: new Date().toISOString(),
        ...(tunnel.hello.kubernetesVersion === undefined ? {} : { kubernetesVersion: tunnel.hello.kubernetesVersion }),
        ...(tunnel.hello.nodeCount === undefined ? {} : { nodeCount: tunnel.hello.nodeCount }),
      })
      .catch(() => undefined);
  }
}
