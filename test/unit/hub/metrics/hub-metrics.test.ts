import { describe, expect, it } from 'vitest';
import { HubMetrics } from '../../../../src/hub/metrics/hub-metrics.js';

/** The value of one series in the text, or undefined when it is not there. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('HubMetrics', () => {
  it('shows every series from the start, at zero', async () => {
    const text = await new HubMetrics().render();
    for (const series of [
      'edgeadm_hub_connected_agents',
      'edgeadm_hub_tunnel_streams_active',
      'edgeadm_hub_tunnel_streams_total',
      'edgeadm_hub_tunnel_bytes_total{direction="to_agent"}',
      'edgeadm_hub_tunnel_bytes_total{direction="from_agent"}',
      'edgeadm_hub_tunnels_refused_total',
      'edgeadm_hub_handshakes_refused_total',
      'edgeadm_hub_handshakes_timed_out_total',
      'edgeadm_hub_tls_sessions_resumed_total',
      'edgeadm_hub_tunnels_moved_total',
      'edgeadm_hub_unauthorized_requests_total',
      'edgeadm_hub_rollouts_quarantined',
      'edgeadm_hub_request_duration_seconds_count',
    ]) {
      expect(sample(text, series), series).toBe(0);
    }
  });

  it('counts what the hub does, and reads the quarantined rollouts at each scrape', async () => {
    const metrics = new HubMetrics();
    metrics.connectedAgents.set(2);
    metrics.activeStreams.inc();
    metrics.activeStreams.inc();
    metrics.activeStreams.dec();
    metrics.streamsTotal.inc();
    metrics.bytesToAgents.inc(100);
    metrics.bytesFromAgents.inc(4096);
    metrics.unauthorizedRequests.inc();
    metrics.requestDuration.observe(0.02);
    metrics.requestDuration.observe(3);
    let quarantined = 1;
    metrics.rolloutsQuarantined = () => quarantined;

    const text = await metrics.render();
    expect(sample(text, 'edgeadm_hub_connected_agents')).toBe(2);
    expect(sample(text, 'edgeadm_hub_tunnel_streams_active')).toBe(1);
    expect(sample(text, 'edgeadm_hub_tunnel_streams_total')).toBe(1);
    expect(sample(text, 'edgeadm_hub_tunnel_bytes_total{direction="to_agent"}')).toBe(100);
    expect(sample(text, 'edgeadm_hub_tunnel_bytes_total{direction="from_agent"}')).toBe(4096);
    expect(sample(text, 'edgeadm_hub_unauthorized_requests_total')).toBe(1);
    expect(sample(text, 'edgeadm_hub_request_duration_seconds_bucket{le="0.025"}')).toBe(1);
    expect(sample(text, 'edgeadm_hub_request_duration_seconds_bucket{le="5"}')).toBe(2);
    expect(sample(text, 'edgeadm_hub_request_duration_seconds_bucket{le="+Inf"}')).toBe(2);
    expect(sample(text, 'edgeadm_hub_rollouts_quarantined')).toBe(1);
    quarantined = 0;
    expect(sample(await metrics.render(), 'edgeadm_hub_rollouts_quarantined')).toBe(0);
  });

  it('counts two hubs in one process apart', async () => {
    const first = new HubMetrics();
    const second = new HubMetrics();
    first.tunnelsRefused.inc();
    expect(sample(await first.render(), 'edgeadm_hub_tunnels_refused_total')).toBe(1);
    expect(sample(await second.render(), 'edgeadm_hub_tunnels_refused_total')).toBe(0);
  });
});
