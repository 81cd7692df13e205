/**
 * A group commit: writes that arrive within one window share one commit.
 * Each caller's promise settles with the commit its write went into. Used
 * for clusters' status updates (last seen, version, node count), which a
 * reconnect storm sends by the thousand.
 */

/** One write waiting for its commit. */
interface Pending<T> {
  item: T;
  resolve: () => void;
  reject: (error: Error) => void;
}

/** Gathers writes for `windowMs`, then commits them together. */
export class GroupCommit<T> {
  readonly #windowMs: number;
  readonly #commit: (batch: readonly T[]) => void;
  #pending: Pending<T>[] = [];
  #timer: NodeJS.Timeout | undefined;

  /** `commit` writes a batch in one transaction, or throws (every write of the batch is then refused). */
  constructor(windowMs: number, commit: (batch: readonly T[]) => void) {
    this.#windowMs = windowMs;
    this.#commit = commit;
  }

  /** Adds a write; resolves once the commit it went into is done. */
  add(item: T): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ item, resolve, reject });
      this.#timer ??= setTimeout(() => this.flush(), this.#windowMs);
    });
  }

  /** Commits what is waiting now. */
  flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const batch = this.#pending;
    this.#pending = [];
    if (batch.length === 0) return;
    try {
      this.#commit(batch.map((pending) => pending.item));
    } catch (error) {
      for (const pending of batch) pending.reject(error as Error);
      return;
    }
    for (const pending of batch) pending.resolve();
  }
}
