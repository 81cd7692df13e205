/**
 * HTTP/2 from the agent to its cluster's API server (issue #34): plain
 * requests travel as streams over a pool of sessions when the API server
 * picks `h2` by ALPN, as kube-apiserver does for client-go. One HTTPS/1.1
 * request per tunnel stream cost the agent about 41 % more CPU per request
 * (bench/tunnel/agent-upstream.ts).
 *
 * Owns the sessions (opening, choosing, dropping) and the copy of one
 * request and its answer over a session. What is sent (the checked target,
 * the user's headers, the agent's credentials, the identity) and how a
 * failure is answered stay with `Upstream` (upstream.ts).
 *
 * - **Which protocol.** The first session's ALPN answer decides for the
 *   agent's lifetime: an API server that picks `http/1.1` (or no ALPN) gets
 *   every request over the HTTP/1.1 pool, as before.
 * - **No queue behind a full session.** kube-apiserver bounds the streams of
 *   one connection, and watches and `logs -f` hold theirs for long;
 *   node:http2 would hold a stream past the peer's limit in a queue until
 *   another ends (forever, behind watches). So the pool counts each
 *   session's open streams against its peer's SETTINGS and opens another
 *   session when all are full (past {@link UPSTREAM_H2_MAX_SESSIONS}, the
 *   request takes the HTTP/1.1 pool).
 * - **Sessions that go.** A session that closes, fails or receives GOAWAY
 *   takes no new stream. A bodiless request whose stream ends before any
 *   answer (REFUSED_STREAM, GOAWAY, the session died) is sent once more,
 *   on another session, as the HTTP/1.1 path resends on a kept-alive
 *   socket the API server had just closed.
 */
import type { ClientHttp2Session, ClientHttp2Stream, ServerHttp2Stream } from 'node:http2';
import type { SecureContext, TLSSocket } from 'node:tls';
import type { Logger } from '../log/run-log.js';
import { ANSWER_TIMEOUT_MESSAGE, type AnswerDeadlines, timeoutError } from './answer-deadlines.js';
import { forwardBody } from './forward-body.js';
import {
  UPSTREAM_CONNECT_TIMEOUT_MS,
  UPSTREAM_H2_ASSUMED_STREAM_LIMIT,
  UPSTREAM_H2_IDLE_TIMEOUT_MS,
  UPSTREAM_H2_MAX_SESSIONS,
  UPSTREAM_TCP_KEEPALIVE_DELAY_MS,
} from './limits.js';
import { forwardableResponseHeaders } from './protocol.js';

/** The API server's address, as `Upstream` took it apart. */
export interface H2Origin {
  host: string;
  port: number;
  /** `host:port` as written in the server URL: the `:authority` of every stream. */
  authority: string;
  /** TLS server name; undefined for an address. */
  servername: string | undefined;
}

/** TLS options shared with the HTTP/1.1 pool: the CA and the client certificate in one secure context. */
export interface UpstreamTls {
  rejectUnauthorized: boolean;
  secureContext: SecureContext;
}

/** One session of the pool and the streams it carries now. */
export interface PooledSession {
  readonly session: ClientHttp2Session;
  /** Its place in the order sessions were opened, from 0. */
  readonly serial: number;
  /** Streams open or reserved on it, counted by the pool. */
  active: number;
  /** The peer's SETTINGS_MAX_CONCURRENT_STREAMS, as its latest SETTINGS say. */
  limit: number;
  /** False once it closes, fails or receives GOAWAY: it takes no new stream. */
  isOpen: boolean;
}

/** How the pool reaches the API server. */
export interface H2PoolOptions {
  origin: H2Origin;
  tls: () => Promise<UpstreamTls>;
  logger: Logger;
  maxSessions?: number;
  connectTimeoutMs?: number;
  idleTimeoutMs?: number;
}

/** Sessions opened per {@link UpstreamH2Pool.acquire} at most, so that a server that drops each at once cannot keep one spinning. */
const OPENS_PER_ACQUIRE = 2;
/** RST_STREAM code CANCEL (RFC 9113 §7): the agent no longer wants the stream. */
const NGHTTP2_CANCEL = 0x8;

