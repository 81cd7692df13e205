/**
 * `GET /hub/v1/replicas` (hub admin): every live replica, its address, the
 * tunnels it holds and whether it leads (runs the controllers). Each replica
 * knows only whether it leads itself, so the answering replica asks each
 * other one, over the peer link (`GET /hub/peer/v1/replica`, replica
 * certificates only), with a deadline; a replica that does not answer is
 * listed with `isLeader` unknown.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { ReplicaInfo } from '../store/coordination.js';
import type { HubContext } from './hub-context.js';
import type { ReplicaView } from '../contract/views.js';
import { HttpError, sendJson } from '../http/http-replies.js';
import { PEER_CONNECT_TIMEOUT_MS } from '../limits.js';
import { PEER_PROXY_PREFIX, replicaOfConnection, type PeerCredentials } from '../replicas/peer-link.js';

/** The peer route a replica answers with what only it knows of itself. */
export const PEER_REPLICA_PATH = `${PEER_PROXY_PREFIX}/replica`;

/** What a replica tells another of itself. */
interface PeerSelfReport {
  id: string;
  isLeader: boolean;
}

function selfReport(context: HubContext): PeerSelfReport {
  return { id: context.coordination?.self.id ?? '', isLeader: context.rollouts !== undefined };
}

/** `GET /hub/peer/v1/replica`: for replicas only. */
export function servePeerReplica(context: HubContext, req: IncomingMessage, res: ServerResponse): void {
  if (replicaOfConnection(req.socket as TLSSocket, context.now()) === undefined) {
    throw new HttpError(403, 'E_HUB_PEER_FORBIDDEN', 'only hub replicas may use the forwarded path');
  }
  sendJson(res, 200, selfReport(context));
}

async function askReplica(replica: ReplicaInfo, credentials: PeerCredentials): Promise<PeerSelfReport | undefined> {
  const { request } = await import('node:https');
  const url = new URL(replica.peerUrl);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return new Promise((resolve) => {
    const req = request(
      {
        host,
        port: Number(url.port || 443),
        ...(/^[\d.:]+$/.test(host) ? {} : { servername: host }),
        path: PEER_REPLICA_PATH,
        ca: credentials.caPem,
        cert: credentials.certPem,
        key: credentials.keyPem,
        agent: false,
        timeout: PEER_CONNECT_TIMEOUT_MS,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          try {
            const answer = JSON.parse(Buffer.concat(chunks).toString('utf8')) as PeerSelfReport;
            resolve(res.statusCode === 200 && answer.id === replica.id ? answer : undefined);
          } catch {
            resolve(undefined);
          }
        });
        res.on('error', () => resolve(undefined));
      },
    );
    // The whole exchange has one deadline: a replica that does not answer is listed as unknown.
    const deadline = setTimeout(() => req.destroy(), PEER_CONNECT_TIMEOUT_MS);
    req.on('close', () => clearTimeout(deadline));
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(undefined));
    req.end();
  });
}

/** `GET /hub/v1/replicas`: the caller is a hub admin (checked by the operator API). */
export async function listReplicaViews(context: HubContext): Promise<ReplicaView[]> {
  const coordination = context.coordination;
  if (coordination === undefined) return [];
  const [replicas, counts] = await Promise.all([coordination.listReplicas(), coordination.tunnelCounts()]);
  return Promise.all(
    replicas.map(async (replica) => {
      const isSelf = replica.id === coordination.self.id;
      const report =
        isSelf || context.peerCredentials === undefined
          ? isSelf
            ? selfReport(context)
            : undefined
          : await askReplica(replica, context.peerCredentials);
      return {
        id: replica.id,
        advertiseUrl: replica.advertiseUrl,
        peerUrl: replica.peerUrl,
        startedAt: replica.startedAt,
        tunnels: counts.get(replica.id) ?? 0,
        ...(report === undefined ? {} : { isLeader: report.isLeader }),
        isSelf,
      };
    }),
  );
}

/** Sends the replicas' list. */
export async function serveReplicas(context: HubContext, res: ServerResponse): Promise<void> {
  sendJson(res, 200, { replicas: (await listReplicaViews(context)).sort((a, b) => a.id.localeCompare(b.id)) });
}
