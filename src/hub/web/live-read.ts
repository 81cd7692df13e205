/**
 * Reads a cluster's nodes live, through its tunnel, as the signed-in user:
 * the kube proxy's own admission (admitUser: the user's selector must match
 * the cluster, the tunnel must be open) and the user's identity for the
 * agent to impersonate, so the view shows no more than `kubectl get nodes`
 * through the hub would.
 */
import { identityHeaders } from '../../tunnel/protocol.js';
import type { HubContext } from '../hub-context.js';
import { HttpError } from '../http-replies.js';
import { admitUser } from '../kube-proxy.js';
import type { UserRecord } from '../store.js';
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

/** GETs a path on a cluster's API server through its tunnel as `user`; resolves with the parsed JSON body. */
async function getThroughTunnel(
  context: HubContext,
  user: UserRecord,
  cluster: string,
  path: string,
): Promise<{ status: number; body: unknown }> {
  const { tunnel, identity } = await admitUser(context, user, { cluster });
  return new Promise((resolve, reject) => {
    const stream = tunnel.request(
      { ':method': 'GET', ':path': path, accept: 'application/json', ...identityHeaders(identity) },
      { endStream: true },
    );
    const chunks: Buffer[] = [];
    let size = 0;
    let status = 502;
    const timer = setTimeout(() => {
      stream.close();
      reject(new HttpError(504, 'E_WEB_LIVE_READ_TIMEOUT', `cluster "${cluster}" did not answer in time`));
    }, LIVE_READ_TIMEOUT_MS);
    stream.on('response', (headers) => (status = Number(headers[':status'] ?? 502)));
    stream.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_LIVE_READ_BYTES) {
        stream.close();
        clearTimeout(timer);
        reject(new HttpError(502, 'E_WEB_LIVE_READ_TOO_LARGE', `cluster "${cluster}" answered too much`));
        return;
      }
      chunks.push(chunk);
    });
    stream.on('error', (error) => {
      clearTimeout(timer);
      reject(new HttpError(502, 'E_WEB_LIVE_READ', `the tunnel to cluster "${cluster}" failed: ${error.message}`));
    });
    stream.on('end', () => {
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
  if (answer.status !== 200) {
    throw new HttpError(
      answer.status === 403 ? 403 : 502,
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
