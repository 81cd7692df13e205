/**
 * Runs the command that receives an upload's bytes in a worker process with
 * an SSH connection of its own (upload-worker.ts). In one event loop, the
 * SSH work of parallel uploads (a cipher object per 32 KiB packet, the
 * socket writes, the garbage they leave) is done one packet after another
 * on one core, where `scp` runs a process per host; a worker per upload
 * spreads it over the machine's cores.
 *
 * A process, not a worker thread: the single binary starts from a V8
 * startup snapshot, and in Node 24 a worker thread of such a process aborts
 * the whole process when it loads `node:net` (measured: "Assertion failed:
 * shutdown_wrap_template_.IsEmpty()" in LibuvStreamWrap::Initialize, the
 * per-isolate templates being in the snapshot already). The binary starts
 * itself as the worker instead (see src/sea-main.ts).
 *
 * The worker's connection is held to the host key that the host's own
 * connection verified, and it authenticates with the same credentials; a
 * key file's private key stays in this process, which signs for the worker.
 * A worker that ends before it reports (it crashed, or was killed) fails
 * the upload with E_HOST_PUT_WORKER; the host keeps the part file, so the
 * next attempt resumes, and nothing was renamed into place unverified.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { isSea } from 'node:sea';
import { finished } from 'node:stream/promises';
import type { ParsedKey } from 'ssh2';
import { EdgeadmError, type ExitCodeValue } from '../errors.js';
import type { RawFileCommand, RawOutcome } from './shell-host.js';
import type { SshConnection } from './ssh-connection.js';
import {
  UPLOAD_WORKER_ENV,
  type MainMessage,
  type UploadJob,
  type WorkerCredential,
  type WorkerError,
  type WorkerMessage,
} from './upload-worker-protocol.js';

/** Where the build put the worker script, when this code runs bundled (the single binary, or its bundle run as a script). */
declare const __EDGEADM_UPLOAD_WORKER_SCRIPT__: string | undefined;

/**
 * Upload worker processes running at once in this process, at most one per
 * core: a worker costs a little more CPU per byte than an upload in this
 * process (measured: each runs its own event loop, where ten uploads in one
 * share each turn of it), which pays only while a core is free to take it.
 * Uploads beyond it run in this process.
 */
export function maxUploadWorkers(): number {
  return Math.max(1, availableParallelism());
}

let runningWorkers = 0;

/** Whether one more upload may go to a worker now (see {@link maxUploadWorkers}). */
export function hasFreeUploadWorker(): boolean {
  return runningWorkers < maxUploadWorkers();
}

/** The last lines of a worker's stderr kept for the message when it dies. */
const WORKER_STDERR_TAIL_BYTES = 4096;

/** One upload for a worker. */
export interface WorkerUpload {
  /** The host's connection, already connected: the worker copies its endpoint, credentials and verified host key. */
  connection: SshConnection;
  command: RawFileCommand;
  /** Called with the worker once it is started (tests kill it mid-upload). */
  onWorker?: (worker: ChildProcess) => void;
}

