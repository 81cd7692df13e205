/**
 * How many watches the edge-proxy keeps open, per identity and in all
 * ({@link MAX_WATCHES_PER_IDENTITY}, {@link MAX_WATCHES_TOTAL}). Every
 * open watch holds a slot from its start until its client leaves, held
 * through an outage or not. Pure bookkeeping, no I/O.
 */

/** Why a watch was refused, or `undefined` when it got a slot. */
export type WatchQuotaRefusal = 'identity' | 'total';

/** Watch slots per identity key, and overall. */
export class WatchQuota {
  readonly #byIdentity = new Map<string, number>();
  #total = 0;

  constructor(
    readonly perIdentity: number,
    readonly total: number,
  ) {}

  /** Open watches in all. */
  get open(): number {
    return this.#total;
  }

  /** Open watches of one identity. */
  openOf(identityKey: string): number {
    return this.#byIdentity.get(identityKey) ?? 0;
  }

  /**
   * Takes a slot for `identityKey`. Returns a function that gives it back
   * (once, however often it is called), or why there is none.
   */
  tryAcquire(identityKey: string): { release: () => void } | { refusal: WatchQuotaRefusal } {
    const mine = this.openOf(identityKey);
    if (mine >= this.perIdentity) return { refusal: 'identity' };
    if (this.#total >= this.total) return { refusal: 'total' };
    this.#byIdentity.set(identityKey, mine + 1);
    this.#total++;
    let isReleased = false;
    return {
      release: () => {
        if (isReleased) return;
        isReleased = true;
        this.#total--;
        const left = this.openOf(identityKey) - 1;
        if (left <= 0) this.#byIdentity.delete(identityKey);
        else this.#byIdentity.set(identityKey, left);
      },
    };
  }
}
