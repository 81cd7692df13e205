/**
 * A counting semaphore: at most `permits` holders at once, the rest wait in
 * arrival order. Bounds the SSH channels open on one connection.
 */
export class Semaphore {
  #available: number;
  readonly #waiting: Array<() => void> = [];

  constructor(permits: number) {
    if (!Number.isInteger(permits) || permits < 1)
      throw new RangeError(`permits must be a positive integer: ${permits}`);
    this.#available = permits;
  }

  /** Runs `task` once a permit is free, and frees it when the task settles. */
  async run<T>(task: () => Promise<T>): Promise<T> {
    await this.#acquire();
    try {
      return await task();
    } finally {
      this.#release();
    }
  }

  async #acquire(): Promise<void> {
    if (this.#available > 0) {
      this.#available--;
      return;
    }
    await new Promise<void>((resolve) => this.#waiting.push(resolve));
  }

  #release(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#available++;
  }
}
