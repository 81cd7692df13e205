/**
 * `pods/<name>/exec` for the simulated API server, with the Kubernetes
 * channel protocols `v5.channel.k8s.io` and `v4.channel.k8s.io`. Over
 * WebSocket (kubectl 1.30+), every binary message starts with a channel byte
 * (0 stdin, 1 stdout, 2 stderr, 3 error/status JSON, 4 terminal resize); v5
 * adds 255, "close channel N", which is how a client says stdin has ended.
 * Over SPDY (kubectl up to 1.29, and Go clients by default), each channel is
 * a stream named by its `streamtype` header, and half-closing stdin ends it.
 *
 * No container runs, so commands come from a tiny built-in set — `cat`
 * (stdin to stdout until stdin ends), `echo`, `true`, `false`, `hostname`,
 * `sleep`, and `sh -c` scripts of those separated by `;` or `&&` with
 * `exit N` — plus any commands a test registers. The exit code is reported
 * on channel 3 the way the kubelet reports it (`NonZeroExitCode`, cause
 * `ExitCode`), and kubectl exits with it.
 */
import { PassThrough, Writable } from 'node:stream';
import { once } from 'node:events';
import type { WebSocketConnection } from './websocket-connection.js';
import { SpdyServerSession } from './spdy-session.js';
import type { FrameTransport, SpdyStream } from './spdy-session.js';

/** Channel bytes of the channel protocols. */
export const CHANNEL = { stdin: 0, stdout: 1, stderr: 2, error: 3, resize: 4, close: 255 } as const;

/** The exec subprotocols the simulation speaks (WebSocket subprotocols, or SPDY stream protocol versions), preferred first. */
export const EXEC_PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io'] as const;

/** What a command gets to run with. */
export interface ExecContext {
  namespace: string;
  pod: string;
  container: string;
  /** argv; argv[0] is the command name. */
  argv: string[];
  /** Ends when the client closes stdin (or at once when stdin was not requested). */
  stdin: NodeJS.ReadableStream;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

/** A command implementation: resolves with the exit code. */
export type ExecCommand = (context: ExecContext) => Promise<number>;

/** Thrown by a command lookup for an unknown command; reported like a runtime's "not found". */
export class CommandNotFoundError extends Error {
  constructor(command: string) {
    super(`exec: "${command}": executable file not found in $PATH`);
    this.name = 'CommandNotFoundError';
  }
}

function write(stream: NodeJS.WritableStream, text: string): Promise<void> {
  return new Promise((resolve) => {
    if (stream.write(text)) resolve();
    else stream.once('drain', () => resolve());
  });
}

/** Splits a command line into words, honouring single and double quotes. */
export function splitWords(line: string): string[] {
  const words: string[] = [];
  let current = '';
  let quote: string | undefined;
  let hasWord = false;
  for (const ch of line) {
    if (quote) {
      if (ch === quote) quote = undefined;
      else current += ch;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      hasWord = true;
    } else if (/\s/.test(ch)) {
      if (hasWord) words.push(current);
      current = '';
      hasWord = false;
    } else {
      current += ch;
      hasWord = true;
    }
  }
  if (hasWord) words.push(current);
  return words;
}

/** Signals `exit N` inside an `sh -c` script. */
class ScriptExit {
  readonly code: number;
  constructor(code: number) {
    this.code = code;
  }
}

function builtinCommands(extra: Record<string, ExecCommand>): Record<string, ExecCommand> {
  const commands: Record<string, ExecCommand> = {
    cat: async (ctx) => {
      if (ctx.argv.length > 1) {
        await write(ctx.stderr, `cat: ${ctx.argv[1] ?? ''}: No such file or directory\n`);
        return 1;
      }
      for await (const chunk of ctx.stdin) {
        if (!ctx.stdout.write(chunk as Buffer)) await once(ctx.stdout, 'drain');
      }
      return 0;
    },
    echo: async (ctx) => {
      const args = ctx.argv.slice(1);
      const isNoNewline = args[0] === '-n';
      const text = (isNoNewline ? args.slice(1) : args).join(' ');
      await write(ctx.stdout, isNoNewline ? text : `${text}\n`);
      return 0;
    },
    true: () => Promise.resolve(0),
    false: () => Promise.resolve(1),
    hostname: async (ctx) => {
      await write(ctx.stdout, `${ctx.pod}\n`);
      return 0;
    },
    sleep: async (ctx) => {
      const seconds = Number(ctx.argv[1] ?? '0');
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, seconds) * 1000));
      return 0;
    },
    exit: (ctx) => {
      throw new ScriptExit(Number(ctx.argv[1] ?? '0') & 0xff);
    },
    sh: async (ctx) => {
      if (ctx.argv[1] !== '-c' || ctx.argv[2] === undefined) {
        await write(ctx.stderr, 'sh: the simulation runs only `sh -c SCRIPT`\n');
        return 2;
      }
      return runScript(ctx, ctx.argv[2]);
    },
    ...extra,
  };
  const runScript = async (ctx: ExecContext, script: string): Promise<number> => {
    let code = 0;
    // Statements separated by ';' always run; '&&' runs the next only after success.
    for (const statement of script.split(';')) {
      for (const part of statement.split('&&')) {
        const argv = splitWords(part);
        if (argv.length === 0) continue;
        const command = commands[argv[0] ?? ''];
        if (!command) {
          await write(ctx.stderr, `sh: ${argv[0] ?? ''}: not found\n`);
          code = 127;
        } else {
          try {
            code = await command({ ...ctx, argv });
          } catch (error) {
            if (error instanceof ScriptExit) return error.code;
            throw error;
          }
        }
        if (code !== 0) break;
      }
    }
    return code;
  };
  return commands;
}

