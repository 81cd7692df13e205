/**
 * Rollouts across hub replicas. The rollout controller runs on the leading
 * replica, but each cluster's tunnel is held by whichever replica its agent
 * reached; two peer paths join them, replica to replica over mutual TLS,
 * one connection per request (no standing mesh):
 *
 * - `POST /hub/peer/v1/control/CLUSTER/rollout/apply|remove`: the leader
 *   hands a copy or a removal to the replica that holds CLUSTER's tunnel
 *   ({@link FleetRolloutDelivery}); the holder writes it into the tunnel as
 *   it would its own and answers with the outcome (delivered, failed with
 *   the agent's reason, or disconnected). It is never forwarded again: a
 *   replica that does not hold the tunnel answers 503 (the leader keeps the
 *   copy for the cluster's return), so stale claims cannot bounce it.
 * - `POST /hub/peer/v1/rollout/reports`: a replica that does not lead
 *   forwards the report lines of the tunnels it holds to the leader
 *   ({@link ReportForwarder}), in batches, one request at a time. The
 *   leader answers once its controller wrote them to the store; only then
 *   does the holder acknowledge the lines to the agent. A line lost on the
 *   way (the leader died, an election is under way) is thus never
 *   acknowledged, and the agent sends it again, to the next leader.
 *
 * Who may call them, with what, reaching what: only a client certificate
 * issued by this hub's CA with the replica organization (peer-link.ts,
 * `replicaOfConnection`); an operator's token, an agent's certificate, no
 * certificate, or a replica certificate of another hub (another CA, so TLS
 * does not authorize it) are refused 403 before the body is read. A copy
 * reaches only a cluster whose tunnel the receiving replica holds, and is
 * checked by the agent's own message parsers; a report is taken only for
 * the cluster it names, and only as a report (reportOf). A replica holds the
 * CA key and could mint any credential, so what it sends is trusted as a
 * replica's, as on the forwarded kube proxy path.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { request } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TLSSocket } from 'node:tls';
import { isClusterName } from '../../kube/names.js';
import type { Logger } from '../../log/run-log.js';
import { parseCopyMessage, parseRemoveMessage } from '../../rollout/copy-messages.js';
import { MAX_REMOVE_MESSAGE_BYTES } from '../../rollout/limits.js';
import {
  MAX_COPY_MESSAGE_BYTES,
  type CopyMessage,
  type RemoveMessage,
  type ReportMessage,
} from '../../rollout/wire.js';
import type { HubTunnel } from '../../tunnel/hub-tunnel.js';
import type { ReplicaCoordination, ReplicaInfo } from '../store/coordination.js';
import type { HubMetrics } from '../metrics.js';
import { HttpError, readJsonBody, sendJson } from '../http/http-replies.js';
import {
  MAX_FORWARDED_REPORTS_QUEUED_BYTES,
  MAX_PEER_REPORT_BATCH_BYTES,
  MAX_PEER_REPORTS_BODY_BYTES,
  PEER_CONNECT_TIMEOUT_MS,
  PEER_REPORTS_RETRY_MAX_MS,
  PEER_REPORTS_RETRY_MS,
  PEER_ROLLOUT_DELIVERY_ATTEMPTS,
  PEER_ROLLOUT_DELIVERY_TIMEOUT_MS,
  PEER_ROLLOUT_RETRY_MAX_MS,
  PEER_ROLLOUT_RETRY_MS,
} from '../limits.js';
import { PEER_PROXY_PREFIX, replicaOfConnection, type PeerCredentials } from '../replicas/peer-link.js';
import type { DeliveryOutcome, RolloutDelivery } from './rollout-delivery.js';
import { reportOf, type TunnelRolloutDelivery } from './rollout-tunnel.js';
import { CONTROLLERS_ROLE, type ControllerSlot } from './run-once-controllers.js';

/** `POST` here with a copy message: the holder writes it into CLUSTER's tunnel. */
export function peerControlPath(cluster: string, action: 'apply' | 'remove'): string {
  return `${PEER_PROXY_PREFIX}/control/${cluster}/rollout/${action}`;
}

/** `POST` here with `{ reports: [{ cluster, report }] }`: the leader takes them. */
export const PEER_REPORTS_PATH = `${PEER_PROXY_PREFIX}/rollout/reports`;

const CONTROL_PATH = /^\/hub\/peer\/v1\/control\/([^/?]+)\/rollout\/(apply|remove)$/;
/** Most bytes of a peer's answer read (an outcome, a refusal). */
const MAX_PEER_ANSWER_BYTES = 64 * 1024;

