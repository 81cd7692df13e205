/**
 * What the rollout agent's tests share: a simulated edge cluster (the
 * SIMULATED API server, test/support/sim-apiserver) where the agent holds the
 * RBAC `register-cloud --create-service-account` gives it and a hub user
 * `ops` (group `ops-team`) may write the `shop` namespace only; copies of the
 * unit fixtures' Rollout rendered for one cluster; and a reader of the
 * report stream that waits for lines (no clocks).
 */
import type { ClientHttp2Session, ClientHttp2Stream } from 'node:http2';
import type { KubeCredentials } from '../../src/kube/kubeconfig.js';
import { agentRbacObjects } from '../../src/registration/agent-rbac.js';
import { renderCopy, type RenderedCopy } from '../../src/rollout/render.js';
import type { RolloutSpec } from '../../src/rollout/spec.js';
import {
  MAX_COPY_MESSAGE_BYTES,
  ROLLOUT_APPLY_PATH,
  ROLLOUT_REMOVE_PATH,
  ROLLOUT_REPORT_ACKS_HEADER,
  ROLLOUT_REPORTS_PATH,
  type CopyMessage,
  type ReportMessage,
} from '../../src/rollout/wire.js';
import { rollout } from '../unit/rollout/fixtures.js';
import { startSimApiServer, type KubeObject, type SimApiServer } from './sim-apiserver/index.js';

/** The ServiceAccount user the agent runs as. */
export const AGENT_USER = 'system:serviceaccount:kube-system:edgeadm-tunnel-agent';
/** The hub user that owns the test rollouts, and their group. */
export const OWNER = { user: 'ops', groups: ['ops-team'] };
/** The cluster the copies are rendered for. */
export const CLUSTER = { name: 'store-042', labels: { env: 'prod', region: 'eu' }, properties: { tag: '2.1' } };
const AGENT_TOKEN = 'sim-agent-token';
const RBAC = 'rbac.authorization.k8s.io/v1';

/** The namespace `shop` and the owner's rights in it (a removed rollout takes the namespace, and them, along). */
function shopObjects(): KubeObject[] {
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } },
    {
      apiVersion: RBAC,
      kind: 'Role',
      metadata: { name: 'shop-writer', namespace: 'shop' },
      rules: [
        { apiGroups: [''], resources: ['configmaps'], verbs: ['*'] },
        { apiGroups: ['apps'], resources: ['deployments'], verbs: ['*'] },
      ],
    },
    {
      apiVersion: RBAC,
      kind: 'RoleBinding',
      metadata: { name: 'ops-shop', namespace: 'shop' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'shop-writer' },
      subjects: [{ kind: 'Group', name: 'ops-team' }],
    },
  ] as KubeObject[];
}

/** Puts `shop` and the owner's rights there back, after a test removed the rollout with its namespace. */
export function restoreShop(server: SimApiServer): void {
  for (const object of shopObjects()) server.setObject(object);
}

/** A simulated cluster with the agent's RBAC and an owner who may write `shop` (and nothing in kube-system). */
export async function startEdgeCluster(): Promise<SimApiServer> {
  const objects = [
    ...(agentRbacObjects() as KubeObject[]),
    {
      apiVersion: RBAC,
      kind: 'ClusterRole',
      metadata: { name: 'namespace-keeper' },
      rules: [{ apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'create', 'patch', 'delete'] }],
    },
    {
      apiVersion: RBAC,
      kind: 'ClusterRoleBinding',
      metadata: { name: 'ops-namespaces' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'namespace-keeper' },
      subjects: [{ kind: 'Group', name: 'ops-team' }],
    },
    ...shopObjects(),
  ] as KubeObject[];
  return startSimApiServer({
    recordRequests: true,
    objects,
    tokens: {
      [AGENT_TOKEN]: { user: AGENT_USER, groups: ['system:serviceaccounts', 'system:serviceaccounts:kube-system'] },
    },
    workloadControllers: { stepMs: 20, progressDeadlineMs: 200 },
  });
}

/** The agent's own credentials on the simulated cluster. */
export function agentCredentials(server: SimApiServer): KubeCredentials {
  return { contextName: 'agent', server: server.url, caPem: server.caPem, token: AGENT_TOKEN };
}

/** The cluster's copy of the fixtures' Rollout at `revision`. */
export function copyOf(revision: number, spec: RolloutSpec = rollout()): RenderedCopy {
  const result = renderCopy(spec, revision, CLUSTER);
  if (!result.ok) throw new Error(result.failure.message);
  return result.copy;
}

