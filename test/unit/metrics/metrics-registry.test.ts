import { register as globalRegistry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { MetricsRegistry } from '../../../src/metrics/metrics-registry.js';

describe('MetricsRegistry', () => {
  it('renders counters, gauges and histograms in the text exposition format', async () => {
    const registry = new MetricsRegistry();
    const requests = registry.counter({ name: 'demo_requests_total', help: 'Requests.' });
    const bytes = registry.counter<'direction'>({
      name: 'demo_bytes_total',
      help: 'Bytes, by direction.',
      labelNames: ['direction'],
    });
    const open = registry.gauge({ name: 'demo_open', help: 'Open things.' });
    const latency = registry.histogram({ name: 'demo_seconds', help: 'Latency.', buckets: [0.1, 1] });
    requests.inc();
    requests.inc();
    bytes.inc({ direction: 'in' }, 512);
    open.set(3);
    open.dec();
    latency.observe(0.05);
    latency.observe(0.5);

    const text = await registry.render();
    expect(text).toContain('# HELP demo_requests_total Requests.\n# TYPE demo_requests_total counter\n');
    expect(text).toMatch(/^demo_requests_total 2$/m);
    expect(text).toMatch(/^demo_bytes_total\{direction="in"\} 512$/m);
    expect(text).toMatch(/^# TYPE demo_open gauge$/m);
    expect(text).toMatch(/^demo_open 2$/m);
    expect(text).toMatch(/^demo_seconds_bucket\{le="0.1"\} 1$/m);
    expect(text).toMatch(/^demo_seconds_bucket\{le="1"\} 2$/m);
    expect(text).toMatch(/^demo_seconds_bucket\{le="\+Inf"\} 2$/m);
    expect(text).toMatch(/^demo_seconds_sum 0.55$/m);
    expect(text).toMatch(/^demo_seconds_count 2$/m);
    expect(text.endsWith('\n')).toBe(true);
  });

  it('reads a read gauge at each render', async () => {
    const registry = new MetricsRegistry();
    let entries = 1;
    registry.readGauge({ name: 'demo_entries', help: 'Entries.', read: () => entries });
    expect(await registry.render()).toMatch(/^demo_entries 1$/m);
    entries = 7;
    expect(await registry.render()).toMatch(/^demo_entries 7$/m);
  });

  it('keeps each registry apart, and out of the global default registry', async () => {
    const first = new MetricsRegistry();
    const second = new MetricsRegistry();
    // The same name in two registries: two servers in one process (tests run several hubs).
    first.counter({ name: 'demo_refused_total', help: 'Refused.' }).inc(5);
    second.counter({ name: 'demo_refused_total', help: 'Refused.' });

    expect(await first.render()).toMatch(/^demo_refused_total 5$/m);
    expect(await second.render()).toMatch(/^demo_refused_total 0$/m);
    expect(globalRegistry.getSingleMetric('demo_refused_total')).toBeUndefined();
  });

  it('refuses a second metric of the same name in one registry', () => {
    const registry = new MetricsRegistry();
    registry.gauge({ name: 'demo_twice', help: 'Once.' });
    expect(() => registry.gauge({ name: 'demo_twice', help: 'Twice.' })).toThrow(/already been registered/);
  });
});