/** One forwarded report, as the leader reads it. */
interface ForwardedReport {
  cluster: string;
  report: ReportMessage;
}

// ------------------------------------------------------------------ serving

/** What the peer rollout routes read of the hub's state (the hub's context is one). */
export interface PeerRolloutsContext extends ControllerSlot {
  metrics: HubMetrics;
  logger: Logger;
  tunnels: ReadonlyMap<string, HubTunnel>;
  coordination?: ReplicaCoordination | undefined;
  now(): Date;
}
/**
 * Serves the peer rollout paths; false when the request is for neither.
 *
 * @throws {HttpError} 403 (not a replica of this hub), 405, 400 (not a
 *   message), 413 (too large), 503 (the tunnel is not held here; this
 *   replica does not lead, or the reports could not be written).
 */
export async function servePeerRollouts(
  context: PeerRolloutsContext,
  delivery: TunnelRolloutDelivery,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<boolean> {
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  const control = CONTROL_PATH.exec(path);
  if (control === null && path !== PEER_REPORTS_PATH) return false;
  // Before anything is read: only a replica of this hub.
  const replica = replicaOfConnection(req.socket as TLSSocket, context.now());
  if (replica === undefined) {
    context.metrics.unauthorizedRequests += 1;
    throw new HttpError(403, 'E_HUB_PEER_FORBIDDEN', 'only hub replicas may use the peer rollout paths');
  }
  if (req.method !== 'POST') throw new HttpError(405, 'E_HUB_METHOD', `only POST is served at ${path}`);
  if (control === null) {
    await takeForwardedReports(context, req, res);
    return true;
  }
  const cluster = control[1] ?? '';
  if (!isClusterName(cluster)) throw new HttpError(404, 'E_HUB_NOT_FOUND', `${path} names no cluster`);
  const outcome = await holdersDelivery(context, delivery, req, cluster, control[2] === 'apply' ? 'apply' : 'remove');
  context.logger.debug(`rollout ${outcome.status} for ${cluster}, handed over by replica ${replica}`);
  sendJson(res, outcome.status === 'disconnected' ? 503 : 200, outcome);
  return true;
}

/** The holder's side: the message checked as the agent would, then written into the tunnel held here. */
async function holdersDelivery(
  context: PeerRolloutsContext,
  delivery: TunnelRolloutDelivery,
  req: IncomingMessage,
  cluster: string,
  action: 'apply' | 'remove',
): Promise<DeliveryOutcome> {
  const body = await readJsonBody(req, action === 'apply' ? MAX_COPY_MESSAGE_BYTES : MAX_REMOVE_MESSAGE_BYTES);
  const parsed = action === 'apply' ? parseCopyMessage(body) : parseRemoveMessage(body);
  if (!parsed.ok) throw new HttpError(400, 'E_HUB_PEER_BAD_REQUEST', parsed.message);
  // Never forwarded again: held here or not at all.
  if (context.tunnels.get(cluster)?.isOpen !== true) return { status: 'disconnected' };
  return action === 'apply'
    ? delivery.sendCopy(cluster, parsed.value as CopyMessage)
    : delivery.sendRemove(cluster, parsed.value);
}

/** The leader's side: every well-formed report given to the controller, answered once written. */
async function takeForwardedReports(
  context: PeerRolloutsContext,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const body = await readJsonBody(req, MAX_PEER_REPORTS_BODY_BYTES);
  const controller = context.rollouts;
  if (controller === undefined) {
    throw new HttpError(503, 'E_HUB_NOT_LEADER', `hub replica ${context.coordination?.self.id ?? ''} does not lead`);
  }
  const lines = Array.isArray(body.reports) ? (body.reports as unknown[]) : [];
  const taken: Promise<void>[] = [];
  let dropped = 0;
  for (const line of lines) {
    const forwarded = forwardedReportOf(line);
    if (forwarded === undefined) dropped += 1;
    else taken.push(controller.report(forwarded.cluster, forwarded.report));
  }
  if (dropped > 0) context.logger.warn(`${dropped} forwarded report lines were not reports; dropped`);
  try {
    await Promise.all(taken);
  } catch (error) {
    throw new HttpError(503, 'E_HUB_REPORTS_NOT_TAKEN', `the reports were not written: ${(error as Error).message}`);
  }
  sendJson(res, 200, { taken: taken.length, dropped });
}

function forwardedReportOf(value: unknown): ForwardedReport | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const { cluster, report } = value as { cluster?: unknown; report?: unknown };
  if (typeof cluster !== 'string' || !isClusterName(cluster)) return undefined;
  const checked = reportOf(report);
  // A report is for the cluster it names, and for no other.
  if (typeof checked === 'string' || checked.cluster !== cluster) return undefined;
  return { cluster, report: checked };
}

