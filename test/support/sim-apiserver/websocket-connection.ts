/**
 * A WebSocket connection over a socket, for either role: the server side of
 * an HTTP upgrade (the simulated API server's exec and port-forward
 * endpoints) and a small client (tests that speak the channel protocols
 * directly). Framing is the codec in `websocket.ts`; this module adds the
 * handshake, automatic pong, the closing handshake with a timeout, and flow
 * control in both directions: `send` returns false when the socket is full
 * ('drain' follows), and `pause`/`resume` stop reading the peer.
 */
import { EventEmitter } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { type Agent, request as httpsRequest } from 'node:https';
import { randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import {
  CLOSE_CODE,
  DEFAULT_MAX_MESSAGE_BYTES,
  OPCODE,
  WebSocketProtocolError,
  WebSocketReceiver,
  acceptKeyFor,
  encodeClosePayload,
  encodeFrameHeader,
} from './websocket.js';

/** How long to wait for the peer's close frame after sending ours. */
export const CLOSE_HANDSHAKE_TIMEOUT_MS = 5_000;

/** Options of a {@link WebSocketConnection}. */
export interface WebSocketConnectionOptions {
  role: 'server' | 'client';
  /** The negotiated subprotocol ('' when none). */
  protocol: string;
  maxMessageBytes?: number;
}

type ConnectionEvents = {
  message: [data: Buffer, isBinary: boolean];
  pong: [data: Buffer];
  close: [code: number, reason: string];
  drain: [];
};

/** One open WebSocket. */
export class WebSocketConnection extends EventEmitter<ConnectionEvents> {
  readonly protocol: string;
  readonly #socket: Duplex;
  readonly #role: 'server' | 'client';
  readonly #receiver: WebSocketReceiver;
  #hasSentClose = false;
  #isClosed = false;
  #closeTimer: NodeJS.Timeout | undefined;

  constructor(socket: Duplex, head: Buffer, options: WebSocketConnectionOptions) {
    super();
    this.protocol = options.protocol;
    this.#socket = socket;
    this.#role = options.role;
    this.#receiver = new WebSocketReceiver({
      role: options.role,
      maxMessageBytes: options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
    });
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('drain', () => this.emit('drain'));
    socket.on('error', () => socket.destroy());
    socket.on('close', () => this.#finish(CLOSE_CODE.abnormal, ''));
    if ('setNoDelay' in socket && typeof socket.setNoDelay === 'function') socket.setNoDelay(true);
    if (head.length > 0) queueMicrotask(() => this.#onData(head));
  }

  /** Whether messages may still be sent. */
  get isOpen(): boolean {
    return !this.#hasSentClose && !this.#isClosed;
  }

  /** Sends one message; returns false when the socket's buffer is full (wait for 'drain'). */
  send(data: Buffer, isBinary = true): boolean {
    if (!this.isOpen) return false;
    return this.#writeFrame(isBinary ? OPCODE.binary : OPCODE.text, data);
  }

  /** Sends a ping. */
  ping(data: Buffer = Buffer.alloc(0)): void {
    if (this.isOpen) this.#writeFrame(OPCODE.ping, data);
  }

  /** Starts the closing handshake. */
  close(code: number = CLOSE_CODE.normal, reason = ''): void {
    if (this.#hasSentClose || this.#isClosed) return;
    this.#hasSentClose = true;
    this.#writeFrame(OPCODE.close, encodeClosePayload(code, reason));
    this.#closeTimer = setTimeout(() => this.#socket.destroy(), CLOSE_HANDSHAKE_TIMEOUT_MS);
    this.#closeTimer.unref();
  }

  /** Drops the connection without a closing handshake. */
  terminate(): void {
    this.#socket.destroy();
  }

  /** Stops reading from the peer (inbound flow control). */
  pause(): void {
    this.#socket.pause();
  }

  /** Resumes reading from the peer. */
  resume(): void {
    this.#socket.resume();
  }

  #writeFrame(opcode: number, payload: Buffer): boolean {
    const { header, payload: body } = encodeFrameHeader({ opcode, payload, mask: this.#role === 'client' });
    if (body.length === 0) return this.#socket.write(header);
    this.#socket.cork();
    this.#socket.write(header);
    const hasRoom = this.#socket.write(body);
    this.#socket.uncork();
    return hasRoom;
  }

  #onData(chunk: Buffer): void {
    let events;
    try {
      events = this.#receiver.push(chunk);
    } catch (error) {
      if (error instanceof WebSocketProtocolError) {
        if (!this.#hasSentClose) {
          this.#hasSentClose = true;
          this.#writeFrame(OPCODE.close, encodeClosePayload(error.closeCode, error.message));
        }
        this.#socket.end();
        this.#finish(error.closeCode, error.message);
        return;
      }
      throw error;
    }
    for (const event of events) {
      if (event.type === 'message') this.emit('message', event.data, event.isBinary);
      else if (event.type === 'ping') {
        if (!this.#hasSentClose) this.#writeFrame(OPCODE.pong, event.data);
      } else if (event.type === 'pong') this.emit('pong', event.data);
      else {
        if (!this.#hasSentClose) {
          this.#hasSentClose = true;
          const echo = event.code === CLOSE_CODE.noStatus ? Buffer.alloc(0) : encodeClosePayload(event.code);
          this.#writeFrame(OPCODE.close, echo);
        }
        // The server closes the TCP connection first (RFC 6455 §7.1.1); a client waits for it.
        if (this.#role === 'server') this.#socket.end();
        this.#finish(event.code, event.reason);
      }
    }
  }

  #finish(code: number, reason: string): void {
    if (this.#isClosed) return;
    this.#isClosed = true;
    if (this.#closeTimer) clearTimeout(this.#closeTimer);
    this.emit('close', code, reason);
  }
}

/** Picks the first subprotocol the client offers that the server supports ('' when none matches). */
export function negotiateProtocol(offeredHeader: string | undefined, supported: readonly string[]): string {
  const offered = (offeredHeader ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p.length > 0);
  return offered.find((p) => supported.includes(p)) ?? '';
}

/** Whether a request asks to upgrade to WebSocket. */
export function isWebSocketUpgrade(req: IncomingMessage): boolean {
  return (req.headers.upgrade ?? '').toLowerCase() === 'websocket';
}

/**
 * Completes the server side of the opening handshake on an upgraded socket
 * and returns the connection. Throws when the request is not a valid
 * WebSocket handshake (nothing has been written then).
 */
export function acceptWebSocket(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  protocol: string,
): WebSocketConnection {
  const key = req.headers['sec-websocket-key'];
  if (req.method !== 'GET' || !isWebSocketUpgrade(req) || typeof key !== 'string' || key.length === 0) {
    throw new Error('not a WebSocket handshake');
  }
  if (req.headers['sec-websocket-version'] !== '13') throw new Error('unsupported WebSocket version');
  const lines = [
    'HTTP/1.1 101 Switching Protocols',
    'Upgrade: websocket',
    'Connection: Upgrade',
    `Sec-WebSocket-Accept: ${acceptKeyFor(key)}`,
    ...(protocol ? [`Sec-WebSocket-Protocol: ${protocol}`] : []),
  ];
  socket.write(`${lines.join('\r\n')}\r\n\r\n`);
  return new WebSocketConnection(socket, head, { role: 'server', protocol });
}

/** Options of {@link connectWebSocket}. */
export interface ConnectWebSocketOptions {
  url: string;
  protocols: string[];
  headers?: Record<string, string>;
  ca?: string;
  cert?: string;
  key?: string;
  /** The HTTPS agent that makes the connection (a benchmark's peer tunnel); none (a fresh socket) when absent. */
  agent?: Agent;
}

/** The failure of a WebSocket handshake that the server refused with an HTTP status. */
export class WebSocketHandshakeError extends Error {
  readonly statusCode: number;
  readonly body: string;

  constructor(statusCode: number, body: string) {
    super(`WebSocket handshake refused with HTTP ${statusCode}: ${body}`);
    this.name = 'WebSocketHandshakeError';
    this.statusCode = statusCode;
    this.body = body;
  }
}

/** Opens a client WebSocket over HTTPS (used by tests that speak the channel protocols). */
export function connectWebSocket(options: ConnectWebSocketOptions): Promise<WebSocketConnection> {
  const key = randomBytes(16).toString('base64');
  return new Promise((resolve, reject) => {
    const req = httpsRequest(options.url, {
      method: 'GET',
      headers: {
        Connection: 'Upgrade',
        Upgrade: 'websocket',
        'Sec-WebSocket-Version': '13',
        'Sec-WebSocket-Key': key,
        'Sec-WebSocket-Protocol': options.protocols.join(', '),
        ...options.headers,
      },
      ...(options.ca ? { ca: options.ca } : {}),
      ...(options.cert ? { cert: options.cert } : {}),
      ...(options.key ? { key: options.key } : {}),
      ...(options.agent ? { agent: options.agent } : {}),
    });
    req.on('upgrade', (res, socket, head) => {
      if (res.headers['sec-websocket-accept'] !== acceptKeyFor(key)) {
        socket.destroy();
        reject(new Error('server sent a wrong Sec-WebSocket-Accept'));
        return;
      }
      resolve(
        new WebSocketConnection(socket, head, {
          role: 'client',
          protocol: String(res.headers['sec-websocket-protocol'] ?? ''),
        }),
      );
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        reject(new WebSocketHandshakeError(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'))),
      );
    });
    req.on('error', reject);
    req.end();
  });
}
