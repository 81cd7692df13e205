/**
 * Reading the files a distribution writes on a host (CA, kubeconfigs) and
 * waiting for them to appear, through the Host interface.
 */
import { EdgeadmError } from '../errors.js';
import type { Host } from '../hosts/host.js';

/** How often a host is asked whether a file has appeared. */
export const FILE_POLL_INTERVAL_MS = 500;

function quote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** A text file of the host, read as root. */
export async function readHostFile(host: Host, path: string): Promise<string> {
  const result = await host.exec(`cat ${quote(path)}`, { sudo: true, readOnly: true });
  if (result.exitCode !== 0) {
    throw new EdgeadmError(`cannot read ${path} on ${host.name}: ${result.stderr.trim() || 'no such file'}`, {
      code: 'E_HOST_FILE_MISSING',
      details: { host: host.name, path },
    });
  }
  return result.stdout;
}

/** Waits until every path exists on the host. */
export async function waitForHostFiles(
  host: Host,
  paths: readonly string[],
  options: { timeoutMs: number; what: string },
): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const missing: string[] = [];
    for (const path of paths) if (!(await host.exists(path, { sudo: true }))) missing.push(path);
    if (missing.length === 0) return;
    if (Date.now() > deadline) {
      throw new EdgeadmError(
        `${options.what} did not write ${missing.join(', ')} on ${host.name} within ${options.timeoutMs / 1000} s`,
        {
          code: 'E_WAIT_TIMEOUT',
          hints: [
            'Look at the service log on the host (journalctl -u <unit>, or the log under /var/lib/edgeadm/services).',
          ],
        },
      );
    }
    await new Promise((resolve) => setTimeout(resolve, FILE_POLL_INTERVAL_MS));
  }
}
