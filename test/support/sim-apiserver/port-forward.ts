/**
 * `pods/<name>/portforward` for the simulated API server. The pod's ports
 * are forwarded to local TCP endpoints a test chooses (the simulation has no
 * pod network). Three wire forms are served:
 *
 * - SPDY/3.1 after `Upgrade: SPDY/3.1` (`X-Stream-Protocol-Version:
 *   portforward.k8s.io`): the client opens an error stream and a data stream
 *   per connection, paired by the `requestid` header;
 * - the same SPDY session tunnelled in WebSocket binary messages
 *   (subprotocol `SPDY/3.1+portforward.k8s.io`), kubectl's default since 1.31;
 * - the WebSocket channel protocol (`v4.channel.k8s.io` or
 *   `portforward.k8s.io`, ports in the `ports` query): per port a data
 *   channel 2i and an error channel 2i+1, the first message on each carrying
 *   the port as 2 bytes little-endian; one TCP connection per port.
 *
 * Backpressure holds in both directions: when the side being written to is
 * full, reading from the other side pauses until it drains. SPDY flow
 * control windows are not enforced (kubectl's SPDY library does not send
 * WINDOW_UPDATE either); TCP-level backpressure does that job.
 */
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { RST_STATUS } from './spdy.js';
import { SpdyServerSession } from './spdy-session.js';
import type { FrameTransport, SpdyStream } from './spdy-session.js';
import type { WebSocketConnection } from './websocket-connection.js';

/** Where a forwarded pod port really goes. */
export interface PortForwardTarget {
  host: string;
  port: number;
}

/** Resolves a pod port to its local target, or undefined when nothing listens there. */
export type TargetResolver = (podPort: number) => PortForwardTarget | undefined;

/** The pod a session forwards to, for error messages. */
export interface PortForwardPod {
  namespace: string;
  name: string;
  uid: string;
}

/** Largest data chunk sent in one SPDY data frame or WebSocket message. */
export const FORWARD_CHUNK_BYTES = 32 * 1024;
/** Subprotocol of SPDY tunnelled over WebSocket. */
export const SPDY_TUNNEL_PROTOCOL = 'SPDY/3.1+portforward.k8s.io';
/** Subprotocols of the WebSocket channel form. */
export const WEBSOCKET_PORT_FORWARD_PROTOCOLS = ['v4.channel.k8s.io', 'portforward.k8s.io'] as const;

function refusedMessage(pod: PortForwardPod, port: number): string {
  return `error forwarding port ${port} to pod ${pod.name}, uid ${pod.uid}: failed to connect to localhost:${port} inside the simulated pod: connection refused`;
}

interface StreamPair {
  port: number;
  data?: SpdyStream;
  error?: SpdyStream;
  socket?: Socket;
  /** Data that arrived on the data stream before the pair was complete. */
  early: Buffer[];
  isRemoteFinished: boolean;
  isDone: boolean;
}

/** Counters a session reports to the server. */
export interface PortForwardHooks {
  onConnection(): void;
}

/**
 * Serves one SPDY port-forward session until the transport closes: each
 * forwarded connection is an error stream and a data stream with the same
 * `requestid` (old clients without one are paired by stream id, as the
 * kubelet does).
 */
