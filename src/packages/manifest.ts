/**
 * The install package manifest: its type, its canonical JSON form, and the
 * pure validation of a parsed manifest.
 *
 * `manifest.json` is the first entry of every package. It says what the
 * package is (name, distribution, Kubernetes version, arch, creation time)
 * and lists every regular file with its SHA-256, size and mode. Directories
 * are not listed: they are implied by the file paths.
 *
 * Validation is strict (unknown fields are refused) and every error names the
 * field at fault, e.g. `files[3].sha256`. A newer format bumps
 * `formatVersion`, which older edgeadm versions refuse with a clear message.
 */
import { PackageError, PackageErrorCode, quoteEntry } from './errors.js';
import { DEFAULT_PACKAGE_LIMITS, type PackageLimits } from './limits.js';
import { checkPackagePath, parentDirectories } from './package-path.js';

/** The manifest format this edgeadm writes and reads. */
export const MANIFEST_FORMAT_VERSION = 1;
/** Where the manifest lives in a package: the root, as the first entry. */
export const MANIFEST_PATH = 'manifest.json';
/** Where the signature of the manifest lives: the second entry, never listed in the manifest (signature.ts). */
export const SIGNATURE_ENTRY_PATH = 'manifest.json.sig';

/** The Kubernetes distributions a package can carry. */
export const DISTRIBUTIONS = ['k3s', 'kubeadm'] as const;
/** `k3s` or `kubeadm`. */
export type Distribution = (typeof DISTRIBUTIONS)[number];

/**
 * The files a package must hold for its distribution: what init and join
 * install from it (the distribution drivers' `requiredBinaries`, under
 * `bin/`; a unit test keeps the two lists equal). `package build` refuses a
 * source without them, so that a package that builds can install.
 */
export const REQUIRED_PACKAGE_FILES: Readonly<Record<Distribution, readonly string[]>> = {
  k3s: ['bin/k3s'],
  kubeadm: ['bin/kubeadm', 'bin/kubelet', 'bin/containerd', 'bin/containerd-shim-runc-v2', 'bin/runc'],
};

/**
 * The names a package may carry under `bin/`, per distribution: its own
 * binaries, the runtime's, kubectl and crictl, and `edgeadm` for edge nodes.
 * Everything under bin/ is installed into /usr/local/bin, which comes before
 * /usr/bin on root's PATH, so any other name (`sha256sum`, `tar`, `cp`,
 * `sudo`) could shadow a host tool for every later command as root. Init,
 * join, `upgrade apply` and `upgrade node` refuse such a package before
 * anything reaches the host (issue #40); SECURITY.md lists these names.
 */
export const ALLOWED_PACKAGE_BINARIES: Readonly<Record<Distribution, readonly string[]>> = {
  k3s: ['k3s', 'kubectl', 'crictl', 'ctr', 'edgeadm'],
  kubeadm: [
    'kubeadm',
    'kubelet',
    'kubectl',
    'containerd',
    'containerd-shim-runc-v2',
    'runc',
    'ctr',
    'crictl',
    'edgeadm',
  ],
};

/** The files under `bin/` of `manifest` that its distribution does not install (see {@link ALLOWED_PACKAGE_BINARIES}). */
export function unexpectedBinaries(manifest: Pick<PackageManifest, 'distribution' | 'files'>): string[] {
  const allowed = ALLOWED_PACKAGE_BINARIES[manifest.distribution];
  return manifest.files
    .map((file) => file.path)
    .filter((path) => path.startsWith('bin/') && !allowed.includes(path.slice('bin/'.length)));
}

/** Where a package keeps its airgap image archives. */
export const AIRGAP_IMAGES_DIR = 'images/';

/**
 * The airgap image archives each distribution imports, by name ending.
 * k3s imports `.tar`, `.tar.gz` and `.tar.zst` (among others) from its
 * agent images directory at start (k3s docs, "Air-Gap Install", manually
 * deploy images: /var/lib/rancher/k3s/agent/images/; k3s
 * pkg/agent/containerd, the preload of that directory). kubeadm packages are
 * imported by edgeadm itself with `ctr images import` (runtime-phase.ts),
 * one uncompressed `.tar` each.
 */
