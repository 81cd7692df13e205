/**
 * ShellHost: the part of a {@link Host} that is the same for every real
 * machine. Given one primitive, "run this argv with this stdin and send its
 * output here", it builds exec (with env, cwd, timeout and sudo), file
 * transfers, file queries and facts from portable shell commands, so that
 * LocalHost and SshHost behave identically.
 */
import { Readable, Writable } from 'node:stream';
import { EdgeadmError } from '../errors.js';
import { silentLogger, type Logger } from '../log/run-log.js';
import { factsFromRaw, runFactsScript, type HostFacts, type RawFacts } from './facts.js';
import { getFile, putFile, remoteExists, remoteSha256, remoteStat, type TransferShell } from './file-transfer.js';
import {
  MAX_CAPTURED_OUTPUT_BYTES,
  type ExecOptions,
  type ExecResult,
  type FactsOptions,
  type FileStat,
  type GetOptions,
  type GetResult,
  type Host,
  type PutOptions,
  type PutResult,
  type PutSource,
  type ReadOptions,
} from './host.js';
import { OutputCapture } from './output-capture.js';
import {
  SUDO_PROBE_SCRIPT,
  TIMEOUT_EXIT_CODES,
  TIMEOUT_KILL_GRACE_SECONDS,
  buildCommandArgv,
  sudoPasswordPrefix,
  type SudoMode,
} from './shell.js';

/**
 * How much longer than a command's timeout the transport waits before it
 * stops the command itself: the host's `timeout` rounds up to whole seconds
 * and then allows the KILL grace.
 */
export const TRANSPORT_TIMEOUT_MARGIN_MS = (TIMEOUT_KILL_GRACE_SECONDS + 1) * 1000;

/**
 * How long facts are reused without asking the host again. Reuse also ends
 * with the first command that may change the host (see {@link ShellHost.facts}).
 */
export const FACTS_REUSE_MS = 60_000;

/** How much of a command the debug log shows. */
const LOGGED_COMMAND_CHARS = 200;
/** How much of a failed command's stderr the debug log shows (its end). */
const LOGGED_STDERR_CHARS = 2_000;

/** One process to run, as the transport sees it. */
export interface RawCommand {
  argv: string[];
  /** Everything the process reads; EOF after it. */
  stdin: Readable | Buffer | undefined;
  /** Receives stdout, with backpressure; ended when the process ends. */
  stdout: Writable;
  /** Receives stderr; ended when the process ends. */
  stderr: Writable;
  timeoutMs: number | undefined;
}

/** Stdin read from a local file from a byte offset, which the transport may read itself (in another process). */
export interface FileInput {
  path: string;
  start: number;
  /** Bytes from `start` to the end. */
  size: number;
  /** Told the bytes of the file sent so far, in batches. */
  onBytes(count: number): void;
}

/** A raw command whose stdin is `stdinPrefix` (the sudo password line), then a file. */
export interface RawFileCommand extends Omit<RawCommand, 'stdin'> {
  stdinPrefix: Buffer | undefined;
  file: FileInput;
}

/** How a raw command ended. */
export interface RawOutcome {
  exitCode: number | null;
  signal?: string;
  timedOut: boolean;
}

/** Settings every shell-backed host takes. */
export interface ShellHostOptions {
  /** Password for sudo, when the login user's sudo asks for one. */
  sudoPassword?: string;
  logger?: Logger;
}

/** A Host built on a "run this argv" primitive. */
export abstract class ShellHost implements Host {
  abstract readonly name: string;
  protected readonly logger: Logger;
  readonly #sudoPassword: string | undefined;
  #sudoMode: Promise<SudoMode> | undefined;
  /** The last facts run, while it may still stand for the host (see {@link facts}). */
  #facts: { run: Promise<RawFacts>; startedAt: number } | undefined;
  /** Bumped by every command that may change the host: a facts run from before it is not kept. */
  #changeCount = 0;

  protected constructor(options: ShellHostOptions) {
    this.#sudoPassword = options.sudoPassword;
    this.logger = options.logger ?? silentLogger;
  }

  /** Runs one process; rejects only when it could not be run or the transport failed mid-way. */
  protected abstract runRaw(command: RawCommand): Promise<RawOutcome>;

  /**
   * Whether the transport sends this file itself ({@link runRawWithFile}),
   * rather than read it from a stream in this process.
   */
  protected sendsFileItself(_input: FileInput): boolean {
    return false;
  }

  /** Runs one process whose stdin is a file the transport reads itself; see {@link sendsFileItself}. */
  protected runRawWithFile(_command: RawFileCommand): Promise<RawOutcome> {
    return Promise.reject(new Error('internal: this host does not send files itself'));
  }

  abstract close(): Promise<void>;

