/**
 * The lean start path of `edgeadm agent edge-proxy`: a long-running agent on
 * small edge nodes, where every MiB of resident memory counts. It parses the
 * command's flags without oclif, so neither the CLI framework nor any other
 * command's modules are loaded, then runs the same agent code as the oclif
 * command (src/edge/agent.ts) with the same run log, output and error
 * rendering as BaseCommand.
 *
 * It only takes invocations it can parse exactly: known flags, each value
 * present, constraints met. Anything else (`--help`, an unknown or repeated
 * flag, a missing value, a required flag left out...) is handed back to
 * oclif, so help and every parse error stay oclif's, word for word.
 * test/unit/cli/agent-fast-path.test.ts ties this flag table to the command's.
 */
import { runEdgeProxyAgent, type EdgeProxyAgentFlags } from '../edge/agent.js';
import {
  DEFAULT_CACHE_DIR,
  DEFAULT_CACHE_MAX_ENTRIES,
  DEFAULT_HEALTH_INTERVAL,
  DEFAULT_LISTEN,
  DEFAULT_METRICS_LISTEN,
} from '../edge/limits.js';
import { Redactor } from '../log/redact.js';
import { RunLog } from '../log/run-log.js';
import { EDGE_PROXY_COMMAND_ID, edgeProxyArgs } from './agent-argv.js';
import { openCommandRunLog } from './command-run-log.js';
import { errorDocument, renderErrorText, toEdgeadmError } from './render-error.js';
import { styleFor } from './style.js';

/** One flag as the lean parser understands it: the subset of oclif's flag options edge-proxy uses. */
export interface LeanFlagSpec {
  kind: 'string' | 'integer' | 'boolean';
  default?: string | number | readonly string[];
  required?: boolean;
  multiple?: boolean;
  min?: number;
  dependsOn?: string[];
}

/** The flags of `edgeadm agent edge-proxy`, BaseCommand's global flags and `--json` included. */
export const EDGE_PROXY_FLAG_SPECS: Readonly<Record<string, LeanFlagSpec>> = {
  kubeconfig: { kind: 'string', required: true },
  listen: { kind: 'string', default: DEFAULT_LISTEN },
  'metrics-listen': { kind: 'string', default: DEFAULT_METRICS_LISTEN },
  'cache-dir': { kind: 'string', default: DEFAULT_CACHE_DIR },
  'cache-max-bytes': { kind: 'string', default: '256Mi' },
  'cache-max-entries': { kind: 'integer', default: DEFAULT_CACHE_MAX_ENTRIES, min: 1 },
  'tls-cert': { kind: 'string', dependsOn: ['tls-key'] },
  'tls-key': { kind: 'string', dependsOn: ['tls-cert'] },
  'client-ca-file': { kind: 'string' },
  'client-cert-map': { kind: 'string', multiple: true, default: [] },
  'health-interval': { kind: 'string', default: DEFAULT_HEALTH_INTERVAL },
  'k3s-supervisor': { kind: 'boolean' },
  site: { kind: 'string' },
  json: { kind: 'boolean' },
  verbose: { kind: 'boolean' },
  'log-file': { kind: 'string' },
};

/** The flags as parsed by the lean path. */
export interface LeanEdgeProxyInvocation {
  flags: EdgeProxyAgentFlags;
  json: boolean;
  verbose: boolean;
  logFile: string | undefined;
}

/**
 * Parses the arguments after `agent edge-proxy`, or returns undefined when
 * oclif must handle them (help, or anything oclif would reject or treat in a
 * way this parser does not).
 */
