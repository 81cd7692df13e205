/**
 * When the rollout controller runs a pass, and with what: events only mark
 * (a rollout, all of them, a cluster that just connected, the clusters to
 * read again); one pass then takes the marks, at most every `intervalMs`,
 * so a reconnect storm of 10,000 clusters is a few passes, not 10,000; and
 * after a pass that took long, the rest before the next one grows with it,
 * so passes never take more than `maxShare` of the hub's time. A
 * wake timer marks everything at the next soak end or delivery deadline.
 * Passes and operations run one at a time ({@link PassScheduler.exclusive}):
 * one writer of the rollouts.
 */
import type { Logger } from '../../log/run-log.js';
import type { RolloutClock } from './rollout-clock.js';

/** What a pass has to do, as marked since the last one. */
export interface PassMarks {
  /** Every rollout is to be stepped, not only `names`. */
  isAll: boolean;
  names: string[];
  /** Clusters that connected since: they get what they are owed. */
  justConnected: string[];
}

/** Options of a {@link PassScheduler}. */
export interface PassSchedulerOptions {
  clock: RolloutClock;
  /** Shortest time between the starts of two passes (0: as soon as marked). */
  intervalMs: number;
  /**
   * Most of the time passes may take, in (0, 1]: after a pass of `d` ms the
   * next starts no sooner than `d × (1 / maxShare − 1)` ms after its end; 1
   * (no rest) by default.
   */
  maxShare?: number;
  logger: Logger;
  /** One pass; it takes its marks with {@link PassScheduler.takeClusterReload} and {@link PassScheduler.takeMarks}. */
  pass: () => Promise<void>;
  /** Whether no delivery is in flight (the controller is idle only then). */
  isDrained: () => boolean;
}

/** The controller's marks, pass timing, lock and idleness. */
export class PassScheduler {
  readonly #options: PassSchedulerOptions;
  readonly #dirty = new Set<string>();
  #isAllDirty = false;
  #mustReloadClusters = false;
  readonly #justConnected = new Set<string>();
  #passTimer: unknown;
  #isPassScheduled = false;
  #isPassRunning = false;
  #lastPassAt = Number.NEGATIVE_INFINITY;
  /** When the last pass may be followed by the next, by its cost (the clock's time). */
  #restedAt = Number.NEGATIVE_INFINITY;
  #wakeTimer: unknown;
  #lock: Promise<unknown> = Promise.resolve();
  #idleWaiters: (() => void)[] = [];
  #isStopped = false;

  constructor(options: PassSchedulerOptions) {
    this.#options = options;
  }

  /** One rollout changed. */
  mark(name: string): void {
    this.#dirty.add(name);
    this.#schedule();
  }

  /** Every rollout may have changed. */
  markAll(): void {
    this.#isAllDirty = true;
    this.#schedule();
  }

  /** A cluster connected: the next pass sends it what it is owed. */
  connected(cluster: string): void {
    this.#justConnected.add(cluster);
    this.markAll();
  }

  /** A cluster's tunnel is gone (before a pass sent it anything). */
  disconnected(cluster: string): void {
    this.#justConnected.delete(cluster);
    this.markAll();
  }

  /** The clusters' records changed: the next pass reads them again. */
  clustersChanged(): void {
    this.#mustReloadClusters = true;
    this.markAll();
  }

  /** Whether the clusters are to be read again (once: taking it clears it). */
  takeClusterReload(): boolean {
    const must = this.#mustReloadClusters;
    this.#mustReloadClusters = false;
    return must;
  }

  /** The marks since the last pass (taking them clears them). */
  takeMarks(): PassMarks {
    const marks = { isAll: this.#isAllDirty, names: [...this.#dirty], justConnected: [...this.#justConnected] };
    this.#isAllDirty = false;
    this.#dirty.clear();
    this.#justConnected.clear();
    return marks;
  }

  /** Runs `work` after every operation and pass before it: one writer of the rollouts at a time. */
  exclusive<T>(work: () => Promise<T>): Promise<T> {
    const result = this.#lock.then(work);
    this.#lock = result.catch(() => undefined);
    return result;
  }

  /** Marks everything at `due` (ms, the clock's time), replacing the last wake; none when not finite. */
  wakeAt(due: number): void {
    const { clock } = this.#options;
    if (this.#wakeTimer !== undefined) clock.clearTimeout(this.#wakeTimer);
    this.#wakeTimer = undefined;
    if (!Number.isFinite(due) || this.#isStopped) return;
    this.#wakeTimer = clock.setTimeout(
      () => {
        this.#wakeTimer = undefined;
        this.markAll();
      },
      Math.max(0, due - clock.now()),
    );
  }

  /** The last delivery in flight ended: idle, unless a pass is due. */
  drained(): void {
    if (!this.#isPassScheduled && !this.#isPassRunning) this.notifyIdle();
  }

  /** Resolves once no pass is scheduled or running, nothing is marked and no delivery is in flight. */
  settled(): Promise<void> {
    const isIdle = (): boolean =>
      !this.#isPassScheduled && !this.#isPassRunning && this.#options.isDrained() && !this.#hasMarks();
    if (isIdle()) return Promise.resolve();
    return new Promise<void>((resolve) => this.#idleWaiters.push(resolve)).then(() => this.settled());
  }

  /** Stops the timers: no pass starts after this. */
  stop(): void {
    this.#isStopped = true;
    const { clock } = this.#options;
    if (this.#passTimer !== undefined) clock.clearTimeout(this.#passTimer);
    if (this.#wakeTimer !== undefined) clock.clearTimeout(this.#wakeTimer);
    this.#isPassScheduled = false;
  }

  /** Wakes whoever waits for {@link settled} (to check again). */
  notifyIdle(): void {
    for (const resolve of this.#idleWaiters.splice(0)) resolve();
  }

  #hasMarks(): boolean {
    return this.#isAllDirty || this.#dirty.size > 0 || this.#justConnected.size > 0;
  }

  #schedule(): void {
    if (this.#isStopped || this.#isPassScheduled || this.#isPassRunning) return;
    this.#isPassScheduled = true;
    const { clock, intervalMs, logger } = this.#options;
    const delay = Math.max(0, this.#lastPassAt + intervalMs - clock.now(), this.#restedAt - clock.now());
    const run = (): void => {
      this.#passTimer = undefined;
      this.#isPassScheduled = false;
      void this.exclusive(() => this.#run()).catch((error: Error) =>
        logger.error(`rollout controller pass failed: ${error.message}`),
      );
    };
    if (delay === 0) setImmediate(run);
    else this.#passTimer = clock.setTimeout(run, delay);
  }

  async #run(): Promise<void> {
    if (this.#isStopped) return;
    this.#isPassRunning = true;
    const { clock, maxShare = 1 } = this.#options;
    const startedAt = (this.#lastPassAt = clock.now());
    try {
      await this.#options.pass();
    } finally {
      const endedAt = clock.now();
      this.#restedAt = endedAt + (endedAt - startedAt) * (1 / maxShare - 1);
      this.#isPassRunning = false;
      if (!this.#isStopped && this.#hasMarks()) this.#schedule();
      else if (this.#options.isDrained()) this.notifyIdle();
    }
  }
}
