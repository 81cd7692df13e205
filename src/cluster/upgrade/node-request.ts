/**
 * `edgeadm upgrade node`'s one request: built once from the flags and
 * checked with no I/O (the package, the control plane, the deadlines), then
 * passed down as it is. `fleet upgrade` builds the same request per node.
 */
import { ValidationError } from '../../errors.js';
import type { HostConnectOptions } from '../../hosts/connect.js';
import { parseGoDuration } from '../../trust/duration.js';
import { DEFAULT_GATE_TIMEOUT_MS } from './limits.js';
import { DEFAULT_DRAIN_TIMEOUT_MS } from './node-limits.js';

/** Everything an `upgrade node` does, parsed. */
export interface UpgradeNodeRequest {
  /** The node to upgrade. */
  connect: HostConnectOptions;
  /** The control plane the cluster is read, cordoned and drained through (its admin kubeconfig). */
  controlPlane: HostConnectOptions;
  /** `--install-pkg-path`: the new install package, a file or an http(s) URL. */
  packageSource: string;
  /** `--trusted-key`: public key files the package must be signed by (read with the package); none: its origin is not checked. */
  trustedKeyFiles: string[];
  /** `--force`: Pods that may not be evicted (bare Pods, emptyDir data, a budget's refusal) go anyway. */
  isForced: boolean;
  /** How long the drain may take (ms). */
  drainTimeoutMs: number;
  /** How long the node may take to be Ready at the new version before the rollback (ms). */
  gateTimeoutMs: number;
}

/** What the command layer hands over. */
export interface UpgradeNodeInput {
  connect: HostConnectOptions;
  controlPlane: HostConnectOptions | undefined;
  installPkgPath: string | undefined;
  /** `--trusted-key` files. */
  trustedKeys?: string[] | undefined;
  isForced?: boolean | undefined;
  /** Go durations (`5m`, `90s`). */
  drainTimeout?: string | undefined;
  gateTimeout?: string | undefined;
}

function positiveDuration(text: string | undefined, fallback: number, flag: string): number {
  const ms = text === undefined ? fallback : parseGoDuration(text);
  if (ms <= 0) throw new ValidationError(`${flag} must be positive, not ${text ?? ''}`, { code: 'E_DURATION_INVALID' });
  return ms;
}

/**
 * Builds the request.
 *
 * @throws {ValidationError} `E_USAGE` without a package or a control plane,
 * `E_DURATION_INVALID` for a malformed or non-positive deadline.
 */
export function parseUpgradeNodeRequest(input: UpgradeNodeInput): UpgradeNodeRequest {
  const source = input.installPkgPath;
  if (source === undefined || source.trim() === '') {
    throw new ValidationError('upgrade node needs --install-pkg-path, the new install package', {
      code: 'E_USAGE',
      hints: ['Give the new install package: a .tar.gz file or an http(s) URL.'],
    });
  }
  if (input.controlPlane === undefined) {
    throw new ValidationError('upgrade node needs --control-plane, a control plane of the cluster', {
      code: 'E_USAGE',
      hints: ['The node is cordoned and drained, and its version checked, with that control plane’s admin kubeconfig.'],
    });
  }
  return {
    connect: input.connect,
    controlPlane: input.controlPlane,
    packageSource: source,
    trustedKeyFiles: input.trustedKeys ?? [],
    isForced: input.isForced === true,
    drainTimeoutMs: positiveDuration(input.drainTimeout, DEFAULT_DRAIN_TIMEOUT_MS, '--drain-timeout'),
    gateTimeoutMs: positiveDuration(input.gateTimeout, DEFAULT_GATE_TIMEOUT_MS, '--gate-timeout'),
  };
}