export function parseEdgeProxyArgs(
  args: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): LeanEdgeProxyInvocation | undefined {
  // oclif turns on JSON output from this variable too; leave that to it.
  if (env.EDGEADM_CONTENT_TYPE !== undefined) return undefined;
  const values = new Map<string, string | number | boolean | string[]>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!arg.startsWith('--') || arg === '--') return undefined;
    const eq = arg.indexOf('=');
    const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    const spec = Object.hasOwn(EDGE_PROXY_FLAG_SPECS, name) ? EDGE_PROXY_FLAG_SPECS[name] : undefined;
    if (spec === undefined) return undefined;
    if (values.has(name) && !spec.multiple) return undefined;
    if (spec.kind === 'boolean') {
      if (eq !== -1) return undefined;
      values.set(name, true);
      continue;
    }
    const value = eq === -1 ? args[++i] : arg.slice(eq + 1);
    if (value === undefined || value === '' || (eq === -1 && value.startsWith('-'))) return undefined;
    if (spec.kind === 'integer') {
      if (!/^\d+$/.test(value) || Number(value) < (spec.min ?? 0)) return undefined;
      values.set(name, Number(value));
    } else if (spec.multiple) {
      values.set(name, [...((values.get(name) as string[] | undefined) ?? []), value]);
    } else {
      values.set(name, value);
    }
  }
  for (const [name, spec] of Object.entries(EDGE_PROXY_FLAG_SPECS)) {
    if (spec.required && !values.has(name)) return undefined;
    if (values.has(name) && spec.dependsOn?.some((other) => !values.has(other))) return undefined;
  }
  const value = <T>(name: string): T => (values.get(name) ?? EDGE_PROXY_FLAG_SPECS[name]!.default) as T;
  return {
    flags: {
      kubeconfig: value('kubeconfig'),
      listen: value('listen'),
      'metrics-listen': value('metrics-listen'),
      'cache-dir': value('cache-dir'),
      'cache-max-bytes': value('cache-max-bytes'),
      'cache-max-entries': value('cache-max-entries'),
      'tls-cert': value('tls-cert'),
      'tls-key': value('tls-key'),
      'client-ca-file': value('client-ca-file'),
      'client-cert-map': [...value<readonly string[]>('client-cert-map')],
      'health-interval': value('health-interval'),
      'k3s-supervisor': values.get('k3s-supervisor') === true ? true : undefined,
      site: value('site'),
    },
    json: values.get('json') === true,
    verbose: values.get('verbose') === true,
    logFile: value('log-file'),
  };
}

/** What the entry point tells the lean path. */
export interface AgentFastPathOptions {
  /** edgeadm's version, for the run log's first line. */
  version: string;
}

/**
 * Runs `agent edge-proxy` without oclif and returns the exit code, or returns
 * undefined (having done nothing) when `argv` is not an invocation it takes.
 */
export async function runAgentFastPath(argv: string[], options: AgentFastPathOptions): Promise<number | undefined> {
  const args = edgeProxyArgs(argv);
  const invocation = args === undefined ? undefined : parseEdgeProxyArgs(args);
  if (args === undefined || invocation === undefined) return undefined;

  const redactor = new Redactor();
  const firstLine = `edgeadm ${options.version} ${EDGE_PROXY_COMMAND_ID} ${args.join(' ')}`.trim();
  let runLog: RunLog | undefined;
  try {
    runLog = openCommandRunLog({
      commandId: EDGE_PROXY_COMMAND_ID,
      file: invocation.logFile,
      verbose: invocation.verbose,
      redactor,
    });
    runLog.info(firstLine);
    const result = await runEdgeProxyAgent(invocation.flags, {
      logger: runLog,
      announce: (line) => {
        if (!invocation.json) process.stderr.write(`${line}\n`);
      },
    });
    if (invocation.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    runLog.info('done');
    runLog.close();
    return 0;
  } catch (error) {
    // As BaseCommand.catch: log the failure, render it once, exit with its code.
    const failure = toEdgeadmError(error, EDGE_PROXY_COMMAND_ID);
    if (!runLog) {
      try {
        runLog = RunLog.open({ commandId: EDGE_PROXY_COMMAND_ID, redactor });
        runLog.info(firstLine);
      } catch {
        runLog = undefined;
      }
    }
    runLog?.error(`${failure.code}: ${failure.message}`);
    const cause = failure.cause ?? failure;
    if (cause instanceof Error && cause.stack) runLog?.debug(cause.stack);
    if (invocation.json) {
      process.stdout.write(`${JSON.stringify(errorDocument(failure, redactor, runLog?.path), null, 2)}\n`);
    } else {
      process.stderr.write(`${renderErrorText(failure, redactor, styleFor(process.stderr), runLog?.path)}\n`);
    }
    runLog?.close();
    return failure.exitCode;
  }
}
