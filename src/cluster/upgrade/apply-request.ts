/**
 * `edgeadm upgrade apply`'s one request: built once from the flags and
 * checked with no I/O (the package path, the gate deadline), then passed
 * down as it is, so that a mistake fails before any host is reached.
 */
import { ValidationError } from '../../errors.js';
import type { HostConnectOptions } from '../../hosts/connect.js';
import { parseGoDuration } from '../../trust/duration.js';
import { DEFAULT_GATE_TIMEOUT_MS } from './limits.js';

/** Everything an `upgrade apply` does, parsed. */
export interface UpgradeApplyRequest {
  /** The control plane to upgrade. */
  connect: HostConnectOptions;
  /** `--install-pkg-path`: the new install package, a file or an http(s) URL. */
  packageSource: string;
  /** `--trusted-key`: public key files the package must be signed by (read with the package); none: its origin is not checked. */
  trustedKeyFiles: string[];
  /** `--dry-run`: print the plan, change nothing. */
  isDryRun: boolean;
  /** How long each health gate may take before the upgrade is rolled back (ms). */
  gateTimeoutMs: number;
}

/** What the command layer hands over. */
export interface UpgradeApplyInput {
  connect: HostConnectOptions;
  installPkgPath: string | undefined;
  /** `--trusted-key` files. */
  trustedKeys?: string[] | undefined;
  isDryRun?: boolean | undefined;
  /** A Go duration (`5m`, `90s`). */
  gateTimeout?: string | undefined;
}

/**
 * Builds the request.
 *
 * @throws {ValidationError} `E_USAGE` without a package, `E_DURATION_INVALID`
 * for a malformed or non-positive `--gate-timeout`.
 */
export function parseUpgradeApplyRequest(input: UpgradeApplyInput): UpgradeApplyRequest {
  const source = input.installPkgPath;
  if (source === undefined || source.trim() === '') {
    throw new ValidationError('upgrade apply needs --install-pkg-path, the new install package', {
      code: 'E_USAGE',
      hints: ['Give the new install package: a .tar.gz file or an http(s) URL.'],
    });
  }
  const gateTimeoutMs = input.gateTimeout === undefined ? DEFAULT_GATE_TIMEOUT_MS : parseGoDuration(input.gateTimeout);
  if (gateTimeoutMs <= 0) {
    throw new ValidationError(`--gate-timeout must be positive, not ${input.gateTimeout ?? ''}`, {
      code: 'E_DURATION_INVALID',
    });
  }
  return {
    connect: input.connect,
    packageSource: source,
    trustedKeyFiles: input.trustedKeys ?? [],
    isDryRun: input.isDryRun === true,
    gateTimeoutMs,
  };
}
