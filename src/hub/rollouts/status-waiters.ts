/**
 * Long-poll waiters on rollouts' status: a watcher waits until its
 * rollout's status changes, the rollout is deleted, its time is up or it
 * goes away; each change wakes the waiters of that rollout only.
 */
import type { RolloutClock } from './rollout-clock.js';

/** The waiters of each rollout's next status change. */
export class StatusWaiters {
  readonly #clock: RolloutClock;
  readonly #waiters = new Map<string, Set<() => void>>();

  constructor(clock: RolloutClock) {
    this.#clock = clock;
  }

  /** Resolves at the next {@link wake} of `name`, after `timeoutMs`, or when `signal` aborts. */
  wait(name: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const waiters = this.#waiters.get(name) ?? new Set<() => void>();
      this.#waiters.set(name, waiters);
      const done = (): void => {
        this.#clock.clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        waiters.delete(done);
        if (waiters.size === 0 && this.#waiters.get(name) === waiters) this.#waiters.delete(name);
        resolve();
      };
      const timer = this.#clock.setTimeout(done, timeoutMs);
      signal?.addEventListener('abort', done);
      waiters.add(done);
    });
  }

  /** Wakes every waiter of `name`. */
  wake(name: string): void {
    for (const wake of [...(this.#waiters.get(name) ?? [])]) wake();
  }

  /** Wakes every waiter (the controller stops). */
  wakeAll(): void {
    for (const waiters of [...this.#waiters.values()]) for (const wake of [...waiters]) wake();
  }

  /** How many wait now (tests). */
  get size(): number {
    let count = 0;
    for (const waiters of this.#waiters.values()) count += waiters.size;
    return count;
  }
}
