/**
 * POSIX shell quoting, and how edgeadm turns a command plus its options
 * (env, cwd, sudo) into the argv that a host runs.
 *
 * Every command runs as `sh -c <script>`, so it means the same whatever the
 * login shell of the remote user is. A command with a timeout runs under the
 * host's `timeout` (coreutils or busybox) when it has one that takes `-k`: it
 * kills the command's whole process group, which neither an SSH "signal"
 * request (OpenSSH refuses them for root logins) nor closing the channel does. sudo never sees the password on its
 * command line or in its environment: `-S` reads it from the first line of
 * stdin, `-p ''` silences the prompt and `-k` makes sudo ask every time, so
 * the password line is never left for the command to read as data.
 */

/** Quotes one argument for a POSIX shell. */
export function quoteShellArg(value: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(value)) return value;
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** Quotes and joins an argv into one shell command line. */
export function joinShellArgs(argv: readonly string[]): string {
  return argv.map(quoteShellArg).join(' ');
}

/** The exit code a command gets when its `cwd` does not exist (as `env --chdir` uses). */
export const CWD_MISSING_EXIT_CODE = 125;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** How a command gets root on a host, as found by probing it once. */
export type SudoMode =
  /** Logged in as root: no sudo needed. */
  | 'root'
  /** sudo without a password (NOPASSWD). */
  | 'nopasswd'
  /** sudo that reads the password on stdin. */
  | 'password';

/** Seconds between TERM and KILL when a command's timeout expires on the host. */
export const TIMEOUT_KILL_GRACE_SECONDS = 2;
/** Exit codes of `timeout` when it stopped the command (after TERM, after KILL). */
export const TIMEOUT_EXIT_CODES = [124, 137] as const;

/** What {@link buildCommandArgv} needs. */
export interface CommandSpec {
  command: string;
  env?: Record<string, string>;
  cwd?: string;
  /** Stop the command on the host after this long (rounded up to whole seconds). */
  timeoutMs?: number;
  /** Set when the command must run as root: how to get there. */
  sudo?: SudoMode;
}

/**
 * The argv that runs `spec`: `sh -c <script>`, wrapped in sudo when asked.
 * With `password` mode the caller must send the password and a newline on
 * stdin before anything else (see {@link sudoPasswordPrefix}).
 */
export function buildCommandArgv(spec: CommandSpec): string[] {
  const lines: string[] = [];
  if (spec.cwd !== undefined) lines.push(`cd ${quoteShellArg(spec.cwd)} || exit ${CWD_MISSING_EXIT_CODE}`);
  for (const [name, value] of Object.entries(spec.env ?? {})) {
    if (!ENV_NAME.test(name)) throw new TypeError(`invalid environment variable name: ${JSON.stringify(name)}`);
    lines.push(`export ${name}=${quoteShellArg(value)}`);
  }
  lines.push(spec.command);
  const script = lines.join('\n');
  let shell = ['sh', '-c', script];
  if (spec.timeoutMs !== undefined) {
    const seconds = Math.max(1, Math.ceil(spec.timeoutMs / 1000));
    const grace = TIMEOUT_KILL_GRACE_SECONDS;
    // The script travels as $1, so it is quoted once; without a usable `timeout`, it runs as it is.
    shell = [
      'sh',
      '-c',
      `if timeout -k ${grace} 1 true >/dev/null 2>&1; then exec timeout -k ${grace} ${seconds} sh -c "$1"; else exec sh -c "$1"; fi`,
      'edgeadm-timeout',
      script,
    ];
  }
  switch (spec.sudo ?? 'root') {
    case 'root':
      return shell;
    case 'nopasswd':
      return ['sudo', '-n', '--', ...shell];
    case 'password':
      return ['sudo', '-k', '-S', '-p', '', '--', ...shell];
  }
}

/** The bytes sent ahead of a command's own stdin in `password` sudo mode. */
export function sudoPasswordPrefix(password: string): Buffer {
  return Buffer.from(`${password}\n`, 'utf8');
}

/**
 * A script that prints how this login gets root: `root`, `nopasswd`,
 * `password`, or `nosudo` when sudo is not installed.
 */
export const SUDO_PROBE_SCRIPT = [
  'if [ "$(id -u)" = 0 ]; then echo root; exit 0; fi',
  'command -v sudo >/dev/null 2>&1 || { echo nosudo; exit 0; }',
  'if sudo -k -n true >/dev/null 2>&1; then echo nopasswd; else echo password; fi',
].join('\n');