/** HTTP/2 sessions to one API server. */
export class UpstreamH2Pool {
  readonly #options: H2PoolOptions;
  readonly #sessions: PooledSession[] = [];
  #protocol: 'unknown' | 'h2' | 'http/1.1' = 'unknown';
  #opening: Promise<void> | undefined;
  #opened = 0;
  #isClosed = false;

  constructor(options: H2PoolOptions) {
    this.#options = options;
  }

  /** True once the API server answered ALPN without `h2`: every request takes the HTTP/1.1 pool. */
  get isHttp1Only(): boolean {
    return this.#protocol === 'http/1.1';
  }

  /** The serial the next session opened will have: a resend asks for a session at least this fresh. */
  get nextSerial(): number {
    return this.#opened;
  }

  /** Sessions open now (for tests and the log). */
  get sessionCount(): number {
    return this.#sessions.length;
  }

  /**
   * Reserves a stream on a session with room, without waiting; undefined
   * when none has room. The reservation ends with the stream opened on it
   * by {@link UpstreamH2Pool.openStream}, or with {@link UpstreamH2Pool.release}.
   */
  pick(minSerial = 0): PooledSession | undefined {
    for (const entry of this.#sessions) {
      if (
        entry.serial >= minSerial &&
        entry.active < entry.limit &&
        !entry.session.closed &&
        !entry.session.destroyed
      ) {
        entry.active += 1;
        return entry;
      }
    }
    return undefined;
  }

