/**
 * SshHost: a machine reached over SSH, as a {@link Host}. Each command is an
 * `exec` channel on one shared {@link SshConnection}; stdin streams into the
 * channel and output streams out of it, both with backpressure. A connection
 * that drops fails the commands running on it (E_SSH_DISCONNECTED) and is
 * reopened by the next command.
 */
import { Readable, type Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { Client, ClientChannel } from 'ssh2';
import { EdgeadmError } from '../errors.js';
import { joinShellArgs } from './shell.js';
import type { ChildProcess } from 'node:child_process';
import {
  ShellHost,
  type FileInput,
  type RawCommand,
  type RawFileCommand,
  type RawOutcome,
  type ShellHostOptions,
} from './shell-host.js';
import type { SshConnection } from './ssh-connection.js';
import { sshDisconnected } from './ssh-errors.js';
import { hasFreeUploadWorker, runUploadInWorker } from './upload-worker-runner.js';

/** After a timed-out command gets TERM: how long until KILL, and as long again until edgeadm stops waiting. */
export const EXEC_KILL_GRACE_MS = 2_000;

/** How often opening an exec channel is tried before giving up. */
export const CHANNEL_OPEN_ATTEMPTS = 6;
/** First retry delay for a refused channel; it doubles on each retry. */
export const CHANNEL_OPEN_RETRY_DELAY_MS = 25;

/**
 * Uploads of at least this many bytes are sent from a worker process with a
 * connection of their own (see upload-worker-runner.ts). Below it, starting
 * a process and a second SSH handshake cost more than they save.
 */
export const WORKER_UPLOAD_MIN_BYTES = 8 * 1024 * 1024;

/** When uploads go through worker processes. */
export interface UploadWorkerOptions {
  /** Send uploads of at least this many bytes from a worker; `Infinity` never does. Default {@link WORKER_UPLOAD_MIN_BYTES}. */
  minBytes?: number;
  /** Called with each upload's worker process once it started. */
  onWorker?: (worker: ChildProcess) => void;
}

/** What an SshHost is made of. */
export interface SshHostOptions extends ShellHostOptions {
  /** The connection to the host itself. */
  connection: SshConnection;
  /** Bastion connections made only for this host, closed with it (innermost first). */
  ownedJumps?: SshConnection[];
  uploadWorkers?: UploadWorkerOptions;
}

/** A host over SSH. */
export class SshHost extends ShellHost {
  readonly name: string;
  readonly connection: SshConnection;
  readonly #ownedJumps: SshConnection[];
  readonly #uploadWorkers: UploadWorkerOptions;

  constructor(options: SshHostOptions) {
    super(options);
    this.connection = options.connection;
    this.name = options.connection.label;
    this.#ownedJumps = options.ownedJumps ?? [];
    this.#uploadWorkers = options.uploadWorkers ?? {};
  }

  /** Connects now (instead of at the first command), to fail early on auth or host key problems. */
  async connect(): Promise<void> {
    await this.connection.client();
  }

  protected async runRaw(command: RawCommand): Promise<RawOutcome> {
    const commandLine = joinShellArgs(command.argv);
    return this.connection.withChannel(async (client) => {
      const { channel, exit } = await this.#openExecChannel(client, commandLine);
      return this.#drive(channel, exit, command, () => this.connection.isCurrent(client));
    });
  }

  /**
   * A large upload goes through a worker with its own connection, when the
   * host is reached directly, its host key was verified, and a core is free
   * for one more worker (else it runs here, see `maxUploadWorkers`). Through a
   * bastion it stays on this connection (a worker cannot share the
   * bastion's connection, and would need a chain of its own).
   */
  protected override sendsFileItself(input: FileInput): boolean {
    return (
      input.size >= (this.#uploadWorkers.minBytes ?? WORKER_UPLOAD_MIN_BYTES) &&
      this.connection.via === undefined &&
      this.connection.hostKeyFingerprint !== undefined &&
      hasFreeUploadWorker()
    );
  }

  protected override runRawWithFile(command: RawFileCommand): Promise<RawOutcome> {
    this.logger.debug(`[${this.name}] sending ${command.file.path} from a worker process with its own connection`);
    return runUploadInWorker({
      connection: this.connection,
      command,
      ...(this.#uploadWorkers.onWorker === undefined ? {} : { onWorker: this.#uploadWorkers.onWorker }),
    });
  }

  /**
   * Opens an exec channel. sshd frees a finished session a moment after the
   * channel closes, so a new channel can meet MaxSessions even when fewer are
   * open: such refusals are retried with a short backoff.
   */
  async #openExecChannel(client: Client, commandLine: string): Promise<{ channel: ClientChannel; exit: ExitRecord }> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await new Promise((resolve, reject) => {
          try {
            client.exec(commandLine, (error, stream) => {
              if (error) return reject(error);
              // The exit status can arrive in the same packet batch as the
              // exec reply: listen now, not after the promise settles.
              resolve({ channel: stream, exit: recordExit(stream) });
            });
          } catch (error) {
            reject(error);
          }
        });
      } catch (error) {
        if (!this.connection.isCurrent(client)) throw sshDisconnected(this.name, 'starting a command');
        if (attempt >= CHANNEL_OPEN_ATTEMPTS) {
          throw new EdgeadmError(`cannot start a command on ${this.name}: ${(error as Error).message}`, {
            code: 'E_SSH_CHANNEL',
            cause: error,
            hints: ["Check MaxSessions in the host's sshd_config (edgeadm opens up to 8 sessions at once)."],
          });
        }
        await new Promise((resolve) => setTimeout(resolve, CHANNEL_OPEN_RETRY_DELAY_MS * 2 ** (attempt - 1)));
      }
    }
  }

  /** Feeds stdin, drains stdout and stderr, and waits for the exit status and the channel's close. */
  async #drive(
    channel: ClientChannel,
    exit: ExitRecord,
    command: RawCommand,
    isConnected: () => boolean,
  ): Promise<RawOutcome> {
    let timedOut = false;
    let stdinError: Error | undefined;

    channel.pipe(command.stdout);
    channel.stderr.pipe(command.stderr);

    const stdin = command.stdin;
    if (stdin === undefined) {
      channel.end();
    } else if (Buffer.isBuffer(stdin)) {
      channel.end(stdin);
    } else {
      stdin.once('error', (error) => {
        stdinError = error;
        channel.close();
      });
      stdin.pipe(channel);
    }

    // The host's own `timeout` (see shell.ts) normally stops a command first.
    // This is the backstop for hosts without one: SSH "signal" requests, TERM
    // then KILL, then stop waiting for the channel. OpenSSH refuses signals
    // for root logins, so there the command may outlive the channel; the
    // result says it timed out either way.
    const timers: NodeJS.Timeout[] = [];
    let stopWaiting: (() => void) | undefined;
    if (command.timeoutMs !== undefined) {
      timers.push(
        setTimeout(() => {
          timedOut = true;
          signalChannel(channel, 'TERM');
          timers.push(setTimeout(() => signalChannel(channel, 'KILL'), EXEC_KILL_GRACE_MS));
          timers.push(
            setTimeout(() => {
              channel.close();
              stopWaiting?.();
            }, 2 * EXEC_KILL_GRACE_MS),
          );
        }, command.timeoutMs),
      );
    }

    const isClosed = await new Promise<boolean>((resolve) => {
      stopWaiting = () => resolve(false);
      channel.once('close', () => resolve(true));
    });
    for (const timer of timers) clearTimeout(timer);
    if (stdin instanceof Readable) {
      stdin.unpipe(channel);
      stdin.destroy();
    }
    // Let the connection report its own close first, so a drop is told apart from a killed command.
    await new Promise((resolve) => setImmediate(resolve));
    // On close ssh2 ends both output streams, and the pipes end the sinks
    // once everything buffered is written. Only an abandoned channel needs
    // its sinks cut off here.
    if (!isClosed) {
      channel.unpipe(command.stdout);
      channel.stderr.unpipe(command.stderr);
      for (const sink of [command.stdout, command.stderr]) endQuietly(sink);
    }
    await Promise.all([command.stdout, command.stderr].map((sink) => finished(sink).catch(() => undefined)));

    if (stdinError) {
      throw new EdgeadmError(`cannot read the input for a command on ${this.name}: ${stdinError.message}`, {
        code: 'E_HOST_STDIN',
        cause: stdinError,
      });
    }
    if (!exit.hasExited && !timedOut && !isConnected()) throw sshDisconnected(this.name, 'a command was running');
    const outcome: RawOutcome = { exitCode: exit.code, timedOut };
    if (exit.signal !== undefined) outcome.signal = exit.signal;
    return outcome;
  }

  async close(): Promise<void> {
    await this.connection.close();
    for (const jump of this.#ownedJumps) await jump.close();
  }
}

