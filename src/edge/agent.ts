/**
 * The edge-proxy agent process: the parsed flag values of
 * `edgeadm agent edge-proxy` become one options object, the proxy runs until
 * SIGTERM or SIGINT, then stops. Shared by the oclif command and by the lean
 * start path (src/cli/agent-fast-path.ts) that runs the same flags without
 * loading the CLI framework, to keep the resident memory of the agent small.
 */
import { readFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { ValidationError } from '../errors.js';
import type { Logger } from '../log/run-log.js';
import { parseGoDuration } from '../trust/duration.js';
import { parseSiteName } from '../sites/site-label.js';
import { parseByteSize } from './byte-size.js';
import { parseHostPort, startEdgeProxy } from './edge-proxy.js';
import { loadClientCertMappings, parseClientCertMapping, readUpstreamConfig } from './upstream-config.js';

/**
 * V8 settings the agent gives its own process before it starts the proxy.
 * `--optimize-for-size` makes V8 grow the heap in smaller steps (it collects
 * sooner) and favour memory over speed elsewhere: 5-7 MiB less RSS under the
 * edge-proxy benchmark's offline load, for about 5 % more CPU per cached GET
 * (bench/edge-proxy/RESULTS.md). Set here because Node refuses it in
 * `NODE_OPTIONS`, so the unit's environment cannot carry it, and a single
 * binary's command line is edgeadm's; V8 reads it at each collection.
 */
export const AGENT_V8_FLAGS: readonly string[] = ['--optimize-for-size'];

/** The flag values of `edgeadm agent edge-proxy`, after parsing and defaults. */
export interface EdgeProxyAgentFlags {
  kubeconfig: string;
  listen: string;
  'metrics-listen': string;
  'cache-dir': string;
  'cache-max-bytes': string;
  'cache-max-entries': number;
  'tls-cert'?: string | undefined;
  'tls-key'?: string | undefined;
  'client-ca-file'?: string | undefined;
  'client-cert-map': string[];
  'health-interval': string;
  /** Stand in for the k3s supervisor while the server is unreachable (k3s-supervisor.ts). */
  'k3s-supervisor'?: boolean | undefined;
  /** The node's site: grid Services' endpoints are kept to it (src/sites/endpoint-filter.ts). */
  site?: string | undefined;
}

/** What `--json` prints once the proxy has stopped. */
export interface EdgeProxyRunResult {
  url: string;
  metricsUrl: string | undefined;
  servingCaFile: string | undefined;
  cacheEntries: number;
}

/** Where the agent reports: the run log, and one line for the operator once it serves. */
export interface EdgeProxyAgentIo {
  logger: Logger;
  announce(line: string): void;
}

/** Runs the edge-proxy until SIGTERM or SIGINT, then closes it and returns what it served. */
export async function runEdgeProxyAgent(flags: EdgeProxyAgentFlags, io: EdgeProxyAgentIo): Promise<EdgeProxyRunResult> {
  for (const flag of AGENT_V8_FLAGS) setFlagsFromString(flag);
  const healthIntervalMs = parseGoDuration(flags['health-interval']);
  if (healthIntervalMs <= 0) {
    throw new ValidationError('--health-interval must be positive', { code: 'E_EDGE_HEALTH_INTERVAL' });
  }
  const readPem = (path: string | undefined): string | undefined => (path ? readFileSync(path, 'utf8') : undefined);
  const proxy = await startEdgeProxy({
    upstream: await readUpstreamConfig(flags.kubeconfig),
    listen: parseHostPort(flags.listen, '--listen'),
    metricsListen:
      flags['metrics-listen'] === 'none' ? undefined : parseHostPort(flags['metrics-listen'], '--metrics-listen'),
    cacheDir: flags['cache-dir'],
    cacheMaxBytes: parseByteSize(flags['cache-max-bytes'], '--cache-max-bytes'),
    cacheMaxEntries: flags['cache-max-entries'],
    tls: flags['tls-cert'] ? { certPem: readPem(flags['tls-cert'])!, keyPem: readPem(flags['tls-key'])! } : undefined,
    tlsFiles:
      flags['tls-cert'] && flags['tls-key'] ? { certFile: flags['tls-cert'], keyFile: flags['tls-key'] } : undefined,
    clientCaPem: readPem(flags['client-ca-file']),
    clientCerts: loadClientCertMappings(flags['client-cert-map'].map(parseClientCertMapping)),
    healthIntervalMs,
    isK3sSupervisor: flags['k3s-supervisor'] === true,
    site: flags.site === undefined ? undefined : parseSiteName(flags.site),
    logger: io.logger,
  });
  io.announce(
    `edge-proxy serving ${proxy.url} (${proxy.isOnline ? 'online' : 'offline: serving from the cache'})` +
      (proxy.metricsUrl ? `, /healthz and /metrics on ${proxy.metricsUrl}` : '') +
      (proxy.servingCaFile ? `; clients trust ${proxy.servingCaFile}` : ''),
  );
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await proxy.close();
  return {
    url: proxy.url,
    metricsUrl: proxy.metricsUrl,
    servingCaFile: proxy.servingCaFile,
    cacheEntries: proxy.cache.entryCount,
  };
}