  /**
   * Reserves a stream on a session of serial `minSerial` or later, opening
   * one when every such session is full;
   * undefined when the API server does not speak HTTP/2, or when
   * {@link UPSTREAM_H2_MAX_SESSIONS} sessions are all full.
   *
   * @throws the connection's error when a session cannot be opened.
   */
  async acquire(minSerial = 0): Promise<PooledSession | undefined> {
    let opens = 0;
    for (;;) {
      if (this.#protocol === 'http/1.1' || this.#isClosed) return undefined;
      const entry = this.pick(minSerial);
      if (entry !== undefined) return entry;
      if (this.#opening !== undefined) {
        await this.#opening;
        continue;
      }
      if (this.#sessions.length >= (this.#options.maxSessions ?? UPSTREAM_H2_MAX_SESSIONS)) return undefined;
      if (opens === OPENS_PER_ACQUIRE)
        throw Object.assign(new Error('HTTP/2 sessions closed at once'), { code: 'ECONNRESET' });
      opens += 1;
      this.#opening = this.#open().finally(() => (this.#opening = undefined));
    }
  }

  /** Ends a reservation that no stream was opened on. */
  release(entry: PooledSession): void {
    entry.active -= 1;
  }

  /**
   * Opens a stream on a reserved session; the reservation ends when the
   * stream closes. Throws when the session has closed meanwhile (the
   * reservation is then released).
   */
  openStream(entry: PooledSession, headers: string[], isEndStream: boolean): ClientHttp2Stream {
    let stream: ClientHttp2Stream;
    try {
      stream = entry.session.request(headers, { endStream: isEndStream });
    } catch (error) {
      this.release(entry);
      throw error;
    }
    stream.once('close', () => this.release(entry));
    return stream;
  }

  /** Dials one session; settles the protocol by its ALPN answer. */
  async #open(): Promise<void> {
    const { origin, logger } = this.#options;
    const [{ connect: tlsConnect }, { connect: h2Connect }, tls] = await Promise.all([
      import('node:tls'),
      import('node:http2'),
      this.#options.tls(),
    ]);
    const socket = await new Promise<TLSSocket>((resolve, reject) => {
      const dialled = tlsConnect({
        host: origin.host,
        port: origin.port,
        servername: origin.servername,
        ALPNProtocols: ['h2', 'http/1.1'],
        ...tls,
      });
      const timer = setTimeout(
        () => dialled.destroy(timeoutError('connecting to the API server timed out')),
        this.#options.connectTimeoutMs ?? UPSTREAM_CONNECT_TIMEOUT_MS,
      );
      dialled.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      dialled.once('secureConnect', () => {
        clearTimeout(timer);
        resolve(dialled);
      });
    });
    if (socket.alpnProtocol !== 'h2' || this.#isClosed) {
      if (!this.#isClosed && this.#protocol === 'unknown') {
        this.#protocol = 'http/1.1';
        logger.debug('the API server does not speak HTTP/2: requests go over HTTP/1.1');
      }
      socket.destroy();
      return;
    }
    if (this.#protocol === 'unknown')
      logger.debug('the API server speaks HTTP/2: plain requests go over HTTP/2 sessions');
    this.#protocol = 'h2';
    socket.setKeepAlive(true, UPSTREAM_TCP_KEEPALIVE_DELAY_MS);
    const session = h2Connect(`https://${origin.authority}`, { createConnection: () => socket });
    const entry = this.#adopt(session);
    try {
      entry.limit = await this.#firstSettings(session);
    } catch (error) {
      this.#drop(entry);
      throw error;
    }
  }

  /**
   * The API server's first SETTINGS: how many streams it allows. A burst of
   * requests sent before they arrive would be refused past that limit, and
   * each refused request may be sent only once more. (The session's errors
   * are heard by {@link UpstreamH2Pool.#adopt}; a failed session closes.)
   */
  #firstSettings(session: ClientHttp2Session): Promise<number> {
    return new Promise((resolve, reject) => {
      const fail = (error: Error): void => {
        clearTimeout(timer);
        session.off('close', closed);
        session.destroy();
        reject(error);
      };
      const timer = setTimeout(
        () => fail(timeoutError('the API server sent no HTTP/2 settings in time')),
        this.#options.connectTimeoutMs ?? UPSTREAM_CONNECT_TIMEOUT_MS,
      );
      const closed = (): void => fail(Object.assign(new Error('the HTTP/2 session closed'), { code: 'ECONNRESET' }));
      session.once('close', closed);
      session.once('remoteSettings', (settings) => {
        clearTimeout(timer);
        session.off('close', closed);
        resolve(settings.maxConcurrentStreams ?? UPSTREAM_H2_ASSUMED_STREAM_LIMIT);
      });
    });
  }

  /** Puts a new session in the pool (taking no stream until its SETTINGS came) and drops it again when it goes. */
  #adopt(session: ClientHttp2Session): PooledSession {
    const entry: PooledSession = { session, serial: this.#opened, active: 0, limit: 0, isOpen: true };
    this.#opened += 1;
    const drop = (): void => this.#drop(entry);
    session.on('remoteSettings', (settings) => {
      entry.limit = settings.maxConcurrentStreams ?? entry.limit;
    });
    session.on('error', (error) => {
      this.#options.logger.debug(`HTTP/2 session to the API server failed: ${error.message}`);
      drop();
    });
    session.once('goaway', drop);
    session.once('close', drop);
    session.setTimeout(this.#options.idleTimeoutMs ?? UPSTREAM_H2_IDLE_TIMEOUT_MS, () => {
      drop();
      session.close();
    });
    // As the HTTP/1.1 pool's free sockets: an idle session keeps no agent alive.
    session.unref();
    this.#sessions.push(entry);
    return entry;
  }

  /** Takes a session out of the pool: it takes no new stream. */
  #drop(entry: PooledSession): void {
    if (!entry.isOpen) return;
    entry.isOpen = false;
    const at = this.#sessions.indexOf(entry);
    if (at !== -1) this.#sessions.splice(at, 1);
  }

  /** Closes every session at once (the agent is stopping). */
  close(): void {
    this.#isClosed = true;
    for (const entry of this.#sessions.splice(0)) {
      entry.isOpen = false;
      entry.session.destroy();
    }
  }
}

/** One plain request to send over HTTP/2. */
export interface H2Request {
  /** The hub's stream: the request's body and, back, the answer. */
  stream: ServerHttp2Stream;
  /** Pseudo-headers, the user's forwardable headers, the agent's credentials and the identity, as a flat list. */
  headers: string[];
  /** A bodiless request: its answer deadline is the sweep's, and it may be sent once more. */
  isRetryable: boolean;
  isRetry: boolean;
}

