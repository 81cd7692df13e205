/**
 * The hub's side of one tunnel: over the TLS socket an agent opened, the
 * hub is the HTTP/2 client. It checks the agent (its certificate, via the
 * caller's policy, and then that the agent's hello names the same cluster),
 * welcomes or refuses it, and then opens one stream per kube request.
 */
import type { ClientHttp2Session, ClientHttp2Stream, OutgoingHttpHeaders } from 'node:http2';
import type { PeerCertificate, TLSSocket } from 'node:tls';
import { EdgeadmError } from '../errors.js';
import type { Logger } from '../log/run-log.js';
import { TUNNEL_HTTP2_SETTINGS } from './agent.js';
import {
  TUNNEL_CONNECTION_WINDOW_BYTES,
  TUNNEL_ACCEPT_TIMEOUT_MS,
  TUNNEL_DRAIN_TIMEOUT_MS,
  TUNNEL_MAX_SESSION_MEMORY_MB,
  TUNNEL_SILENCE_LIMIT_MS,
} from './limits.js';
import {
  HELLO_PATH,
  MOVE_PATH,
  REFUSE_PATH,
  USER_HEADER,
  WELCOME_PATH,
  type AgentHello,
  type MoveRequest,
} from './protocol.js';

/** Largest hello body the hub reads. */
const MAX_HELLO_BYTES = 16 * 1024;

/** The caller's verdict on a peer certificate. */
export type TunnelVerdict = { cluster: string } | { refusal: string };

/** Options of {@link acceptTunnel}. */
export interface AcceptTunnelOptions {
  socket: TLSSocket;
  /** Decides from the verified peer certificate which cluster the agent may serve, if any. */
  authorize: (certificate: PeerCertificate) => Promise<TunnelVerdict>;
  logger: Logger;
  /** What a tunnel serves, in refusals (`cluster` by default; the node tunnel's are `node`s). */
  peerKind?: 'cluster' | 'node';
  /** How long the agent has to be accepted; {@link TUNNEL_ACCEPT_TIMEOUT_MS} by default. */
  acceptTimeoutMs?: number;
}

/** An accepted tunnel. */
export class HubTunnel {
  readonly cluster: string;
  readonly hello: AgentHello;
  /** Resolves when the tunnel is gone. */
  readonly closed: Promise<void>;
  /**
   * Resolves as soon as the tunnel takes no new streams: the agent began a
   * graceful stop (its GOAWAY; SIGTERM drains for up to
   * TUNNEL_DRAIN_TIMEOUT_MS while open streams finish) or the tunnel closed.
   * From then on the cluster is offline for everything new (issue #30: a
   * wave handed out during an agent's drain never reached it).
   */
  readonly draining: Promise<void>;
  readonly #session: ClientHttp2Session;
  readonly #socket: TLSSocket;
  #bytesReadSeen = 0;
  #heardAt = Date.now();
  #userStreams = 0;
  #isMoving = false;
  /** When the tunnel was accepted (epoch ms). */
  readonly openedAt = Date.now();

  constructor(options: {
    cluster: string;
    hello: AgentHello;
    session: ClientHttp2Session;
    socket: TLSSocket;
    logger: Logger;
  }) {
    this.cluster = options.cluster;
    this.hello = options.hello;
    this.#session = options.session;
    this.#socket = options.socket;
    this.closed = new Promise((resolve) => {
      if (options.session.destroyed) resolve();
      options.session.once('close', () => resolve());
    });
    this.draining = new Promise((resolve) => {
      if (options.session.closed || options.session.destroyed) resolve();
      options.session.once('goaway', () => resolve());
      void this.closed.then(resolve);
    });
  }

  /**
   * Whether the agent has sent nothing (not even its keepalive pings) for
   * longer than `limitMs` ({@link TUNNEL_SILENCE_LIMIT_MS}) by `now`. Meant to be called
   * by one periodic sweep over all tunnels: it reads the socket's byte
   * counter, so a live tunnel costs the hub no timer and no ping of its own.
   */
  isSilent(now: number, limitMs: number = TUNNEL_SILENCE_LIMIT_MS): boolean {
    const read = this.#socket.bytesRead;
    if (read !== this.#bytesReadSeen) {
      this.#bytesReadSeen = read;
      this.#heardAt = now;
      return false;
    }
    return now - this.#heardAt > limitMs;
  }

