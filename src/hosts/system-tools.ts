/**
 * The host's own tools, by absolute path, for every command edgeadm runs to
 * install, check, back up or restore files on a host.
 *
 * Why absolute: an install package puts its binaries into /usr/local/bin,
 * which comes before /usr/bin on root's PATH (Debian's sudo secure_path,
 * systemd's default). Called by name, a `sha256sum`, `tar` or `cp` the package
 * brought (or any other writer of /usr/local/bin) would run edgeadm's own
 * checks of what the package installed (issue #40). These paths hold on
 * merged-/usr systems and on the older split layout alike: coreutils' file
 * tools and tar live in /bin, the rest in /usr/bin.
 */

/** Absolute paths of the tools edgeadm's host-side install and check scripts use. */
export const SYSTEM_TOOLS = {
  cat: '/bin/cat',
  chmod: '/bin/chmod',
  cp: '/bin/cp',
  cut: '/usr/bin/cut',
  find: '/usr/bin/find',
  ls: '/bin/ls',
  mkdir: '/bin/mkdir',
  mv: '/bin/mv',
  rm: '/bin/rm',
  rmdir: '/bin/rmdir',
  sha256sum: '/usr/bin/sha256sum',
  sync: '/bin/sync',
  tar: '/bin/tar',
} as const;

/** A shell pipeline that prints the hex SHA-256 of the file `path` (already shell-quoted), read by the system's sha256sum. */
export function sha256OfFile(quotedPath: string): string {
  return `${SYSTEM_TOOLS.sha256sum} < ${quotedPath} | ${SYSTEM_TOOLS.cut} -c1-64`;
}
