/**
 * The hub's Prometheus metrics, rendered in the text exposition format:
 * connected agents, streams, bytes through the tunnels and kube request
 * latency. Kept in-process and tiny; no client library needed.
 */

/** Upper bounds (seconds) of the request latency histogram buckets. */
export const LATENCY_BUCKETS_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Counters and gauges the hub updates as it works. */
export class HubMetrics {
  connectedAgents = 0;
  activeStreams = 0;
  streamsTotal = 0;
  bytesToAgents = 0;
  bytesFromAgents = 0;
  tunnelsRefused = 0;
  /** Connections closed before TLS because the hub's bound on TLS handshakes in progress was reached. */
  handshakesRefused = 0;
  /** Connections closed because their TLS handshake was not done by its deadline. */
  handshakesTimedOut = 0;
  /** TLS connections that resumed an earlier session (a session ticket) instead of a full handshake. */
  tlsSessionsResumed = 0;
  unauthorizedRequests = 0;
  /** Stored rollouts quarantined at the controller's start (read at each scrape; none without a controller). */
  rolloutsQuarantined: () => number = () => 0;
  readonly #buckets = LATENCY_BUCKETS_SECONDS.map(() => 0);
  #latencyCount = 0;
  #latencySum = 0;

  /** Records the time until a proxied request got its response head. */
  observeLatency(seconds: number): void {
    this.#latencyCount += 1;
    this.#latencySum += seconds;
    LATENCY_BUCKETS_SECONDS.forEach((bound, index) => {
      if (seconds <= bound) this.#buckets[index] = (this.#buckets[index] ?? 0) + 1;
    });
  }

  /** The text exposition format. */
  render(): string {
    const lines = [
      '# HELP edgeadm_hub_connected_agents Agents with an open tunnel.',
      '# TYPE edgeadm_hub_connected_agents gauge',
      `edgeadm_hub_connected_agents ${this.connectedAgents}`,
      '# HELP edgeadm_hub_tunnel_streams_active Streams open through tunnels.',
      '# TYPE edgeadm_hub_tunnel_streams_active gauge',
      `edgeadm_hub_tunnel_streams_active ${this.activeStreams}`,
      '# HELP edgeadm_hub_tunnel_streams_total Streams opened through tunnels.',
      '# TYPE edgeadm_hub_tunnel_streams_total counter',
      `edgeadm_hub_tunnel_streams_total ${this.streamsTotal}`,
      '# HELP edgeadm_hub_tunnel_bytes_total Bytes carried through tunnels, by direction.',
      '# TYPE edgeadm_hub_tunnel_bytes_total counter',
      `edgeadm_hub_tunnel_bytes_total{direction="to_agent"} ${this.bytesToAgents}`,
      `edgeadm_hub_tunnel_bytes_total{direction="from_agent"} ${this.bytesFromAgents}`,
      '# HELP edgeadm_hub_tunnels_refused_total Tunnel attempts refused.',
      '# TYPE edgeadm_hub_tunnels_refused_total counter',
      `edgeadm_hub_tunnels_refused_total ${this.tunnelsRefused}`,
      '# HELP edgeadm_hub_handshakes_refused_total Connections closed before TLS because too many handshakes were in progress.',
      '# TYPE edgeadm_hub_handshakes_refused_total counter',
      `edgeadm_hub_handshakes_refused_total ${this.handshakesRefused}`,
      '# HELP edgeadm_hub_handshakes_timed_out_total Connections closed because their TLS handshake was not done by its deadline.',
      '# TYPE edgeadm_hub_handshakes_timed_out_total counter',
      `edgeadm_hub_handshakes_timed_out_total ${this.handshakesTimedOut}`,
      '# HELP edgeadm_hub_tls_sessions_resumed_total TLS connections that resumed an earlier session instead of a full handshake.',
      '# TYPE edgeadm_hub_tls_sessions_resumed_total counter',
      `edgeadm_hub_tls_sessions_resumed_total ${this.tlsSessionsResumed}`,
      '# HELP edgeadm_hub_unauthorized_requests_total Requests refused with 401.',
      '# TYPE edgeadm_hub_unauthorized_requests_total counter',
      `edgeadm_hub_unauthorized_requests_total ${this.unauthorizedRequests}`,
      '# HELP edgeadm_hub_rollouts_quarantined Stored rollouts the hub could not load at its start (see "hub rollout list").',
      '# TYPE edgeadm_hub_rollouts_quarantined gauge',
      `edgeadm_hub_rollouts_quarantined ${this.rolloutsQuarantined()}`,
      '# HELP edgeadm_hub_request_duration_seconds Time from a kube request to its response head.',
      '# TYPE edgeadm_hub_request_duration_seconds histogram',
      ...LATENCY_BUCKETS_SECONDS.map(
        (bound, index) => `edgeadm_hub_request_duration_seconds_bucket{le="${bound}"} ${this.#buckets[index] ?? 0}`,
      ),
      `edgeadm_hub_request_duration_seconds_bucket{le="+Inf"} ${this.#latencyCount}`,
      `edgeadm_hub_request_duration_seconds_sum ${this.#latencySum}`,
      `edgeadm_hub_request_duration_seconds_count ${this.#latencyCount}`,
    ];
    return `${lines.join('\n')}\n`;
  }
}
