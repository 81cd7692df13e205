/**
 * The safety limits of install packages, in one place.
 *
 * A package comes from outside (a file someone copied, a URL), so reading
 * one must be bounded before its content is trusted: per entry, in total, in
 * entry count, and for the manifest that is held in memory. The defaults fit
 * real packages (k3s airgap images are a few hundred MiB; kubeadm image sets
 * about 1 GiB) with a wide margin. Every limit can be overridden per call.
 */

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** Largest single file in a package. Under the 8 GiB ustar size field, so no reader needs extensions for sizes. */
export const MAX_PACKAGE_ENTRY_BYTES = 4 * GiB;
/** Largest sum of file sizes in a package (uncompressed). */
export const MAX_PACKAGE_TOTAL_BYTES = 16 * GiB;
/** Most entries (files, directories and the manifest) in a package. */
export const MAX_PACKAGE_ENTRIES = 10_000;
/** Largest manifest.json; it is held in memory while it is parsed. */
export const MAX_MANIFEST_BYTES = 4 * MiB;
/** Largest package download (compressed). */
export const MAX_PACKAGE_DOWNLOAD_BYTES = 16 * GiB;

/**
 * Tar bytes allowed per entry beyond its content: header blocks, a pax
 * extended header, padding. Bounds the decompressed stream so that a small
 * gzip bomb of headers or padding cannot run for ever.
 */
export const TAR_OVERHEAD_PER_ENTRY_BYTES = 4096;
/**
 * Largest pax extended header: a path (at most 1024 bytes by the package path
 * rules) and three times fit many times over; anything larger is not a package.
 */
export const MAX_PAX_HEADER_BYTES = 4096;
/** Bytes allowed after the end-of-archive marker (tar writers pad to their record size; readers ignore it). */
export const MAX_TRAILING_BYTES = 1 * MiB;

/** The limits one verification or extraction runs under. */
export interface PackageLimits {
  /** Largest single file, bytes. */
  maxEntryBytes: number;
  /** Largest sum of file sizes, bytes. */
  maxTotalBytes: number;
  /** Most archive entries, the manifest included. */
  maxEntries: number;
  /** Largest manifest.json, bytes. */
  maxManifestBytes: number;
}

/** The defaults, from the constants above. */
export const DEFAULT_PACKAGE_LIMITS: Readonly<PackageLimits> = Object.freeze({
  maxEntryBytes: MAX_PACKAGE_ENTRY_BYTES,
  maxTotalBytes: MAX_PACKAGE_TOTAL_BYTES,
  maxEntries: MAX_PACKAGE_ENTRIES,
  maxManifestBytes: MAX_MANIFEST_BYTES,
});

/** The defaults with some limits overridden. */
export function resolveLimits(overrides: Partial<PackageLimits> = {}): PackageLimits {
  const limits = { ...DEFAULT_PACKAGE_LIMITS, ...overrides };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value < 0)
      throw new RangeError(`package limit ${name} must be a non-negative integer`);
  }
  return limits;
}

/** The most decompressed bytes a package within `limits` can hold: content, tar overhead and trailing padding. */
export function maxDecompressedBytes(limits: PackageLimits): number {
  return (
    limits.maxTotalBytes +
    limits.maxManifestBytes +
    limits.maxEntries * TAR_OVERHEAD_PER_ENTRY_BYTES +
    MAX_TRAILING_BYTES
  );
}
