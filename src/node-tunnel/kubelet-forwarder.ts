/**
 * The node's side of one stream: every CONNECT the server opens through the
 * node's tunnel goes to this node's own kubelet, whatever address it names,
 * so a tunnel can carry connections to its own node only. Plain requests
 * are refused: the tunnel carries the API server's kubelet connections and
 * nothing else.
 */
import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { connect } from 'node:net';
import type { Logger } from '../log/run-log.js';
import type { TunnelUpstream } from '../tunnel/agent.js';
import { closeAfterFlush, relayBothWays } from '../tunnel/relay.js';
import { KUBELET_DIAL_TIMEOUT_MS, RELAY_FLUSH_GRACE_MS, RELAY_IDLE_TIMEOUT_MS } from './limits.js';

/** Where the node's kubelet listens, seen from the node. */
export interface KubeletAddress {
  host: string;
  port: number;
}

/** The {@link TunnelUpstream} of a node's tunnel agent: its kubelet. */
export function kubeletForwarder(options: { kubelet: KubeletAddress; logger: Logger }): TunnelUpstream {
  const { kubelet, logger } = options;
  return {
    forwardRequest(stream: ServerHttp2Stream): Promise<void> {
      stream.respond({ ':status': 405 }, { endStream: true });
      return Promise.resolve();
    },
    forwardUpgrade(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): Promise<void> {
      logger.debug(`stream for ${String(headers[':authority'])}: to the kubelet at ${kubelet.host}:${kubelet.port}`);
      // noDelay: as the API server's own dial of a kubelet (Go's default), so an exec's small writes go at once.
      const socket = connect({
        host: kubelet.host,
        port: kubelet.port,
        timeout: KUBELET_DIAL_TIMEOUT_MS,
        noDelay: true,
      });
      // The dial's deadline, then (setTimeout below) the idle one.
      socket.on('timeout', () => socket.destroy(new Error('the kubelet connection timed out')));
      socket.once('connect', () => {
        if (stream.destroyed) {
          socket.destroy();
          return;
        }
        socket.setTimeout(RELAY_IDLE_TIMEOUT_MS);
        stream.respond({ ':status': 200 });
        relayBothWays(stream, socket);
      });
      socket.once('error', (error) => {
        logger.debug(`kubelet connection: ${error.message}`);
        if (!stream.headersSent && !stream.destroyed) stream.respond({ ':status': 502 }, { endStream: true });
        else stream.destroy();
      });
      // The server's end: what the kubelet still has to be sent goes first (stdin's last bytes).
      stream.on('close', () => closeAfterFlush(socket, RELAY_FLUSH_GRACE_MS));
      return Promise.resolve();
    },
    getJson(): Promise<unknown> {
      return Promise.reject(new Error('a node tunnel serves no API reads'));
    },
    close(): void {},
  };
}