/** Runs `upload.command` in a new worker process; settles once the command ended on the host or the worker failed. */
export async function runUploadInWorker(upload: WorkerUpload): Promise<RawOutcome> {
  const { connection, command } = upload;
  const fingerprint = connection.hostKeyFingerprint;
  if (fingerprint === undefined) throw new Error('internal: an upload worker needs a connection that has connected');
  const keys: ParsedKey[] = [];
  const credentials: WorkerCredential[] = [];
  for (const credential of connection.credentials) {
    if (credential.kind === 'key') {
      keys.push(credential.key);
      credentials.push({
        kind: 'key',
        file: credential.file,
        index: keys.length - 1,
        publicKey: credential.key.getPublicSSH(),
      });
    } else if (credential.kind !== 'signer') {
      credentials.push(credential);
    }
  }
  const job: UploadJob = {
    endpoint: connection.endpoint,
    label: connection.label,
    hostKeyFingerprint: fingerprint,
    credentials,
    connectTimeoutMs: connection.connectTimeoutMs,
    argv: command.argv,
    stdinPrefix: command.stdinPrefix,
    file: command.file.path,
    start: command.file.start,
    timeoutMs: command.timeoutMs,
  };
  const worker = startUploadWorker();
  runningWorkers++;
  let isCounted = true;
  const release = (): void => {
    if (isCounted) runningWorkers--;
    isCounted = false;
  };
  // 'error' alone when the process could not be started at all.
  worker.once('exit', release);
  worker.once('error', release);
  upload.onWorker?.(worker);
  let stderrTail = '';
  worker.stderr?.on('data', (chunk: Buffer) => {
    stderrTail = (stderrTail + chunk.toString()).slice(-WORKER_STDERR_TAIL_BYTES);
  });
  const send = (message: MainMessage): void => {
    if (worker.connected) worker.send(message);
  };

  const last = await new Promise<Extract<WorkerMessage, { type: 'done' }>>((resolve, reject) => {
    let isSettled = false;
    const settle = (settleWith: () => void): void => {
      if (isSettled) return;
      isSettled = true;
      settleWith();
    };
    worker.on('message', (message: WorkerMessage) => {
      switch (message.type) {
        case 'bytes':
          command.file.onBytes(message.count);
          break;
        case 'sign': {
          const key = keys[message.index];
          const signature = key?.sign(Buffer.from(message.data), message.hash);
          if (signature === undefined || signature instanceof Error) {
            send({ type: 'sign-failed', id: message.id, message: signature?.message ?? 'no such key' });
          } else {
            send({ type: 'signed', id: message.id, signature });
          }
          break;
        }
        case 'done':
          settle(() => resolve(message));
          break;
        case 'failed':
          settle(() => reject(errorFromWorker(message.error)));
          break;
      }
    });
    worker.once('error', (error) => settle(() => reject(workerEnded(connection.label, error.message, error))));
    worker.once('exit', (code, signal) =>
      settle(() =>
        reject(
          workerEnded(
            connection.label,
            `${signal === null ? `exit code ${code}` : `signal ${signal}`}${stderrTail.trim() === '' ? '' : `: ${stderrTail.trim()}`}`,
          ),
        ),
      ),
    );
    send({ type: 'job', job });
  });
  for (const [sink, bytes] of [
    [command.stdout, last.stdout],
    [command.stderr, last.stderr],
  ] as const) {
    sink.end(Buffer.from(bytes));
    await finished(sink).catch(() => undefined);
  }
  return {
    exitCode: last.exitCode,
    timedOut: last.timedOut,
    ...(last.signal === undefined ? {} : { signal: last.signal }),
  };
}

/**
 * Starts the worker from wherever this code runs: the single binary starts
 * itself, marked as a worker, and runs the worker script it carries; its
 * bundle run as a plain script runs that script beside it; lib/ has the
 * worker beside this file; the TypeScript sources (tests) run it with their
 * `.js` imports mapped to `.ts`. stdout is not used (messages go over IPC);
 * stderr is kept for the message when a worker dies.
 */
function startUploadWorker(): ChildProcess {
  const options = {
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'] as ('ignore' | 'pipe' | 'ipc')[],
    serialization: 'advanced' as const,
    env: { ...process.env, [UPLOAD_WORKER_ENV]: '1' },
  };
  if (typeof __EDGEADM_UPLOAD_WORKER_SCRIPT__ === 'string') {
    return isSea()
      ? spawn(process.execPath, [], options)
      : spawn(process.execPath, [__EDGEADM_UPLOAD_WORKER_SCRIPT__], options);
  }
  const isTypeScript = import.meta.url.endsWith('.ts');
  const entry = new URL(isTypeScript ? './upload-worker.ts' : './upload-worker.js', import.meta.url);
  if (!isTypeScript) return spawn(process.execPath, [fileURLToPath(entry)], options);
  const mapJsToTs = [
    "import { registerHooks } from 'node:module';",
    'registerHooks({',
    '  resolve(specifier, context, next) {',
    "    if (!/^\\.\\.?\\//.test(specifier) || !specifier.endsWith('.js')) return next(specifier, context);",
    '    try { return next(specifier, context); } catch { return next(specifier.slice(0, -3) + ".ts", context); }',
    '  },',
    '});',
  ].join('\n');
  return spawn(
    process.execPath,
    ['--import', `data:text/javascript,${encodeURIComponent(mapJsToTs)}`, fileURLToPath(entry)],
    options,
  );
}

function errorFromWorker(error: WorkerError): EdgeadmError {
  return new EdgeadmError(error.message, {
    code: error.code ?? 'E_HOST_PUT_WORKER',
    hints: error.hints,
    ...(error.exitCode === undefined ? {} : { exitCode: error.exitCode as ExitCodeValue }),
  });
}

function workerEnded(label: string, detail: string, cause?: unknown): EdgeadmError {
  return new EdgeadmError(`the upload to ${label} stopped: its worker process ended (${detail})`, {
    code: 'E_HOST_PUT_WORKER',
    hints: ['Run the command again: the upload resumes from what reached the host.'],
    ...(cause === undefined ? {} : { cause }),
  });
}
