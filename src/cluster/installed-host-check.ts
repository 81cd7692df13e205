/**
 * `host check` and `fleet check` on a host edgeadm already set up: the
 * ports its own running control plane or node service holds are in use by
 * design, as init's and join's preflight already accept on a re-run
 * (preflight-phase.ts), so they are not failures there.
 */
import { checkHost, type HostCheckOptions, type HostCheckReport } from '../hosts/host-check.js';
import type { Host } from '../hosts/host.js';
import { summarizePreflight } from '../hosts/preflight.js';
import { DirectServiceManager, SystemdServiceManager } from '../hosts/service-manager.js';
import { DEFAULT_DISTRIBUTION, distributionFor } from './distributions/index.js';
import { loadState } from './state.js';

/** Runs the host's checks; a port held by the service edgeadm installed there for this role passes. */
export async function checkClusterHost(host: Host, options: HostCheckOptions): Promise<HostCheckReport> {
  const report = await checkHost(host, options);
  const isPortFailure = (id: string, status: string): boolean => status === 'fail' && id.startsWith('port-');
  if (!report.checks.some((check) => isPortFailure(check.id, check.status))) return report;
  const state = await loadState(host).catch(() => undefined);
  if (state?.role !== options.role) return report;
  const unit = distributionFor(state.distribution ?? DEFAULT_DISTRIBUTION).serviceUnit(options.role).name;
  const serviceManager = state.serviceManager === 'direct' ? new DirectServiceManager() : new SystemdServiceManager();
  if (!(await serviceManager.isActive(host, unit).catch(() => false))) return report;
  const checks = report.checks.map((check) =>
    isPortFailure(check.id, check.status)
      ? {
          ...check,
          status: 'pass' as const,
          reason: `in use by ${unit}, which edgeadm installed: this host already is a ${options.role}`,
        }
      : check,
  );
  const summary = summarizePreflight(checks);
  return { ...report, checks, summary, isFit: summary.fail === 0 };
}