/** The status JSON sent on the error channel when a command ends. */
export function exitStatus(argv: string[], exitCode: number): Record<string, unknown> {
  if (exitCode === 0) return { metadata: {}, status: 'Success' };
  return {
    metadata: {},
    status: 'Failure',
    message: `command terminated with non-zero exit code: error executing command [${argv.join(' ')}], exit code ${exitCode}`,
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: String(exitCode) }] },
  };
}

/** What the exec request asked for. */
export interface ExecRequest {
  namespace: string;
  pod: string;
  container: string;
  argv: string[];
  hasStdin: boolean;
  hasStdout: boolean;
  hasStderr: boolean;
  isTty: boolean;
}

/** How long a SPDY exec waits for the client to open the streams it asked for. */
export const STREAM_CREATION_TIMEOUT_MS = 30_000;

/** Runs the requested command with the given streams; resolves with the status for the error channel. */
async function execute(
  request: ExecRequest,
  io: { stdin: PassThrough; stdout: Writable; stderr: Writable },
  extraCommands: Record<string, ExecCommand>,
): Promise<Record<string, unknown>> {
  const command = builtinCommands(extraCommands)[request.argv[0] ?? ''];
  let status: Record<string, unknown>;
  if (!command) {
    const notFound = new CommandNotFoundError(request.argv[0] ?? '').message;
    status = {
      metadata: {},
      status: 'Failure',
      message: `Internal error occurred: error executing command in container: ${notFound}`,
      reason: 'InternalError',
      details: { causes: [{ message: notFound }] },
      code: 500,
    };
  } else {
    try {
      const code = await command({
        namespace: request.namespace,
        pod: request.pod,
        container: request.container,
        argv: request.argv,
        ...io,
      });
      status = exitStatus(request.argv, code);
    } catch (error) {
      status = exitStatus(request.argv, error instanceof ScriptExit ? error.code : 1);
    }
  }
  await new Promise<void>((resolve) => io.stdout.end(resolve));
  await new Promise<void>((resolve) => io.stderr.end(resolve));
  return status;
}

/** A writable that turns each chunk into one channel message, honouring the socket's backpressure. */
function channelWriter(connection: WebSocketConnection, channel: number, isEnabled: boolean): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      if (!isEnabled || !connection.isOpen) {
        callback();
        return;
      }
      const hasRoom = connection.send(Buffer.concat([Buffer.of(channel), chunk]));
      if (hasRoom) callback();
      else connection.once('drain', () => callback());
    },
  });
}

