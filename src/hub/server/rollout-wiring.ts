/**
 * Rollouts on this replica: delivery over the tunnels it holds (or through
 * the replica holding a tunnel, when this one leads), every replica's
 * connected clusters for the controller (and for the rebalancer, which
 * spreads the agents over the replicas), and each tunnel's report stream fed
 * to the controller when this replica runs it, or forwarded to the one that does.
 */
import type { ReplicaCoordination } from '../store/coordination.js';
import type { HubContext } from '../api/hub-context.js';
import { FleetConnections } from '../replicas/fleet-connections.js';
import { type PeerCredentials } from '../replicas/peer-link.js';
import { FleetRolloutDelivery } from '../rollouts/peer-rollouts.js';
import { ReportForwarder } from '../rollouts/report-forwarder.js';
import { TunnelRolloutDelivery } from '../rollouts/rollout-tunnel.js';
import { followReports } from '../rollouts/report-stream.js';
import type { RolloutController } from '../rollouts/rollout-controller.js';
import type { TunnelRegistry } from '../replicas/tunnel-registry.js';
import { Rebalancer, type RebalanceSettings } from '../replicas/rebalancer.js';

/** Rollouts on this replica and across replicas, as {@link wireRollouts} wires them. */
export interface RolloutWiring {
  /** Over this replica's own tunnels. */
  delivery: TunnelRolloutDelivery;
  /** What the controller uses when this replica leads: own tunnels, or the replica holding the cluster's. */
  fleetDelivery: FleetRolloutDelivery;
  /** Every cluster connected to some replica. */
  fleet: FleetConnections;
  /** Follows the other replicas' tunnels, then starts spreading the agents over the replicas (rebalancer.ts). */
  start: () => Promise<void>;
  /** Stops each open tunnel's report stream (at shutdown, before the tunnels drain). */
  followers: Set<() => void>;
  stop: () => void;
}

/**
 * Rollouts on this replica: delivery over the tunnels it holds (or through
 * the replica holding the tunnel, when this one leads), and each tunnel's
 * report stream fed to the controller when this replica runs it, or
 * forwarded to the replica that does.
 */
export function wireRollouts(
  context: HubContext,
  tunnels: TunnelRegistry,
  coordination: ReplicaCoordination,
  credentials: PeerCredentials,
  rebalance?: RebalanceSettings,
): RolloutWiring {
  const { logger } = context;
  const delivery = new TunnelRolloutDelivery({ tunnels: tunnels.tunnels, logger });
  const fleet = new FleetConnections({ coordination, logger });
  const rebalancer = new Rebalancer({
    coordination,
    tunnels: tunnels.tunnels,
    fleet,
    metrics: context.metrics,
    logger,
    ...(rebalance === undefined ? {} : { settings: rebalance }),
  });
  const fleetDelivery = new FleetRolloutDelivery({
    local: delivery,
    tunnels: tunnels.tunnels,
    coordination,
    credentials,
    logger,
  });
  const forwarder = new ReportForwarder({ coordination, credentials, logger });
  const followers = new Set<() => void>();
  const reportSink = {
    report: (cluster: string, message: Parameters<RolloutController['report']>[1]) =>
      context.rollouts !== undefined ? context.rollouts.report(cluster, message) : forwarder.forward(cluster, message),
    unsupported: (cluster: string) => delivery.markUnsupported(cluster),
  };
  fleet.listen({
    connected: (cluster) => context.rollouts?.clusterConnected(cluster),
    disconnected: (cluster) => context.rollouts?.clusterDisconnected(cluster),
  });
  tunnels.listen({
    opened: (tunnel) => {
      // Its report stream first, then what it is owed (its current copies within the controller's next pass).
      delivery.tunnelOpened(tunnel.cluster);
      const stopReports = followReports(tunnel, reportSink, logger);
      followers.add(stopReports);
      // A draining tunnel (the agent stops or moves) waits for its open streams: this one ends then.
      void tunnel.draining.then(stopReports);
      void tunnel.closed.then(() => followers.delete(stopReports));
      fleet.localOpened(tunnel.cluster);
    },
    closed: (cluster) => {
      forwarder.dropCluster(cluster);
      fleet.localClosed(cluster);
    },
  });
  return {
    delivery,
    fleetDelivery,
    fleet,
    start: async () => {
      await fleet.start();
      rebalancer.start();
    },
    followers,
    stop: () => {
      rebalancer.stop();
      fleet.stop();
      forwarder.stop();
    },
  };
}
