/**
 * The deadlines of the hub's sockets, and the gate in front of TLS.
 *
 * Every socket the hub holds has a deadline in every state, so that nobody
 * who can reach the hub's port can hold its sockets:
 * - TCP accepted, TLS handshake under way: {@link HandshakeGate}, counted
 *   from the accept. Node's own `handshakeTimeout` is set to the same length
 *   as a second guard, but it is a socket timeout started when Node wraps
 *   the connection, and on a `tls.Server` it only reports the timeout to
 *   `tlsClientError` listeners, which must close the socket themselves (the
 *   hub's did not, and 128 silent connections held every handshake place
 *   for good). The gate's deadline does not depend on either;
 * - HTTP/1.1, waiting for a request head, reading a request, idle between
 *   requests, streaming an answer or an upgraded stream: Node's HTTP server
 *   deadlines, set by {@link httpServerDeadlineOptions};
 * - a tunnel: the accept deadline (src/tunnel/hub-tunnel.ts), then the
 *   liveness sweep of the hub.
 */
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { TUNNEL_ACCEPT_TIMEOUT_MS, TUNNEL_SILENCE_LIMIT_MS, TUNNEL_SWEEP_MS } from '../../tunnel/limits.js';
import {
  HTTP_KEEP_ALIVE_GRACE_MS,
  HTTP_KEEP_ALIVE_TIMEOUT_MS,
  HTTP_STREAM_IDLE_TIMEOUT_MS,
  REQUEST_DEADLINE_CHECK_INTERVAL_MS,
  REQUEST_HEADERS_TIMEOUT_MS,
  REQUEST_TIMEOUT_MS,
  TLS_HANDSHAKE_TIMEOUT_MS,
} from '../limits.js';

/**
 * The hub's socket deadlines, in milliseconds; the defaults are in limits.ts
 * (the bound on handshakes in progress is a hub option of its own).
 */
export interface HubDeadlines {
  /** TCP accept to TLS handshake done ({@link TLS_HANDSHAKE_TIMEOUT_MS}). */
  handshakeMs: number;
  /** A whole request head ({@link REQUEST_HEADERS_TIMEOUT_MS}). */
  requestHeadMs: number;
  /** A whole request, head and body ({@link REQUEST_TIMEOUT_MS}). */
  requestMs: number;
  /** How often the two above are checked ({@link REQUEST_DEADLINE_CHECK_INTERVAL_MS}). */
  requestCheckIntervalMs: number;
  /** Idle between an answer and the next request ({@link HTTP_KEEP_ALIVE_TIMEOUT_MS}). */
  keepAliveMs: number;
  /** No byte either way on a streamed answer or an upgraded stream ({@link HTTP_STREAM_IDLE_TIMEOUT_MS}). */
  streamIdleMs: number;
  /** TLS done to tunnel accepted ({@link TUNNEL_ACCEPT_TIMEOUT_MS}). */
  tunnelAcceptMs: number;
  /** Nothing read from an accepted tunnel's agent ({@link TUNNEL_SILENCE_LIMIT_MS}). */
  tunnelSilenceMs: number;
  /** How often the hub sweeps its tunnels for silent ones ({@link TUNNEL_SWEEP_MS}). */
  tunnelSweepMs: number;
}

/** The deadlines a hub runs with unless told otherwise. */
export const DEFAULT_HUB_DEADLINES: Readonly<HubDeadlines> = {
  handshakeMs: TLS_HANDSHAKE_TIMEOUT_MS,
  requestHeadMs: REQUEST_HEADERS_TIMEOUT_MS,
  requestMs: REQUEST_TIMEOUT_MS,
  requestCheckIntervalMs: REQUEST_DEADLINE_CHECK_INTERVAL_MS,
  keepAliveMs: HTTP_KEEP_ALIVE_TIMEOUT_MS,
  streamIdleMs: HTTP_STREAM_IDLE_TIMEOUT_MS,
  tunnelAcceptMs: TUNNEL_ACCEPT_TIMEOUT_MS,
  tunnelSilenceMs: TUNNEL_SILENCE_LIMIT_MS,
  tunnelSweepMs: TUNNEL_SWEEP_MS,
};

/**
 * The options of Node's HTTP server that enforce the HTTP/1.1 deadlines.
 * Their meaning, as Node applies them once the server listens (connection
 * tracking starts on `listening`):
 * - `headersTimeout`: the head must be complete this long after the
 *   connection was handed to the HTTP server or after the request's first
 *   byte; absolute, checked every `connectionsCheckingInterval`; a late
 *   connection gets 408 and is destroyed;
 * - `requestTimeout`: the same for the whole request, body included (not
 *   the answer: a watch is a complete request from its start);
 * - `keepAliveTimeout` (+ buffer): idle between an answer and the next
 *   request's first byte, then destroyed;
 * - `timeout`: no byte either way while an answer is under way.
 */
export function httpServerDeadlineOptions(deadlines: HubDeadlines): {
  headersTimeout: number;
  requestTimeout: number;
  connectionsCheckingInterval: number;
  keepAliveTimeout: number;
  keepAliveTimeoutBuffer: number;
} {
  return {
    headersTimeout: Math.min(deadlines.requestHeadMs, deadlines.requestMs),
    requestTimeout: deadlines.requestMs,
    connectionsCheckingInterval: deadlines.requestCheckIntervalMs,
    keepAliveTimeout: deadlines.keepAliveMs,
    keepAliveTimeoutBuffer: HTTP_KEEP_ALIVE_GRACE_MS,
  };
}

