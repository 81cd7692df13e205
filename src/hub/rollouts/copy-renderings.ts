/**
 * Copies rendered when they are sent, not when a step hands them out: the
 * budget of copies being rendered and sent at once, and the rendered
 * copies kept for the next clusters that get the same one (copies of one
 * revision that are the same have the same copy revision, copy-key.ts).
 * Memory for copies is then bounded by these two budgets, whatever the
 * document's size and the number of clusters.
 */
import { renderCopy, type ClusterFacts, type RenderResult } from '../../rollout/render.js';
import { ROLLOUT_COPIES_IN_FLIGHT, ROLLOUT_COPIES_IN_FLIGHT_BYTES, ROLLOUT_RENDERED_COPIES_BYTES } from '../limits.js';
import type { LiveRollout } from './live-rollouts.js';

/** A place in the budget, held until the copy's send ends. */
export type Release = () => void;

/**
 * First come, first served: a copy waits until the copies in flight leave
 * room for its weight (bytes) and their count is under the limit; a copy
 * heavier than the whole budget goes when nothing else is in flight.
 */
export class CopyBudget {
  readonly #maxBytes: number;
  readonly #maxCount: number;
  #bytes = 0;
  #count = 0;
  readonly #waiting: { weight: number; grant: (release: Release) => void }[] = [];

  constructor(maxBytes = ROLLOUT_COPIES_IN_FLIGHT_BYTES, maxCount = ROLLOUT_COPIES_IN_FLIGHT) {
    this.#maxBytes = maxBytes;
    this.#maxCount = maxCount;
  }

  /** Resolves with the release once the copy may go. */
  acquire(weight: number): Promise<Release> {
    return new Promise((grant) => {
      this.#waiting.push({ weight, grant });
      this.#admit();
    });
  }

  /** Copies in flight now, and their bytes. */
  get inFlight(): { count: number; bytes: number } {
    return { count: this.#count, bytes: this.#bytes };
  }

  #admit(): void {
    for (;;) {
      const next = this.#waiting[0];
      if (next === undefined) return;
      const fits = this.#count === 0 || (this.#count < this.#maxCount && this.#bytes + next.weight <= this.#maxBytes);
      if (!fits) return;
      this.#waiting.shift();
      this.#bytes += next.weight;
      this.#count += 1;
      let isReleased = false;
      next.grant(() => {
        if (isReleased) return;
        isReleased = true;
        this.#bytes -= next.weight;
        this.#count -= 1;
        this.#admit();
      });
    }
  }
}

/** Rendered copies by rollout and copy revision, the least recently used dropped past the byte limit. */
export class RenderedCopies {
  readonly #maxBytes: number;
  readonly #byKey = new Map<string, { result: RenderResult; bytes: number }>();
  #bytes = 0;

  constructor(maxBytes = ROLLOUT_RENDERED_COPIES_BYTES) {
    this.#maxBytes = maxBytes;
  }

  /** The copy of `revision` (a copy revision) for a cluster with `facts`, rendered unless kept. */
  render(live: LiveRollout, revision: string, facts: ClusterFacts): RenderResult {
    const key = `${live.record.name}\u0000${revision}`;
    const kept = this.#byKey.get(key);
    if (kept !== undefined) {
      this.#byKey.delete(key);
      this.#byKey.set(key, kept);
      return kept.result;
    }
    const result = renderCopy(live.spec, live.record.revision, facts);
    // Only what its revision names is kept: a copy rendered from facts that changed since is not shared.
    if (!result.ok || result.copy.revision !== revision) return result;
    const bytes = copyWeight(live);
    this.#byKey.set(key, { result, bytes });
    this.#bytes += bytes;
    for (const [oldest, entry] of this.#byKey) {
      if (this.#bytes <= this.#maxBytes || oldest === key) break;
      this.#byKey.delete(oldest);
      this.#bytes -= entry.bytes;
    }
    return result;
  }

  /** How many copies are kept, and their weight. */
  get size(): { count: number; bytes: number } {
    return { count: this.#byKey.size, bytes: this.#bytes };
  }
}

/** What a copy of a rollout weighs in the budgets: its document's size (a copy renders to about as much). */
export function copyWeight(live: LiveRollout): number {
  return Math.max(1, live.documentText.length);
}
