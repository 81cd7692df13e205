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

/**
 * Admission and deadline of TCP connections on their way through TLS. At
 * most `maxPending` connections may be in the handshake at once (past it a
 * new connection is closed before TLS starts, which costs the hub almost
 * nothing), and each is closed `handshakeMs` after its accept unless its
 * handshake is done. A place is released exactly once, by whichever comes
 * first: the handshake's end ({@link HandshakeGate.secured}), the deadline,
 * or the connection's close (error, reset, refusal by TLS).
 */
export class HandshakeGate {
  readonly #maxPending: number;
  readonly #handshakeMs: number;
  readonly #onRefused: () => void;
  readonly #onExpired: () => void;
  /** The pending connections, by their peer's `address:port` (as the TLS socket reports it too). */
  readonly #pending = new Map<string, () => void>();

  constructor(options: { maxPending: number; handshakeMs: number; onRefused?: () => void; onExpired?: () => void }) {
    this.#maxPending = options.maxPending;
    this.#handshakeMs = options.handshakeMs;
    this.#onRefused = options.onRefused ?? (() => undefined);
    this.#onExpired = options.onExpired ?? (() => undefined);
  }

  /** Connections in the handshake now. */
  get pendingCount(): number {
    return this.#pending.size;
  }

  /**
   * Called first on every accepted TCP connection: admits it (and starts its
   * deadline), or closes it. Returns whether it was admitted.
   */
  admit(raw: Socket): boolean {
    const key = peerKey(raw);
    // No peer address: the connection is already gone. A peer key held by a live connection cannot be taken twice.
    if (key === undefined || this.#pending.has(key) || this.#pending.size >= this.#maxPending) {
      this.#onRefused();
      raw.destroy();
      return false;
    }
    const timer = setTimeout(() => {
      release();
      this.#onExpired();
      // Closing the TCP socket closes the TLS socket on it (it reports a reset to `tlsClientError`).
      raw.destroy();
    }, this.#handshakeMs);
    const release = (): void => {
      clearTimeout(timer);
      if (this.#pending.get(key) === release) this.#pending.delete(key);
    };
    this.#pending.set(key, release);
    raw.once('close', release);
    return true;
  }

  /** Called when a connection's TLS handshake is done: frees its place and ends its handshake deadline. */
  secured(socket: TLSSocket): void {
    const key = peerKey(socket);
    if (key !== undefined) this.#pending.get(key)?.();
  }
}

function peerKey(socket: Socket): string | undefined {
  const { remoteAddress, remotePort } = socket;
  return remoteAddress === undefined || remotePort === undefined ? undefined : `${remoteAddress}:${remotePort}`;
}
