/**
 * LocalHost: the machine edgeadm runs on, as a {@link Host}. Commands run as
 * child processes (execa); everything else comes from {@link ShellHost}, so
 * a local run does exactly what a run over SSH does.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { execa } from 'execa';
import { EdgeadmError } from '../errors.js';
import { ShellHost, type RawCommand, type RawOutcome, type ShellHostOptions } from './shell-host.js';

/** How long a timed-out command gets between SIGTERM and SIGKILL. */
export const LOCAL_FORCE_KILL_AFTER_MS = 5_000;

/** This machine. */
export class LocalHost extends ShellHost {
  readonly name = 'local';

  constructor(options: ShellHostOptions = {}) {
    super(options);
  }

  protected async runRaw(command: RawCommand): Promise<RawOutcome> {
    const [file, ...args] = command.argv;
    if (file === undefined) throw new TypeError('empty argv');
    const child = execa(file, args, {
      stdin: 'pipe',
      stdout: 'pipe',
      stderr: 'pipe',
      buffer: false,
      reject: false,
      stripFinalNewline: false,
      ...(command.timeoutMs === undefined ? {} : { timeout: command.timeoutMs }),
      killSignal: 'SIGTERM',
      forceKillAfterDelay: LOCAL_FORCE_KILL_AFTER_MS,
    });
    const stdin = command.stdin ?? Buffer.alloc(0);
    const feeding = pipeline(Buffer.isBuffer(stdin) ? Readable.from([stdin]) : stdin, child.stdin).catch(
      (error: NodeJS.ErrnoException) => {
        // The command may exit without reading all of its input; that is its business.
        if (error.code !== 'EPIPE' && error.code !== 'ERR_STREAM_PREMATURE_CLOSE') throw error;
      },
    );
    const draining = Promise.all([pipeline(child.stdout, command.stdout), pipeline(child.stderr, command.stderr)]);
    const result = await child;
    await draining;
    try {
      await feeding;
    } catch (error) {
      throw new EdgeadmError(`cannot feed the input of a local command: ${(error as Error).message}`, {
        code: 'E_HOST_STDIN',
        cause: error,
      });
    }
    if (result.failed && result.exitCode === undefined && !result.isTerminated && !result.timedOut) {
      throw new EdgeadmError(`cannot run ${file} locally: ${result.shortMessage}`, {
        code: 'E_HOST_SPAWN',
        cause: result.cause,
      });
    }
    const outcome: RawOutcome = { exitCode: result.exitCode ?? null, timedOut: result.timedOut };
    if (result.signal) outcome.signal = result.signal.replace(/^SIG/, '');
    return outcome;
  }

  async close(): Promise<void> {
    // Nothing to release.
  }
}
