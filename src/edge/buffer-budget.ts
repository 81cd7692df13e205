/**
 * The memory the edge-proxy spends on holding upstream answers until they
 * are complete and can be cached: one budget over all concurrent requests
 * ({@link MAX_BUFFERED_CACHE_BYTES}). A request takes bytes chunk by chunk
 * as they arrive and gives all of them back when its answer is stored or
 * abandoned. When a chunk does not fit, the answer is not cached (it still
 * streams to its client): memory stays bounded and nobody waits.
 */

/** A byte budget shared by concurrent requests. */
export class BufferBudget {
  #used = 0;

  /** @param limit - the most bytes held at once. */
  constructor(readonly limit: number) {}

  /** Bytes held now (for `/metrics`). */
  get used(): number {
    return this.#used;
  }

  /** Takes `bytes` if they fit; false (and nothing taken) otherwise. */
  tryTake(bytes: number): boolean {
    if (this.#used + bytes > this.limit) return false;
    this.#used += bytes;
    return true;
  }

  /** Gives back bytes taken earlier. */
  give(bytes: number): void {
    this.#used = Math.max(0, this.#used - bytes);
  }
}

/**
 * One request's share of a {@link BufferBudget}: takes chunk by chunk and
 * gives everything back once, however the request ends.
 */
export class BufferLease {
  #held = 0;

  constructor(private readonly budget: BufferBudget) {}

  /** Takes `bytes` more; false when the budget is spent (what was held so far stays held until {@link release}). */
  tryTake(bytes: number): boolean {
    if (!this.budget.tryTake(bytes)) return false;
    this.#held += bytes;
    return true;
  }

  /** Gives back everything held. Safe to call more than once. */
  release(): void {
    this.budget.give(this.#held);
    this.#held = 0;
  }
}