/** What {@link HandshakeGate.admit} did with a connection. */
export type Admission = 'handshake' | 'queued' | 'refused';

/**
 * Admission and deadline of TCP connections on their way through TLS. At
 * most `maxPending` connections are in the handshake at once; the next
 * `maxQueued` wait, in the order they came, for a place (their hello waits
 * in the socket, unread by TLS), each `maxWaitMs` at most; past both, or
 * past its wait, a connection is closed before TLS starts, which costs the
 * hub almost nothing. A burst of reconnecting
 * agents is so taken in at the pace the hub's CPU finishes handshakes,
 * instead of being sent into their backoff. Each connection is closed
 * `handshakeMs` after its accept unless its handshake is done, whether it
 * waited or not. A place (or a turn in the queue) is released exactly once,
 * by whichever comes first: the handshake's end
 * ({@link HandshakeGate.secured}), the deadline, or the connection's close
 * (error, reset, refusal by TLS).
 */
export class HandshakeGate {
  readonly #maxPending: number;
  readonly #maxQueued: number;
  readonly #maxWaitMs: number;
  readonly #handshakeMs: number;
  readonly #onRefused: () => void;
  readonly #onExpired: () => void;
  /** The connections in the handshake, by their peer's `address:port` (as the TLS socket reports it too). */
  readonly #pending = new Map<string, () => void>();
  /** The connections waiting for a place, oldest first; each with what starts its handshake. */
  readonly #queued = new Map<string, { release: () => void; start: () => void; raw: Socket; since: number }>();

  constructor(options: {
    maxPending: number;
    maxQueued?: number;
    /** Longest a connection waits for a place; one that waited longer is closed instead of started. */
    maxWaitMs?: number;
    handshakeMs: number;
    onRefused?: () => void;
    onExpired?: () => void;
  }) {
    this.#maxPending = options.maxPending;
    this.#maxQueued = options.maxQueued ?? 0;
    this.#maxWaitMs = options.maxWaitMs ?? options.handshakeMs;
    this.#handshakeMs = options.handshakeMs;
    this.#onRefused = options.onRefused ?? (() => undefined);
    this.#onExpired = options.onExpired ?? (() => undefined);
  }

  /** Connections in the handshake now. */
  get pendingCount(): number {
    return this.#pending.size;
  }

  /** Connections waiting for a place now. */
  get queuedCount(): number {
    return this.#queued.size;
  }

  /**
   * Called first on every accepted TCP connection, with what starts its TLS
   * handshake: starts it now, queues it (and starts it when a place frees),
   * or closes the connection. Its deadline runs from here either way.
   */
  admit(raw: Socket, startHandshake: () => void): Admission {
    const key = peerKey(raw);
    const isFull = this.#pending.size >= this.#maxPending;
    if (isFull) this.#closeStale();
    // No peer address: the connection is already gone. A peer key held by a live connection cannot be taken twice.
    if (
      key === undefined ||
      this.#pending.has(key) ||
      this.#queued.has(key) ||
      (isFull && this.#queued.size >= this.#maxQueued)
    ) {
      this.#onRefused();
      raw.destroy();
      return 'refused';
    }
    const timer = setTimeout(() => {
      release();
      this.#onExpired();
      // Closing the TCP socket closes the TLS socket on it (it reports a reset to `tlsClientError`).
      raw.destroy();
    }, this.#handshakeMs);
    const release = (): void => {
      clearTimeout(timer);
      if (this.#pending.get(key) === release) {
        this.#pending.delete(key);
        this.#startWaiting();
      } else if (this.#queued.get(key)?.release === release) {
        this.#queued.delete(key);
      }
    };
    raw.once('close', release);
    if (isFull) {
      this.#queued.set(key, { release, start: startHandshake, raw, since: Date.now() });
      return 'queued';
    }
    this.#pending.set(key, release);
    startHandshake();
    return 'handshake';
  }

  /** Called when a connection's TLS handshake is done: frees its place and ends its handshake deadline. */
  secured(socket: TLSSocket): void {
    const key = peerKey(socket);
    if (key !== undefined) this.#pending.get(key)?.();
  }

  /**
   * Closes the waiting connections that waited past `maxWaitMs` (the oldest
   * come first): their agents are about to give up, and a handshake started
   * now would be the hub's work for nobody.
   */
  #closeStale(): void {
    const oldest = Date.now() - this.#maxWaitMs;
    for (const [, waiting] of this.#queued) {
      if (waiting.since > oldest) return;
      waiting.release();
      this.#onRefused();
      waiting.raw.destroy();
    }
  }

  /** Gives the free places to the oldest waiting connections that have not waited too long. */
  #startWaiting(): void {
    this.#closeStale();
    while (this.#pending.size < this.#maxPending) {
      const next = this.#queued.entries().next();
      if (next.done === true) return;
      const [key, waiting] = next.value;
      this.#queued.delete(key);
      this.#pending.set(key, waiting.release);
      waiting.start();
    }
  }
}

function peerKey(socket: Socket): string | undefined {
  const { remoteAddress, remotePort } = socket;
  return remoteAddress === undefined || remotePort === undefined ? undefined : `${remoteAddress}:${remotePort}`;
}
