/**
 * Replica to replica: an operator request (the kube proxy) that reaches a
 * replica not holding the cluster's tunnel is forwarded, one connection per
 * request (no standing mesh), to the replica that holds it, under
 * `/hub/peer/v1/clusters/NAME/…`, over mutual TLS.
 *
 * Who can call the peer path, with what: only a client certificate issued
 * by the hub CA with O={@link REPLICA_CERT_ORGANIZATION} (each replica
 * issues its own at start, with the CA key all replicas share, CN naming the
 * replica). An agent's certificate (O=edgeadm:hub:clusters), an operator's
 * bearer token, or no certificate at all is refused 403 there. The
 * operator's identity travels in `edgeadm-peer-user` / `edgeadm-peer-groups`
 * headers, read only on the peer path: every `edgeadm-*` header an operator
 * sends to the ordinary path is dropped before anything is forwarded, so an
 * operator cannot forge them.
 *
 * What the receiving replica trusts, and why: the forwarding replica
 * authenticated the operator (bearer token, expiry) and checked the
 * operator's cluster selector against the cluster, with the same store. The
 * receiver cannot check the token (it is not forwarded: a credential does
 * not travel further than it must), and a replica able to present a replica
 * certificate holds the CA key and could mint any credential anyway, so
 * re-checking the user would protect against nothing a compromised replica
 * could not bypass. It re-checks what is its own: the cluster still exists,
 * the identity is well formed, and it holds the tunnel itself (a forwarded
 * request is never forwarded again, so two replicas with stale claims
 * cannot bounce a request between them).
 */
