/**
 * Whether the API server is reachable, and the `/readyz` probe loop that
 * decides it: every `--health-interval` while online, at least every
 * {@link OFFLINE_PROBE_INTERVAL_MS} while offline. A connection failure seen
 * by any request also takes the proxy offline at once. Held watches wait
 * here for the upstream to come back.
 */
import type { Logger } from '../log/run-log.js';
import { OFFLINE_PROBE_INTERVAL_MS } from './limits.js';

/** What the request paths need to know about the proxy's upstream state. */
export interface UpstreamState {
  readonly isOnline: boolean;
  /** Probes now (unless a probe is running) and resolves with the result. */
  checkNow(): Promise<boolean>;
  /** Calls `callback` once when the upstream is next seen online; returns a cancel function. */
  onceOnline(callback: () => void): () => void;
  /** Reports a connection failure: the proxy goes offline and probes fast. */
  markUnreachable(reason: string): void;
}

/** The online/offline state and the probe loop. */
export class UpstreamStateMachine implements UpstreamState {
  #isOnline = true;
  #probing: Promise<boolean> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #isStopped = false;
  readonly #waiters = new Set<() => void>();

  /**
   * @param upstream what answers the probe (the upstream client's `/readyz`).
   * @param intervalMs the probe interval while online.
   */
  constructor(
    private readonly upstream: { probe(): Promise<boolean> },
    private readonly intervalMs: number,
    private readonly logger: Logger,
  ) {}

  get isOnline(): boolean {
    return this.#isOnline;
  }

  checkNow(): Promise<boolean> {
    this.#probing ??= this.upstream.probe().then((isOnline) => {
      this.#probing = undefined;
      this.#set(isOnline, isOnline ? 'the readiness probe passed' : 'the readiness probe failed');
      return isOnline;
    });
    return this.#probing;
  }

  onceOnline(callback: () => void): () => void {
    const waiter = (): void => {
      this.#waiters.delete(waiter);
      callback();
    };
    this.#waiters.add(waiter);
    return () => this.#waiters.delete(waiter);
  }

  markUnreachable(reason: string): void {
    this.#set(false, reason);
  }

  /** Starts the probe loop. */
  start(): void {
    this.#schedule();
  }

  /** Stops the probe loop for good. */
  stop(): void {
    this.#isStopped = true;
    clearTimeout(this.#timer);
  }

  #schedule(): void {
    if (this.#isStopped) return;
    clearTimeout(this.#timer);
    const delay = this.#isOnline ? this.intervalMs : Math.min(OFFLINE_PROBE_INTERVAL_MS, this.intervalMs);
    this.#timer = setTimeout(() => void this.checkNow().finally(() => this.#schedule()), delay);
    this.#timer.unref();
  }

  #set(isOnline: boolean, reason: string): void {
    if (isOnline === this.#isOnline) return;
    this.#isOnline = isOnline;
    if (isOnline) {
      this.logger.info(`edge-proxy: the API server is back (${reason}); forwarding again`);
      for (const waiter of [...this.#waiters]) waiter();
    } else {
      this.logger.warn(`edge-proxy: the API server is unreachable (${reason}); serving from the cache`);
    }
    this.#schedule();
  }
}
