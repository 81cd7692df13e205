/**
 * Shortened periods for the SIMULATED node agents and node lifecycle, read
 * by the simulations inside a test host. Only tests write this file (on
 * the hosts whose simulations they want faster: /etc is per test host);
 * without it every period is Kubernetes' own. It exists so that a suite
 * can cut a node off for "longer than the eviction window" (40 s of grace
 * plus 300 toleration seconds) in a few seconds of real time, while pods
 * still say `tolerationSeconds: 300` and edgeadm still writes the seconds
 * the operator asked for: one toleration second lasts `tolerationSecondMs`.
 */
import { existsSync, readFileSync } from 'node:fs';

/** Where the simulations look for shortened periods. */
export const SIM_TIMING_FILE = '/etc/edgeadm-sim/timing.json';

/** Every period is optional; each absent one is Kubernetes' default. */
export interface SimTiming {
  /** How often a simulated kubelet posts its node status (the kubelet's is 10 s). */
  heartbeatIntervalMs?: number;
  /** kube-controller-manager's --node-monitor-period (5 s). */
  nodeMonitorPeriodMs?: number;
  /** --node-monitor-grace-period (40 s). */
  nodeMonitorGracePeriodMs?: number;
  /** How long one toleration second lasts (1,000 ms). */
  tolerationSecondMs?: number;
}

/** The simulated k3s agent's own period, apart: suites that set every node lifecycle period need not set it. */
export interface SimAgentTiming {
  /**
   * How long a simulated k3s agent waits for `/readyz` before it ends itself
   * (k3s `util.DefaultAPIServerReadyTimeout`, 15 minutes).
   */
  agentApiServerReadyTimeoutMs?: number;
}

const KEYS = [
  'heartbeatIntervalMs',
  'nodeMonitorPeriodMs',
  'nodeMonitorGracePeriodMs',
  'tolerationSecondMs',
  'agentApiServerReadyTimeoutMs',
] as const;

/**
 * The periods in {@link SIM_TIMING_FILE} (or `path`), checked: positive
 * integers only. An absent file is no change.
 *
 * @throws Error for a file that is not such an object.
 */
export function readSimTiming(path: string = SIM_TIMING_FILE): SimTiming & SimAgentTiming {
  if (!existsSync(path)) return {};
  const parsed = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  const timing: SimTiming & SimAgentTiming = {};
  for (const key of KEYS) {
    const value = parsed[key];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
      throw new Error(`${path}: ${key} must be a positive integer (milliseconds), got ${JSON.stringify(value)}`);
    }
    timing[key] = value;
  }
  return timing;
}
