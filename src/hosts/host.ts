/**
 * The `Host` interface: everything edgeadm does on a machine goes through it,
 * whether the machine is this one (LocalHost), one reached over SSH (SshHost)
 * or a plan being recorded (DryRunHost).
 *
 * Commands are POSIX `sh` scripts. An {@link ExecResult} always carries the
 * exit code, stdout and stderr, also when the command failed; only transport
 * failures (the connection dropped, authentication failed) throw.
 */
import type { Readable, Writable } from 'node:stream';
import { EdgeadmError } from '../errors.js';
import type { HostFacts } from './facts.js';

/** How much of each output stream an {@link ExecResult} keeps (the tail, where errors are). */
export const MAX_CAPTURED_OUTPUT_BYTES = 4 * 1024 * 1024;

/** How many lines of output a {@link HostCommandError} message quotes. */
export const ERROR_OUTPUT_LINES = 20;

/** Options of {@link Host.exec}. */
export interface ExecOptions {
  /** Fed to the command's stdin, then EOF. Without it the command reads EOF at once. */
  stdin?: string | Buffer | Readable;
  /**
   * Variables exported before the command runs. They travel inside the command
   * line, so they are visible in the host's process list: pass secrets on
   * stdin instead.
   */
  env?: Record<string, string>;
  /** The command is stopped and the result marked `timedOut` after this long. */
  timeoutMs?: number;
  /** Run as root through `sudo` (a no-op when already root). */
  sudo?: boolean;
  /** Working directory; the command fails with exit code 125 if it does not exist. */
  cwd?: string;
  /** What the command does, in words, for dry-run plans and logs ("install the k3s binary"). */
  description?: string;
  /** The command changes nothing, so a dry run may answer it from a real host. */
  readOnly?: boolean;
}

/** What a command did. Returned for every command that ran, whatever its exit code. */
export interface ExecResult {
  /** The command as passed to `exec` (without edgeadm's sudo and env wrapping). */
  command: string;
  /** The exit status, or null when the command did not exit on its own (signal, timeout). */
  exitCode: number | null;
  stdout: string;
  stderr: string;
  /** The signal that ended the command, when one did ("TERM", "KILL"). */
  signal?: string;
  /** The command ran longer than `timeoutMs` and was stopped. */
  timedOut?: boolean;
  /** Output beyond {@link MAX_CAPTURED_OUTPUT_BYTES} was dropped from the start of stdout or stderr. */
  truncated?: boolean;
  /** Set by a dry-run host: nothing ran. */
  dryRun?: boolean;
}

/** Where {@link Host.put} reads from: a local file path, bytes, or a stream. */
export type PutSource = string | Buffer | Readable;

/** Progress of one transfer. */
export interface TransferProgress {
  /** Bytes sent (or received) in this attempt. */
  bytesTransferred: number;
  /** Where this attempt started (non-zero when an upload resumed). */
  resumedFrom: number;
  /** Size of the whole file, when known. */
  totalBytes: number | undefined;
}

/** Options of {@link Host.put}. */
export interface PutOptions {
  /** Permission bits of the file, 0o644 when not given. */
  mode?: number;
  /** `user` or `user:group`; needs root (use `sudo` when not logged in as root). */
  owner?: string;
  /** Write as root through sudo. */
  sudo?: boolean;
  /** Called as bytes go out (at most every {@link PROGRESS_INTERVAL_BYTES}, and at the end). */
  onProgress?: (progress: TransferProgress) => void;
  /**
   * SHA-256 (hex) of the source, when known. Makes a stream upload
   * skippable, and spares hashing a file again for every host it goes to
   * (see `sha256OfFile`). A Buffer is always hashed by edgeadm. Whatever is
   * given, the host checks the bytes it received against it.
   */
  sha256?: string;
  /** Size of a stream source, for progress. */
  size?: number;
  /** For dry-run plans and logs. */
  description?: string;
}

/** Progress callbacks fire at most this often, in bytes. */
export const PROGRESS_INTERVAL_BYTES = 1024 * 1024;