/** Runs one exec session on an accepted WebSocket until the command ends or the client leaves. */
export async function runExecSession(
  connection: WebSocketConnection,
  request: ExecRequest,
  extraCommands: Record<string, ExecCommand>,
): Promise<void> {
  const stdin = new PassThrough();
  if (!request.hasStdin) stdin.end();
  let isClientGone = false;

  connection.on('message', (data) => {
    const channel = data[0];
    const payload = data.subarray(1);
    if (channel === CHANNEL.stdin && request.hasStdin && !stdin.writableEnded) {
      // Stop reading the client while the command has not consumed what it has.
      if (!stdin.write(payload)) {
        connection.pause();
        stdin.once('drain', () => connection.resume());
      }
    } else if (channel === CHANNEL.close && connection.protocol.startsWith('v5.') && payload[0] === CHANNEL.stdin) {
      stdin.end();
    }
  });
  connection.on('close', () => {
    isClientGone = true;
    if (!stdin.writableEnded) stdin.end();
  });

  const status = await execute(
    request,
    {
      stdin,
      stdout: channelWriter(connection, CHANNEL.stdout, request.hasStdout),
      stderr: channelWriter(connection, CHANNEL.stderr, request.hasStderr && !request.isTty),
    },
    extraCommands,
  );
  if (isClientGone || !connection.isOpen) return;
  connection.send(Buffer.concat([Buffer.of(CHANNEL.error), Buffer.from(JSON.stringify(status))]));
  connection.close();
}

/** A writable onto one SPDY stream, honouring the session's backpressure. */
function streamWriter(session: SpdyServerSession, stream: SpdyStream | undefined): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      if (!stream || stream.write(chunk)) callback();
      else session.onceDrain(() => callback());
    },
  });
}

/**
 * Runs one exec over SPDY (the channel protocols v4/v5 as SPDY streams, one
 * per `streamtype`): waits for the streams the request implies, runs the
 * command, writes the status to the error stream, half-closes every stream
 * and ends the session.
 */
export function serveSpdyExec(
  transport: FrameTransport,
  request: ExecRequest,
  extraCommands: Record<string, ExecCommand>,
): void {
  const expected = new Set<string>(['error']);
  if (request.hasStdin) expected.add('stdin');
  if (request.hasStdout) expected.add('stdout');
  if (request.hasStderr && !request.isTty) expected.add('stderr');
  if (request.isTty) expected.add('resize');
  const streams = new Map<string, SpdyStream>();
  const stdin = new PassThrough();
  if (!request.hasStdin) stdin.end();
  let hasStarted = false;

  const session = new SpdyServerSession(transport, {
    onStream(stream) {
      const type = stream.headers['streamtype']?.[0] ?? '';
      if (!expected.has(type) || streams.has(type)) {
        stream.reset();
        return;
      }
      streams.set(type, stream);
      if (type === 'stdin') {
        stream.onData((chunk) => {
          if (!stdin.write(chunk)) {
            session.pauseInput();
            stdin.once('drain', () => session.resumeInput());
          }
        });
        stream.onEnd(() => stdin.end());
      }
      if (streams.size === expected.size && !hasStarted) {
        hasStarted = true;
        clearTimeout(timer);
        void run();
      }
    },
    onClose() {
      clearTimeout(timer);
      if (!stdin.writableEnded) stdin.end();
    },
  });
  const timer = setTimeout(() => session.close(), STREAM_CREATION_TIMEOUT_MS);
  timer.unref();

  const run = async (): Promise<void> => {
    const status = await execute(
      request,
      {
        stdin,
        stdout: streamWriter(session, streams.get('stdout')),
        stderr: streamWriter(session, streams.get('stderr')),
      },
      extraCommands,
    );
    streams.get('error')?.write(Buffer.from(JSON.stringify(status)));
    for (const stream of streams.values()) stream.end();
    session.close();
  };
}
