/**
 * The edge nodes' side: the TLS port where each node's agent dials in with
 * its kubelet client certificate (issued by the cluster CA). The handshake
 * and the accept are the hub tunnel's (src/tunnel/hub-tunnel.ts: the server
 * is the HTTP/2 client on the agent's connection, the agent's hello must
 * name what its certificate names); here the "cluster" of a tunnel is the
 * node's name, taken from `CN=system:node:NAME, O=system:nodes`, and the
 * node must exist. Nothing else is served on this port: it is no proxy a
 * node could send anywhere.
 */
import { createServer, type Server, type TLSSocket } from 'node:tls';
import type { Logger } from '../log/run-log.js';
import { acceptTunnel, type TunnelVerdict } from '../tunnel/hub-tunnel.js';
import { TUNNEL_ALPN_PROTOCOL } from '../tunnel/limits.js';
import { TLS_HANDSHAKE_TIMEOUT_MS } from './limits.js';
import { nodeOfSubject, type CertificateSubject } from './routing.js';
import type { NodeTable } from './node-table.js';
import type { TunnelRegistry } from './tunnel-registry.js';

/** The TLS material of the tunnel port. `keyPem` is a secret. */
export interface TunnelListenerTls {
  /** The cluster CA: the nodes' client certificates must chain to it. */
  caPem: string;
  certPem: string;
  keyPem: string;
}

/** Decides whether a verified client certificate may carry a node's tunnel. */
export async function verdictOf(
  subject: CertificateSubject | undefined,
  nodes: Pick<NodeTable, 'nodes' | 'refreshIfStale'>,
): Promise<TunnelVerdict> {
  const named = nodeOfSubject(subject);
  if ('refusal' in named) return named;
  const isKnown = (): boolean => nodes.nodes.some((node) => node.name === named.node);
  if (!isKnown()) await nodes.refreshIfStale();
  if (!isKnown()) return { refusal: `there is no Node named ${named.node}` };
  return { cluster: named.node };
}

/** Makes the TLS server of the tunnel port (not yet listening). */
export function createTunnelListener(options: {
  tls: TunnelListenerTls;
  nodes: Pick<NodeTable, 'nodes' | 'refreshIfStale'>;
  tunnels: Pick<TunnelRegistry, 'add'>;
  logger: Logger;
}): Server {
  const server = createServer({
    ca: options.tls.caPem,
    cert: options.tls.certPem,
    key: options.tls.keyPem,
    requestCert: true,
    // acceptTunnel refuses an unverified certificate itself, and says why.
    rejectUnauthorized: false,
    ALPNProtocols: [TUNNEL_ALPN_PROTOCOL],
    handshakeTimeout: TLS_HANDSHAKE_TIMEOUT_MS,
    minVersion: 'TLSv1.2',
    // Every small write (an exec's keystroke, a stream's HEADERS) goes at once; the agent's end does the same.
    noDelay: true,
  });
  server.on('tlsClientError', (error) => options.logger.debug(`tunnel port: ${error.message}`));
  server.on('secureConnection', (socket: TLSSocket) => {
    // Read now: a socket that is closed no longer knows its peer.
    const peer = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`;
    socket.on('error', (error) => options.logger.debug(`tunnel socket: ${error.message}`));
    if (socket.alpnProtocol !== TUNNEL_ALPN_PROTOCOL) {
      socket.destroy();
      return;
    }
    acceptTunnel({
      socket,
      authorize: (certificate) => verdictOf(certificate.subject as CertificateSubject | undefined, options.nodes),
      logger: options.logger,
      peerKind: 'node',
    })
      .then((tunnel) => options.tunnels.add(tunnel))
      .catch((error: Error) => options.logger.warn(`tunnel from ${peer} not accepted: ${error.message}`));
  });
  return server;
}