// ------------------------------------------------------------------ calling

/** One POST to another replica, as a replica; the answer's status and (bounded) body. */
export function peerPost(options: {
  to: ReplicaInfo;
  credentials: PeerCredentials;
  path: string;
  body: unknown;
  timeoutMs: number;
}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const url = new URL(options.to.peerUrl);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const payload = Buffer.from(JSON.stringify(options.body), 'utf8');
    const outgoing = request({
      host,
      port: Number(url.port || 443),
      ...(/^[\d.:]+$/.test(host) ? {} : { servername: host }),
      method: 'POST',
      path: options.path,
      headers: { 'content-type': 'application/json', 'content-length': String(payload.length) },
      ca: options.credentials.caPem,
      cert: options.credentials.certPem,
      key: options.credentials.keyPem,
      agent: false,
    });
    const connectDeadline = setTimeout(
      () => outgoing.destroy(new Error(`replica ${options.to.id} did not answer the connection in time`)),
      PEER_CONNECT_TIMEOUT_MS,
    );
    const deadline = setTimeout(
      () => outgoing.destroy(new Error(`replica ${options.to.id} did not answer within ${options.timeoutMs} ms`)),
      options.timeoutMs,
    );
    outgoing.on('socket', (socket) => socket.once('secureConnect', () => clearTimeout(connectDeadline)));
    outgoing.on('response', (answer) => {
      const chunks: Buffer[] = [];
      let size = 0;
      answer.on('data', (chunk: Buffer) => {
        if (size < MAX_PEER_ANSWER_BYTES) chunks.push(chunk.subarray(0, MAX_PEER_ANSWER_BYTES - size));
        size += chunk.length;
      });
      answer.on('end', () => {
        clearTimeout(deadline);
        resolve({ status: answer.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
      });
      answer.on('error', (error) => reject(error));
    });
    outgoing.on('error', (error) => {
      clearTimeout(connectDeadline);
      clearTimeout(deadline);
      reject(error);
    });
    outgoing.end(payload);
  });
}

function outcomeOf(text: string): DeliveryOutcome | undefined {
  try {
    const parsed = JSON.parse(text) as { status?: unknown; message?: unknown };
    if (parsed.status === 'delivered' || parsed.status === 'disconnected') return { status: parsed.status };
    if (parsed.status === 'failed' && typeof parsed.message === 'string') {
      return { status: 'failed', message: parsed.message };
    }
  } catch {
    // not an outcome
  }
  return undefined;
}

/** Options of {@link FleetRolloutDelivery}. */
export interface FleetRolloutDeliveryOptions {
  /** Delivery over the tunnels this replica holds. */
  local: TunnelRolloutDelivery;
  /** This replica's open tunnels. */
  tunnels: ReadonlyMap<string, HubTunnel>;
  coordination: ReplicaCoordination;
  credentials: PeerCredentials;
  logger: Logger;
  /** How long a holder may take; {@link PEER_ROLLOUT_DELIVERY_TIMEOUT_MS} by default. */
  timeoutMs?: number;
}

/**
 * The leader's delivery: over its own tunnel when it holds the cluster's,
 * else through the replica that does. Anything but an outcome from the
 * holder (it is unreachable, died, lost the tunnel, or is an older edgeadm
 * without the path during an upgrade) is "disconnected": the controller
 * keeps the copy and sends it when the cluster connects again, rather than
 * failing a cluster for a trouble between replicas.
 */
export class FleetRolloutDelivery implements RolloutDelivery {
  readonly #options: FleetRolloutDeliveryOptions;

  constructor(options: FleetRolloutDeliveryOptions) {
    this.#options = options;
  }

