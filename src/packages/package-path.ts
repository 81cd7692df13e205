/**
 * The one definition of a path that an install package may hold.
 *
 * A package path is relative, uses `/` as separator, has no empty, `.` or
 * `..` component, and each component uses only the POSIX portable filename
 * characters plus `+ @ = , ~`. Packages (binaries, image tarballs, CNI
 * plugins, unit files) never need more, and the narrow set closes a whole
 * class of tricks where two tar readers (edgeadm's and the host's) would read
 * one name differently: backslashes, drive prefixes such as `c:`, control
 * characters, Unicode look-alikes.
 *
 * The same rules apply to manifest paths, archive entries and the files
 * `package build` collects, so a package that builds also verifies.
 */

/** Longest package path, bytes. */
export const MAX_PACKAGE_PATH_BYTES = 1024;
/** Longest single path component, bytes (the common filesystem limit). */
export const MAX_PATH_COMPONENT_BYTES = 255;

const COMPONENT = /^[A-Za-z0-9._+@=,~-]+$/;

/** The outcome of checking a path: the canonical form, or why it is refused. */
export type PathCheck = { ok: true; path: string } | { ok: false; reason: string };

/**
 * Checks a path as written in a manifest or built from a directory walk. It
 * must already be canonical: no `./` prefix, no trailing `/`.
 */
export function checkPackagePath(path: string): PathCheck {
  if (path.length === 0) return { ok: false, reason: 'the path is empty' };
  if (Buffer.byteLength(path) > MAX_PACKAGE_PATH_BYTES) {
    return { ok: false, reason: `the path is longer than ${MAX_PACKAGE_PATH_BYTES} bytes` };
  }
  if (path.startsWith('/')) return { ok: false, reason: 'the path is absolute' };
  for (const component of path.split('/')) {
    if (component === '') return { ok: false, reason: 'the path has an empty component ("//" or a trailing "/")' };
    if (component === '..') return { ok: false, reason: 'the path has a ".." component' };
    if (component === '.') return { ok: false, reason: 'the path has a "." component' };
    if (Buffer.byteLength(component) > MAX_PATH_COMPONENT_BYTES) {
      return { ok: false, reason: `a path component is longer than ${MAX_PATH_COMPONENT_BYTES} bytes` };
    }
    if (!COMPONENT.test(component)) {
      return {
        ok: false,
        reason: 'the path has a character outside letters, digits and . _ - + @ = , ~',
      };
    }
  }
  return { ok: true, path };
}

/**
 * Checks the path of a tar entry and returns its canonical form. One leading
 * `./` (what `tar -C dir ./x` writes) is allowed and removed, and a directory
 * may end with one `/`; GNU tar and edgeadm read both the same way. Nothing
 * else is normalised: a repeated `./`, `//`, a `/` after a file name (which
 * makes GNU tar create a directory) and the archive root itself (`./`, whose
 * mode GNU tar would give to the directory it unpacks into) are refused.
 */
export function checkEntryPath(raw: string, isDirectory: boolean): PathCheck {
  let path = raw.startsWith('./') ? raw.slice(2) : raw;
  if (isDirectory && path.endsWith('/')) path = path.slice(0, -1);
  if (path === '' || path === '.') {
    return { ok: false, reason: 'the entry is the archive root; its mode would apply to the unpack directory' };
  }
  return checkPackagePath(path);
}

/** The parent directories of a package path, outermost first: `a/b/c` → `a`, `a/b`. */
export function parentDirectories(path: string): string[] {
  const parts = path.split('/');
  const parents: string[] = [];
  for (let i = 1; i < parts.length; i++) parents.push(parts.slice(0, i).join('/'));
  return parents;
}