export const AIRGAP_IMAGE_SUFFIXES: Readonly<Record<Distribution, readonly string[]>> = {
  k3s: ['.tar', '.tar.gz', '.tar.zst'],
  kubeadm: ['.tar'],
};

/** Whether `path` is an airgap image archive of a `distribution` package: directly under images/, a known ending. */
export function isAirgapImage(path: string, distribution: Distribution): boolean {
  if (!path.startsWith(AIRGAP_IMAGES_DIR)) return false;
  const name = path.slice(AIRGAP_IMAGES_DIR.length);
  if (name.includes('/')) return false;
  return AIRGAP_IMAGE_SUFFIXES[distribution].some((suffix) => name.endsWith(suffix) && name.length > suffix.length);
}

/** The CPU architectures a package can be built for (Kubernetes / Go names). */
export const ARCHITECTURES = ['amd64', 'arm64'] as const;
/** `amd64` or `arm64`. */
export type Architecture = (typeof ARCHITECTURES)[number];

/** One regular file of a package. */
export interface PackageFile {
  /** Canonical package path (see package-path.ts), e.g. `bin/k3s`. */
  path: string;
  /** Lowercase hex SHA-256 of the content. */
  sha256: string;
  /** Content length, bytes. */
  size: number;
  /** Permission bits as four octal digits, e.g. `"0755"`. Never setuid, setgid or sticky. */
  mode: string;
}

/** What `manifest.json` holds. */
export interface PackageManifest {
  formatVersion: typeof MANIFEST_FORMAT_VERSION;
  /** Package name, e.g. `edge-k3s-v1.30.4-amd64`. */
  name: string;
  distribution: Distribution;
  /** Kubernetes version with its `v`, e.g. `v1.30.4` or `v1.30.4+k3s1`. */
  kubernetesVersion: string;
  arch: Architecture;
  /** Creation time, ISO 8601 UTC, e.g. `2024-05-01T12:00:00.000Z`. */
  createdAt: string;
  /** Every regular file, sorted by path, in archive order. */
  files: PackageFile[];
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$/;
const KUBERNETES_VERSION = /^v\d{1,4}\.\d{1,4}\.\d{1,4}(?:[-+][0-9A-Za-z.+-]{1,64})?$/;
const CREATED_AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,3})?Z$/;
const SHA256 = /^[0-9a-f]{64}$/;
const MODE = /^0[0-7]{3}$/;
const TOP_LEVEL_FIELDS = ['formatVersion', 'name', 'distribution', 'kubernetesVersion', 'arch', 'createdAt', 'files'];
const FILE_FIELDS = ['path', 'sha256', 'size', 'mode'];

/** The permission bits of a manifest mode string (`"0755"` → 0o755). */
export function modeBits(mode: string): number {
  return Number.parseInt(mode, 8);
}

/** The manifest mode string for permission bits (0o755 → `"0755"`). */
export function modeString(bits: number): string {
  return `0${(bits & 0o777).toString(8).padStart(3, '0')}`;
}

/** Whether `version` is a Kubernetes version as a manifest holds it (with its `v`). */
export function isKubernetesVersion(version: string): boolean {
  return KUBERNETES_VERSION.test(version);
}

/** Whether `name` is a valid package name. */
export function isPackageName(name: string): boolean {
  return NAME.test(name);
}

/**
 * Validates a parsed manifest and returns it typed. Throws a
 * {@link PackageError} naming the field: `E_PACKAGE_MANIFEST` for shape and
 * value errors, `E_PACKAGE_UNSAFE_PATH` for a bad file path,
 * `E_PACKAGE_DUPLICATE` for a path listed twice, `E_PACKAGE_TOO_LARGE` for
 * sizes or counts over `limits`.
 */
