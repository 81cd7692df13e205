/**
 * Reads a cluster's nodes live, through its tunnel, as the signed-in user:
 * the kube proxy's own admission (admitUser: the user's selector must match
 * the cluster, the tunnel must be open) and the user's identity for the
 * agent to impersonate, so the view shows no more than `kubectl get nodes`
 * through the hub would.
 */
import { EventEmitter } from 'node:events';
import type { IncomingMessage } from 'node:http';
import type { HubTunnel } from '../../tunnel/hub-tunnel.js';
import { identityHeaders, type StreamIdentity } from '../../tunnel/protocol.js';
import type { HubContext } from '../api/hub-context.js';
import { HttpError } from '../http/http-replies.js';
import { admitUser } from '../api/proxy-admission.js';
import { openPeerRequest, type PeerForward } from '../replicas/peer-link.js';
import type { UserRecord } from '../store/store.js';
import { LIVE_READ_TIMEOUT_MS, MAX_LIVE_READ_BYTES, MAX_NODES_SHOWN } from './limits.js';

/** One node as a cluster's page shows it. */
export interface NodeView {
  name: string;
  /** `True`, `False` or `Unknown`, from the node's Ready condition. */
  ready: string;
  roles: string[];
  kubeletVersion?: string;
  isUnschedulable: boolean;
}

interface NodeObject {
  metadata?: { name?: string; labels?: Record<string, string> };
  spec?: { unschedulable?: boolean };
  status?: { conditions?: { type?: string; status?: string }[]; nodeInfo?: { kubeletVersion?: string } };
}

/** Reduces a Node object to what the page shows. */
export function nodeViewOf(node: NodeObject): NodeView {
  const ready = node.status?.conditions?.find((condition) => condition.type === 'Ready')?.status ?? 'Unknown';
  const roles = Object.keys(node.metadata?.labels ?? {})
    .filter((key) => key.startsWith('node-role.kubernetes.io/'))
    .map((key) => key.slice('node-role.kubernetes.io/'.length));
  const view: NodeView = {
    name: node.metadata?.name ?? '',
    ready,
    roles,
    isUnschedulable: node.spec?.unschedulable === true,
  };
  const version = node.status?.nodeInfo?.kubeletVersion;
  if (version !== undefined) view.kubeletVersion = version;
  return view;
}

/** One GET's answer as it arrives: its status, then its body, from a tunnel stream or a peer replica. */
interface LiveAnswer {
  onStatus(listener: (status: number) => void): void;
  body: NodeJS.EventEmitter;
  close(): void;
}

/** A GET through a tunnel this replica holds. */
function getOnTunnel(tunnel: HubTunnel, identity: StreamIdentity, path: string): LiveAnswer {
  const stream = tunnel.request(
    { ':method': 'GET', ':path': path, accept: 'application/json', ...identityHeaders(identity) },
    { endStream: true },
  );
  return {
    onStatus: (listener) => stream.on('response', (headers) => listener(Number(headers[':status'] ?? 502))),
    body: stream,
    close: () => stream.close(),
  };
}

/**
 * A GET forwarded to the replica that holds the cluster's tunnel, the kube
 * proxy's own forwarding (peer-link.ts): the answer's status and body are
 * relayed through one emitter so the reader below treats both paths alike.
 */
async function getThroughPeer(forward: PeerForward): Promise<LiveAnswer> {
  const outgoing = await openPeerRequest(forward, 'GET', { accept: 'application/json' });
  const relay = new EventEmitter();
  const statusListeners: ((status: number) => void)[] = [];
  outgoing.on('response', (answer: IncomingMessage) => {
    for (const listener of statusListeners) listener(answer.statusCode ?? 502);
    answer.on('data', (chunk: Buffer) => relay.emit('data', chunk));
    answer.on('end', () => relay.emit('end'));
    answer.on('error', (error) => relay.emit('error', error));
  });
  outgoing.on('error', (error) => relay.emit('error', error));
  outgoing.end();
  return {
    onStatus: (listener) => statusListeners.push(listener),
    body: relay,
    close: () => outgoing.destroy(),
  };
}

/**
 * GETs a path on a cluster's API server as `user`, through its tunnel here
 * or through the replica that holds it; resolves with the parsed JSON body.
 */
async function getThroughTunnel(
  context: HubContext,
  user: UserRecord,
  cluster: string,
  path: string,
): Promise<{ status: number; body: unknown }> {
  const admitted = await admitUser(context, user, { cluster, path });
  const answer =
    'forward' in admitted
      ? await getThroughPeer(admitted.forward)
      : getOnTunnel(admitted.tunnel, admitted.identity, path);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let status = 502;
    const timer = setTimeout(() => {
      answer.close();
      reject(new HttpError(504, 'E_WEB_LIVE_READ_TIMEOUT', `cluster "${cluster}" did not answer in time`));
    }, LIVE_READ_TIMEOUT_MS);
    answer.onStatus((received) => (status = received));
    answer.body.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_LIVE_READ_BYTES) {
        answer.close();
        clearTimeout(timer);
        reject(new HttpError(502, 'E_WEB_LIVE_READ_TOO_LARGE', `cluster "${cluster}" answered too much`));
        return;
      }
      chunks.push(chunk);
    });
    answer.body.on('error', (error: Error) => {
      clearTimeout(timer);
      reject(new HttpError(502, 'E_WEB_LIVE_READ', `the tunnel to cluster "${cluster}" failed: ${error.message}`));
    });
    answer.body.on('end', () => {
      clearTimeout(timer);
      try {
        resolve({ status, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      } catch {
        reject(new HttpError(502, 'E_WEB_LIVE_READ', `cluster "${cluster}" answered something other than JSON`));
      }
    });
  });
}

/** A cluster's nodes, read now through its tunnel as `user`. */
export async function readNodes(
  context: HubContext,
  user: UserRecord,
  cluster: string,
): Promise<{ nodes: NodeView[]; isTruncated: boolean }> {
  const answer = await getThroughTunnel(context, user, cluster, `/api/v1/nodes?limit=${MAX_NODES_SHOWN}`);
  const body = answer.body as { items?: NodeObject[]; metadata?: { continue?: string }; message?: string };
  if (answer.status === 403) {
    // The cluster's own RBAC refused the impersonated user: said in words, not as the API server's Status.
    throw new HttpError(
      403,
      'E_WEB_NODES_FORBIDDEN',
      `cluster "${cluster}" does not let you (${user.name}) list its nodes: its own RBAC decides what you may read there. A ClusterRole allowing "list" on nodes, bound to you or one of your groups on that cluster, shows them here.`,
    );
  }
  if (answer.status !== 200) {
    throw new HttpError(
      502,
      'E_WEB_LIVE_READ',
      `cluster "${cluster}" refused to list nodes: ${body?.message ?? `status ${answer.status}`}`,
    );
  }
  const items = Array.isArray(body.items) ? body.items : [];
  return {
    nodes: items.slice(0, MAX_NODES_SHOWN).map(nodeViewOf),
    isTruncated: items.length > MAX_NODES_SHOWN || Boolean(body.metadata?.continue),
  };
}