/** What {@link Host.put} did. */
export interface PutResult {
  path: string;
  sha256: string;
  size: number;
  /** The file already had this content; no data was sent. */
  skipped: boolean;
  /**
   * Bytes of file data sent and written in this call. A small file's bytes
   * travel with the command that compares them, so they count only when
   * they were written (0 when the file was `skipped`).
   */
  bytesSent: number;
  /** The byte offset this call resumed from (0 when it started from the beginning). */
  resumedFrom: number;
  /** Set by a dry-run host: nothing was written. */
  dryRun?: boolean;
}

/** Options of {@link Host.get}. */
export interface GetOptions {
  sudo?: boolean;
  onProgress?: (progress: TransferProgress) => void;
}

/** What {@link Host.get} fetched. */
export interface GetResult {
  /** The local path written, or undefined when the destination was a stream. */
  path: string | undefined;
  sha256: string;
  size: number;
}

/** File metadata, as {@link Host.stat} reports it (links are not followed). */
export interface FileStat {
  type: 'file' | 'directory' | 'symlink' | 'other';
  size: number;
  /** Permission bits, e.g. 0o755. */
  mode: number;
  uid: number;
  gid: number;
  owner: string;
  group: string;
  /** Modification time, milliseconds since the epoch. */
  mtimeMs: number;
}

/** Options of the read-only file queries. */
export interface ReadOptions {
  /** Read as root (for files only root may see). */
  sudo?: boolean;
}

/** Options of {@link Host.facts}. */
export interface FactsOptions {
  /** TCP ports to report as free or in use. */
  ports?: number[];
}

/** A machine edgeadm acts on. */
export interface Host {
  /** How the host is named in messages: `root@10.0.0.5:22`, `local`. */
  readonly name: string;
  /** Runs a POSIX sh script. Throws only when the command could not be run at all. */
  exec(command: string, options?: ExecOptions): Promise<ExecResult>;
  /** Writes a file: to a temporary name first, then renamed into place. Skipped when the content is already there. */
  put(source: PutSource, path: string, options?: PutOptions): Promise<PutResult>;
  /** Fetches a file to a local path (written to a temporary name, then renamed) or a stream. */
  get(path: string, destination: string | Writable, options?: GetOptions): Promise<GetResult>;
  exists(path: string, options?: ReadOptions): Promise<boolean>;
  /** Metadata of a path, or undefined when nothing is there. */
  stat(path: string, options?: ReadOptions): Promise<FileStat | undefined>;
  /** SHA-256 (hex) of a regular file, or undefined when there is none. */
  sha256(path: string, options?: ReadOptions): Promise<string | undefined>;
  facts(options?: FactsOptions): Promise<HostFacts>;
  /** Releases connections; the host may be used again afterwards (it reconnects). */
  close(): Promise<void>;
}

/** A command exited non-zero (or not at all) where success was required. Carries the full result. */
export class HostCommandError extends EdgeadmError {
  readonly result: ExecResult;
  readonly hostName: string;

  constructor(hostName: string, result: ExecResult, description?: string) {
    const what = description ?? firstLine(result.command);
    const how = result.timedOut
      ? 'timed out'
      : result.exitCode === null
        ? `was killed${result.signal ? ` by SIG${result.signal}` : ''}`
        : `exited with code ${result.exitCode}`;
    const output = tailLines(result.stderr.trim() || result.stdout.trim(), ERROR_OUTPUT_LINES);
    super(`on ${hostName}: ${what} ${how}${output ? `:\n${output}` : ''}`, {
      code: result.timedOut ? 'E_HOST_COMMAND_TIMEOUT' : 'E_HOST_COMMAND_FAILED',
      details: { host: hostName, command: result.command, exitCode: result.exitCode, signal: result.signal },
    });
    this.name = 'HostCommandError';
    this.result = result;
    this.hostName = hostName;
  }
}

/** Runs `command` and returns its result, or throws a {@link HostCommandError} unless it exited 0. */
export async function execOrThrow(host: Host, command: string, options: ExecOptions = {}): Promise<ExecResult> {
  const result = await host.exec(command, options);
  if (result.exitCode !== 0) throw new HostCommandError(host.name, result, options.description);
  return result;
}

function firstLine(text: string): string {
  const line = text.split('\n').find((l) => l.trim() !== '') ?? text;
  return line.length > 120 ? `${line.slice(0, 117)}...` : line;
}

function tailLines(text: string, count: number): string {
  const lines = text.split('\n');
  return lines.length <= count ? text : ['...', ...lines.slice(-count)].join('\n');
}
