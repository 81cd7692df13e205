/**
 * What an upload's worker process and the edgeadm process that started it
 * say to each other over the IPC channel (see upload-worker-runner.ts and
 * upload-worker.ts). Plain data only (Node's "advanced" serialization, a
 * structured clone). Kept free of other imports: the single binary's entry
 * reads the constants below before anything else loads.
 */
import type { SshEndpoint } from './ssh-target.js';

/** The single binary's asset that holds the worker's code (see scripts/build-binary.js). */
export const UPLOAD_WORKER_ASSET = 'upload-worker.cjs';

/**
 * Set (to `1`) in the environment of a single binary started as an upload
 * worker: it then runs the worker's script instead of the CLI.
 */
export const UPLOAD_WORKER_ENV = 'EDGEADM_INTERNAL_UPLOAD_WORKER';

/** A credential as the worker gets it: a key file's private key stays in the edgeadm process, which signs for it. */
export type WorkerCredential =
  | { kind: 'agent'; socket: string }
  | { kind: 'key'; file: string; index: number; publicKey: Uint8Array }
  | { kind: 'password'; password: string };

/** One upload command: the first message a worker gets. */
export interface UploadJob {
  endpoint: SshEndpoint;
  /** `user@host:port`, for messages. */
  label: string;
  /** The host key the host's connection verified: the worker's connection must see exactly this one. */
  hostKeyFingerprint: string;
  credentials: WorkerCredential[];
  connectTimeoutMs: number;
  argv: string[];
  /** Bytes sent before the file (the sudo password line), not counted as upload. */
  stdinPrefix: Uint8Array | undefined;
  file: string;
  /** Byte offset in `file` to send from (a resumed upload). */
  start: number;
  timeoutMs: number | undefined;
}

/** An error as it crosses the process boundary. */
export interface WorkerError {
  message: string;
  /** An EdgeadmError's code and hints, when it was one. */
  code: string | undefined;
  hints: string[];
  exitCode: number | undefined;
}

/** From the worker. */
export type WorkerMessage =
  | { type: 'bytes'; count: number }
  | { type: 'sign'; id: number; index: number; data: Uint8Array; hash: string | undefined }
  | {
      type: 'done';
      exitCode: number | null;
      signal: string | undefined;
      timedOut: boolean;
      stdout: Uint8Array;
      stderr: Uint8Array;
    }
  | { type: 'failed'; error: WorkerError };

/** To the worker: its job, then the answers to its `sign` requests. */
export type MainMessage =
  | { type: 'job'; job: UploadJob }
  | { type: 'signed'; id: number; signature: Uint8Array }
  | { type: 'sign-failed'; id: number; message: string };
