/**
 * The hub's own metrics: connected agents, streams, bytes through the
 * tunnels, refused connections and requests, and kube request latency, in
 * the replica's own registry (src/metrics/metrics-registry.ts). The parts
 * that do the work bump them; the fleet's per-cluster series are rendered
 * apart, per caller (fleet-metrics.ts).
 */
import { MetricsRegistry, type Counter, type Gauge, type Histogram } from '../../metrics/metrics-registry.js';

/** Upper bounds (seconds) of the request latency histogram buckets. */
export const LATENCY_BUCKETS_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** One direction of the tunnel byte counter: `inc(bytes)`. */
export type ByteCounter = Counter.Internal;

/** The counters and gauges a hub replica updates as it works. */
export class HubMetrics {
  readonly #registry = new MetricsRegistry();
  readonly connectedAgents: Gauge = this.#registry.gauge({
    name: 'edgeadm_hub_connected_agents',
    help: 'Agents with an open tunnel.',
  });
  readonly activeStreams: Gauge = this.#registry.gauge({
    name: 'edgeadm_hub_tunnel_streams_active',
    help: 'Streams open through tunnels.',
  });
  readonly streamsTotal: Counter = this.#registry.counter({
    name: 'edgeadm_hub_tunnel_streams_total',
    help: 'Streams opened through tunnels.',
  });
  readonly #tunnelBytes: Counter<'direction'> = this.#registry.counter({
    name: 'edgeadm_hub_tunnel_bytes_total',
    help: 'Bytes carried through tunnels, by direction.',
    labelNames: ['direction'],
  });
  readonly bytesToAgents: ByteCounter = this.#direction('to_agent');
  readonly bytesFromAgents: ByteCounter = this.#direction('from_agent');
  readonly tunnelsRefused: Counter = this.#registry.counter({
    name: 'edgeadm_hub_tunnels_refused_total',
    help: 'Tunnel attempts refused.',
  });
  /** Connections closed before TLS because the hub's bound on TLS handshakes in progress was reached. */
  readonly handshakesRefused: Counter = this.#registry.counter({
    name: 'edgeadm_hub_handshakes_refused_total',
    help: 'Connections closed before TLS because too many handshakes were in progress.',
  });
  /** Connections closed because their TLS handshake was not done by its deadline. */
  readonly handshakesTimedOut: Counter = this.#registry.counter({
    name: 'edgeadm_hub_handshakes_timed_out_total',
    help: 'Connections closed because their TLS handshake was not done by its deadline.',
  });
  /** Tunnels this replica asked to move to another replica, to spread the agents again (rebalancer.ts). */
  readonly tunnelsMoved: Counter = this.#registry.counter({
    name: 'edgeadm_hub_tunnels_moved_total',
    help: 'Tunnels this replica asked to move to another replica, to spread the agents over the replicas again.',
  });
  /** TLS connections that resumed an earlier session (a session ticket) instead of a full handshake. */
  readonly tlsSessionsResumed: Counter = this.#registry.counter({
    name: 'edgeadm_hub_tls_sessions_resumed_total',
    help: 'TLS connections that resumed an earlier session instead of a full handshake.',
  });
  readonly unauthorizedRequests: Counter = this.#registry.counter({
    name: 'edgeadm_hub_unauthorized_requests_total',
    help: 'Requests refused with 401.',
  });
  /** Time until a proxied kube request got its response head. */
  readonly requestDuration: Histogram = this.#registry.histogram({
    name: 'edgeadm_hub_request_duration_seconds',
    help: 'Time from a kube request to its response head.',
    buckets: LATENCY_BUCKETS_SECONDS,
  });
  /** Stored rollouts quarantined at the controller's start (read at each scrape; none without a controller). */
  rolloutsQuarantined: () => number = () => 0;

  constructor(startedAt: Date = new Date()) {
    // The alert rules leave the first minute after a start out of "offline": every agent redials then.
    this.#registry
      .gauge({ name: 'edgeadm_hub_start_time_seconds', help: 'When this replica started (Unix seconds).' })
      .set(startedAt.getTime() / 1000);
    this.#registry.readGauge({
      name: 'edgeadm_hub_rollouts_quarantined',
      help: 'Stored rollouts the hub could not load at its start (see "hub rollout list").',
      read: () => this.rolloutsQuarantined(),
    });
  }

  /** The text exposition format of the replica's own metrics. */
  render(): Promise<string> {
    return this.#registry.render();
  }

  /** One direction of the byte counter, shown (at 0) from the start. */
  #direction(direction: 'to_agent' | 'from_agent'): ByteCounter {
    this.#tunnelBytes.inc({ direction }, 0);
    return this.#tunnelBytes.labels({ direction });
  }
}
