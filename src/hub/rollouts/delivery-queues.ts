/**
 * One delivery queue per cluster: the controller's copies and removals to
 * a cluster go out one at a time, in order, while different clusters'
 * queues run side by side. A failure is logged and the queue goes on.
 */
import type { Logger } from '../../log/run-log.js';

/** Per-cluster serial queues, and how much work is in flight over all of them. */
export class DeliveryQueues {
  readonly #logger: Logger;
  readonly #onDrained: () => void;
  /** Per cluster, the tail of its queue. */
  readonly #tails = new Map<string, Promise<void>>();
  #inFlight = 0;

  /** `onDrained`: called each time the last work in flight over all queues ends. */
  constructor(logger: Logger, onDrained: () => void) {
    this.#logger = logger;
    this.#onDrained = onDrained;
  }

  /** Runs `work` after everything queued for `cluster` before it. */
  enqueue(cluster: string, work: () => Promise<void>): void {
    this.#inFlight += 1;
    const tail = (this.#tails.get(cluster) ?? Promise.resolve())
      .then(work)
      .catch((error: Error) => this.#logger.warn(`rollout delivery to ${cluster} failed: ${error.message}`))
      .finally(() => {
        this.#inFlight -= 1;
        if (this.#tails.get(cluster) === tail) this.#tails.delete(cluster);
        if (this.#inFlight === 0) this.#onDrained();
      });
    this.#tails.set(cluster, tail);
  }

  /** Work queued or running, over all clusters. */
  get inFlight(): number {
    return this.#inFlight;
  }
}