/** A copy message for the fixtures' rollout `web`. */
export function copyMessage(copy: RenderedCopy, owner = OWNER): CopyMessage {
  return { rollout: 'web', owner, copy };
}

/** The answer to one request on the hub's side of an HTTP/2 session: status and body. */
export interface Exchange {
  status: number;
  body: string;
}

/** One request from the hub's side (no identity headers: a control stream), answered in full. */
export function exchange(
  session: ClientHttp2Session,
  headers: Record<string, string>,
  body?: string | Buffer,
): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const stream = session.request(headers, { endStream: body === undefined });
    let status = 0;
    const chunks: Buffer[] = [];
    stream.on('response', (h) => (status = Number(h[':status'])));
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('error', (error) => (status === 0 ? reject(error) : undefined));
    stream.on('close', () => resolve({ status, body: Buffer.concat(chunks).toString('utf8') }));
    if (body !== undefined) stream.end(body);
  });
}

/** POSTs a copy message. */
export function postCopy(session: ClientHttp2Session, message: unknown): Promise<Exchange> {
  return exchange(
    session,
    { ':method': 'POST', ':path': ROLLOUT_APPLY_PATH, 'content-type': 'application/json' },
    JSON.stringify(message),
  );
}

/** POSTs a remove message. */
export function postRemove(session: ClientHttp2Session, rolloutName = 'web', owner = OWNER): Promise<Exchange> {
  return exchange(
    session,
    { ':method': 'POST', ':path': ROLLOUT_REMOVE_PATH, 'content-type': 'application/json' },
    JSON.stringify({ rollout: rolloutName, owner }),
  );
}

/** The hub's reading end of a report stream. */
export class ReportReader {
  readonly stream: ClientHttp2Stream;
  readonly lines: ReportMessage[] = [];
  status = 0;
  isEnded = false;
  #rest = '';
  readonly #waiters = new Set<() => void>();

  /**
   * @param options.isAcked open the stream as a hub that acknowledges lines
   * (its side stays open for {@link ack}).
   */
  constructor(session: ClientHttp2Session, options: { isPaused?: boolean; isAcked?: boolean } = {}) {
    this.stream = session.request(
      {
        ':method': 'GET',
        ':path': ROLLOUT_REPORTS_PATH,
        ...(options.isAcked === true ? { [ROLLOUT_REPORT_ACKS_HEADER]: '1' } : {}),
      },
      { endStream: options.isAcked !== true },
    );
    this.stream.on('response', (headers) => {
      this.status = Number(headers[':status']);
      this.#wake();
    });
    this.stream.on('data', (chunk: Buffer) => {
      const text = this.#rest + chunk.toString('utf8');
      const parts = text.split('\n');
      this.#rest = parts.pop() ?? '';
      for (const part of parts) if (part !== '') this.lines.push(JSON.parse(part) as ReportMessage);
      this.#wake();
    });
    this.stream.on('error', () => {});
    this.stream.on('close', () => {
      this.isEnded = true;
      this.#wake();
    });
    if (options.isPaused) this.stream.pause();
  }

  #wake(): void {
    for (const wake of [...this.#waiters]) {
      this.#waiters.delete(wake);
      wake();
    }
  }

  /** The first line from `from` on that `predicate` accepts, waiting for more lines as they come. */
  async next(predicate: (line: ReportMessage) => boolean, from = 0): Promise<{ line: ReportMessage; index: number }> {
    for (let at = from; ;) {
      for (; at < this.lines.length; at += 1) {
        const line = this.lines[at] as ReportMessage;
        if (predicate(line)) return { line, index: at };
      }
      if (this.isEnded) throw new Error(`the report stream ended; lines: ${JSON.stringify(this.lines)}`);
      await new Promise<void>((resolve) => this.#waiters.add(resolve));
    }
  }

  /** Resolves when the stream has ended. */
  async ended(): Promise<void> {
    while (!this.isEnded) await new Promise<void>((resolve) => this.#waiters.add(resolve));
  }

  /** Acknowledges every line up to `seq`. */
  ack(seq: number): void {
    this.stream.write(`${JSON.stringify({ ack: seq })}\n`);
  }

  close(): void {
    this.stream.close();
  }
}

/** A report line of the copy at `revision` that is ready. */
export function readyAt(revision: string): (line: ReportMessage) => boolean {
  return (line) => line.kind === 'copy' && line.revision === revision && line.readiness === 'ready';
}

export { MAX_COPY_MESSAGE_BYTES };
