/**
 * The API server's side: HTTP CONNECT on a Unix socket, as kube-apiserver's
 * egress selector speaks it for `proxyProtocol: HTTPConnect` over `uds`
 * (k8s.io/apiserver/pkg/server/egressselector: one socket per dial, the
 * request `CONNECT host:port HTTP/1.1`, any answer but 200 fails the dial
 * with its status line in the error, and no byte may follow the 200 before
 * the API server speaks).
 *
 * Each CONNECT is routed by {@link routeOf}: an edge node's kubelet through
 * that node's tunnel, refused or "offline" at once with a reason the
 * operator reads in kubectl's error, and every other address (the control
 * plane's own network: webhooks, aggregated APIs, other nodes) dialled
 * directly, as the API server would without an egress selector.
 */
import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from '../log/run-log.js';
import { closeAfterFlush, relayBothWays } from '../tunnel/relay.js';
import {
  CONNECT_HEAD_MAX_BYTES,
  CONNECT_HEAD_TIMEOUT_MS,
  DIRECT_DIAL_TIMEOUT_MS,
  KUBELET_PORT,
  RELAY_FLUSH_GRACE_MS,
  RELAY_IDLE_TIMEOUT_MS,
  TUNNEL_OPEN_TIMEOUT_MS,
} from './limits.js';
import type { NodeTunnelCounters } from './metrics.js';
import { parseConnectHead, routeOf, type ConnectTarget, type KnownNode } from './routing.js';
import type { TunnelRegistry } from './tunnel-registry.js';

/** What one CONNECT needs. */
export interface EgressDeps {
  nodes: { readonly nodes: readonly KnownNode[]; refreshIfStale(): Promise<void> };
  tunnels: Pick<TunnelRegistry, 'has' | 'isAlive' | 'open'>;
  counters: NodeTunnelCounters;
  logger: Logger;
}

/** The answer that opens a relay; counted out of the bytes a node's connection carried. */
const ESTABLISHED = 'HTTP/1.1 200 Connection established\r\n\r\n';