  sendCopy(cluster: string, message: CopyMessage): Promise<DeliveryOutcome> {
    if (this.#isLocal(cluster)) return this.#options.local.sendCopy(cluster, message);
    return this.#viaHolder(cluster, 'apply', message);
  }

  sendRemove(cluster: string, message: RemoveMessage): Promise<DeliveryOutcome> {
    if (this.#isLocal(cluster)) return this.#options.local.sendRemove(cluster, message);
    return this.#viaHolder(cluster, 'remove', message);
  }

  #isLocal(cluster: string): boolean {
    return this.#options.tunnels.get(cluster)?.isOpen === true;
  }

  /**
   * Hands the message to the holder, again after a growing delay while the
   * same replica still claims the cluster and gives no outcome: a copy
   * counted disconnected waits for the cluster's next tunnel, so a passing
   * trouble between two live replicas must not leave it waiting. A holder
   * that died loses its claim with its lease, and a new tunnel elsewhere is
   * told to the controller, which sends the copy again.
   */
  async #viaHolder(cluster: string, action: 'apply' | 'remove', message: unknown): Promise<DeliveryOutcome> {
    const { coordination, logger } = this.#options;
    let trouble = '';
    for (let attempt = 0; attempt < PEER_ROLLOUT_DELIVERY_ATTEMPTS; attempt += 1) {
      const delay = Math.min(PEER_ROLLOUT_RETRY_MAX_MS, PEER_ROLLOUT_RETRY_MS * 2 ** (attempt - 1));
      if (attempt > 0) await sleep(delay, undefined, { ref: false });
      let holder: ReplicaInfo | undefined;
      try {
        holder = await coordination.tunnelHolder(cluster);
      } catch (error) {
        trouble = `the tunnel's holder is not known: ${(error as Error).message}`;
        continue;
      }
      if (holder === undefined || holder.id === coordination.self.id) return { status: 'disconnected' };
      const outcome = await this.#once(holder, cluster, action, message);
      if (typeof outcome !== 'string') return outcome;
      trouble = outcome;
    }
    logger.warn(`cluster ${cluster}: the rollout ${action} did not reach the replica holding its tunnel: ${trouble}`);
    return { status: 'disconnected' };
  }

  /** One attempt: the holder's outcome, or what went wrong. */
  async #once(
    holder: ReplicaInfo,
    cluster: string,
    action: 'apply' | 'remove',
    message: unknown,
  ): Promise<DeliveryOutcome | string> {
    try {
      const answer = await peerPost({
        to: holder,
        credentials: this.#options.credentials,
        path: peerControlPath(cluster, action),
        body: message,
        timeoutMs: this.#options.timeoutMs ?? PEER_ROLLOUT_DELIVERY_TIMEOUT_MS,
      });
      const outcome = outcomeOf(answer.body);
      if (outcome !== undefined && (answer.status === 200 || answer.status === 503)) return outcome;
      return `replica ${holder.id} answered ${answer.status}: ${answer.body.slice(0, 500)}`;
    } catch (error) {
      return `replica ${holder.id}: ${(error as Error).message}`;
    }
  }
}

// --------------------------------------------------------------- forwarding

interface QueuedReport extends ForwardedReport {
  bytes: number;
  /** The lines this report answers for (it replaced older ones of its cluster and rollout). */
  waiters: PromiseWithResolvers<void>[];
}

/** Options of {@link ReportForwarder}. */
export interface ReportForwarderOptions {
  coordination: ReplicaCoordination;
  credentials: PeerCredentials;
  logger: Logger;
  /** How a batch reaches the leader; {@link peerPost} by default (tests answer for the leader). */
  post?: (leader: ReplicaInfo, body: unknown) => Promise<{ status: number; body: string }>;
  /** Delays (tests make them short); the limits.ts ones by default. */
  retryMs?: number;
  retryMaxMs?: number;
  maxQueuedBytes?: number;
}

/**
 * A non-leading replica's reports, on their way to the leader: queued as
 * the latest per cluster and rollout (a newer report answers for the older
 * lines it replaced), sent in batches of at most
 * {@link MAX_PEER_REPORT_BATCH_BYTES}, one request at a time, again after a
 * growing delay while no leader takes them. Each report's promise resolves
 * once the leader wrote it, and rejects when it is given up (its tunnel
 * closed, the queue is full, the replica stops): the line is then not
 * acknowledged, and the agent sends it again.
 */
export class ReportForwarder {
  readonly #options: ReportForwarderOptions;
  #queue = new Map<string, QueuedReport>();
  #queuedBytes = 0;
  #isSending = false;
  #retry: NodeJS.Timeout | undefined;
  #failures = 0;
  #isStopped = false;

  constructor(options: ReportForwarderOptions) {
    this.#options = options;
  }

  /** Reports not yet taken by the leader. */
  get queued(): number {
    return this.#queue.size;
  }

