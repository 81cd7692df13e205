/**
 * The check of a package as a host unpacked it: the second side of "what is
 * installed is what was verified".
 *
 * `package verify` refuses every archive GNU tar could read differently, but
 * the host's tar is another program on another machine. So after unpacking
 * and before installing anything, one host command lists the unpacked tree
 * ({@link unpackedTreeListingCommand}) and {@link checkUnpackedTree} compares
 * it with the manifest: every listed file present as a regular file with the
 * manifest's mode and SHA-256, manifest.json itself unchanged, directories
 * only where a listed file needs them, and nothing else. Pure: the caller
 * runs the command and throws the error.
 */
import { SYSTEM_TOOLS } from '../hosts/system-tools.js';
import { PackageError, PackageErrorCode, quoteEntry } from './errors.js';
import { MANIFEST_PATH, SIGNATURE_ENTRY_PATH, modeBits, modeString, type PackageManifest } from './manifest.js';
import { parentDirectories } from './package-path.js';

/** Ends the NUL-separated listing: two NULs never occur inside it, since no record is empty. */
const LISTING_END = '\u0000\u0000';
/** How many differences an error spells out (all go to its details, up to {@link MAX_REPORTED_PROBLEMS}). */
const MAX_PROBLEMS_IN_MESSAGE = 3;
const MAX_REPORTED_PROBLEMS = 50;

/**
 * The host command that lists the tree under the current directory: first every entry as
 * `<type> <octal mode> <path>` NUL-terminated (GNU find; NUL because a name
 * may hold anything, even a newline), then two NULs, then `sha256sum` of
 * every regular file (lines `<hash>  ./<path>`; a name sha256sum has to
 * escape is refused anyway, since no package path needs escaping). The
 * host's own find and sha256sum, by absolute path (hosts/system-tools.ts).
 */
export function unpackedTreeListingCommand(): string {
  return [
    `${SYSTEM_TOOLS.find} . -mindepth 1 -printf '%y %m %P\\0'`,
    `printf '\\0'`,
    `${SYSTEM_TOOLS.find} . -mindepth 1 -type f -exec ${SYSTEM_TOOLS.sha256sum} -- {} +`,
  ].join(' && ');
}

/** What the unpacked tree may hold besides the package: a file edgeadm writes there after the check. */
export interface UnpackedTreeOptions {
  /** A top-level file allowed in the tree with any content (the unpack marker), if any. */
  extraFile?: string;
  /** SHA-256 of the package's signature entry, which the tree then holds as manifest.json.sig (mode 0644). */
  signatureSha256?: string;
}

/** One difference between the tree and the manifest. */
export interface TreeProblem {
  path: string;
  expected: string;
  found: string;
}

/**
 * Compares a listing (the output of {@link unpackedTreeListingCommand}) with
 * the manifest. Returns the differences; empty means the tree is exactly the
 * package.
 */
