/**
 * Spreads the agents over the replicas again. When a replica dies its
 * agents move to the others, and when it returns nothing brings them back:
 * one replica may hold most of the fleet. Every interval this replica
 * compares the tunnel counts of all live replicas (its own tunnels, the
 * others' claims) and, when it holds more than its share and a margin,
 * asks some of its idle tunnels to move to a replica below its share
 * (rebalance-plan.ts decides how many, the same way on every replica). A
 * tunnel with a user's stream open (a kubectl watch, logs, an exec
 * session) is never asked, nor one that just arrived. An agent that does
 * not know the move request is drained instead and dials its next hub
 * address.
 */
import type { Logger } from '../../log/run-log.js';
import type { HubTunnel } from '../../tunnel/hub-tunnel.js';
import {
  REBALANCE_INTERVAL_MS,
  REBALANCE_MARGIN,
  REBALANCE_MAX_MOVES_PER_ROUND,
  REBALANCE_MIN_TUNNEL_AGE_MS,
  REBALANCE_SLACK,
} from '../limits.js';
import type { HubMetrics } from '../metrics/hub-metrics.js';
import type { ReplicaCoordination } from '../store/coordination.js';
import type { FleetConnections } from './fleet-connections.js';
import { rebalanceMoves, type RebalancePolicy, type ReplicaLoad } from './rebalance-plan.js';

/** Moves asked at once (each is one control stream and the agent's answer). */
const MOVES_AT_ONCE = 32;

/** When the rebalancer runs and how it decides; the hub's limits by default (tests make them small). */
export interface RebalanceSettings extends RebalancePolicy {
  intervalMs: number;
  /** A tunnel connected for less than this is left where it is. */
  minTunnelAgeMs: number;
}

/** The hub's default {@link RebalanceSettings}. */
export const DEFAULT_REBALANCE: RebalanceSettings = {
  intervalMs: REBALANCE_INTERVAL_MS,
  margin: REBALANCE_MARGIN,
  slack: REBALANCE_SLACK,
  maxMovesPerRound: REBALANCE_MAX_MOVES_PER_ROUND,
  minTunnelAgeMs: REBALANCE_MIN_TUNNEL_AGE_MS,
};

/** Options of {@link Rebalancer}. */
export interface RebalancerOptions {
  coordination: ReplicaCoordination;
  /** This replica's open tunnels by cluster. */
  tunnels: ReadonlyMap<string, HubTunnel>;
  fleet: FleetConnections;
  metrics: HubMetrics;
  logger: Logger;
  settings?: RebalanceSettings;
  now?: () => number;
  /** Whether a replica's address takes connections; a TCP connect with a deadline by default. */
  isReachable?: (replicaUrl: string) => Promise<boolean>;
}

/** How long a replica's port has to take a TCP connection before tunnels are sent to it. */
const REACHABLE_TIMEOUT_MS = 1_000;

/**
 * Whether a replica's port takes a TCP connection within the deadline. A
 * replica that died stays listed (and looks empty, its claims taken over)
 * until its lease runs out: tunnels sent there would only bounce.
 */
export function tcpReachable(replicaUrl: string): Promise<boolean> {
  return new Promise((resolve) => {
    const url = new URL(replicaUrl);
    void import('node:net').then(({ connect }) => {
      const socket = connect({ host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 443) });
      const done = (isUp: boolean): void => {
        clearTimeout(timer);
        socket.destroy();
        resolve(isUp);
      };
      const timer = setTimeout(() => done(false), REACHABLE_TIMEOUT_MS);
      socket.once('connect', () => done(true));
      socket.once('error', () => done(false));
    });
  });
}

/** One round's outcome, for the log and tests. */
export interface RebalanceRound {
  /** Tunnels asked to move, by target replica id. */
  moved: Map<string, number>;
  loads: ReplicaLoad[];
}

/** Runs rounds on a timer while started. */
export class Rebalancer {
  readonly #options: RebalancerOptions;
  readonly #settings: RebalanceSettings;
  #timer: NodeJS.Timeout | undefined;
  #isRunning = false;

  constructor(options: RebalancerOptions) {
    this.#options = options;
    this.#settings = options.settings ?? DEFAULT_REBALANCE;
  }

  start(): void {
    this.#timer = setInterval(() => void this.#tick(), this.#settings.intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  async #tick(): Promise<void> {
    if (this.#isRunning) return;
    this.#isRunning = true;
    try {
      await this.round();
    } catch (error) {
      this.#options.logger.debug(`rebalancing: ${(error as Error).message}`);
    } finally {
      this.#isRunning = false;
    }
  }

  /** One round: reads the loads, and asks this replica's part of the moves. */
  async round(): Promise<RebalanceRound> {
    const { coordination, tunnels, fleet, logger, metrics } = this.#options;
    const self = coordination.self;
    const replicas = await coordination.listReplicas();
    const claims = fleet.claimCounts();
    // A tunnel on its way to another replica is not counted here, nor asked again.
    const open = [...tunnels.values()].filter((tunnel) => tunnel.isOpen && !tunnel.isMoving);
    const loads = replicas.map((replica) => ({
      id: replica.id,
      tunnels: replica.id === self.id ? open.length : (claims.get(replica.id) ?? 0),
    }));
    const moved = new Map<string, number>();
    const moves = rebalanceMoves(self.id, loads, this.#settings);
    if (moves.length === 0) return { moved, loads };
    const now = (this.#options.now ?? Date.now)();
    const idle = open.filter(
      (tunnel) => tunnel.userStreams === 0 && now - tunnel.openedAt >= this.#settings.minTunnelAgeMs,
    );
    const asks: (() => Promise<void>)[] = [];
    const isReachable = this.#options.isReachable ?? tcpReachable;
    for (const move of moves) {
      const target = replicas.find((replica) => replica.id === move.to);
      if (target === undefined || !(await isReachable(target.advertiseUrl))) continue;
      for (const tunnel of idle.splice(0, move.count)) {
        asks.push(() => tunnel.move(target.advertiseUrl));
        moved.set(move.to, (moved.get(move.to) ?? 0) + 1);
      }
    }
    const total = [...moved.values()].reduce((sum, count) => sum + count, 0);
    if (total === 0) return { moved, loads };
    const counts = loads.map((load) => `${load.id === self.id ? 'this replica' : load.id} ${load.tunnels}`).join(', ');
    logger.info(`rebalancing: asking ${total} idle tunnels to move to other replicas (tunnels held: ${counts})`);
    metrics.tunnelsMoved.inc(total);
    for (let i = 0; i < asks.length; i += MOVES_AT_ONCE) {
      await Promise.all(asks.slice(i, i + MOVES_AT_ONCE).map((ask) => ask().catch(() => undefined)));
    }
    return { moved, loads };
  }
}
