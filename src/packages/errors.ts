/**
 * Typed errors for install packages.
 *
 * Every refusal of a package is a {@link PackageError}: a validation error
 * (exit 3) with a stable code, `details.entry` naming the archive entry (or
 * manifest field) at fault, and a hint. Callers and `--json` consumers key
 * on the code; people read the message, which always names the entry.
 */
import { EdgeadmError, ExitCode, ValidationError, isEdgeadmError } from '../errors.js';

/** Entry names in messages and details are cut to this many characters: a hostile archive can carry 1 MiB paths. */
export const MAX_REPORTED_ENTRY_CHARS = 512;

/** The stable codes of package refusals. */
export const PackageErrorCode = {
  /** manifest.json missing, not first, not JSON, or with a bad field. */
  Manifest: 'E_PACKAGE_MANIFEST',
  /** A file's content or size differs from its manifest entry. */
  Checksum: 'E_PACKAGE_CHECKSUM',
  /** A file's mode differs from the manifest, or carries setuid/setgid/sticky bits. */
  Mode: 'E_PACKAGE_MODE',
  /** An absolute path, a `..` or `.` component, or characters outside the allowed set. */
  UnsafePath: 'E_PACKAGE_UNSAFE_PATH',
  /** A symbolic or hard link: packages never hold links. */
  Link: 'E_PACKAGE_LINK',
  /** A device, FIFO or any entry type other than a regular file or directory. */
  SpecialFile: 'E_PACKAGE_SPECIAL_FILE',
  /** The same path twice in the archive or the manifest. */
  Duplicate: 'E_PACKAGE_DUPLICATE',
  /** An entry, the total or the entry count over a limit. */
  TooLarge: 'E_PACKAGE_TOO_LARGE',
  /** Not gzip, truncated, bad tar headers, or data the format does not allow. */
  Corrupt: 'E_PACKAGE_CORRUPT',
  /** A file in the archive that the manifest does not list. */
  Unlisted: 'E_PACKAGE_UNLISTED',
  /** A file the manifest lists that the archive does not hold. */
  MissingFile: 'E_PACKAGE_MISSING_FILE',
  /** The package file or URL does not exist. */
  NotFound: 'E_PACKAGE_NOT_FOUND',
  /** `package build`: the source directory cannot be packaged as it is. */
  Source: 'E_PACKAGE_SOURCE',
  /** Extraction target already exists. */
  DestinationExists: 'E_PACKAGE_DEST_EXISTS',
  /** The tree a host unpacked differs from the manifest (checked before anything is installed). */
  HostMismatch: 'E_PACKAGE_HOST_MISMATCH',
  /** A file installed from the package on a host does not have the manifest's SHA-256. */
  InstalledMismatch: 'E_PACKAGE_INSTALLED_MISMATCH',
  /** The copy of a package's file staged beside its target on a host does not have the expected SHA-256 (nothing replaced). */
  StagedMismatch: 'E_PACKAGE_STAGED_MISMATCH',
  /** A package's bin/ holds a name its distribution does not install (it could shadow a host tool). */
  UnexpectedBinary: 'E_PACKAGE_UNEXPECTED_BINARY',
  /** The package's architecture is not the host's. */
  Arch: 'E_PACKAGE_ARCH',
  /** `package build`: the source lacks a file its distribution needs. */
  Incomplete: 'E_PACKAGE_INCOMPLETE',
  /** A trusted key is pinned and the package carries no signature. */
  Unsigned: 'E_PACKAGE_UNSIGNED',
  /** The package's signature is malformed, or does not verify over its manifest with any trusted key. */
  Signature: 'E_PACKAGE_SIGNATURE',
} as const;

/** One of the {@link PackageErrorCode} values. */
export type PackageErrorCodeValue = (typeof PackageErrorCode)[keyof typeof PackageErrorCode];

