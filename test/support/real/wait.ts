/**
 * Waiting on a real cluster: polls a check until it gives a value. An error
 * from the check counts as "not yet" (the API server restarting, a node
 * cut off on purpose) and is named in the timeout's message.
 */

/** How often and how long {@link waitFor} polls. */
export interface WaitOptions {
  /** Between two checks (2 s by default). */
  intervalMs?: number;
  /** Before giving up (5 min by default: one thing a cluster does, on two busy cores). */
  timeoutMs?: number;
}

/** Polls `check` until it returns a value; throws naming `what` (and the last error) after the timeout. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined>,
  options: WaitOptions = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 5 * 60_000);
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 2_000));
  }
}