/** How a command on a channel ended, as far as known. */
interface ExitRecord {
  hasExited: boolean;
  code: number | null;
  signal: string | undefined;
}

function recordExit(channel: ClientChannel): ExitRecord {
  const record: ExitRecord = { hasExited: false, code: null, signal: undefined };
  channel.once('exit', (code: number | null, signalName?: string) => {
    record.hasExited = true;
    if (typeof code === 'number') record.code = code;
    else if (signalName) record.signal = signalName.replace(/^SIG/, '');
  });
  return record;
}

/** The parts of ssh2's channel that sending a signal needs. */
interface ChannelInternals {
  _client: { _protocol: { signal(id: number, signal: string): void } };
  outgoing: { id: number; state: string };
}

/**
 * Sends a "signal" request (RFC 4254, 6.9). ssh2's public `signal()` refuses
 * once stdin is closed, but a command without input has its stdin closed at
 * once; the request itself is valid until the channel closes.
 */
function signalChannel(channel: ClientChannel, name: string): void {
  const internals = channel as unknown as ChannelInternals;
  const state = internals.outgoing?.state;
  if (state !== 'open' && state !== 'eof') return;
  try {
    internals._client._protocol.signal(internals.outgoing.id, name);
  } catch {
    // The connection went away; the close handling reports it.
  }
}

function endQuietly(sink: Writable): void {
  if (!sink.writableEnded && !sink.destroyed) sink.end();
}
