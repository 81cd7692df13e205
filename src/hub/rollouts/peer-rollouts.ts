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
 *   (report-forwarder.ts), in batches, one request at a time. The
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
  copyMessageJson,
  MAX_COPY_MESSAGE_BYTES,
  type CopyMessage,
  type RemoveMessage,
  type ReportMessage,
} from '../../rollout/wire.js';
import type { HubTunnel } from '../../tunnel/hub-tunnel.js';
import type { ReplicaCoordination, ReplicaInfo } from '../store/coordination.js';
import type { HubMetrics } from '../metrics/hub-metrics.js';
import { HttpError, readJsonBody, sendJson } from '../http/http-replies.js';
import {
  MAX_PEER_REPORTS_BODY_BYTES,
  PEER_CONNECT_TIMEOUT_MS,
  PEER_ROLLOUT_DELIVERY_ATTEMPTS,
  PEER_ROLLOUT_DELIVERY_TIMEOUT_MS,
  PEER_ROLLOUT_RETRY_MAX_MS,
  PEER_ROLLOUT_RETRY_MS,
} from '../limits.js';
import { PEER_PROXY_PREFIX, replicaOfConnection, type PeerCredentials } from '../replicas/peer-link.js';
import type { DeliveryOutcome, RolloutDelivery } from './rollout-delivery.js';
import { type TunnelRolloutDelivery } from './rollout-tunnel.js';
import { reportOf } from './report-lines.js';
import { type ControllerSlot } from './run-once-controllers.js';

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
export interface ForwardedReport {
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
    context.metrics.unauthorizedRequests.inc();
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
  /** The JSON body: `json` as it is, or `body` serialized. */
  body?: unknown;
  json?: string;
  timeoutMs: number;
}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const url = new URL(options.to.peerUrl);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const payload = Buffer.from(options.json ?? JSON.stringify(options.body), 'utf8');
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
    // Serialized once for every attempt, the rendered copy once for every cluster it goes to (wire.ts).
    return this.#viaHolder(cluster, 'apply', copyMessageJson(message));
  }

  sendRemove(cluster: string, message: RemoveMessage): Promise<DeliveryOutcome> {
    if (this.#isLocal(cluster)) return this.#options.local.sendRemove(cluster, message);
    return this.#viaHolder(cluster, 'remove', JSON.stringify(message));
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
  async #viaHolder(cluster: string, action: 'apply' | 'remove', json: string): Promise<DeliveryOutcome> {
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
      const outcome = await this.#once(holder, cluster, action, json);
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
    json: string,
  ): Promise<DeliveryOutcome | string> {
    try {
      const answer = await peerPost({
        to: holder,
        credentials: this.#options.credentials,
        path: peerControlPath(cluster, action),
        json,
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
