/**
 * Every bound and timeout of the hub client, in one place. The hub's own
 * bounds (src/hub/limits.ts) are what these are sized against.
 */

/** How long one API call may take. */
export const HUB_CLIENT_TIMEOUT_MS = 30_000;
/** Largest answer read. */
export const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;
/**
 * Largest dry-run answer or stored document read: the hub takes Rollouts of
 * up to 32 MiB (10 MiB of manifests with room) and adds at most 16 MiB of
 * rendered objects to a dry run's answer.
 */
export const MAX_LARGE_RESPONSE_BYTES = 64 * 1024 * 1024;
/** How long an apply may take: the hub checks, renders and stores up to tens of MiB. */
export const ROLLOUT_APPLY_TIMEOUT_MS = 120_000;
/** What a watch's long poll waits beyond the hub's own STATUS_LONG_POLL_MS before calling the hub silent. */
export const WATCH_POLL_GRACE_MS = 10_000;
/** How long a watch keeps trying to reach a hub that went away (a restart) before it fails. */
export const WATCH_RECONNECT_WINDOW_MS = 120_000;
/** The pause between those tries. */
export const WATCH_RECONNECT_DELAY_MS = 1_000;
/**
 * Rows asked for per page of the attention list: the hub's most
 * (MAX_ATTENTION_PAGE_SIZE in src/hub/attention/limits.ts). The whole list
 * is read page by page.
 */
export const ATTENTION_PAGE_SIZE = 200;
