/**
 * The server side of a SPDY/3.1 session, for the simulated API server's
 * port-forward and exec: accepts the streams the client opens (replying to
 * each at once, as the kubelet does), hands them over with their headers,
 * delivers their data and half-closes, answers pings, and carries the
 * session over any byte transport — the upgraded socket itself, or
 * WebSocket binary messages when kubectl tunnels SPDY.
 *
 * Frames are handled strictly in arrival order; a frame with a header block
 * waits for the inflater (asynchronous) and holds the frames behind it.
 * Flow-control windows are not enforced (kubectl's SPDY library sends no
 * WINDOW_UPDATE either); backpressure comes from the transport: `write`
 * reports a full transport and the session's 'drain' callbacks follow.
 */
import type { Duplex } from 'node:stream';
import {
  FLAG,
  FRAME_TYPE,
  HeaderBlockReader,
  HeaderBlockWriter,
  RST_STATUS,
  SpdyFrameParser,
  encodeControlFrame,
  encodeDataFrameHeader,
  encodeGoAway,
  encodeRstStream,
  encodeSynReply,
} from './spdy.js';
import type { SpdyFrame, SpdyHeaders } from './spdy.js';
import type { WebSocketConnection } from './websocket-connection.js';

/** A byte pipe carrying SPDY frames. */
export interface FrameTransport {
  write(data: Buffer): boolean;
  onData(listener: (chunk: Buffer) => void): void;
  onDrain(listener: () => void): void;
  onClose(listener: () => void): void;
  pause(): void;
  resume(): void;
  close(): void;
}

/** A transport over an upgraded socket. */
export function socketTransport(socket: Duplex, head: Buffer): FrameTransport {
  return {
    write: (data) => socket.write(data),
    onData: (listener) => {
      socket.on('data', listener);
      if (head.length > 0) queueMicrotask(() => listener(head));
    },
    onDrain: (listener) => socket.on('drain', listener),
    onClose: (listener) => {
      socket.on('close', listener);
      socket.on('error', () => socket.destroy());
    },
    pause: () => socket.pause(),
    resume: () => socket.resume(),
    close: () => socket.end(),
  };
}

/** A transport over a WebSocket whose binary messages carry the SPDY byte stream. */
export function tunnelTransport(connection: WebSocketConnection): FrameTransport {
  return {
    write: (data) => connection.send(data),
    onData: (listener) => connection.on('message', (data) => listener(data)),
    onDrain: (listener) => connection.on('drain', listener),
    onClose: (listener) => connection.on('close', () => listener()),
    pause: () => connection.pause(),
    resume: () => connection.resume(),
    close: () => connection.close(),
  };
}

/** One stream the client opened. */
export interface SpdyStream {
  readonly id: number;
  readonly headers: SpdyHeaders;
  /** Sends data; false when the transport is full (wait for the session's drain). */
  write(data: Buffer): boolean;
  /** Half-closes the stream from the server side (FIN). */
  end(): void;
  /** Refuses or aborts the stream (RST_STREAM). */
  reset(status?: number): void;
  /** Receives the client's data. */
  onData(listener: (data: Buffer) => void): void;
  /** Called once when the client half-closes (FIN) or resets the stream, or the session ends. */
  onEnd(listener: () => void): void;
}

/** What a session's user provides. */
export interface SpdySessionHandlers {
  /** A stream was opened (already replied to). */
  onStream(stream: SpdyStream): void;
  /** The session ended (transport closed). */
  onClose?(): void;
}

/** The largest data frame payload the session writes. */
export const SPDY_DATA_CHUNK_BYTES = 32 * 1024;

interface StreamState {
  stream: SpdyStream;
  dataListeners: ((data: Buffer) => void)[];
  endListeners: (() => void)[];
  isRemoteEnded: boolean;
  isLocalEnded: boolean;
}

/** A running server-side SPDY session. */
export class SpdyServerSession {
  readonly #transport: FrameTransport;
  readonly #handlers: SpdySessionHandlers;
  readonly #parser = new SpdyFrameParser();
  readonly #reader = new HeaderBlockReader();
  readonly #writer = new HeaderBlockWriter();
  readonly #streams = new Map<number, StreamState>();
  readonly #queue: SpdyFrame[] = [];
  readonly #drainListeners = new Set<() => void>();
  #isDecoding = false;
  #isClosed = false;
  #lastStreamId = 0;