export function compareUnpackedTree(
  listing: string,
  manifest: PackageManifest,
  manifestSha256: string,
  options: UnpackedTreeOptions = {},
): TreeProblem[] {
  const problems: TreeProblem[] = [];
  const end = listing.indexOf(LISTING_END);
  if (end < 0) return [{ path: '.', expected: 'a complete listing', found: 'output cut short' }];
  const entries = new Map<string, { type: string; mode: number }>();
  const records = listing
    .slice(0, end + 1)
    .split('\u0000')
    .slice(0, -1);
  for (const record of records) {
    const match = /^([a-zA-Z]) ([0-7]{1,6}) (.+)$/s.exec(record);
    if (!match) {
      problems.push({ path: record, expected: 'a listing record', found: JSON.stringify(record) });
      continue;
    }
    const [, type = '', mode = '', path = ''] = match;
    if (entries.has(path)) problems.push({ path, expected: 'one entry', found: 'two' });
    entries.set(path, { type, mode: Number.parseInt(mode, 8) });
  }
  const hashes = new Map<string, string>();
  for (const line of listing.slice(end + LISTING_END.length).split('\n')) {
    if (line === '') continue;
    const match = /^([0-9a-f]{64}) {2}\.\/([A-Za-z0-9._+@=,~/-]+)$/.exec(line);
    if (!match) {
      problems.push({
        path: line.slice(0, 200),
        expected: 'a sha256sum line',
        found: JSON.stringify(line.slice(0, 200)),
      });
      continue;
    }
    hashes.set(match[2] ?? '', match[1] ?? '');
  }

  const expectedFiles = new Map<string, { sha256: string; mode: number }>();
  expectedFiles.set(MANIFEST_PATH, { sha256: manifestSha256, mode: 0o644 });
  if (options.signatureSha256 !== undefined) {
    expectedFiles.set(SIGNATURE_ENTRY_PATH, { sha256: options.signatureSha256, mode: 0o644 });
  }
  const directories = new Set<string>();
  for (const file of manifest.files) {
    expectedFiles.set(file.path, { sha256: file.sha256, mode: modeBits(file.mode) });
    for (const parent of parentDirectories(file.path)) directories.add(parent);
  }
  for (const [path, want] of expectedFiles) {
    const entry = entries.get(path);
    if (entry === undefined) {
      problems.push({ path, expected: 'a regular file', found: 'nothing' });
    } else if (entry.type !== 'f') {
      problems.push({ path, expected: 'a regular file', found: typeName(entry.type) });
    } else {
      if (entry.mode !== want.mode) {
        problems.push({ path, expected: `mode ${modeString(want.mode)}`, found: `mode ${octal(entry.mode)}` });
      }
      const sha256 = hashes.get(path);
      if (sha256 !== want.sha256) {
        problems.push({ path, expected: `SHA-256 ${want.sha256}`, found: sha256 ? `SHA-256 ${sha256}` : 'no SHA-256' });
      }
    }
  }
  for (const [path, entry] of entries) {
    if (expectedFiles.has(path)) continue;
    if (entry.type === 'd' && directories.has(path)) continue;
    if (path === options.extraFile && entry.type === 'f') continue;
    problems.push({ path, expected: 'nothing (the manifest does not list it)', found: typeName(entry.type) });
  }
  return problems;
}

/**
 * Throws a {@link PackageError} (`E_PACKAGE_HOST_MISMATCH`, exit 3) naming
 * the first differences, expected against found, when `problems` is not
 * empty.
 */
export function throwOnTreeProblems(
  problems: TreeProblem[],
  where: { packageName: string; host: string; dir: string },
): void {
  if (problems.length === 0) return;
  const shown = problems
    .slice(0, MAX_PROBLEMS_IN_MESSAGE)
    .map((p) => `${quoteEntry(p.path)}: expected ${p.expected}, found ${p.found}`)
    .join('; ');
  const more =
    problems.length > MAX_PROBLEMS_IN_MESSAGE ? ` (and ${problems.length - MAX_PROBLEMS_IN_MESSAGE} more)` : '';
  throw new PackageError(
    PackageErrorCode.HostMismatch,
    `the package ${where.packageName} as unpacked on ${where.host} in ${where.dir} is not what was verified: ${shown}${more}; it was removed and nothing is installed from it`,
    {
      entry: problems[0]?.path ?? '',
      details: { host: where.host, dir: where.dir, problems: problems.slice(0, MAX_REPORTED_PROBLEMS) },
    },
  );
}

function typeName(type: string): string {
  const names: Record<string, string> = {
    f: 'a regular file',
    d: 'a directory',
    l: 'a symbolic link',
    p: 'a FIFO',
    s: 'a socket',
    c: 'a character device',
    b: 'a block device',
  };
  return names[type] ?? `an entry of type ${type}`;
}

function octal(mode: number): string {
  return mode.toString(8).padStart(4, '0');
}
