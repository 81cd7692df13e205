/**
 * What an upload's worker thread and the thread that started it say to each
 * other (see upload-worker-runner.ts and upload-worker.ts). Plain data only:
 * every message crosses the thread boundary by structured clone.
 */
import type { SshEndpoint } from './ssh-target.js';

/** A credential as the worker gets it: a key file's private key stays in the main thread, which signs for it. */
export type WorkerCredential =
  | { kind: 'agent'; socket: string }
  | { kind: 'key'; file: string; index: number; publicKey: Uint8Array }
  | { kind: 'password'; password: string };

/** One upload command, given to a worker when it starts (`workerData`). */
export interface UploadJob {
  endpoint: SshEndpoint;
  /** `user@host:port`, for messages. */
  label: string;
  /** The host key the main connection verified: the worker's connection must see exactly this one. */
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

/** An error as it crosses the thread boundary. */
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

/** To the worker: the answer to a `sign` request. */
export type MainMessage =
  { type: 'signed'; id: number; signature: Uint8Array } | { type: 'sign-failed'; id: number; message: string };