export function validateManifest(value: unknown, limits: PackageLimits = DEFAULT_PACKAGE_LIMITS): PackageManifest {
  const top = requireObject(value, 'manifest');
  refuseUnknownFields(top, TOP_LEVEL_FIELDS, '');
  if (top.formatVersion !== MANIFEST_FORMAT_VERSION) {
    throw manifestError(
      'formatVersion',
      typeof top.formatVersion === 'number'
        ? `format version ${top.formatVersion} is not supported; this edgeadm reads version ${MANIFEST_FORMAT_VERSION}`
        : `must be the number ${MANIFEST_FORMAT_VERSION}`,
      typeof top.formatVersion === 'number'
        ? ['Use the edgeadm version that built this package, or a newer one.']
        : undefined,
    );
  }
  const name = requireString(top, 'name', NAME, 'a name of letters, digits and . _ + - (at most 128 characters)');
  const distribution = requireEnum(top, 'distribution', DISTRIBUTIONS);
  const kubernetesVersion = requireString(top, 'kubernetesVersion', KUBERNETES_VERSION, 'a version such as v1.30.4');
  const arch = requireEnum(top, 'arch', ARCHITECTURES);
  const createdAt = requireString(top, 'createdAt', CREATED_AT, 'an ISO 8601 UTC time such as 2024-05-01T12:00:00Z');
  if (Number.isNaN(Date.parse(createdAt)))
    throw manifestError('createdAt', `${quoteEntry(createdAt)} is not a real date`);

  if (!Array.isArray(top.files)) throw manifestError('files', 'must be an array');
  // The manifest itself is one more entry in the archive.
  if (top.files.length + 1 > limits.maxEntries) {
    throw new PackageError(
      PackageErrorCode.TooLarge,
      `manifest field files lists ${top.files.length} files; the limit is ${limits.maxEntries - 1}`,
      { entry: MANIFEST_PATH, details: { field: 'files', limit: limits.maxEntries } },
    );
  }
  const files = top.files.map((file, index) => validateFile(file, `files[${index}]`, limits));
  checkFileSet(files, limits);
  return { formatVersion: MANIFEST_FORMAT_VERSION, name, distribution, kubernetesVersion, arch, createdAt, files };
}

/** Parses and validates manifest.json bytes. JSON syntax errors are `E_PACKAGE_MANIFEST`. */
export function parseManifest(bytes: Buffer, limits: PackageLimits = DEFAULT_PACKAGE_LIMITS): PackageManifest {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw new PackageError(
      PackageErrorCode.Manifest,
      `${MANIFEST_PATH} is not valid JSON: ${(error as Error).message}`,
      { entry: MANIFEST_PATH, cause: error },
    );
  }
  return validateManifest(parsed, limits);
}

/**
 * The canonical bytes of a manifest: fixed key order, two-space indent, a
 * final newline, files sorted by path. The same manifest always renders to
 * the same bytes, which is what makes package builds reproducible.
 */
export function renderManifest(manifest: PackageManifest): Buffer {
  const canonical: PackageManifest = {
    formatVersion: manifest.formatVersion,
    name: manifest.name,
    distribution: manifest.distribution,
    kubernetesVersion: manifest.kubernetesVersion,
    arch: manifest.arch,
    createdAt: manifest.createdAt,
    files: [...manifest.files]
      .sort((a, b) => comparePaths(a.path, b.path))
      .map((file) => ({ path: file.path, sha256: file.sha256, size: file.size, mode: file.mode })),
  };
  return Buffer.from(`${JSON.stringify(canonical, null, 2)}\n`, 'utf8');
}

