/**
 * Every timeout, interval and size limit of the reverse tunnel, in one
 * place, so that what bounds the tunnel can be read (and tuned) at a glance.
 */

/** The TLS ALPN protocol an agent asks for on the hub's one port: it selects the tunnel instead of HTTPS. */
export const TUNNEL_ALPN_PROTOCOL = 'edgeadm-tunnel/1';

/** How often the agent pings the hub over HTTP/2 (the hub answers; it judges the agent by what it reads). */
export const TUNNEL_PING_INTERVAL_MS = 10_000;
/** A ping not answered within this long means the tunnel is dead: it is closed and the agent redials. */
export const TUNNEL_PING_TIMEOUT_MS = 20_000;
/**
 * How often the hub sweeps its tunnels for silent ones. The hub does not
 * ping agents itself: one sweep over all tunnels replaces a timer and a
 * ping per tunnel, which at 10,000 tunnels was a thousand pings a second.
 */
export const TUNNEL_SWEEP_MS = TUNNEL_PING_INTERVAL_MS / 2;
/**
 * The hub closes a tunnel when, at a sweep, it has read nothing from the
 * agent for longer than this. The agent pings every
 * {@link TUNNEL_PING_INTERVAL_MS} (and any frame counts); the hub notices
 * bytes at its sweeps, so what it last heard is known to within a sweep.
 * One interval and half a sweep: an agent whose pings arrive is never
 * closed (its bytes are noticed at most an interval apart, with half a
 * sweep to spare for late timers), and an agent gone silent is found at the
 * third sweep after the one that last heard it: within two heartbeats
 * (20 s) of its last frame, when it is shown Disconnected, named in the
 * attention list and in the metrics.
 */
export const TUNNEL_SILENCE_LIMIT_MS = TUNNEL_PING_INTERVAL_MS + TUNNEL_SWEEP_MS / 2;
/**
 * How long an agent reuses the cluster facts of its last hello (version, node
 * count) when it redials, instead of asking its API server again. The hub
 * keeps a tunnel's hello for as long as the tunnel lasts anyway, and a
 * reconnect storm then costs neither the agents nor their API servers two
 * requests per dial.
 */
export const TUNNEL_HELLO_REUSE_MS = 5 * 60_000;
/** How long an agent waits for the TLS connection and the hub's welcome. */
export const TUNNEL_CONNECT_TIMEOUT_MS = 15_000;
/**
 * How long the hub gives a new tunnel connection, from its TLS handshake's
 * end, to be accepted: HTTP/2 set up, the agent's hello read and the welcome
 * answered. Past it the hub closes the connection, whatever the peer still
 * owes (a peer that answers the hello but never the welcome would otherwise
 * hold its socket forever, outside the liveness sweep). As long as the agent
 * itself waits for the welcome: past it the agent has given up anyway.
 */
export const TUNNEL_ACCEPT_TIMEOUT_MS = TUNNEL_CONNECT_TIMEOUT_MS;
/** How long a clean shutdown waits for open streams to finish before closing the tunnel anyway. */
export const TUNNEL_DRAIN_TIMEOUT_MS = 10_000;

/** First reconnect delay; it doubles per failed attempt, with full jitter. */
export const RECONNECT_BASE_DELAY_MS = 500;
/**
 * Largest reconnect delay. It bounds how long an agent may still wait after
 * its hub is back (full jitter: up to this long), so it sets the tail of a
 * reconnect storm; 30 s made a restart of the hub cost every agent up to
 * 30 s. The hub stays protected without a longer one: past its bound on
 * handshakes in progress it closes connections before TLS, which costs it
 * almost nothing, and a dial to a hub that is down costs it nothing at all.
 */
export const RECONNECT_MAX_DELAY_MS = 10_000;

/**
 * Per-stream HTTP/2 flow-control window. Large, so that one stream can fill
 * a long fat link (small windows are what made other tunnels slow), and per
 * stream, so that a stalled reader holds back only its own stream.
 */
export const TUNNEL_STREAM_WINDOW_BYTES = 4 * 1024 * 1024;
/** Connection-level window: room for many streams in flight at once. */
export const TUNNEL_CONNECTION_WINDOW_BYTES = 32 * 1024 * 1024;
/** Largest HTTP/2 frame either side accepts (the protocol's default, kept explicit). */
export const TUNNEL_MAX_FRAME_BYTES = 16 * 1024;
/** Largest header list of one tunnel stream (names and values, uncompressed). */
export const TUNNEL_MAX_HEADER_LIST_BYTES = 64 * 1024;
/**
 * Most group lists the agent keeps already read and checked (protocol.ts,
 * `GroupsCache`) before it starts over: a few users' lists in practice, and
 * a bound on memory whatever the hub sends.
 */
