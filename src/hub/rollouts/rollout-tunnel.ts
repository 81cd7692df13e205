/**
 * Rollouts over the tunnel, hub end (the contract is src/rollout/wire.ts):
 * {@link TunnelRolloutDelivery} sends copies and removals as POST control
 * streams (no identity headers: no user can send them), each with a
 * deadline ({@link ROLLOUT_DELIVERY_TIMEOUT_MS}). A cluster without an open
 * tunnel is "disconnected": the controller keeps its copy for its return.
 * An agent older than rollouts is marked so (report-lines.ts); the report
 * stream the other way is report-stream.ts.
 */
import type { ClientHttp2Stream } from 'node:http2';
import type { Logger } from '../../log/run-log.js';
import type { DeliveryOutcome, RolloutDelivery } from './rollout-delivery.js';
import type { HubTunnel } from '../../tunnel/hub-tunnel.js';
import {
  copyMessageJson,
  MAX_COPY_MESSAGE_BYTES,
  ROLLOUT_APPLY_PATH,
  ROLLOUT_REMOVE_PATH,
  type CopyMessage,
  type RemoveMessage,
} from '../../rollout/wire.js';
import { ROLLOUT_DELIVERY_TIMEOUT_MS } from '../limits.js';
import { isOlderAgentRefusal, MAX_REFUSAL_BYTES, unsupportedMessage } from './report-lines.js';

/** Options of {@link TunnelRolloutDelivery}. */
export interface TunnelRolloutDeliveryOptions {
  /** The hub's open tunnels by cluster. */
  tunnels: ReadonlyMap<string, HubTunnel>;
  logger: Logger;
  /** How long an agent has to accept; {@link ROLLOUT_DELIVERY_TIMEOUT_MS} by default. */
  timeoutMs?: number;
}

/** Delivers copies and removals over the clusters' tunnels. */
export class TunnelRolloutDelivery implements RolloutDelivery {
  readonly #tunnels: ReadonlyMap<string, HubTunnel>;
  readonly #logger: Logger;
  readonly #timeoutMs: number;
  /** Clusters whose current agent answered 404 to rollouts. */
  readonly #unsupported = new Set<string>();

  constructor(options: TunnelRolloutDeliveryOptions) {
    this.#tunnels = options.tunnels;
    this.#logger = options.logger;
    this.#timeoutMs = options.timeoutMs ?? ROLLOUT_DELIVERY_TIMEOUT_MS;
  }

  /** A new tunnel of the cluster: its agent may be a newer one. */
  tunnelOpened(cluster: string): void {
    this.#unsupported.delete(cluster);
  }

  /** The cluster's agent answered 404 to the report stream. */
  markUnsupported(cluster: string): void {
    this.#unsupported.add(cluster);
  }

  sendCopy(cluster: string, message: CopyMessage): Promise<DeliveryOutcome> {
    return this.#send(cluster, ROLLOUT_APPLY_PATH, () => copyMessageJson(message));
  }

  sendRemove(cluster: string, message: RemoveMessage): Promise<DeliveryOutcome> {
    return this.#send(cluster, ROLLOUT_REMOVE_PATH, () => JSON.stringify(message));
  }

  #send(cluster: string, path: string, json: () => string): Promise<DeliveryOutcome> {
    const tunnel = this.#tunnels.get(cluster);
    if (tunnel === undefined || !tunnel.isOpen) return Promise.resolve({ status: 'disconnected' });
    if (this.#unsupported.has(cluster)) {
      return Promise.resolve({ status: 'failed', message: unsupportedMessage(cluster) });
    }
    const body = Buffer.from(json(), 'utf8');
    if (body.length > MAX_COPY_MESSAGE_BYTES) {
      return Promise.resolve({
        status: 'failed',
        message: `the copy is ${body.length} bytes, more than an agent takes (${MAX_COPY_MESSAGE_BYTES})`,
      });
    }
    return new Promise((resolve) => {
      let isSettled = false;
      const settle = (outcome: DeliveryOutcome): void => {
        if (isSettled) return;
        isSettled = true;
        clearTimeout(deadline);
        resolve(outcome);
      };
      let stream: ClientHttp2Stream;
      try {
        stream = tunnel.request({
          ':method': 'POST',
          ':path': path,
          'content-type': 'application/json',
          'content-length': String(body.length),
        });
      } catch {
        settle({ status: 'disconnected' });
        return;
      }
      const deadline = setTimeout(() => {
        stream.close();
        settle({
          status: 'failed',
          message: `the agent of cluster "${cluster}" did not accept within ${Math.round(this.#timeoutMs / 1000)} s`,
        });
      }, this.#timeoutMs);
      deadline.unref();
      let status = 0;
      const refusal: Buffer[] = [];
      let refusalSize = 0;
      stream.on('response', (headers) => (status = Number(headers[':status'])));
      stream.on('data', (chunk: Buffer) => {
        if (refusalSize < MAX_REFUSAL_BYTES) refusal.push(chunk.subarray(0, MAX_REFUSAL_BYTES - refusalSize));
        refusalSize += chunk.length;
      });
      stream.on('error', (error) => this.#logger.debug(`cluster ${cluster}: ${path}: ${error.message}`));
      stream.on('close', () => {
        // The contract says 202; any success is taken as one.
        if (status >= 200 && status < 300) settle({ status: 'delivered' });
        else if (status === 404 || isOlderAgentRefusal(status, Buffer.concat(refusal).toString('utf8'))) {
          this.#unsupported.add(cluster);
          settle({ status: 'failed', message: unsupportedMessage(cluster) });
        } else if (status === 0) {
          settle(
            tunnel.isOpen
              ? { status: 'failed', message: `the stream to cluster "${cluster}" closed before an answer` }
              : { status: 'disconnected' },
          );
        } else {
          const text = Buffer.concat(refusal).toString('utf8').trim();
          settle({
            status: 'failed',
            message: `the agent of cluster "${cluster}" answered ${status}${text === '' ? '' : `: ${text}`}`,
          });
        }
      });
      void writeInPieces(stream, body);
    });
  }
}

/** The piece of a body written at a time (see {@link writeInPieces}). */
const WRITE_PIECE_BYTES = 256 * 1024;

/**
 * Writes a body in pieces, each once the stream took the one before: a
 * 10 MiB copy handed to the stream whole left the hub holding about 3 MiB
 * more native memory per cluster it went to (BENCHMARKS.md, "A pass's store
 * cost and a large Rollout's memory"). Stops when the stream closes (its
 * deadline, a reset).
 */
async function writeInPieces(stream: ClientHttp2Stream, body: Buffer): Promise<void> {
  for (let at = 0; at < body.length; at += WRITE_PIECE_BYTES) {
    if (stream.destroyed || stream.closed) return;
    if (stream.write(body.subarray(at, at + WRITE_PIECE_BYTES))) continue;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        stream.off('drain', done);
        stream.off('close', done);
        resolve();
      };
      stream.once('drain', done);
      stream.once('close', done);
    });
  }
  if (!stream.destroyed && !stream.closed) stream.end();
}