  /** When the agent was last heard from, as of the last {@link isSilent} call (epoch ms). */
  get lastHeardAt(): number {
    return this.#heardAt;
  }

  /**
   * Whether the agent answers a PING within `timeoutMs`: a link that died
   * without a word is found here at once rather than by the silence sweep.
   * Past the session's bound on outstanding pings, an open tunnel counts as
   * live.
   */
  ping(timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      if (!this.isOpen) {
        resolve(false);
        return;
      }
      const timer = setTimeout(() => resolve(false), timeoutMs);
      const sent = this.#session.ping((error) => {
        clearTimeout(timer);
        resolve(error === null);
      });
      if (!sent) {
        clearTimeout(timer);
        resolve(this.isOpen);
      }
    });
  }

  /** Whether new streams can be opened. */
  get isOpen(): boolean {
    return !this.#session.closed && !this.#session.destroyed;
  }

  /** Opens one stream to the agent; headers as an object or a flat `[name, value, …]` list. */
  request(headers: OutgoingHttpHeaders | readonly string[], options: { endStream?: boolean } = {}): ClientHttp2Stream {
    const stream = this.#session.request(headers, { endStream: options.endStream ?? false });
    if (isUserStream(headers)) {
      this.#userStreams += 1;
      stream.once('close', () => (this.#userStreams -= 1));
    }
    return stream;
  }

  /** Whether the agent was asked to move (it is on its way to another replica). */
  get isMoving(): boolean {
    return this.#isMoving;
  }

  /** Streams of users (kubectl requests, watches, exec sessions) open now; control streams not counted. */
  get userStreams(): number {
    return this.#userStreams;
  }

  /**
   * Asks the agent to move its tunnel to the replica at `to` (MOVE_PATH).
   * An agent that does not take the request (an older one) is drained
   * instead, and reconnects to its next hub address. Resolves once asked.
   */
  async move(to: string): Promise<void> {
    if (!this.isOpen || this.#isMoving) return;
    this.#isMoving = true;
    const body: MoveRequest = { to };
    const status = await new Promise<number>((resolve) => {
      const stream = this.#session.request({
        ':method': 'POST',
        ':path': MOVE_PATH,
        'content-type': 'application/json',
      });
      stream.on('response', (headers) => resolve(Number(headers[':status'])));
      stream.on('error', () => resolve(0));
      stream.on('close', () => resolve(0));
      stream.resume();
      stream.end(JSON.stringify(body));
    });
    if (status !== 204) await this.drain();
  }

  /** Closes at once: open streams are reset. */
  destroy(): void {
    this.#session.destroy();
    this.#socket.destroy();
  }

  /** Stops new streams and lets open ones finish, bounded by the drain timeout. */
  async drain(): Promise<void> {
    if (this.#session.destroyed) return;
    this.#session.close();
    const timer = setTimeout(() => this.destroy(), TUNNEL_DRAIN_TIMEOUT_MS);
    await this.closed;
    clearTimeout(timer);
    this.#socket.destroy();
  }
}

/** Whether a stream's headers carry a user's identity (every user stream does; control streams never). */
function isUserStream(headers: OutgoingHttpHeaders | readonly string[]): boolean {
  if (!Array.isArray(headers)) return (headers as OutgoingHttpHeaders)[USER_HEADER] !== undefined;
  for (let i = 0; i < headers.length; i += 2) if (headers[i] === USER_HEADER) return true;
  return false;
}

function sendControl(session: ClientHttp2Session, path: string, body: unknown): Promise<void> {
  return new Promise((resolve) => {
    const stream = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/json' });
    stream.on('response', () => resolve());
    stream.on('error', () => resolve());
    stream.on('close', () => resolve());
    stream.resume();
    stream.end(JSON.stringify(body));
  });
}

/** Reads the agent's hello; rejects if the stream or its session ends first. */
function readHello(session: ClientHttp2Session): Promise<AgentHello> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':method': 'GET', ':path': HELLO_PATH }, { endStream: true });
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_HELLO_BYTES) stream.destroy(new Error('the hello is too large'));
      else chunks.push(chunk);
    });
    stream.on('end', () => {
      try {
        const hello = JSON.parse(Buffer.concat(chunks).toString('utf8')) as AgentHello;
        if (typeof hello.cluster !== 'string') throw new Error('the hello names no cluster');
        resolve(hello);
      } catch (error) {
        reject(error);
      }
    });
    stream.on('error', reject);
    // A stream closed with its session (the accept deadline) ends with neither 'end' nor 'error'.
    stream.on('close', () => reject(new Error('the connection closed before the hello')));
  });
}