export const GROUPS_CACHE_MAX_ENTRIES = 1024;
/** Most concurrent streams one tunnel carries. */
export const TUNNEL_MAX_CONCURRENT_STREAMS = 1000;
/** Memory one HTTP/2 session may hold in buffers (megabytes, as node:http2 counts it). */
export const TUNNEL_MAX_SESSION_MEMORY_MB = 64;

/** Agent certificates are renewed once this share of their lifetime has passed. */
export const CERT_RENEW_AT_LIFETIME_FRACTION = 2 / 3;
/** How often the agent checks whether its certificate is due for renewal. */
export const CERT_RENEW_CHECK_INTERVAL_MS = 60 * 60 * 1000;
/** How long one request to the cluster's API server may take to start answering (not watches: those stream). */
export const UPSTREAM_CONNECT_TIMEOUT_MS = 15_000;
/**
 * How often the agent looks for requests whose answer is overdue: one sweep
 * for all of them instead of a timer per request, so an overdue request
 * ends up to this much later than {@link UPSTREAM_CONNECT_TIMEOUT_MS}.
 */
export const UPSTREAM_ANSWER_SWEEP_MS = 1_000;
/**
 * Most HTTP/2 sessions the agent keeps open to its API server at once. A
 * session carries as many streams as the API server allows per connection
 * (SETTINGS_MAX_CONCURRENT_STREAMS: Go's default 250, kube-apiserver's
 * `--http2-max-streams-per-connection`); past this many full sessions a
 * request takes the HTTP/1.1 pool instead, which has its own bound.
 */
export const UPSTREAM_H2_MAX_SESSIONS = 64;
/**
 * Streams the agent opens on a session whose API server's SETTINGS name no
 * limit of their own: the least RFC 9113 §6.5.2 asks a server to allow.
 * (The agent waits for a new session's SETTINGS before it sends on it.)
 */
export const UPSTREAM_H2_ASSUMED_STREAM_LIMIT = 100;
/**
 * An HTTP/2 session to the API server with no frame for this long is closed
 * gracefully (streams still open finish; new ones go to another session):
 * client-go's `IdleConnTimeout`.
 */
export const UPSTREAM_H2_IDLE_TIMEOUT_MS = 90_000;
/**
 * TCP keep-alive probes on a session's socket start after this much
 * silence, as on the HTTP/1.1 pool's sockets (node:https `keepAliveMsecs`),
 * so that a watch on a connection that died unseen is ended by the kernel.
 */
export const UPSTREAM_TCP_KEEPALIVE_DELAY_MS = 1_000;

/** How long `register-cloud --create-service-account` waits for the cluster to fill the agent's token Secret. */
export const AGENT_TOKEN_WAIT_MS = 30_000;
/** How often it looks at the token Secret meanwhile. */
export const AGENT_TOKEN_POLL_MS = 250;

/** The largest CONNECT answer head the agent reads from an HTTP proxy. */
export const MAX_PROXY_RESPONSE_HEAD_BYTES = 16 * 1024;
/** How long an HTTP proxy may take to connect and answer CONNECT. */
export const PROXY_CONNECT_TIMEOUT_MS = 15_000;
/**
 * Refusals in a row after which the tunnel agent stops (exit 4) instead of
 * redialling. The hub refuses an agent whose cluster was deleted or whose
 * certificate is revoked or expired, and that does not heal; more than one
 * lets a refusal that races a certificate renewal pass.
 */
export const TUNNEL_REFUSALS_BEFORE_STOP = 3;

/**
 * How long an agent waits for the DNS lookup of a hub name before dialling
 * the name as it is. A hub name may resolve to several replicas' addresses;
 * each is a place to dial.
 */
export const HUB_ADDRESS_LOOKUP_TIMEOUT_MS = 5_000;
/**
 * How long one end of an upgraded connection (exec, attach, port-forward)
 * whose other end has closed may take to hand over its last bytes (an exec's
 * exit status is the last frame; stdin's last bytes go the other way) before
 * it is destroyed.
 */
export const UPGRADE_FLUSH_GRACE_MS = 10_000;