  async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    if (!options.readOnly) this.#noteChange();
    return this.#run(command, options, undefined);
  }

  /** The shell that the file-transfer code drives. */
  protected get transferShell(): TransferShell {
    return {
      name: this.name,
      run: (script, io) =>
        this.#run(
          script,
          {
            ...(io.sudo === undefined ? {} : { sudo: io.sudo }),
            ...(io.stdin === undefined ? {} : { stdin: io.stdin }),
            ...(io.description === undefined ? {} : { description: io.description }),
          },
          io.stdout,
        ),
      runWithFile: (script, io) =>
        this.sendsFileItself(io.file)
          ? this.#run(
              script,
              {
                ...(io.sudo === undefined ? {} : { sudo: io.sudo }),
                ...(io.description === undefined ? {} : { description: io.description }),
              },
              undefined,
              io.file,
            )
          : undefined,
    };
  }

  async put(source: PutSource, path: string, options: PutOptions = {}): Promise<PutResult> {
    this.#noteChange();
    return putFile(this.transferShell, source, path, options);
  }

  async get(path: string, destination: string | Writable, options: GetOptions = {}): Promise<GetResult> {
    return getFile(this.transferShell, path, destination, options);
  }

  async exists(path: string, options: ReadOptions = {}): Promise<boolean> {
    return remoteExists(this.transferShell, path, options);
  }

  async stat(path: string, options: ReadOptions = {}): Promise<FileStat | undefined> {
    return remoteStat(this.transferShell, path, options);
  }

  async sha256(path: string, options: ReadOptions = {}): Promise<string | undefined> {
    return remoteSha256(this.transferShell, path, options);
  }

  /**
   * The host's facts. One run of the facts script serves every call until
   * something may have changed the host: a command not marked `readOnly`, an
   * upload, or {@link FACTS_REUSE_MS}. A workflow that asks when it connects
   * and again in its preflight checks so costs the host one run, and facts
   * asked for after it changed the host are fresh. The ports asked for are
   * judged from the listening sockets that run saw.
   */
  async facts(options: FactsOptions = {}): Promise<HostFacts> {
    const now = Date.now();
    if (this.#facts === undefined || now - this.#facts.startedAt > FACTS_REUSE_MS) {
      const changeCount = this.#changeCount;
      const entry = { run: runFactsScript(this), startedAt: now };
      this.#facts = entry;
      entry.run.then(
        () => {
          // Something changed the host while the script ran: do not reuse it.
          if (this.#changeCount !== changeCount && this.#facts === entry) this.#facts = undefined;
        },
        () => {
          if (this.#facts === entry) this.#facts = undefined;
        },
      );
    }
    return factsFromRaw(await this.#facts.run, options);
  }

  /** A command that may change the host is about to run: facts collected before it no longer stand. */
  #noteChange(): void {
    this.#changeCount++;
    this.#facts = undefined;
  }

  async #run(
    command: string,
    options: ExecOptions,
    stdoutSink: Writable | undefined,
    file?: FileInput,
  ): Promise<ExecResult> {
    const sudo = options.sudo ? await this.#resolveSudo() : undefined;
    const argv = buildCommandArgv({
      command,
      ...(options.env === undefined ? {} : { env: options.env }),
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
      ...(sudo === undefined ? {} : { sudo }),
    });
    const passwordLine = sudo === 'password' ? sudoPasswordPrefix(this.#sudoPassword!) : undefined;
    let stdin: Readable | Buffer | undefined =
      typeof options.stdin === 'string' ? Buffer.from(options.stdin, 'utf8') : options.stdin;
    if (passwordLine !== undefined) stdin = prependPassword(passwordLine, stdin);
    const stdout = new OutputCapture(MAX_CAPTURED_OUTPUT_BYTES);
    const stderr = new OutputCapture(MAX_CAPTURED_OUTPUT_BYTES);
    this.logger.debug(
      `[${this.name}] run${sudo && sudo !== 'root' ? ' (sudo)' : ''}: ${options.description ?? summarize(command)}`,
    );
    const started = Date.now();
    const raw = {
      argv,
      stdout: stdoutSink ?? captureWritable(stdout),
      stderr: captureWritable(stderr),
      // The host's own `timeout` acts first; this is the backstop for hosts without one.
      timeoutMs: options.timeoutMs === undefined ? undefined : options.timeoutMs + TRANSPORT_TIMEOUT_MARGIN_MS,
    };
    const outcome =
      file === undefined
        ? await this.runRaw({ ...raw, stdin })
        : await this.runRawWithFile({ ...raw, stdinPrefix: passwordLine, file });
    // Stopped by the host's `timeout`: its exit code, once the time was up.
    const isStoppedOnHost =
      options.timeoutMs !== undefined &&
      Date.now() - started >= options.timeoutMs &&
      (TIMEOUT_EXIT_CODES as readonly (number | null)[]).includes(outcome.exitCode);
    const timedOut = outcome.timedOut || isStoppedOnHost;
    const result: ExecResult = {
      command,
      exitCode: timedOut ? null : outcome.exitCode,
      stdout: stdout.text(),
      stderr: stderr.text(),
    };
    if (outcome.signal !== undefined) result.signal = outcome.signal;
    if (timedOut) result.timedOut = true;
    if (stdout.truncated || stderr.truncated) result.truncated = true;
    if (result.exitCode !== 0) {
      this.logger.debug(
        `[${this.name}] exit ${result.exitCode ?? result.signal ?? 'none'}: ${result.stderr.trim().slice(-LOGGED_STDERR_CHARS)}`,
      );
    }
    return result;
  }

  /** Finds out once per host how to become root, and checks the sudo password. */
  async #resolveSudo(): Promise<SudoMode> {
    this.#sudoMode ??= this.#probeSudo().catch((error: unknown) => {
      this.#sudoMode = undefined;
      throw error;
    });
    return this.#sudoMode;
  }

  async #probeSudo(): Promise<SudoMode> {
    const probe = await this.#run(SUDO_PROBE_SCRIPT, {}, undefined);
    const answer = probe.stdout.trim();
    if (probe.exitCode !== 0 || !['root', 'nopasswd', 'password', 'nosudo'].includes(answer)) {
      throw new EdgeadmError(`cannot find out how to become root on ${this.name}: ${probe.stderr.trim()}`, {
        code: 'E_SUDO_PROBE',
      });
    }
    if (answer === 'nosudo') {
      throw new EdgeadmError(`sudo is not installed on ${this.name}, and the login user is not root`, {
        code: 'E_SUDO_MISSING',
        hints: ['Log in as root (--host root@…), or install sudo on the host.'],
      });
    }
    if (answer !== 'password') return answer as SudoMode;
    if (this.#sudoPassword === undefined) {
      throw new EdgeadmError(`sudo on ${this.name} needs a password, and none was given`, {
        code: 'E_SUDO_PASSWORD_REQUIRED',
        hints: [
          'Pass it with --sudo-password-file FILE or the EDGEADM_SUDO_PASSWORD environment variable.',
          'Or allow the user passwordless sudo (NOPASSWD) on the host.',
        ],
      });
    }
    const check = await this.#runCapture(
      buildCommandArgv({ command: 'true', sudo: 'password' }),
      sudoPasswordPrefix(this.#sudoPassword),
    );
    if (check.exitCode !== 0) {
      throw new EdgeadmError(`sudo on ${this.name} refused the password: ${lastLine(check.stderr)}`, {
        code: 'E_SUDO_AUTH',
        hints: [
          'Check the password given with --sudo-password-file or EDGEADM_SUDO_PASSWORD.',
          'Check that the user may use sudo on the host (sudoers).',
        ],
      });
    }
    return 'password';
  }

  /** Runs an argv with stdin and captures stderr. */
  async #runCapture(argv: string[], stdin: Buffer | undefined): Promise<{ exitCode: number | null; stderr: string }> {
    const stdout = new OutputCapture(MAX_CAPTURED_OUTPUT_BYTES);
    const stderr = new OutputCapture(MAX_CAPTURED_OUTPUT_BYTES);
    const outcome = await this.runRaw({
      argv,
      stdin,
      stdout: captureWritable(stdout),
      stderr: captureWritable(stderr),
      timeoutMs: undefined,
    });
    return { exitCode: outcome.exitCode, stderr: stderr.text() };
  }
}

function captureWritable(capture: OutputCapture): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      capture.push(chunk);
      callback();
    },
  });
}

/** The sudo password line, then the command's own stdin, as one stream that keeps backpressure. */
function prependPassword(prefix: Buffer, stdin: Readable | Buffer | undefined): Readable | Buffer {
  if (stdin === undefined) return prefix;
  if (Buffer.isBuffer(stdin)) return Buffer.concat([prefix, stdin]);
  const source = stdin;
  return Readable.from(
    (async function* () {
      yield prefix;
      for await (const chunk of source) yield chunk as Buffer;
    })(),
    { objectMode: false },
  );
}

/** A command for the log: its first line, shortened. */
function summarize(command: string): string {
  const lines = command.split('\n');
  const first = lines[0]!.length > LOGGED_COMMAND_CHARS ? `${lines[0]!.slice(0, LOGGED_COMMAND_CHARS)}…` : lines[0]!;
  return lines.length > 1 ? `${first} (+${lines.length - 1} lines)` : first;
}

function lastLine(text: string): string {
  const lines = text.trim().split('\n');
  return lines[lines.length - 1] || 'no message';
}