import type { ClientRequest, IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { pipeline } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { issueCertificate } from '../../trust/pki.js';
import { forwardableRequestHeaders, forwardableResponseHeaders, type StreamIdentity } from '../../tunnel/protocol.js';
import { isWithinValidity } from '../identity/client-certificate.js';
import type { ReplicaInfo } from '../store/coordination.js';
import type { HubPki } from '../identity/hub-pki.js';
import { endSocketWithStatus, sendStatus } from '../http/http-replies.js';
import { PEER_CONNECT_TIMEOUT_MS, REPLICA_CERT_VALIDITY_DAYS, UPGRADED_SOCKET_MAX_LISTENERS } from '../limits.js';

/** The organization of every replica certificate: what the peer path accepts, and nothing else does. */
export const REPLICA_CERT_ORGANIZATION = 'edgeadm:hub:replicas';
/** The path prefix of forwarded kube proxy requests. */
export const PEER_PROXY_PREFIX = '/hub/peer/v1';
/** The operator's user name on a forwarded request. */
export const PEER_USER_HEADER = 'edgeadm-peer-user';
/** The operator's groups (a JSON array) on a forwarded request. */
export const PEER_GROUPS_HEADER = 'edgeadm-peer-groups';
/** A user or group name as the operator API allows them (access-api.ts' SUBJECT_NAME_PATTERN). */
const SUBJECT_NAME = /^[A-Za-z0-9][A-Za-z0-9._@:+-]{0,252}$/;

/** A replica's client certificate towards the others. `keyPem` is a secret, kept in memory only. */
export interface PeerCredentials {
  replicaId: string;
  certPem: string;
  keyPem: string;
  caPem: string;
}

/**
 * The common name of a replica certificate. The colon keeps it out of the
 * cluster names (DNS labels), so it can never pass for an agent's.
 */
export function replicaCommonName(replicaId: string): string {
  return `edgeadm-hub-replica:${replicaId}`;
}

/** Issues this replica's client certificate under the hub CA. */
export async function issueReplicaCredentials(pki: HubPki, replicaId: string): Promise<PeerCredentials> {
  const issued = await issueCertificate({
    ca: pki.ca,
    commonName: replicaCommonName(replicaId),
    organizations: [REPLICA_CERT_ORGANIZATION],
    usages: ['client'],
    validityDays: REPLICA_CERT_VALIDITY_DAYS,
  });
  return { replicaId, certPem: issued.certPem, keyPem: issued.keyPem, caPem: pki.ca.certPem };
}

/**
 * The replica id a connection's client certificate names, if it is a
 * replica certificate: verified against the hub CA by TLS, within its
 * validity (a resumed session is not re-verified), O and CN a replica's.
 */
export function replicaOfConnection(socket: TLSSocket, now: Date): string | undefined {
  if (!socket.authorized || typeof socket.getPeerCertificate !== 'function') return undefined;
  const peer = socket.getPeerCertificate();
  if (!peer?.subject || !isWithinValidity(peer, now)) return undefined;
  // Node gives a repeated attribute as an array (its types say string).
  const organization: unknown = peer.subject.O;
  const organizations = Array.isArray(organization) ? organization : [organization];
  if (organizations.length !== 1 || organizations[0] !== REPLICA_CERT_ORGANIZATION) return undefined;
  const match = /^edgeadm-hub-replica:([A-Za-z0-9-]{1,64})$/.exec(String(peer.subject.CN ?? ''));
  return match?.[1];
}

/** The operator identity a forwarded request carries; a string says why it is unusable. */
export function peerIdentityOf(req: IncomingMessage): StreamIdentity | string {
  const user = req.headers[PEER_USER_HEADER];
  const groupsText = req.headers[PEER_GROUPS_HEADER];
  if (typeof user !== 'string' || !SUBJECT_NAME.test(user)) return 'the forwarded request names no valid user';
  let groups: unknown;
  try {
    groups = JSON.parse(typeof groupsText === 'string' ? groupsText : '');
  } catch {
    return 'the forwarded request names no valid groups';
  }
  if (!Array.isArray(groups) || !groups.every((g) => typeof g === 'string' && SUBJECT_NAME.test(g))) {
    return 'the forwarded request names no valid groups';
  }
  return { user, groups: groups as string[] };
}

/** Where a forwarded request goes, and as whom. */
export interface PeerForward {
  holder: ReplicaInfo;
  credentials: PeerCredentials;
  cluster: string;
  /** The path on the cluster's API server (passed `parseApiPath`). */
  path: string;
  identity: StreamIdentity;
  /** No byte either way for this long: the forwarded connection is closed. */
  idleMs: number;
}

/** Opens a request to the replica that holds `forward.cluster`'s tunnel, as a replica, on the forwarded path. */
export function openPeerRequest(
  forward: PeerForward,
  method: string,
  headers: Record<string, string | string[]>,
): Promise<ClientRequest> {
  return import('node:https').then(({ request }) => {
    const url = new URL(forward.holder.peerUrl);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const outgoing = request({
      host,
      port: Number(url.port || 443),
      ...(/^[\d.:]+$/.test(host) ? {} : { servername: host }),
      method,
      path: `${PEER_PROXY_PREFIX}/clusters/${forward.cluster}${forward.path}`,
      headers: {
        ...headers,
        [PEER_USER_HEADER]: forward.identity.user,
        [PEER_GROUPS_HEADER]: JSON.stringify(forward.identity.groups),
      },
      ca: forward.credentials.caPem,
      cert: forward.credentials.certPem,
      key: forward.credentials.keyPem,
      // One connection per request: no pool of standing connections between replicas.
      agent: false,
    });
    // The connect and handshake have their deadline; after them, the idle deadline of any stream.
    const connectDeadline = setTimeout(
      () => outgoing.destroy(new Error(`replica ${forward.holder.id} did not answer the connection in time`)),
      PEER_CONNECT_TIMEOUT_MS,
    );
    outgoing.on('socket', (socket) => {
      socket.once('secureConnect', () => clearTimeout(connectDeadline));
      socket.once('close', () => clearTimeout(connectDeadline));
      socket.setTimeout(forward.idleMs, () => socket.destroy(new Error(`no byte either way for ${forward.idleMs} ms`)));
    });
    return outgoing;
  });
}

/** Forwards a plain kube proxy request to the replica that holds the cluster's tunnel. */
export async function forwardRequest(forward: PeerForward, req: IncomingMessage, res: ServerResponse): Promise<void> {
  // The operator's credentials and any identity claims are dropped, as for a tunnel stream.
  const outgoing = await openPeerRequest(forward, req.method ?? 'GET', forwardableRequestHeaders(req.headers));
  outgoing.on('response', (answer: IncomingMessage) => {
    res.writeHead(answer.statusCode ?? 502, forwardableResponseHeaders(answer.headers));
    if (answer.headers['content-length'] === undefined) res.flushHeaders();
    answer.pipe(res);
    answer.on('error', () => res.destroy());
  });
  outgoing.on('error', (error) => {
    if (!res.headersSent) {
      sendStatus(
        res,
        502,
        `cluster "${forward.cluster}" is held by hub replica ${forward.holder.id}, which cannot be reached: ${error.message}`,
        'E_HUB_PEER_UNREACHABLE',
      );
    } else res.destroy();
  });
  res.on('close', () => {
    if (!res.writableFinished) outgoing.destroy();
  });
  req.on('error', () => outgoing.destroy());
  req.pipe(outgoing);
}

/** Forwards an upgrade (exec, attach, port-forward) to the replica that holds the cluster's tunnel. */
export async function forwardUpgrade(
  forward: PeerForward,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  headers: [string, string][],
): Promise<void> {
  const flat: Record<string, string | string[]> = {};
  for (const [name, value] of headers) {
    const lower = name.toLowerCase();
    const had = flat[lower];
    flat[lower] = had === undefined ? value : [...(Array.isArray(had) ? had : [had]), value];
  }
  const outgoing = await openPeerRequest(forward, req.method ?? 'GET', flat);
  outgoing.on('upgrade', (answer: IncomingMessage, peerSocket: Duplex, peerHead: Buffer) => {
    const lines = [`HTTP/1.1 ${answer.statusCode ?? 101} ${answer.statusMessage ?? 'Switching Protocols'}`];
    for (let i = 0; i + 1 < answer.rawHeaders.length; i += 2) {
      lines.push(`${answer.rawHeaders[i] as string}: ${answer.rawHeaders[i + 1] as string}`);
    }
    socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    if (peerHead.length > 0) socket.write(peerHead);
    if (head.length > 0) peerSocket.write(head);
    peerSocket.setMaxListeners(UPGRADED_SOCKET_MAX_LISTENERS);
    pipeline(socket, peerSocket, () => {});
    pipeline(peerSocket, socket, () => {});
  });
  outgoing.on('response', (answer: IncomingMessage) => {
    const chunks: Buffer[] = [];
    answer.on('data', (chunk: Buffer) => chunks.length < 16 && chunks.push(chunk));
    answer.on('end', () => {
      let message = `replica ${forward.holder.id} refused the upgraded connection`;
      try {
        message = String(
          (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { message?: unknown }).message ?? message,
        );
      } catch {
        // keep the default
      }
      endSocketWithStatus(socket, answer.statusCode ?? 502, message);
    });
  });
  outgoing.on('error', (error) =>
    endSocketWithStatus(
      socket,
      502,
      `cluster "${forward.cluster}" is held by hub replica ${forward.holder.id}, which cannot be reached: ${error.message}`,
      'E_HUB_PEER_UNREACHABLE',
    ),
  );
  socket.on('error', () => outgoing.destroy());
  outgoing.end();
}
