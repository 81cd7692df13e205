/**
 * Every limit and timeout of the hub's web view (`/ui/`), in one place:
 * sessions, live-update streams, the list API's pages, and the live reads
 * through a cluster's tunnel.
 */

/** How long a signed-in session lasts from sign-in (not renewed by use: sign in again after it). */
export const WEB_SESSION_LIFETIME_MS = 8 * 60 * 60 * 1000;
/** The shortest session lifetime an operator (or a test) may set; below it a page could not finish loading. */
export const MIN_WEB_SESSION_LIFETIME_MS = 1_000;
/** The longest session lifetime an operator may set (a week). */
export const MAX_WEB_SESSION_LIFETIME_MS = 7 * 24 * 60 * 60 * 1000;
/**
 * The environment variable that sets the session lifetime in milliseconds
 * (within the bounds above). Read once when the hub starts serving the view.
 */
export const WEB_SESSION_LIFETIME_ENV = 'EDGEADM_HUB_WEB_SESSION_LIFETIME_MS';
/** Most sessions held at once; past it the oldest is dropped (its holder signs in again). */
export const MAX_WEB_SESSIONS = 10_000;
/**
 * Most sessions one user holds at once; past it that user's own oldest is
 * dropped. Without it one user's token (leaked, or in a script that signs in
 * in a loop) would push every other user's session out of
 * {@link MAX_WEB_SESSIONS}. A hundred is a team sharing one user, each on a
 * few devices.
 */
export const MAX_WEB_SESSIONS_PER_USER = 100;
/** Bytes of randomness in a session id and in a session's CSRF token. */
export const WEB_SESSION_ID_BYTES = 32;
/** How often expired sessions are swept out of memory. */
export const WEB_SESSION_SWEEP_MS = 60_000;

/** Most live-update streams one session may hold open at once (a few tabs). */
export const MAX_EVENT_STREAMS_PER_SESSION = 4;
/** Most live-update streams the hub holds open at once, over all sessions. */
export const MAX_EVENT_STREAMS = 1_000;
/**
 * Most live-update streams one user holds open at once, over all their
 * sessions, so that one user cannot take all of {@link MAX_EVENT_STREAMS}
 * (each session's own bound multiplied by {@link MAX_WEB_SESSIONS_PER_USER}
 * would allow that): a team sharing one user, each with a few tabs open.
 */
export const MAX_EVENT_STREAMS_PER_USER = 64;
/** A comment line on every stream this often, so that proxies and the hub's idle deadline keep it open. */
export const EVENT_HEARTBEAT_MS = 15_000;
/** A stream is closed after this long (the browser reconnects by itself, and the session is checked again). */
export const EVENT_STREAM_DEADLINE_MS = 10 * 60 * 1000;
/** How often the hub compares cluster and rollout states to tell the streams what changed. */
export const EVENT_POLL_MS = 250;
/** What the browser waits before reconnecting a closed stream (the SSE `retry:` field). */
export const EVENT_RETRY_MS = 2_000;
/** Most names one event carries; a larger change is sent as "reload everything". */
export const MAX_EVENT_NAMES = 500;
/** Bytes queued on a stream whose reader is not keeping up, past which the stream is closed. */
export const MAX_EVENT_STREAM_BUFFER_BYTES = 256 * 1024;

/** Rows per page of the clusters list when the request does not say. */
export const DEFAULT_PAGE_SIZE = 50;
/** Most rows one page of a list may hold. */
export const MAX_PAGE_SIZE = 200;
/** Longest text filter accepted. */
export const MAX_TEXT_FILTER_LENGTH = 200;
/** Longest label selector accepted in a filter. */
export const MAX_SELECTOR_LENGTH = 1_000;
/** Most distinct values per label key, and most keys, in the fleet summary (the rest are counted as "other"). */
export const MAX_SUMMARY_LABEL_VALUES = 20;
export const MAX_SUMMARY_LABEL_KEYS = 20;
/** Most Kubernetes versions listed in the fleet summary. */
export const MAX_SUMMARY_VERSIONS = 20;

/** Longest wait for a cluster's nodes read through its tunnel. */
export const LIVE_READ_TIMEOUT_MS = 10_000;
/** Largest answer of a live read through a tunnel (a node list). */
export const MAX_LIVE_READ_BYTES = 8 * 1024 * 1024;
/** Most nodes shown on a cluster's page. */
export const MAX_NODES_SHOWN = 500;

/** Largest sign-in or command body. */
export const MAX_WEB_BODY_BYTES = 4 * 1024;
