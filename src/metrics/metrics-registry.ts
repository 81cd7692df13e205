/**
 * Prometheus metrics for one server (a hub replica, an edge-proxy), on
 * prom-client. Each server owns its registry, never prom-client's global
 * default one: tests and benchmarks run several hubs and proxies in one
 * process, and each must count apart.
 *
 * Only prom-client's registry and metric classes are loaded (its
 * `lib/…` files), not its index: the index also loads the push gateway
 * client (node:http, node:https, node:zlib), the cluster aggregator and the
 * default process metrics with OpenTelemetry's API. Bundled and run
 * `--jitless` as the edge-proxy runs, the index cost 1.9 MiB more RSS than
 * these four files (0.3 MiB), for nothing edgeadm uses. Those paths are no
 * documented API, so package.json pins the exact version, and
 * test/unit/metrics/metrics-registry.test.ts fails if they move.
 */
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import CounterClass from 'prom-client/lib/counter.js';
import GaugeClass from 'prom-client/lib/gauge.js';
import HistogramClass from 'prom-client/lib/histogram.js';
import RegistryClass from 'prom-client/lib/registry.js';

export type { Counter, Gauge, Histogram } from 'prom-client';

/** The content type of the text exposition format (0.0.4) every `/metrics` answers with. */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** A metric's name, help text and label names (none: one unlabelled series). */
export interface MetricDefinition<Label extends string> {
  name: string;
  help: string;
  labelNames?: readonly Label[];
}

/** A gauge whose value is read when the metrics are rendered, not kept up to date. */
export interface ReadGaugeDefinition extends MetricDefinition<never> {
  read(): number;
}

/** One server's metrics, rendered as Prometheus text. */
export class MetricsRegistry {
  readonly #registry: Registry = new RegistryClass();

  /** A counter (`inc()`, or `inc({ label: value }, n)`). */
  counter<Label extends string = never>(definition: MetricDefinition<Label>): Counter<Label> {
    return new CounterClass<Label>({ ...definition, registers: [this.#registry] });
  }

  /** A gauge (`set(n)`, `inc()`, `dec()`). */
  gauge<Label extends string = never>(definition: MetricDefinition<Label>): Gauge<Label> {
    return new GaugeClass<Label>({ ...definition, registers: [this.#registry] });
  }

  /** A gauge set to `read()` at each render: for state another part already holds (cache size, online). */
  readGauge(definition: ReadGaugeDefinition): void {
    const { read, ...rest } = definition;
    new GaugeClass({
      ...rest,
      registers: [this.#registry],
      collect(this: Gauge) {
        this.set(read());
      },
    });
  }

  /** A histogram over `buckets` (upper bounds; `+Inf` is added). */
  histogram<Label extends string = never>(
    definition: MetricDefinition<Label> & { buckets: readonly number[] },
  ): Histogram<Label> {
    return new HistogramClass<Label>({
      ...definition,
      buckets: [...definition.buckets],
      registers: [this.#registry],
    });
  }

  /** Every metric in the text exposition format ({@link METRICS_CONTENT_TYPE}). */
  render(): Promise<string> {
    return this.#registry.metrics();
  }
}