  constructor(transport: FrameTransport, handlers: SpdySessionHandlers) {
    this.#transport = transport;
    this.#handlers = handlers;
    transport.onData((chunk) => {
      this.#queue.push(...this.#parser.push(chunk));
      this.#pump();
    });
    transport.onDrain(() => {
      const listeners = [...this.#drainListeners];
      this.#drainListeners.clear();
      for (const listener of listeners) listener();
    });
    transport.onClose(() => this.#shutdown());
  }

  /** Calls `listener` once, the next time the transport drains. */
  onceDrain(listener: () => void): void {
    this.#drainListeners.add(listener);
  }

  /** Stops reading the client (inbound backpressure). */
  pauseInput(): void {
    this.#transport.pause();
  }

  resumeInput(): void {
    this.#transport.resume();
  }

  /** Ends the session: GOAWAY, then the transport is closed. */
  close(): void {
    if (this.#isClosed) return;
    this.#send(encodeGoAway(this.#lastStreamId));
    this.#transport.close();
  }

  #send(frame: Buffer): boolean {
    return this.#isClosed ? true : this.#transport.write(frame);
  }

  #sendData(streamId: number, data: Buffer, flags = 0): boolean {
    let hasRoom = true;
    if (data.length === 0) return this.#send(encodeDataFrameHeader(streamId, flags, 0));
    for (let offset = 0; offset < data.length; offset += SPDY_DATA_CHUNK_BYTES) {
      const piece = data.subarray(offset, offset + SPDY_DATA_CHUNK_BYTES);
      const isLast = offset + SPDY_DATA_CHUNK_BYTES >= data.length;
      hasRoom = this.#send(Buffer.concat([encodeDataFrameHeader(streamId, isLast ? flags : 0, piece.length), piece]));
    }
    return hasRoom;
  }

  #remoteEnded(state: StreamState): void {
    if (state.isRemoteEnded) return;
    state.isRemoteEnded = true;
    for (const listener of state.endListeners) listener();
    this.#forgetIfClosed(state);
  }

  /** Drops a stream closed in both directions, so long sessions do not accumulate them. */
  #forgetIfClosed(state: StreamState): void {
    if (state.isRemoteEnded && state.isLocalEnded) this.#streams.delete(state.stream.id);
  }

  #openStream(streamId: number, headers: SpdyHeaders, flags: number): void {
    this.#lastStreamId = Math.max(this.#lastStreamId, streamId);
    this.#send(encodeSynReply(streamId, this.#writer.write({})));
    const state: StreamState = {
      stream: undefined as unknown as SpdyStream,
      dataListeners: [],
      endListeners: [],
      isRemoteEnded: false,
      isLocalEnded: false,
    };
    state.stream = {
      id: streamId,
      headers,
      write: (data) => (state.isLocalEnded ? true : this.#sendData(streamId, data)),
      end: () => {
        if (state.isLocalEnded) return;
        state.isLocalEnded = true;
        this.#sendData(streamId, Buffer.alloc(0), FLAG.fin);
        this.#forgetIfClosed(state);
      },
      reset: (status = RST_STATUS.cancel) => {
        state.isLocalEnded = true;
        this.#send(encodeRstStream(streamId, status));
        this.#remoteEnded(state);
      },
      onData: (listener) => state.dataListeners.push(listener),
      onEnd: (listener) => {
        if (state.isRemoteEnded) queueMicrotask(listener);
        else state.endListeners.push(listener);
      },
    };
    this.#streams.set(streamId, state);
    this.#handlers.onStream(state.stream);
    if (state.isLocalEnded) return;
    if ((flags & FLAG.fin) !== 0) this.#remoteEnded(state);
  }

  #onData(frame: SpdyFrame & { kind: 'data' }): void {
    const state = this.#streams.get(frame.streamId);
    if (!state) return;
    if (frame.data.length > 0 && !state.isRemoteEnded) for (const listener of state.dataListeners) listener(frame.data);
    if ((frame.flags & FLAG.fin) !== 0) this.#remoteEnded(state);
  }

  #onControl(frame: SpdyFrame & { kind: 'control' }): void {
    switch (frame.type) {
      case FRAME_TYPE.ping: {
        // Client pings have odd ids; echoing them is the whole protocol.
        if (frame.payload.readUInt32BE(0) % 2 === 1) this.#send(encodeControlFrame(FRAME_TYPE.ping, 0, frame.payload));
        break;
      }
      case FRAME_TYPE.rstStream: {
        const state = this.#streams.get(frame.payload.readUInt32BE(0) & 0x7fffffff);
        if (state) {
          state.isLocalEnded = true;
          this.#remoteEnded(state);
        }
        break;
      }
      case FRAME_TYPE.goAway:
        this.#transport.close();
        break;
      default:
        // SETTINGS and WINDOW_UPDATE carry nothing the simulation acts on.
        break;
    }
  }

  #pump(): void {
    while (!this.#isDecoding && this.#queue.length > 0 && !this.#isClosed) {
      const frame = this.#queue.shift() as SpdyFrame;
      if (frame.kind === 'data') {
        this.#onData(frame);
        continue;
      }
      // Every header block goes through the inflater, in order, to keep its state in step.
      const blockOffset =
        frame.type === FRAME_TYPE.synStream
          ? 10
          : frame.type === FRAME_TYPE.synReply || frame.type === FRAME_TYPE.headers
            ? 4
            : -1;
      if (blockOffset < 0) {
        this.#onControl(frame);
        continue;
      }
      this.#isDecoding = true;
      this.#reader.read(frame.payload.subarray(blockOffset)).then(
        (headers) => {
          this.#isDecoding = false;
          if (frame.type === FRAME_TYPE.synStream)
            this.#openStream(frame.payload.readUInt32BE(0) & 0x7fffffff, headers, frame.flags);
          this.#pump();
        },
        () => {
          this.#isDecoding = false;
          this.#shutdown();
          this.#transport.close();
        },
      );
    }
  }

  #shutdown(): void {
    if (this.#isClosed) return;
    this.#isClosed = true;
    for (const state of this.#streams.values()) this.#remoteEnded(state);
    this.#reader.close();
    this.#handlers.onClose?.();
  }
}
