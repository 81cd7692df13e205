/**
 * The hub's limits and timeouts, in one place.
 */

/** Largest request head (request line and headers) the hub reads; larger gets 431. */
export const MAX_REQUEST_HEADER_BYTES = 32 * 1024;
/** Largest body of an operator API request (JSON). */
export const MAX_API_BODY_BYTES = 1024 * 1024;
/**
 * Largest body of a proxied kube request (not of upgraded streams, which
 * carry exec and port-forward bytes without limit). The API server itself
 * refuses bodies over about 3 MiB; this leaves room and stops abuse.
 */
export const MAX_PROXY_REQUEST_BODY_BYTES = 8 * 1024 * 1024;
/**
 * How much of a refused (oversized) body the hub reads and drops after its
 * 413, so that the client, still sending, reads the answer instead of a
 * connection reset; past it the connection is closed.
 */
export const MAX_REFUSED_BODY_DRAIN_BYTES = 2 * MAX_PROXY_REQUEST_BODY_BYTES;
/** How long a client may take to send its request head. */
export const REQUEST_HEADERS_TIMEOUT_MS = 30_000;
/** How long a graceful shutdown waits before closing what is left. */
export const SHUTDOWN_GRACE_MS = 10_000;
/** Lifetime of the client certificates the hub issues to agents (renewed at 2/3 of it). */
export const AGENT_CERT_VALIDITY_DAYS = 30;
/** How often the hub refreshes `lastSeen` of connected clusters. */
export const LAST_SEEN_REFRESH_MS = 30_000;
/** Cluster status updates (`lastSeen`, version, node count) arriving within this window share one store commit. */
export const STATUS_COMMIT_WINDOW_MS = 200;
/** Most users (and, separately, clusters) the store keeps in its read cache; past it the cache starts over. */
export const STORE_READ_CACHE_MAX_ENTRIES = 50_000;
/** The organization (group) of every agent certificate. */
export const AGENT_CERT_ORGANIZATION = 'edgeadm:hub:clusters';
/**
 * Most TLS handshakes the hub has in progress at once. A connection past it is
 * closed before TLS starts, which costs the hub almost nothing and sends the
 * agent into its backoff, so a reconnect storm spends the hub's CPU on
 * handshakes that finish instead of on ones the agents give up on.
 */
export const MAX_PENDING_HANDSHAKES = 128;
/**
 * How long a TLS handshake may take before the hub drops it (Node's default
 * is 120 s). Shorter than the agents' 15 s connect timeout, so a handshake
 * the agent will give up on, or whose peer has stalled, does not hold one of
 * the {@link MAX_PENDING_HANDSHAKES} places for minutes.
 */
export const TLS_HANDSHAKE_TIMEOUT_MS = 10_000;
/**
 * How long the hub keeps one TLS session-ticket key. Node holds one key at a
 * time, so a rotation ends resumption of the tickets issued before it. An
 * agent's ticket is as old as its connection (TLS 1.3 tickets come right
 * after the handshake), so the key must outlive typical tunnels for a hub
 * restart to be a storm of resumptions: 7 days, the longest ticket lifetime
 * TLS 1.3 allows (RFC 8446, 4.6.1).
 */
export const TLS_TICKET_KEY_ROTATE_MS = 7 * 24 * 3600_000;
/** Lifetime of a TLS session (ticket) the hub issues, in seconds: no longer than its key lives. */
export const TLS_SESSION_LIFETIME_S = TLS_TICKET_KEY_ROTATE_MS / 1000;
/** How often a running hub checks whether its ticket key is due for rotation. */
export const TLS_TICKET_KEY_CHECK_MS = 3600_000;
/**
 * Longest lifetime (`ttlMs`) the operator API gives a hub token or a user
 * token: ten years. Past it a lifetime is a typo or an attack (1e308 ms is no
 * date at all); `0` still means "never expires".
 */
export const MAX_API_TTL_MS = 10 * 366 * 24 * 3600_000;
/** Most registrations one hub token may allow (`usages`). */
export const MAX_HUB_TOKEN_USAGES = 1_000_000;
