/**
 * `host check` as a service: collect a host's facts, including the ports its
 * role needs, and judge them with the preflight checks. The result is one
 * report, used for the human table and for `--json`.
 */
import type { HostFacts } from './facts.js';
import type { Host } from './host.js';
import {
  portsForRole,
  runPreflight,
  summarizePreflight,
  type NodeRole,
  type PreflightResult,
  type PreflightStatus,
} from './preflight.js';

/** What `host check` reports. */
export interface HostCheckReport {
  /** The host as edgeadm reached it (`root@10.0.0.5:22`, `local`). */
  host: string;
  role: NodeRole;
  expectedArch?: string;
  facts: HostFacts;
  checks: PreflightResult[];
  summary: Record<PreflightStatus, number>;
  /** True when no check failed (warnings allowed). */
  isFit: boolean;
}

/** Options of {@link checkHost}. */
export interface HostCheckOptions {
  role: NodeRole;
  expectedArch?: string;
}

/** Collects facts and runs the preflight checks for `role`. */
export async function checkHost(host: Host, options: HostCheckOptions): Promise<HostCheckReport> {
  const facts = await host.facts({ ports: portsForRole(options.role) });
  const checks = runPreflight(facts, options);
  const summary = summarizePreflight(checks);
  return {
    host: host.name,
    role: options.role,
    ...(options.expectedArch === undefined ? {} : { expectedArch: options.expectedArch }),
    facts,
    checks,
    summary,
    isFit: summary.fail === 0,
  };
}