/** The "try this" line for each code, shown under the message. */
const DEFAULT_HINTS: Record<PackageErrorCodeValue, string> = {
  E_PACKAGE_MANIFEST: 'Rebuild the package with "edgeadm package build"; it writes manifest.json as the first entry.',
  E_PACKAGE_CHECKSUM:
    'The package is damaged or was altered after it was built. Download or copy it again, or rebuild it.',
  E_PACKAGE_MODE: 'Rebuild the package with "edgeadm package build"; packages carry plain 0777-style permissions only.',
  E_PACKAGE_UNSAFE_PATH:
    'Package paths are relative, without "." or ".." components, using letters, digits and . _ - + @ = , ~ only. Do not use this package.',
  E_PACKAGE_LINK:
    'Packages never contain symbolic or hard links. Do not use this package; rebuild it from regular files.',
  E_PACKAGE_SPECIAL_FILE:
    'Packages hold regular files only (no devices, FIFOs or other entry types). Do not use this package.',
  E_PACKAGE_DUPLICATE: 'Each path may appear once. Do not use this package; rebuild it with "edgeadm package build".',
  E_PACKAGE_TOO_LARGE:
    'Packages are bounded in size and entry count so that a hostile one cannot exhaust this machine; the message names the limit. Split a genuine package this large.',
  E_PACKAGE_CORRUPT: 'The file is not an intact edgeadm package (.tar.gz). Download or copy it again.',
  E_PACKAGE_UNLISTED: 'Every file must be listed in manifest.json. Do not use this package; rebuild it.',
  E_PACKAGE_MISSING_FILE: 'The archive is incomplete. Download or copy it again, or rebuild it.',
  E_PACKAGE_NOT_FOUND: 'Check the path or URL of the package.',
  E_PACKAGE_SOURCE: 'Fix the source directory and run "edgeadm package build" again.',
  E_PACKAGE_DEST_EXISTS: 'Remove the directory first, or extract to a new one.',
  E_PACKAGE_HOST_MISMATCH:
    "The host's tar unpacked something other than what edgeadm verified. Check the host's tar and disk, and do not use this package there until the cause is known.",
  E_PACKAGE_INSTALLED_MISMATCH:
    'Something changed the installed file, or the disk is failing. Check the host, then run the command again to reinstall it.',
  E_PACKAGE_STAGED_MISMATCH:
    "The host's cp, its disk, or another writer changed the copy before it was installed; the installed file was left as it was. Check the host's coreutils and disk, then run the command again.",
  E_PACKAGE_UNEXPECTED_BINARY:
    'A package installs only the binaries its distribution uses (SECURITY.md, "What a package may install"). Rebuild the package without the other files under bin/.',
  E_PACKAGE_ARCH:
    "Use the install package built for the host's architecture (edgeadm package inspect shows a package's arch).",
  E_PACKAGE_INCOMPLETE: 'Add the missing files to the source directory and run "edgeadm package build" again.',
  E_PACKAGE_UNSIGNED:
    'Do not install it: ask whoever built it for a signed package ("edgeadm package build --sign-key", or "edgeadm package sign"), and check that the key pinned with --trusted-key is theirs.',
  E_PACKAGE_SIGNATURE:
    'Do not install it: someone other than the holder of the trusted key made or changed this package. Get the package again from its builder; if the key was rotated, pin the new public key (SECURITY.md, "Rotating a signing key").',
};

/** What a package error carries besides its code and message. */
export interface PackageErrorOptions {
  /** The archive entry or manifest path at fault; always shown in the message too. */
  entry?: string;
  /** More structured detail for `--json` (never secrets). */
  details?: Record<string, unknown>;
  /** Replaces the default hint of the code. */
  hints?: string[];
  cause?: unknown;
}

/** A package was refused. Validation error: exit code 3. */
export class PackageError extends ValidationError {
  declare readonly code: PackageErrorCodeValue;
  /** The entry at fault, when there is one. */
  readonly entry: string | undefined;

  constructor(code: PackageErrorCodeValue, message: string, options: PackageErrorOptions = {}) {
    const entry = options.entry === undefined ? undefined : truncate(options.entry);
    super(message, {
      code,
      hints: options.hints ?? [DEFAULT_HINTS[code]],
      cause: options.cause,
      details: { ...(entry === undefined ? {} : { entry }), ...options.details },
    });
    this.name = 'PackageError';
    this.entry = entry;
  }
}

/**
 * The same error with `package <file>: ` in front of its message and the file
 * in its details, so that every refusal says which file it is about. Errors
 * that are not edgeadm errors pass through unchanged.
 */
export function inPackage(error: unknown, file: string): unknown {
  if (!isEdgeadmError(error)) return error;
  const message = `package ${file}: ${error.message}`;
  const details = { ...error.details, file };
  if (error instanceof PackageError) {
    return new PackageError(error.code, message, {
      ...(error.entry === undefined ? {} : { entry: error.entry }),
      details,
      hints: error.hints,
      cause: error.cause,
    });
  }
  return new EdgeadmError(message, {
    code: error.code,
    exitCode: error.exitCode,
    hints: error.hints,
    cause: error.cause,
    details,
  });
}

/** True when `error` is a {@link PackageError} with this code (for tests and callers). */
export function isPackageError(error: unknown, code?: PackageErrorCodeValue): error is PackageError {
  return error instanceof PackageError && (code === undefined || error.code === code);
}

/**
 * A download failed for a reason that is not the package's fault (network,
 * server error). Exit code 1: retrying may help.
 */
export function downloadError(
  message: string,
  options: { url: string; cause?: unknown; hints?: string[] },
): EdgeadmError {
  return new EdgeadmError(message, {
    code: 'E_PACKAGE_DOWNLOAD',
    exitCode: ExitCode.General,
    hints: options.hints ?? [
      'Check that this machine can reach the URL (edgeadm downloads packages itself, then pushes them to the hosts).',
    ],
    cause: options.cause,
    details: { url: options.url },
  });
}

/** Quotes an entry name for a message, escaping anything unprintable so that a hostile name cannot drive the terminal. */
export function quoteEntry(name: string): string {
  return JSON.stringify(truncate(name));
}

function truncate(name: string): string {
  return name.length > MAX_REPORTED_ENTRY_CHARS ? `${name.slice(0, MAX_REPORTED_ENTRY_CHARS)}…` : name;
}