/**
 * Takes over a TLS socket that asked for the tunnel protocol, and returns
 * the tunnel once the agent is accepted. The whole accept has one deadline
 * ({@link AcceptTunnelOptions.acceptTimeoutMs}): a peer that stalls at any
 * step is closed then; once accepted, the tunnel is judged by its liveness.
 *
 * @throws {EdgeadmError} `E_TUNNEL_REFUSED` (the agent was told why) or
 * `E_TUNNEL_HANDSHAKE`.
 */
export async function acceptTunnel(options: AcceptTunnelOptions): Promise<HubTunnel> {
  const { socket } = options;
  if (!socket.authorized) {
    socket.destroy();
    throw new EdgeadmError(
      `tunnel refused: the client certificate does not verify (${String(socket.authorizationError)})`,
      {
        code: 'E_TUNNEL_REFUSED',
      },
    );
  }
  const http2 = await import('node:http2');
  const session = http2.connect('http://edgeadm-agent.invalid', {
    createConnection: () => socket,
    settings: TUNNEL_HTTP2_SETTINGS,
    maxSessionMemory: TUNNEL_MAX_SESSION_MEMORY_MB,
  });
  session.on('error', (error) => options.logger.debug(`tunnel session error: ${error.message}`));
  session.once('connect', () => session.setLocalWindowSize(TUNNEL_CONNECTION_WINDOW_BYTES));
  // One deadline over the whole accept, whatever the peer still owes (settings, hello, welcome):
  // closing the session ends every step below.
  const deadline = setTimeout(() => {
    session.destroy();
    socket.destroy();
  }, options.acceptTimeoutMs ?? TUNNEL_ACCEPT_TIMEOUT_MS);
  try {
    return await negotiate(options, session);
  } catch (error) {
    session.destroy();
    socket.destroy();
    throw error;
  } finally {
    clearTimeout(deadline);
  }
}

async function negotiate(options: AcceptTunnelOptions, session: ClientHttp2Session): Promise<HubTunnel> {
  const { socket } = options;
  const refuse = async (reason: string): Promise<never> => {
    await sendControl(session, REFUSE_PATH, { reason });
    throw new EdgeadmError(`tunnel refused: ${reason}`, { code: 'E_TUNNEL_REFUSED' });
  };
  const verdict = await options.authorize(socket.getPeerCertificate());
  if ('refusal' in verdict) return refuse(verdict.refusal);
  let hello: AgentHello;
  try {
    hello = await readHello(session);
  } catch (error) {
    throw new EdgeadmError(`tunnel handshake failed: ${(error as Error).message}`, { code: 'E_TUNNEL_HANDSHAKE' });
  }
  if (hello.cluster !== verdict.cluster) {
    return refuse(
      `this certificate is for ${options.peerKind ?? 'cluster'} ${JSON.stringify(verdict.cluster)}, not ${JSON.stringify(hello.cluster)}`,
    );
  }
  await sendControl(session, WELCOME_PATH, { cluster: verdict.cluster });
  if (session.destroyed) {
    throw new EdgeadmError('tunnel handshake failed: the connection closed before the welcome was answered', {
      code: 'E_TUNNEL_HANDSHAKE',
    });
  }
  return new HubTunnel({ cluster: verdict.cluster, hello, session, socket, logger: options.logger });
}