/** Package path order: by UTF-16 code unit, independent of locale (paths are ASCII anyway). */
export function comparePaths(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function validateFile(value: unknown, field: string, limits: PackageLimits): PackageFile {
  const file = requireObject(value, field);
  refuseUnknownFields(file, FILE_FIELDS, `${field}.`, typeof file.path === 'string' ? file.path : undefined);
  if (typeof file.path !== 'string') throw manifestError(`${field}.path`, 'must be a string');
  const path = file.path;
  const check = checkPackagePath(path);
  if (!check.ok) {
    throw new PackageError(PackageErrorCode.UnsafePath, `manifest lists ${quoteEntry(path)}: ${check.reason}`, {
      entry: path,
      details: { field: `${field}.path` },
    });
  }
  // Also nothing under it: unpacking would need manifest.json to be a directory too.
  if (path === MANIFEST_PATH || path.startsWith(`${MANIFEST_PATH}/`)) {
    throw manifestError(`${field}.path`, `${MANIFEST_PATH} is reserved for the manifest itself`, undefined, path);
  }
  // The signature cannot be listed in what it signs.
  if (path === SIGNATURE_ENTRY_PATH || path.startsWith(`${SIGNATURE_ENTRY_PATH}/`)) {
    throw manifestError(
      `${field}.path`,
      `${SIGNATURE_ENTRY_PATH} is reserved for the package's signature`,
      undefined,
      path,
    );
  }
  const sha256 = requireString(file, 'sha256', SHA256, '64 lowercase hex digits', `${field}.`, path);
  const size = file.size;
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) {
    throw manifestError(`${field}.size`, 'must be a non-negative integer', undefined, path);
  }
  if (size > limits.maxEntryBytes) {
    throw new PackageError(
      PackageErrorCode.TooLarge,
      `manifest lists ${quoteEntry(path)} with ${size} bytes; the limit per file is ${limits.maxEntryBytes}`,
      { entry: path, details: { field: `${field}.size`, size, limit: limits.maxEntryBytes } },
    );
  }
  const mode = requireString(
    file,
    'mode',
    MODE,
    'four octal digits such as "0755" (no setuid, setgid or sticky bit)',
    `${field}.`,
    path,
  );
  return { path, sha256, size, mode };
}

/** Paths are unique, no file is also a directory of another, and the total fits. */
function checkFileSet(files: PackageFile[], limits: PackageLimits): void {
  const paths = new Set<string>();
  let total = 0;
  files.forEach((file, index) => {
    if (paths.has(file.path)) {
      throw new PackageError(PackageErrorCode.Duplicate, `manifest lists ${quoteEntry(file.path)} twice`, {
        entry: file.path,
        details: { field: `files[${index}].path` },
      });
    }
    paths.add(file.path);
    total += file.size;
  });
  for (const [index, file] of files.entries()) {
    const parent = parentDirectories(file.path).find((dir) => paths.has(dir));
    if (parent !== undefined) {
      throw manifestError(
        `files[${index}].path`,
        `${quoteEntry(file.path)} lies under ${quoteEntry(parent)}, which is listed as a file`,
        undefined,
        file.path,
      );
    }
  }
  if (total > limits.maxTotalBytes) {
    throw new PackageError(
      PackageErrorCode.TooLarge,
      `manifest lists ${total} bytes of files; the limit is ${limits.maxTotalBytes}`,
      { entry: MANIFEST_PATH, details: { field: 'files', total, limit: limits.maxTotalBytes } },
    );
  }
}

function requireObject(value: unknown, field: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw manifestError(field, 'must be an object');
  return value as Record<string, unknown>;
}

function refuseUnknownFields(object: Record<string, unknown>, known: string[], prefix: string, entry?: string): void {
  const unknown = Object.keys(object).find((key) => !known.includes(key));
  if (unknown !== undefined) throw manifestError(`${prefix}${unknown}`, 'is not a manifest field', undefined, entry);
}

function requireString(
  object: Record<string, unknown>,
  key: string,
  pattern: RegExp,
  expected: string,
  prefix = '',
  entry?: string,
): string {
  const value = object[key];
  if (typeof value !== 'string' || !pattern.test(value)) {
    const got = typeof value === 'string' ? quoteEntry(value) : value === undefined ? 'missing' : typeof value;
    throw manifestError(`${prefix}${key}`, `must be ${expected} (got ${got})`, undefined, entry);
  }
  return value;
}

function requireEnum<T extends string>(object: Record<string, unknown>, key: string, allowed: readonly T[]): T {
  const value = object[key];
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    const got = typeof value === 'string' ? quoteEntry(value) : value === undefined ? 'missing' : typeof value;
    throw manifestError(key, `must be one of ${allowed.join(', ')} (got ${got})`);
  }
  return value as T;
}

/** A manifest shape error, naming the field; `entry` is the listed file it concerns, else the manifest. */
function manifestError(field: string, problem: string, hints?: string[], entry?: string): PackageError {
  return new PackageError(PackageErrorCode.Manifest, `${MANIFEST_PATH} field ${field} ${problem}`, {
    entry: entry ?? MANIFEST_PATH,
    details: { field },
    ...(hints === undefined ? {} : { hints }),
  });
}