/** What the request copy needs from `Upstream`. */
export interface H2Context {
  pool: UpstreamH2Pool;
  deadlines: AnswerDeadlines;
  /** The idle timeout of a request with a body, until its answer starts. */
  answerTimeoutMs: number;
  logger: Logger;
  /** Answers the hub's stream with the refusal for `error` (or ends it, once an answer started). */
  refuse: (stream: ServerHttp2Stream, error: NodeJS.ErrnoException) => void;
  /**
   * Sends the request again once, on a session of serial `minSerial` or
   * later (one dialled after the failure, not another that may have had the
   * same GOAWAY) or, lacking one, over HTTP/1.1.
   */
  resend: (request: H2Request, minSerial: number) => void;
}

/** Why a stream ended before any answer, when it ended without an error of its own (GOAWAY, RST_STREAM). */
function closedUnanswered(stream: ClientHttp2Stream): NodeJS.ErrnoException {
  return Object.assign(new Error(`the API server closed the stream unanswered (HTTP/2 code ${stream.rstCode})`), {
    code: 'ECONNRESET',
  });
}

/**
 * Sends one request on a reserved session and copies its answer to the
 * hub's stream. Deadlines as on the HTTP/1.1 path: a bodiless request's from
 * the sweep, a request with a body an idle timeout; none once the answer has
 * started (watch, `logs -f`). The hub's cancel cancels the stream.
 */
export function forwardOverH2(entry: PooledSession, request: H2Request, context: H2Context): void {
  const { stream } = request;
  if (stream.destroyed) {
    context.pool.release(entry);
    return;
  }
  let req: ClientHttp2Stream;
  try {
    req = context.pool.openStream(entry, request.headers, request.isRetryable);
  } catch (error) {
    if (request.isRetryable && !request.isRetry) context.resend({ ...request, isRetry: true }, context.pool.nextSerial);
    else context.refuse(stream, error as NodeJS.ErrnoException);
    return;
  }
  let isAnswerStarted = false;
  let isAnswered = false;
  let isFailed = false;
  const fail = (error: NodeJS.ErrnoException): void => {
    if (isFailed || isAnswered) return;
    isFailed = true;
    context.deadlines.answered(req);
    if (stream.destroyed) return;
    if (isAnswerStarted) {
      // The answer was cut: the hub's stream ends as broken, not as complete.
      stream.destroy();
      return;
    }
    const isOwnTimeout = error.message === ANSWER_TIMEOUT_MESSAGE;
    if (request.isRetryable && !request.isRetry && !isOwnTimeout) {
      context.resend({ ...request, isRetry: true }, context.pool.nextSerial);
      return;
    }
    context.refuse(stream, error);
  };
  if (request.isRetryable) context.deadlines.await(req);
  else req.setTimeout(context.answerTimeoutMs, () => req.destroy(timeoutError(ANSWER_TIMEOUT_MESSAGE)));
  req.once('response', (headers) => {
    isAnswerStarted = true;
    if (request.isRetryable) context.deadlines.answered(req);
    else req.setTimeout(0);
    if (stream.destroyed) {
      req.close(NGHTTP2_CANCEL);
      return;
    }
    const answer = forwardableResponseHeaders(headers);
    answer[':status'] = String(headers[':status'] ?? 502);
    stream.respond(answer);
    req.once('end', () => (isAnswered = true));
    forwardBody(req, stream, { isEndAfterWrites: true });
  });
  req.on('error', fail);
  const onHubClose = (): void => {
    // The hub cancelled the stream before the answer was complete: stop asking the API server.
    if (!isAnswered && !req.destroyed) req.close(NGHTTP2_CANCEL);
  };
  stream.once('close', onHubClose);
  req.once('close', () => {
    stream.off('close', onHubClose);
    if (!isAnswered) fail(closedUnanswered(req));
    // An answer that came before the whole body was sent (a refusal): the rest is read and dropped.
    if (!stream.readableEnded) stream.resume();
  });
  if (request.isRetryable) stream.resume();
  else forwardBody(stream, req, { isEndAfterWrites: true });
}
