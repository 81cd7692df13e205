/**
 * Runs the command that receives an upload's bytes in a worker thread with
 * an SSH connection of its own (upload-worker.ts). In one event loop, the
 * SSH work of parallel uploads (a cipher object per 32 KiB packet, the
 * socket writes, the garbage they leave) is done one packet after another
 * on one core, where `scp` runs a process per host; a worker per upload
 * spreads it over the machine's cores.
 *
 * The worker's connection is held to the host key that the host's own
 * connection verified, and it authenticates with the same credentials; a
 * key file's private key stays in this thread, which signs for the worker.
 * A worker that ends before it reports (it crashed, or was ended) fails the
 * upload with E_HOST_PUT_WORKER; the host keeps the part file, so the next
 * attempt resumes, and nothing was renamed into place unverified.
 */
import { readFileSync } from 'node:fs';
import { getAsset, isSea } from 'node:sea';
import { finished } from 'node:stream/promises';
import { Worker } from 'node:worker_threads';
import type { ParsedKey } from 'ssh2';
import { EdgeadmError, type ExitCodeValue } from '../errors.js';
import type { RawFileCommand, RawOutcome } from './shell-host.js';
import type { SshConnection } from './ssh-connection.js';
import type { UploadJob, WorkerCredential, WorkerError, WorkerMessage } from './upload-worker-protocol.js';

/** The single binary's asset that holds the worker's code (see scripts/build-binary.js). */
export const UPLOAD_WORKER_ASSET = 'upload-worker.cjs';

/** Where the build put the worker script, when this code runs bundled (the single binary, or its bundle run as a script). */
declare const __EDGEADM_UPLOAD_WORKER_SCRIPT__: string | undefined;

/** One upload for a worker. */
export interface WorkerUpload {
  /** The host's connection, already connected: the worker copies its endpoint, credentials and verified host key. */
  connection: SshConnection;
  command: RawFileCommand;
  /** Called with the worker once it is started (tests end it mid-upload). */
  onWorker?: (worker: Worker) => void;
}

/** Runs `upload.command` in a new worker; settles once the command ended on the host or the worker failed. */
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
  const worker = startUploadWorker(job);
  upload.onWorker?.(worker);

  const last = await new Promise<Extract<WorkerMessage, { type: 'done' }>>((resolve, reject) => {
    let isSettled = false;
    const settle = (settleWith: () => void): void => {
      if (isSettled) return;
      isSettled = true;
      void worker.terminate();
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
            worker.postMessage({ type: 'sign-failed', id: message.id, message: signature?.message ?? 'no such key' });
          } else {
            worker.postMessage({ type: 'signed', id: message.id, signature });
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
    worker.once('exit', (code) => settle(() => reject(workerEnded(connection.label, `exit code ${code}`))));
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
 * Starts the worker from wherever this code runs: the single binary carries
 * the worker as a bundled script (an `eval` worker, as a single executable
 * has no files of its own); lib/ has it beside this file; the TypeScript
 * sources (tests) load it with their `.js` imports mapped to `.ts`.
 */
function startUploadWorker(job: UploadJob): Worker {
  if (typeof __EDGEADM_UPLOAD_WORKER_SCRIPT__ === 'string') {
    const source = isSea()
      ? getAsset(UPLOAD_WORKER_ASSET, 'utf8')
      : readFileSync(__EDGEADM_UPLOAD_WORKER_SCRIPT__, 'utf8');
    return new Worker(source, { eval: true, workerData: job });
  }
  const isTypeScript = import.meta.url.endsWith('.ts');
  const entry = new URL(isTypeScript ? './upload-worker.ts' : './upload-worker.js', import.meta.url);
  if (!isTypeScript) return new Worker(entry, { workerData: job });
  const bootstrap = [
    "const { registerHooks } = require('node:module');",
    'registerHooks({',
    '  resolve(specifier, context, next) {',
    "    if (!/^\\.\\.?\\//.test(specifier) || !specifier.endsWith('.js')) return next(specifier, context);",
    '    try { return next(specifier, context); } catch { return next(specifier.slice(0, -3) + ".ts", context); }',
    '  },',
    '});',
    `import(${JSON.stringify(entry.href)});`,
  ].join('\n');
  return new Worker(bootstrap, { eval: true, workerData: job });
}

function errorFromWorker(error: WorkerError): EdgeadmError {
  return new EdgeadmError(error.message, {
    code: error.code ?? 'E_HOST_PUT_WORKER',
    hints: error.hints,
    ...(error.exitCode === undefined ? {} : { exitCode: error.exitCode as ExitCodeValue }),
  });
}

function workerEnded(label: string, detail: string, cause?: unknown): EdgeadmError {
  return new EdgeadmError(`the upload to ${label} stopped: its worker thread ended (${detail})`, {
    code: 'E_HOST_PUT_WORKER',
    hints: ['Run the command again: the upload resumes from what reached the host.'],
    ...(cause === undefined ? {} : { cause }),
  });
}