export function serveSpdyPortForward(
  transport: FrameTransport,
  pod: PortForwardPod,
  resolve: TargetResolver,
  hooks: PortForwardHooks,
): void {
  const pending = new Map<string, StreamPair>();
  const active = new Set<StreamPair>();

  const finish = (pair: StreamPair, message?: string): void => {
    if (pair.isDone) return;
    pair.isDone = true;
    active.delete(pair);
    if (message) pair.error?.write(Buffer.from(message));
    pair.data?.end();
    pair.error?.end();
  };

  const start = (pair: StreamPair, data: SpdyStream): void => {
    const target = resolve(pair.port);
    if (!target) {
      finish(pair, refusedMessage(pod, pair.port));
      return;
    }
    hooks.onConnection();
    active.add(pair);
    const socket = connect(target.port, target.host);
    pair.socket = socket;
    socket.setNoDelay(true);
    for (const chunk of pair.early.splice(0)) socket.write(chunk);
    if (pair.isRemoteFinished) socket.end();
    socket.on('data', (chunk: Buffer) => {
      if (pair.isDone) return;
      if (!data.write(chunk)) {
        socket.pause();
        session.onceDrain(() => socket.resume());
      }
    });
    socket.on('end', () => finish(pair));
    socket.on('error', (error: NodeJS.ErrnoException) => {
      finish(
        pair,
        error.code === 'ECONNREFUSED'
          ? refusedMessage(pod, pair.port)
          : `error forwarding port ${pair.port}: ${error.message}`,
      );
    });
    socket.on('close', () => finish(pair));
  };

  const session = new SpdyServerSession(transport, {
    onStream(stream) {
      const type = stream.headers['streamtype']?.[0];
      const port = Number(stream.headers['port']?.[0]);
      if ((type !== 'data' && type !== 'error') || !Number.isInteger(port) || port < 1 || port > 65535) {
        stream.reset(RST_STATUS.protocolError);
        return;
      }
      const requestId = stream.headers['requestid']?.[0] ?? String(type === 'error' ? stream.id : stream.id - 2);
      let pair = pending.get(requestId);
      if (!pair) {
        pair = { port, early: [], isRemoteFinished: false, isDone: false };
        pending.set(requestId, pair);
      }
      const current = pair;
      if (type === 'error') {
        current.error = stream;
      } else {
        current.data = stream;
        stream.onData((chunk) => {
          const socket = current.socket;
          if (!socket) {
            current.early.push(Buffer.from(chunk));
          } else if (!socket.write(chunk)) {
            session.pauseInput();
            socket.once('drain', () => session.resumeInput());
          }
        });
        stream.onEnd(() => {
          current.isRemoteFinished = true;
          current.socket?.end();
        });
      }
      if (current.data && current.error) {
        pending.delete(requestId);
        start(current, current.data);
      }
    },
    onClose() {
      for (const pair of active) pair.socket?.destroy();
    },
  });
}

/** Serves the WebSocket channel form of port-forward for the given ports. */
export function serveWebSocketPortForward(
  connection: WebSocketConnection,
  ports: number[],
  pod: PortForwardPod,
  resolve: TargetResolver,
  hooks: PortForwardHooks,
): void {
  const sockets: (Socket | undefined)[] = [];
  let open = ports.length;
  const portEnded = (): void => {
    open--;
    if (open === 0) connection.close();
  };
  const sendOn = (channel: number, data: Buffer): boolean => connection.send(Buffer.concat([Buffer.of(channel), data]));

  ports.forEach((port, index) => {
    const prefix = Buffer.alloc(2);
    prefix.writeUInt16LE(port, 0);
    sendOn(index * 2, prefix);
    sendOn(index * 2 + 1, prefix);
    const target = resolve(port);
    if (!target) {
      sendOn(index * 2 + 1, Buffer.from(refusedMessage(pod, port)));
      portEnded();
      return;
    }
    hooks.onConnection();
    const socket = connect(target.port, target.host);
    sockets[index] = socket;
    let hasEnded = false;
    const end = (): void => {
      if (hasEnded) return;
      hasEnded = true;
      portEnded();
    };
    socket.on('data', (chunk: Buffer) => {
      let hasRoom = true;
      for (let offset = 0; offset < chunk.length; offset += FORWARD_CHUNK_BYTES) {
        hasRoom = sendOn(index * 2, chunk.subarray(offset, offset + FORWARD_CHUNK_BYTES));
      }
      if (!hasRoom) {
        socket.pause();
        connection.once('drain', () => socket.resume());
      }
    });
    socket.on('error', (error) =>
      sendOn(index * 2 + 1, Buffer.from(`error forwarding port ${port}: ${error.message}`)),
    );
    socket.on('close', end);
  });

  connection.on('message', (data) => {
    const channel = data[0] ?? 0;
    if (channel % 2 !== 0) return;
    const socket = sockets[channel / 2];
    if (!socket || socket.destroyed) return;
    if (!socket.write(data.subarray(1))) {
      connection.pause();
      socket.once('drain', () => connection.resume());
    }
  });
  connection.on('close', () => {
    for (const socket of sockets) socket?.destroy();
  });
}
