/**
 * On a replica that does not lead: the report lines of the tunnels it holds
 * go to the leader (`POST /hub/peer/v1/rollout/reports`, peer-rollouts.ts),
 * in batches, one request at a time, again after a delay while no leader
 * takes them. A line is acknowledged to its agent only once the leader's
 * controller wrote it, so a line lost on the way is sent again by the agent.
 */
import type { Logger } from '../../log/run-log.js';
import { type ReportMessage } from '../../rollout/wire.js';
import type { ReplicaCoordination, ReplicaInfo } from '../store/coordination.js';
import {
  MAX_FORWARDED_REPORTS_QUEUED_BYTES,
  MAX_PEER_REPORT_BATCH_BYTES,
  PEER_REPORTS_RETRY_MAX_MS,
  PEER_REPORTS_RETRY_MS,
  PEER_ROLLOUT_DELIVERY_TIMEOUT_MS,
} from '../limits.js';
import { type PeerCredentials } from '../replicas/peer-link.js';
import { CONTROLLERS_ROLE } from './run-once-controllers.js';
import { peerPost, PEER_REPORTS_PATH, type ForwardedReport } from './peer-rollouts.js';

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
