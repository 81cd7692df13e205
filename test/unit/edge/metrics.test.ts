import { describe, expect, it } from 'vitest';
import { RequestCounters, registerProxyGauges, type ProxyState } from '../../../src/edge/metrics.js';
import { MetricsRegistry } from '../../../src/metrics/metrics-registry.js';

const idle: ProxyState = {
  isOnline: true,
  isCertificateRejected: false,
  cacheEntries: 0,
  cacheBytes: 0,
  heldWatches: 0,
  openWatches: 0,
  bufferedCacheBytes: 0,
};

describe("the edge-proxy's metrics", () => {
  it('counts requests by outcome, showing only outcomes that happened', async () => {
    const registry = new MetricsRegistry();
    const counters = new RequestCounters(registry);
    counters.count('forwarded');
    counters.count('forwarded');
    counters.count('cache_hit_offline');
    counters.countCorruptEntry();

    const text = await registry.render();
    expect(text).toMatch(/^edgeadm_edge_proxy_requests_total\{outcome="forwarded"\} 2$/m);
    expect(text).toMatch(/^edgeadm_edge_proxy_requests_total\{outcome="cache_hit_offline"\} 1$/m);
    expect(text).not.toContain('outcome="cache_miss_offline"');
    expect(text).toMatch(/^edgeadm_edge_proxy_cache_corrupt_dropped_total 1$/m);
  });

  it("reads the proxy's state at each scrape", async () => {
    const registry = new MetricsRegistry();
    let state: ProxyState = { ...idle, cacheEntries: 3, cacheBytes: 4096 };
    registerProxyGauges(registry, () => state);
    const online = await registry.render();
    expect(online).toMatch(/^edgeadm_edge_proxy_online 1$/m);
    expect(online).toMatch(/^edgeadm_edge_proxy_cache_entries 3$/m);
    expect(online).toMatch(/^edgeadm_edge_proxy_cache_bytes 4096$/m);

    state = { ...state, isOnline: false, isCertificateRejected: true, heldWatches: 2, openWatches: 5 };
    const offline = await registry.render();
    expect(offline).toMatch(/^edgeadm_edge_proxy_online 0$/m);
    expect(offline).toMatch(/^edgeadm_edge_proxy_upstream_certificate_rejected 1$/m);
    expect(offline).toMatch(/^edgeadm_edge_proxy_held_watches 2$/m);
    expect(offline).toMatch(/^edgeadm_edge_proxy_open_watches 5$/m);
    expect(offline).toMatch(/^edgeadm_edge_proxy_cache_buffered_bytes 0$/m);
  });

  it('counts two proxies apart', async () => {
    const first = new MetricsRegistry();
    const second = new MetricsRegistry();
    new RequestCounters(first).count('unauthorized');
    new RequestCounters(second);
    expect(await first.render()).toContain('edgeadm_edge_proxy_requests_total{outcome="unauthorized"} 1');
    expect(await second.render()).not.toContain('outcome="unauthorized"');
  });
});
