/**
 * Who a request acts as: a bearer token, a mapped client certificate, other
 * `Authorization` credentials, or nobody. The answer decides both the cache
 * entries a request may read (through its identity key) and the credentials
 * it is forwarded with.
 *
 * Pure: the TLS peer is passed in as plain data, so the rule is tested
 * without sockets.
 */
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { RequestIdentity } from './cache-key.js';

/** What the TLS handshake learned about the client. */
export interface PeerCertificate {
  /** Whether the certificate chains to the CA edge-proxy trusts for clients. */
  isAuthorized: boolean;
  /** The subject CN, when the certificate has one. */
  cn: string | undefined;
}

/** The identity a request acts as, or why it is refused (answered 401, never proxied). */
export type ResolvedIdentity =
  | {
      identity: RequestIdentity;
      /** The mapped client certificate CN the request goes upstream with, if any. */
      clientCertCn: string | undefined;
    }
  | { refusal: string };

/**
 * Resolves a request's identity. A bearer token wins over a client
 * certificate; a certificate must be trusted and its CN mapped (an unmapped
 * CN is refused, never proxied with some other identity); without either,
 * other `Authorization` credentials or anonymity. `Impersonate-*` headers are
 * part of the identity.
 */
export function resolveIdentity(
  headers: IncomingHttpHeaders,
  peer: PeerCertificate | undefined,
  mappedCns: { has(cn: string): boolean },
): ResolvedIdentity {
  const impersonation = Object.entries(headers)
    .filter(([name]) => name.startsWith('impersonate-'))
    .map(([name, value]) => `${name}=${[value].flat().join(',')}`);
  const authorization = headers.authorization;
  if (authorization && /^bearer\s+\S/i.test(authorization)) {
    return {
      identity: { principal: `token:${authorization.replace(/^bearer\s+/i, '').trim()}`, impersonation },
      clientCertCn: undefined,
    };
  }
  if (peer) {
    if (!peer.isAuthorized) return { refusal: 'the client certificate is not signed by a CA edge-proxy trusts' };
    const cn = peer.cn;
    if (!cn || !mappedCns.has(cn)) {
      return { refusal: `no --client-cert-map entry for client certificate CN ${JSON.stringify(cn ?? '')}` };
    }
    return { identity: { principal: `cert:${cn}`, impersonation }, clientCertCn: cn };
  }
  return {
    identity: { principal: authorization ? `authorization:${authorization}` : 'anonymous', impersonation },
    clientCertCn: undefined,
  };
}

/** The client certificate a request's TLS socket presented, if any. */
export function peerCertificateOf(req: IncomingMessage): PeerCertificate | undefined {
  const socket = req.socket as TLSSocket;
  const certificate = socket.getPeerCertificate?.();
  if (!certificate || Object.keys(certificate).length === 0) return undefined;
  return { isAuthorized: socket.authorized, cn: [certificate.subject?.CN].flat()[0] };
}