  /** Queues one report for the leader; resolves once the leader wrote it. */
  forward(cluster: string, report: ReportMessage): Promise<void> {
    const waiter = Promise.withResolvers<void>();
    waiter.promise.catch(() => undefined);
    const bytes = Buffer.byteLength(JSON.stringify(report));
    const key = `${cluster}\u0000${report.rollout}`;
    const older = this.#queue.get(key);
    const maxBytes = this.#options.maxQueuedBytes ?? MAX_FORWARDED_REPORTS_QUEUED_BYTES;
    if (this.#isStopped || this.#queuedBytes - (older?.bytes ?? 0) + bytes > maxBytes) {
      waiter.reject(new Error('the reports for the leading replica are too many already'));
      return waiter.promise;
    }
    if (older !== undefined) {
      this.#queue.delete(key);
      this.#queuedBytes -= older.bytes;
    }
    this.#queue.set(key, { cluster, report, bytes, waiters: [...(older?.waiters ?? []), waiter] });
    this.#queuedBytes += bytes;
    this.#kick();
    return waiter.promise;
  }

  /** The cluster's tunnel closed here: its reports wait for its next tunnel's (the agent sends them again). */
  dropCluster(cluster: string): void {
    for (const [key, queued] of this.#queue) {
      if (queued.cluster !== cluster) continue;
      this.#queue.delete(key);
      this.#queuedBytes -= queued.bytes;
      for (const waiter of queued.waiters) waiter.reject(new Error(`the tunnel of cluster ${cluster} closed`));
    }
  }

  stop(): void {
    this.#isStopped = true;
    clearTimeout(this.#retry);
    for (const queued of this.#queue.values()) {
      for (const waiter of queued.waiters) waiter.reject(new Error('the hub replica is stopping'));
    }
    this.#queue.clear();
    this.#queuedBytes = 0;
  }

  #kick(): void {
    if (this.#isSending || this.#retry !== undefined || this.#queue.size === 0 || this.#isStopped) return;
    this.#isSending = true;
    void this.#send().finally(() => {
      this.#isSending = false;
      this.#kick();
    });
  }

  #takeBatch(): QueuedReport[] {
    const batch: QueuedReport[] = [];
    let bytes = 0;
    for (const [key, queued] of this.#queue) {
      if (batch.length > 0 && bytes + queued.bytes > MAX_PEER_REPORT_BATCH_BYTES) break;
      batch.push(queued);
      bytes += queued.bytes;
      this.#queue.delete(key);
      this.#queuedBytes -= queued.bytes;
    }
    return batch;
  }

  async #send(): Promise<void> {
    const { coordination, credentials, logger } = this.#options;
    const batch = this.#takeBatch();
    try {
      const leader = await coordination.leaderOf(CONTROLLERS_ROLE);
      if (leader === undefined) throw new Error('no hub replica leads now');
      const body = { reports: batch.map(({ cluster, report }) => ({ cluster, report })) };
      const post =
        this.#options.post ??
        ((to: ReplicaInfo, payload: unknown) =>
          peerPost({
            to,
            credentials,
            path: PEER_REPORTS_PATH,
            body: payload,
            timeoutMs: PEER_ROLLOUT_DELIVERY_TIMEOUT_MS,
          }));
      const answer = await post(leader, body);
      if (answer.status !== 200) throw new Error(`replica ${leader.id} answered ${answer.status}: ${answer.body}`);
      this.#failures = 0;
      for (const queued of batch) for (const waiter of queued.waiters) waiter.resolve();
    } catch (error) {
      if (this.#isStopped) {
        for (const queued of batch) for (const waiter of queued.waiters) waiter.reject(error);
        return;
      }
      this.#failures += 1;
      logger.debug(`reports for the leading replica wait: ${(error as Error).message}`);
      this.#requeue(batch);
      const first = this.#options.retryMs ?? PEER_REPORTS_RETRY_MS;
      const delay = Math.min(this.#options.retryMaxMs ?? PEER_REPORTS_RETRY_MAX_MS, first * 2 ** (this.#failures - 1));
      this.#retry = setTimeout(() => {
        this.#retry = undefined;
        this.#kick();
      }, delay);
      this.#retry.unref();
    }
  }

  /** A batch not taken goes back before what was queued since, unless a newer report replaced one of it. */
  #requeue(batch: QueuedReport[]): void {
    const queue = new Map<string, QueuedReport>();
    for (const queued of batch) {
      const key = `${queued.cluster}\u0000${queued.report.rollout}`;
      const newer = this.#queue.get(key);
      if (newer !== undefined) newer.waiters.unshift(...queued.waiters);
      else {
        queue.set(key, queued);
        this.#queuedBytes += queued.bytes;
      }
    }
    for (const [key, queued] of this.#queue) queue.set(key, queued);
    this.#queue = queue;
  }
}