/** The status line of a refusal: no CR or LF from a reason reaches it. */
function answer(socket: Socket, status: number, reason: string): void {
  const phrase = reason.replace(/[\r\n]+/g, ' ');
  socket.end(`HTTP/1.1 ${status} ${phrase}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
}

/** Relays `socket` (the API server's) and `other` once both are connected; both get the idle deadline. */
function relay(
  socket: Socket,
  other: Duplex & { setTimeout?: (ms: number, cb: () => void) => unknown },
  rest: Buffer,
): void {
  socket.write(ESTABLISHED);
  if (rest.length > 0) other.write(rest);
  socket.setTimeout(RELAY_IDLE_TIMEOUT_MS, () => socket.destroy());
  relayBothWays(socket, other);
  // Paused while the head was read and the route decided; the relay's own pauses are for backpressure.
  socket.resume();
  socket.once('close', () => closeAfterFlush(other, RELAY_FLUSH_GRACE_MS));
  other.once('close', () => closeAfterFlush(socket, RELAY_FLUSH_GRACE_MS));
}

async function throughTunnel(
  socket: Socket,
  node: string,
  target: ConnectTarget,
  rest: Buffer,
  deps: EgressDeps,
): Promise<void> {
  if (!(await deps.tunnels.isAlive(node))) {
    deps.counters.countConnect('offline');
    answer(socket, 503, `node ${node} is offline: its node tunnel does not answer`);
    return;
  }
  const stream = socket.destroyed ? undefined : deps.tunnels.open(node, target.authority);
  if (!stream) {
    if (!socket.destroyed) answer(socket, 503, `node ${node} is offline: its node tunnel agent is not connected`);
    return;
  }
  // The API server waits for the answer without a deadline: every way the stream can end before it answers.
  let isAnswered = false;
  const fail = (status: number, reason: string): void => {
    if (isAnswered) return;
    isAnswered = true;
    clearTimeout(timer);
    deps.counters.countConnect('tunnel_failed');
    if (!stream.destroyed) stream.close();
    answer(socket, status, reason);
  };
  const timer = setTimeout(
    () => fail(504, `node ${node} did not connect its kubelet through its tunnel in time`),
    TUNNEL_OPEN_TIMEOUT_MS,
  );
  stream.once('response', (headers) => {
    const status = Number(headers[':status']);
    if (status !== 200) {
      fail(502, `node ${node} could not connect to its kubelet (${status})`);
      return;
    }
    if (isAnswered) return;
    isAnswered = true;
    clearTimeout(timer);
    stream.setTimeout(RELAY_IDLE_TIMEOUT_MS, () => stream.close());
    // What the API server sent after its head, and what it was sent after the answer.
    const readBefore = socket.bytesRead - rest.length;
    socket.once('close', () =>
      deps.counters.addBytes(node, socket.bytesRead - readBefore, socket.bytesWritten - ESTABLISHED.length),
    );
    relay(socket, stream, rest);
  });
  // Once relayed, the relay handles an error (it destroys the other side).
  stream.once('error', (error) => fail(502, `node ${node}'s tunnel failed: ${error.message}`));
  stream.once('close', () => fail(502, `node ${node}'s tunnel closed the connection before its kubelet answered`));
  socket.once('close', () => {
    if (isAnswered) return;
    isAnswered = true;
    clearTimeout(timer);
    stream.close();
  });
}

function direct(socket: Socket, target: ConnectTarget, rest: Buffer): void {
  // noDelay: the API server's own dials set TCP_NODELAY (Go's default); small TLS records are not held back.
  const upstream = connect({ host: target.host, port: target.port, timeout: DIRECT_DIAL_TIMEOUT_MS, noDelay: true });
  upstream.once('timeout', () => upstream.destroy(new Error('timed out')));
  upstream.once('connect', () => {
    upstream.setTimeout(RELAY_IDLE_TIMEOUT_MS);
    relay(socket, upstream, rest);
  });
  upstream.once('error', (error) => {
    if (socket.bytesWritten === 0) answer(socket, 502, `cannot connect to ${target.authority}: ${error.message}`);
    else socket.destroy();
  });
  socket.once('close', () => {
    if (upstream.connecting) upstream.destroy();
  });
}

async function route(socket: Socket, target: ConnectTarget, rest: Buffer, deps: EgressDeps): Promise<void> {
  const isKnown = deps.nodes.nodes.some((node) => node.addresses.includes(target.host));
  // A kubelet port at an address no Node has: a node that just joined. Webhooks and aggregated APIs
  // (other ports) do not list the Nodes again at every call.
  const isKubeletPort =
    target.port === KUBELET_PORT || deps.nodes.nodes.some((node) => node.kubeletPort === target.port);
  if (!isKnown && isKubeletPort) await deps.nodes.refreshIfStale();
  if (socket.destroyed) return;
  const decided = routeOf(target, deps.nodes.nodes, (node) => deps.tunnels.has(node));
  deps.logger.debug(`CONNECT ${target.authority}: ${decided.kind}${'node' in decided ? ` (${decided.node})` : ''}`);
  deps.counters.countConnect(decided.kind);
  switch (decided.kind) {
    case 'tunnel':
      await throughTunnel(socket, decided.node, target, rest, deps);
      return;
    case 'offline':
      answer(socket, 503, `node ${decided.node} is offline: its node tunnel agent is not connected`);
      return;
    case 'refused':
      deps.logger.warn(`CONNECT ${target.authority} refused: ${decided.reason}`);
      answer(socket, 403, `refused: ${decided.reason}`);
      return;
    case 'direct':
      direct(socket, target, rest);
  }
}

/** Serves one connection from the API server: reads its CONNECT head (bounded, with a deadline) and routes it. */
export function serveEgressConnection(socket: Socket, deps: EgressDeps): void {
  let received = Buffer.alloc(0);
  socket.on('error', (error) => deps.logger.debug(`egress connection: ${error.message}`));
  socket.setTimeout(CONNECT_HEAD_TIMEOUT_MS, () => socket.destroy());
  const onData = (chunk: Buffer): void => {
    received = Buffer.concat([received, chunk]);
    const head = parseConnectHead(received, CONNECT_HEAD_MAX_BYTES);
    if (head.kind === 'incomplete') return;
    socket.off('data', onData);
    socket.pause();
    socket.setTimeout(0);
    if (head.kind === 'invalid') {
      deps.counters.countConnect('invalid');
      answer(socket, 400, head.reason);
      return;
    }
    route(socket, head.target, head.rest, deps).catch((error: Error) => {
      deps.logger.warn(`CONNECT ${head.target.authority} failed: ${error.message}`);
      socket.destroy();
    });
  };
  socket.on('data', onData);
}
