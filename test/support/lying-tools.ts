/**
 * Host tools that lie, for the tests of what edgeadm installs: a script
 * bind-mounted over the system's own tool (`/usr/bin/<tool>`, which
 * `/bin/<tool>` is on a merged-/usr system) in one test host's private
 * mount namespace, so that edgeadm meets it however it calls the tool (by
 * name through root's PATH, or by absolute path). The real tool stays
 * reachable for the script as `/opt/real-<tool>` (a tmpfs of that host).
 * Nothing of this reaches the machine the tests run on.
 */
import type { TestHost, TestHosts } from './test-hosts.js';

/** Where the real tool is kept while the lying one covers it. */
export function realTool(tool: string): string {
  return `/opt/real-${tool}`;
}

/**
 * Covers `/usr/bin/<tool>` on `host` with `body` (a POSIX shell script
 * without its `#!` line; "$@" are the tool's arguments). Returns what puts
 * the real tool back.
 */
export async function plantLyingTool(
  env: TestHosts,
  host: TestHost,
  tool: string,
  body: string,
): Promise<() => Promise<void>> {
  const lying = `/opt/lying-${tool}`;
  await env.run(
    host,
    [
      'set -e',
      `if ! mountpoint -q /usr/bin/${tool}; then cp /usr/bin/${tool} ${realTool(tool)}; fi`,
      `cat > ${lying} <<'EDGEADM_LYING_TOOL'`,
      '#!/bin/sh',
      body,
      'EDGEADM_LYING_TOOL',
      `chmod 755 ${lying}`,
      `mountpoint -q /usr/bin/${tool} || mount --bind ${lying} /usr/bin/${tool}`,
    ].join('\n'),
  );
  return () => liftLyingTool(env, host, tool);
}

/**
 * Uncovers the system's `tool` on `host` again, if a lying one covers it.
 * Lazily: a lying tool still running (a stalled copy) keeps its file open.
 */
export async function liftLyingTool(env: TestHosts, host: TestHost, tool: string): Promise<void> {
  await env.run(host, `if mountpoint -q /usr/bin/${tool}; then umount -l /usr/bin/${tool}; fi`);
}

/**
 * A copying tool (`cp`, `install`) that copies, then appends a line to what
 * it wrote whenever the source is a file of an unpacked install package:
 * the copy that an install or a swap makes of the package's binary is then
 * not the manifest's bytes. Every other copy is honest.
 */
export function toolThatTampersPackageCopies(tool: 'cp' | 'install'): string {
  return [
    `${realTool(tool)} "$@" || exit $?`,
    'case "$*" in',
    '  */var/lib/edgeadm/packages/*) for last; do :; done; if [ -f "$last" ]; then printf "echo tampered\\n" >> "$last"; fi ;;',
    'esac',
  ].join('\n');
}
