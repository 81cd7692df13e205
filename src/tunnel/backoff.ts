/**
 * Reconnect delays: exponential backoff with full jitter, so that a
 * thousand agents that lost the same hub do not all dial it in the same
 * instant when it comes back.
 */
import { RECONNECT_BASE_DELAY_MS, RECONNECT_MAX_DELAY_MS } from './limits.js';

/** Options of {@link reconnectDelayMs}. */
export interface BackoffOptions {
  /** Failed attempts since the last good connection, from 0. */
  attempt: number;
  baseMs?: number;
  maxMs?: number;
  /** A number in [0, 1); `Math.random` by default (tests pass a fixed one). */
  random?: () => number;
}

/** The delay before the next dial: uniform in [0, min(max, base × 2^attempt)]. */
export function reconnectDelayMs(options: BackoffOptions): number {
  const base = options.baseMs ?? RECONNECT_BASE_DELAY_MS;
  const max = options.maxMs ?? RECONNECT_MAX_DELAY_MS;
  const ceiling = Math.min(max, base * 2 ** Math.min(options.attempt, 30));
  return Math.floor((options.random ?? Math.random)() * ceiling);
}
