/**
 * Kubernetes versions as clusters report them: `v1.32.1`, k3s's
 * `v1.32.1+k3s1`, a pre-release `v1.33.0-rc.1`. Parsing and ordering are
 * pure, so the skew policy (skew.ts) and its property tests need no I/O.
 *
 * Order: major, minor and patch as numbers; then a pre-release comes before
 * its release (`v1.33.0-rc.1` < `v1.33.0`, as semver orders them); then, for
 * the same Kubernetes version, k3s's release number (`+k3s1` < `+k3s2`: k3s
 * ships a fix of its own as the next `+k3sN` of the same Kubernetes patch).
 * Other build metadata (`+sim`, a vendor's tag) does not order: two versions
 * that differ only there are the same version.
 */
import { ValidationError } from '../../errors.js';

/** A parsed Kubernetes version. */
export interface KubeVersion {
  major: number;
  minor: number;
  patch: number;
  /** `rc.1` of `v1.33.0-rc.1`; undefined for a release. */
  preRelease?: string;
  /** `1` of `+k3s1`; undefined when the version is not a k3s release. */
  k3sRelease?: number;
  /** The version as given (trimmed), for messages. */
  text: string;
}

const VERSION = /^v?(\d{1,4})\.(\d{1,4})\.(\d{1,4})(?:-([0-9A-Za-z.-]{1,64}))?(?:\+([0-9A-Za-z.-]{1,64}))?$/;
const K3S_BUILD = /^k3s(\d{1,4})$/;

/** Parses a version; undefined when `text` is not one. */
export function tryParseKubeVersion(text: string): KubeVersion | undefined {
  const trimmed = text.trim();
  const match = VERSION.exec(trimmed);
  if (!match) return undefined;
  const [, major, minor, patch, preRelease, build] = match;
  const k3s = build === undefined ? undefined : K3S_BUILD.exec(build)?.[1];
  return {
    major: Number(major),
    minor: Number(minor),
    patch: Number(patch),
    ...(preRelease === undefined ? {} : { preRelease }),
    ...(k3s === undefined ? {} : { k3sRelease: Number(k3s) }),
    text: trimmed,
  };
}

/**
 * Parses a version.
 *
 * @throws {ValidationError} `E_UPGRADE_VERSION` naming `what` (the package, a node) when it is not one.
 */
export function parseKubeVersion(text: string, what: string): KubeVersion {
  const version = tryParseKubeVersion(text);
  if (version === undefined) {
    throw new ValidationError(`${what} reports ${JSON.stringify(text)}, which is not a Kubernetes version`, {
      code: 'E_UPGRADE_VERSION',
      hints: ['A Kubernetes version looks like v1.32.1 (k3s: v1.32.1+k3s1).'],
    });
  }
  return version;
}

/** Negative, zero or positive as `a` comes before, with or after `b` (see the module comment). */
export function compareKubeVersions(a: KubeVersion, b: KubeVersion): number {
  if (a.major !== b.major) return a.major - b.major;
  if (a.minor !== b.minor) return a.minor - b.minor;
  if (a.patch !== b.patch) return a.patch - b.patch;
  if (a.preRelease !== b.preRelease) {
    if (a.preRelease === undefined) return 1;
    if (b.preRelease === undefined) return -1;
    return comparePreRelease(a.preRelease, b.preRelease);
  }
  return (a.k3sRelease ?? 0) - (b.k3sRelease ?? 0);
}

/** Semver's pre-release order: dot-separated fields, numbers numerically and before words. */
function comparePreRelease(a: string, b: string): number {
  const left = a.split('.');
  const right = b.split('.');
  for (let index = 0; index < Math.max(left.length, right.length); index += 1) {
    const x = left[index];
    const y = right[index];
    if (x === undefined) return -1;
    if (y === undefined) return 1;
    const isXNumber = /^\d+$/.test(x);
    const isYNumber = /^\d+$/.test(y);
    if (isXNumber && isYNumber && Number(x) !== Number(y)) return Number(x) - Number(y);
    if (isXNumber !== isYNumber) return isXNumber ? -1 : 1;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

/** How many minor versions `a` is ahead of `b` (negative when behind); a major apart counts as far apart. */
export function minorsAhead(a: KubeVersion, b: KubeVersion): number {
  // No Kubernetes 2 exists; a major step is never one minor step.
  return a.major === b.major ? a.minor - b.minor : (a.major - b.major) * 1000;
}

/** `v1.32` for messages. */
export function minorOf(version: KubeVersion): string {
  return `v${version.major}.${version.minor}`;
}
