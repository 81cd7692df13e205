/**
 * The rollout controller's clock and timers, injected into each of its
 * parts: tests set the time instead of waiting.
 */

/** The controller's clock and timers. */
export interface RolloutClock {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The system clock and timers (unref'd: the controller never keeps the process alive). */
export const systemRolloutClock: RolloutClock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};
