/**
 * Reading the files a distribution writes on a host (CA, kubeconfigs) and
 * waiting for them to appear, through the Host interface.
 */
import { EdgeadmError } from '../errors.js';
import { HostCommandError, type ExecResult, type Host } from '../hosts/host.js';

/**
 * How often the host looks for the files (on the host itself, in one
 * command, not once per SSH round trip).
 */
export const FILE_POLL_INTERVAL_MS = 100;
/** Longest a single waiting command runs on the host; the wait goes on with a new one until its deadline. */
export const FILE_WAIT_SLICE_MS = 15_000;
/** Exit code of the waiting command when files are still missing at the end of its slice. */
const STILL_MISSING_EXIT = 3;

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

/** Shell that prints each of `$p`'s content on one line (`file <base64>`), or `missing`. */
const PRINT_FILE = `if [ -f "$p" ] && [ -r "$p" ]; then printf 'file '; base64 -w0 < "$p"; echo; else echo missing; fi`;

/** The files {@link PRINT_FILE} printed for `paths`, in order; a missing one fails as {@link readHostFile} does. */
function parsePrintedFiles(host: Host, paths: readonly string[], result: ExecResult): Map<string, string> {
  const lines = result.stdout.split('\n');
  const read = new Map<string, string>();
  for (const [index, path] of paths.entries()) {
    const line = lines[index];
    if (result.exitCode !== 0 || line === undefined || !line.startsWith('file ')) {
      throw new EdgeadmError(`cannot read ${path} on ${host.name}: ${result.stderr.trim() || 'no such file'}`, {
        code: 'E_HOST_FILE_MISSING',
        details: { host: host.name, path },
      });
    }
    read.set(path, Buffer.from(line.slice('file '.length), 'base64').toString('utf8'));
  }
  return read;
}

/**
 * Several text files of the host, read as root in one command (each
 * base64-encoded on the host, so that no content can pass for another
 * file's). A missing or unreadable file fails as {@link readHostFile} does.
 */
export async function readHostFiles(host: Host, paths: readonly string[]): Promise<Map<string, string>> {
  const unique = [...new Set(paths)];
  if (unique.length === 0) return new Map();
  const result = await host.exec(`for p in ${unique.map(quote).join(' ')}; do ${PRINT_FILE}; done`, {
    sudo: true,
    readOnly: true,
    description: `read ${unique.join(', ')}`,
  });
  return parsePrintedFiles(host, unique, result);
}

/**
 * Waits until every path exists on the host. The host watches for them
 * itself, every {@link FILE_POLL_INTERVAL_MS}, in commands of up to
 * {@link FILE_WAIT_SLICE_MS}: a file is seen a tenth of a second after it
 * appears, at the cost of one command, where asking over SSH every half
 * second cost a command each time and a quarter of a second on average.
 */
export async function waitForHostFiles(
  host: Host,
  paths: readonly string[],
  options: { timeoutMs: number; what: string },
): Promise<void> {
  await waitForAndRead(host, paths, { ...options, isRead: false });
}

/**
 * {@link waitForHostFiles}, then their content, read by the same command
 * once they are all there (as {@link readHostFiles} reads them): one round
 * trip fewer than waiting and then reading.
 */
export async function waitForAndReadHostFiles(
  host: Host,
  paths: readonly string[],
  options: { timeoutMs: number; what: string },
): Promise<Map<string, string>> {
  return (await waitForAndRead(host, [...new Set(paths)], { ...options, isRead: true }))!;
}

async function waitForAndRead(
  host: Host,
  paths: readonly string[],
  options: { timeoutMs: number; what: string; isRead: boolean },
): Promise<Map<string, string> | undefined> {
  const deadline = Date.now() + options.timeoutMs;
  const list = paths.map(quote).join(' ');
  const isMissing = 'if [ ! -e "$p" ] && [ ! -L "$p" ]; then';
  for (;;) {
    const sliceMs = Math.max(FILE_POLL_INTERVAL_MS, Math.min(FILE_WAIT_SLICE_MS, deadline - Date.now()));
    const tries = Math.ceil(sliceMs / FILE_POLL_INTERVAL_MS);
    const result = await host.exec(
      [
        'n=0',
        'while :; do',
        '  all=1',
        `  for p in ${list}; do ${isMissing} all=0; fi; done`,
        `  if [ "$all" = 1 ]; then ${options.isRead ? `for p in ${list}; do ${PRINT_FILE}; done; ` : ''}exit 0; fi`,
        '  n=$((n + 1))',
        `  if [ "$n" -ge ${tries} ]; then for p in ${list}; do ${isMissing} printf '%s\\n' "$p"; fi; done; exit ${STILL_MISSING_EXIT}; fi`,
        `  sleep ${FILE_POLL_INTERVAL_MS / 1000} 2>/dev/null || sleep 1`,
        'done',
      ].join('\n'),
      {
        sudo: true,
        readOnly: true,
        // The loop counts its sleeps; this stops it should the host's clock or sleep misbehave.
        timeoutMs: 2 * sliceMs + 5_000,
        description: `wait for ${paths.join(', ')}`,
      },
    );
    if (result.exitCode === 0) return options.isRead ? parsePrintedFiles(host, paths, result) : undefined;
    if (result.exitCode !== STILL_MISSING_EXIT)
      throw new HostCommandError(host.name, result, `wait for ${paths.join(', ')}`);
    if (Date.now() >= deadline) {
      const missing = result.stdout.split('\n').filter((line) => line !== '');
      throw new EdgeadmError(
        `${options.what} did not write ${(missing.length > 0 ? missing : paths).join(', ')} on ${host.name} within ${options.timeoutMs / 1000} s`,
        {
          code: 'E_WAIT_TIMEOUT',
          hints: [
            'Look at the service log on the host (journalctl -u <unit>, or the log under /var/lib/edgeadm/services).',
          ],
        },
      );
    }
  }
}
