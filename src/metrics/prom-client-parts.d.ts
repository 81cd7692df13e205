/**
 * Types of the prom-client files metrics-registry.ts loads one by one
 * (`prom-client/lib/…`), taken from the package's own declarations of its
 * index: each file's `module.exports` is the class the index re-exports.
 */
declare module 'prom-client/lib/registry.js' {
  import type { Registry } from 'prom-client';
  const RegistryClass: typeof Registry;
  export default RegistryClass;
}

declare module 'prom-client/lib/counter.js' {
  import type { Counter } from 'prom-client';
  const CounterClass: typeof Counter;
  export default CounterClass;
}

declare module 'prom-client/lib/gauge.js' {
  import type { Gauge } from 'prom-client';
  const GaugeClass: typeof Gauge;
  export default GaugeClass;
}

declare module 'prom-client/lib/histogram.js' {
  import type { Histogram } from 'prom-client';
  const HistogramClass: typeof Histogram;
  export default HistogramClass;
}
