/**
 * The entry point of an upload's worker process: it opens its own SSH
 * connection to the host, runs the one command that receives the bytes
 * (and checks and renames them, see file-transfer.ts), feeds it the local
 * file from its offset, and reports the bytes sent and how the command
 * ended. The edgeadm process that starts it (upload-worker-runner.ts)
 * sends the job over the IPC channel.
 *
 * The connection is edgeadm's own {@link SshConnection}, held to exactly
 * the host key the host's connection verified. A key file's private key
 * never leaves the edgeadm process: the worker asks it to sign, as it would
 * ask ssh-agent.
 */
import { createReadStream } from 'node:fs';
import { Readable, Writable } from 'node:stream';
import type { AgentAuthMethod, ParsedKey } from 'ssh2';
import { EdgeadmError } from '../errors.js';
import { PROGRESS_INTERVAL_BYTES } from './host.js';
import type { RawCommand, RawOutcome } from './shell-host.js';
import type { SshCredential } from './ssh-auth.js';
import { SshConnection } from './ssh-connection.js';
import { SshHost } from './ssh-host.js';
import { loadSsh2 } from './ssh2-loader.js';
import type { MainMessage, UploadJob, WorkerCredential, WorkerMessage } from './upload-worker-protocol.js';

/** How much of the file the worker reads at a time (as an upload in the edgeadm process does). */
const WORKER_READ_CHUNK_BYTES = 128 * 1024;

/** An SshHost whose raw command runner the worker calls directly: the argv is built by the edgeadm process. */
class WorkerSshHost extends SshHost {
  run(command: RawCommand): Promise<RawOutcome> {
    return this.runRaw(command);
  }
}

type AgentInstance = Exclude<AgentAuthMethod['agent'], string>;
type SignCallback = (error?: Error, signature?: Buffer) => void;

const post = (message: WorkerMessage): void => {
  process.send?.(message);
};

/** Sign requests waiting for the edgeadm process's answer. */
const pendingSigns = new Map<number, (error: Error | undefined, signature?: Buffer) => void>();
let nextSignId = 0;
let onJob: ((job: UploadJob) => void) | undefined;
process.on('message', (message: MainMessage) => {
  if (message.type === 'job') {
    onJob?.(message.job);
    onJob = undefined;
    return;
  }
  const done = pendingSigns.get(message.id);
  if (done === undefined) return;
  pendingSigns.delete(message.id);
  if (message.type === 'signed') done(undefined, Buffer.from(message.signature));
  else done(new Error(message.message));
});
let isReported = false;
// The channel closed: after the last message, or because the edgeadm
// process went away, when nothing would hear from this upload any more.
// This file is the top level of its own process, as a command is of the CLI's.
// eslint-disable-next-line no-restricted-properties
process.once('disconnect', () => process.exit(isReported ? 0 : 1));

/** A key held by the edgeadm process, offered like an ssh-agent with one key. */
async function mainThreadSigner(credential: Extract<WorkerCredential, { kind: 'key' }>): Promise<AgentInstance> {
  const ssh2 = await loadSsh2();
  const publicKey = Buffer.from(credential.publicKey);
  class MainThreadKey extends ssh2.BaseAgent {
    override getIdentities(callback: (error: Error | undefined, keys?: (ParsedKey | Buffer)[]) => void): void {
      callback(undefined, [publicKey]);
    }

    override sign(
      _publicKey: unknown,
      data: Buffer,
      options: { hash?: string } | SignCallback | undefined,
      callback?: SignCallback,
    ): void {
      const done = typeof options === 'function' ? options : callback;
      const hash = typeof options === 'function' ? undefined : options?.hash;
      const id = nextSignId++;
      pendingSigns.set(id, (error, signature) => done?.(error, signature));
      post({ type: 'sign', id, index: credential.index, data, hash });
    }
  }
  return new MainThreadKey();
}

async function credentialsOf(credentials: WorkerCredential[]): Promise<SshCredential[]> {
  const result: SshCredential[] = [];
  for (const credential of credentials) {
    if (credential.kind === 'key') {
      result.push({ kind: 'signer', file: credential.file, agent: await mainThreadSigner(credential) });
    } else {
      result.push(credential);
    }
  }
  return result;
}

/** The file from its offset, after the stdin prefix; reports the file's bytes as they are read by SSH. */
function stdinOf(job: UploadJob): Readable {
  const file = createReadStream(job.file, { start: job.start, highWaterMark: WORKER_READ_CHUNK_BYTES });
  let unreported = 0;
  const prefix = job.stdinPrefix === undefined ? undefined : Buffer.from(job.stdinPrefix);
  const source = Readable.from(
    (async function* () {
      if (prefix !== undefined) yield prefix;
      for await (const chunk of file) {
        yield chunk as Buffer;
        unreported += (chunk as Buffer).length;
        if (unreported >= PROGRESS_INTERVAL_BYTES) {
          post({ type: 'bytes', count: unreported });
          unreported = 0;
        }
      }
      if (unreported > 0) post({ type: 'bytes', count: unreported });
      unreported = 0;
    })(),
    { objectMode: false },
  );
  // Reading the file failed or the channel went away: stop reading it.
  source.once('close', () => file.destroy());
  return source;
}

/** Collects a command's output (bounded by the edgeadm process's own capture afterwards). */
function collector(): { sink: Writable; bytes: () => Uint8Array } {
  const chunks: Buffer[] = [];
  return {
    sink: new Writable({
      write(chunk: Buffer, _encoding, callback) {
        chunks.push(chunk);
        callback();
      },
    }),
    bytes: () => Buffer.concat(chunks),
  };
}

async function main(): Promise<WorkerMessage> {
  const job = await new Promise<UploadJob>((resolve) => (onJob = resolve));
  const connection = new SshConnection({
    endpoint: job.endpoint,
    credentials: await credentialsOf(job.credentials),
    // Pinned: the key the main connection verified, nothing from known_hosts.
    hostKeys: { knownHostsFile: '/dev/null', pinnedFingerprint: job.hostKeyFingerprint },
    connectTimeoutMs: job.connectTimeoutMs,
    maxChannels: 1,
  });
  const host = new WorkerSshHost({ connection });
  try {
    const stdout = collector();
    const stderr = collector();
    const outcome = await host.run({
      argv: job.argv,
      stdin: stdinOf(job),
      stdout: stdout.sink,
      stderr: stderr.sink,
      timeoutMs: job.timeoutMs,
    });
    return {
      type: 'done',
      exitCode: outcome.exitCode,
      signal: outcome.signal,
      timedOut: outcome.timedOut,
      stdout: stdout.bytes(),
      stderr: stderr.bytes(),
    };
  } finally {
    await host.close();
  }
}

function failure(error: unknown): WorkerMessage {
  const isEdgeadm = error instanceof EdgeadmError;
  return {
    type: 'failed',
    error: {
      message: error instanceof Error ? error.message : String(error),
      code: isEdgeadm ? error.code : undefined,
      hints: isEdgeadm ? error.hints : [],
      exitCode: isEdgeadm ? error.exitCode : undefined,
    },
  };
}

// The last message; then the IPC channel closes and the process ends.
void main()
  .catch(failure)
  .then((last) => {
    isReported = true;
    process.send?.(last, () => process.disconnect());
  });
