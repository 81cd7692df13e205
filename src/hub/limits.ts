/**
 * The hub's limits and timeouts, in one place. Every socket the hub holds
 * has a deadline in every state: the TLS handshake
 * ({@link TLS_HANDSHAKE_TIMEOUT_MS}), the request head
 * ({@link REQUEST_HEADERS_TIMEOUT_MS}) and body ({@link REQUEST_TIMEOUT_MS}),
 * an idle keep-alive ({@link HTTP_KEEP_ALIVE_TIMEOUT_MS}), a streamed answer
 * or upgraded stream ({@link HTTP_STREAM_IDLE_TIMEOUT_MS}); tunnels have
 * theirs in src/tunnel/limits.ts (accept, then liveness).
 */
import { CERT_RENEW_AT_LIFETIME_FRACTION } from '../tunnel/limits.js';

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
/**
 * How long a client may take to send a whole request head (request line and
 * headers), counted from the TLS handshake's end for a connection's first
 * request and from the request's first byte for later ones. Absolute: a
 * client trickling one header line at a time does not extend it (slowloris).
 * A real client sends its head at once; the largest head the hub reads
 * ({@link MAX_REQUEST_HEADER_BYTES}) takes 3 s at 10 KB/s, so 30 s is room
 * for a bad link and costs a peer that sends nothing one socket for 30 s.
 */
export const REQUEST_HEADERS_TIMEOUT_MS = 30_000;
/**
 * How long a client may take to send a whole request, head and body, counted
 * as {@link REQUEST_HEADERS_TIMEOUT_MS} is. Answers are not bounded by it:
 * a watch or `logs -f` sends its request at once and then only reads. The
 * largest body the hub takes ({@link MAX_PROXY_REQUEST_BODY_BYTES}) fits in
 * it at 30 KB/s.
 */
export const REQUEST_TIMEOUT_MS = 5 * 60_000;
/**
 * How often the hub checks the request-head and request deadlines above: a
 * late head is closed at most this long after its deadline. The check walks
 * only the connections with a request under way, which costs microseconds.
 */
export const REQUEST_DEADLINE_CHECK_INTERVAL_MS = 1000;
/**
 * How long an HTTP/1.1 connection may stay idle between one answer and the
 * next request (keep-alive). kubectl and other clients send their requests
 * in bursts under a second apart and reopen a connection the hub closed;
 * 15 s keeps a polling client (every 2-10 s) on one connection and frees an
 * idle one soon.
 */
export const HTTP_KEEP_ALIVE_TIMEOUT_MS = 15_000;
/**
 * How much longer than the keep-alive timeout it advertises (`Keep-Alive:
 * timeout=15`) the hub waits before closing an idle connection, so that a
 * client's request sent just in time does not meet a closing socket.
 */
export const HTTP_KEEP_ALIVE_GRACE_MS = 1000;
/**
 * How long an HTTP connection whose request is answered as a stream (watch,
 * `logs -f`) or upgraded (exec, attach, port-forward) may carry no byte in
 * either direction before the hub closes it: Kubernetes' own default for
 * idle streaming connections (the kubelet's
 * `--streaming-connection-idle-timeout`, 4 h), so users meet the same bound
 * through the hub as without it. It is also the last deadline of a client
 * that stops reading an answer.
 */
export const HTTP_STREAM_IDLE_TIMEOUT_MS = 4 * 3600_000;
/** How long a graceful shutdown waits before closing what is left. */
export const SHUTDOWN_GRACE_MS = 10_000;
/**
 * Most listeners an upgraded connection's socket (exec, attach,
 * port-forward) may carry before Node warns of a leak. Each such socket
 * legitimately holds more than Node's default of 10 'close' listeners: TLS,
 * the HTTP server, the admission gate, the deadlines, and the two pipelines
 * that carry its bytes each way (each watching both ends). Without this,
 * every exec printed "Possible EventEmitter memory leak detected" to the
 * hub's log. A real leak (listeners added per byte or per message) passes
 * 32 at once.
 */
export const UPGRADED_SOCKET_MAX_LISTENERS = 32;
/** Lifetime of the client certificates the hub issues to agents (renewed at 2/3 of it). */
export const AGENT_CERT_VALIDITY_DAYS = 30;
/**
 * Days before its expiry that an agent renews its certificate for the hub
 * (a third of its life): until then, a short remaining life is the normal
 * state of a certificate renewed online, not news; a renewal overdue is.
 */
export const AGENT_CERT_RENEWAL_DAYS = AGENT_CERT_VALIDITY_DAYS * (1 - CERT_RENEW_AT_LIFETIME_FRACTION);
/** Cluster status updates (`lastSeen`, version, node count) arriving within this window share one store commit. */
export const STATUS_COMMIT_WINDOW_MS = 200;
/** Most users (and, separately, clusters) the store keeps in its read cache; past it the cache starts over. */
export const STORE_READ_CACHE_MAX_ENTRIES = 50_000;
/** Rows the SQLite store reads between two turns of the event loop when it lists every cluster. */
export const STORE_LIST_PAGE_ROWS = 500;
/**
 * Most TLS handshakes the hub has in progress at once. A connection past it is
 * closed before TLS starts, which costs the hub almost nothing and sends the
 * agent into its backoff, so a reconnect storm spends the hub's CPU on
 * handshakes that finish instead of on ones the agents give up on.
 */
export const MAX_PENDING_HANDSHAKES = 128;
/**
 * Most accepted connections waiting for one of the
 * {@link MAX_PENDING_HANDSHAKES} places; a connection past both is closed
 * before TLS starts. A waiting connection costs the hub a socket and its
 * unread hello, and its wait counts toward {@link TLS_HANDSHAKE_TIMEOUT_MS}.
 * Without the queue, a burst of thousands of returning agents was mostly
 * refused and sent into backoff. 2,048 holds most of a replica's share of
 * the agents of a dead replica at 10,000 (about 1,750 each); other sizes
 * were not compared (BENCHMARKS.md, "10,000 agents, 10 kills, with
 * rebalancing").
 */
export const MAX_QUEUED_HANDSHAKES = 2048;
/**
 * Longest a connection waits for a handshake place; one that waited longer
 * is closed instead of started. An agent gives up on a connection
 * `TUNNEL_CONNECT_TIMEOUT_MS` (15 s, tunnel/limits.ts) after dialling, TCP retries
 * (when the kernel's accept queue overflowed), the wait, TLS and its hello
 * included: a handshake started late is the hub's CPU spent for an agent
 * that is gone, which in a storm is most of them.
 */
export const HANDSHAKE_QUEUE_WAIT_MS = 2_000;
/**
 * How long a TLS handshake may take, counted from the TCP accept, before the
 * hub closes the connection. Absolute: a peer that sends nothing, stalls
 * mid-handshake or trickles its hello a byte at a time is closed all the
 * same, so silent peers hold one of the {@link MAX_PENDING_HANDSHAKES}
 * places for 10 s at most. A handshake takes a few round trips (under 2 s
 * on a slow satellite link); 10 s is shorter than the agents' 15 s connect
 * timeout, so the hub never keeps a handshake its agent gave up on.
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
/**
 * Largest body of `PUT /hub/v1/rollouts/NAME` (the Rollout as JSON). A
 * Rollout may hold 10 MiB of manifests, and YAML turned into JSON grows
 * (quotes, braces, escapes); this is the size a copy message may have on the
 * agent's side (`MAX_COPY_MESSAGE_BYTES`), so anything the hub takes it can
 * also deliver. Every other operator route keeps {@link MAX_API_BODY_BYTES}.
 */
export const MAX_ROLLOUT_BODY_BYTES = 32 * 1024 * 1024;
/** How many documents of each rollout the store keeps (`undo` needs the previous one; the rest is history). */
export const MAX_STORED_ROLLOUT_REVISIONS = 10;
/**
 * Shortest time between two passes of the rollout controller. Events
 * (reports, tunnels connecting, holds) only mark rollouts; one pass then
 * steps each marked rollout once, so a reconnect storm of 10,000 clusters
 * costs a few passes per second, not 10,000.
 */
export const ROLLOUT_PASS_INTERVAL_MS = 200;
/**
 * Most of the hub's time rollout passes may take while events keep coming:
 * a pass that took `d` ms is followed by at least `d × (1 / share − 1)` ms
 * without one (on top of {@link ROLLOUT_PASS_INTERVAL_MS}). A pass steps
 * every marked rollout over all its clusters; at 10,000 clusters and a few
 * rollouts that is tens of milliseconds, and a reconnect storm marks every
 * rollout every interval. Without this bound, passes took 76 of the hub's
 * 137 CPU seconds while 10,000 agents dialled at once, and left too little
 * for their TLS handshakes (BENCHMARKS.md, "10,000 clusters: one wave, and
 * 3,000 returning at once").
 */
export const ROLLOUT_PASS_MAX_SHARE = 0.25;
/**
 * How long an agent has to accept a copy or a removal (answer 202) on its
 * control stream. A copy can be tens of MiB and an edge link slow (10 MiB
 * at 1 Mbit/s is 80 s); past it the cluster's copy counts as failed.
 */
export const ROLLOUT_DELIVERY_TIMEOUT_MS = 120_000;
/**
 * Copies being rendered and sent at once, over all clusters: at most this
 * many bytes (a copy weighs its document's size) and this many copies. A
 * step only names each cluster's copy revision; the copy is rendered when
 * its turn comes, so a 10 MiB Rollout at `maxUnavailable: 100%` over
 * 10,000 clusters holds a few copies in memory, not 10,000. One copy
 * larger than the budget still goes, alone.
 */
export const ROLLOUT_COPIES_IN_FLIGHT_BYTES = 64 * 1024 * 1024;
/** See {@link ROLLOUT_COPIES_IN_FLIGHT_BYTES}: enough for 10,000 small copies in seconds. */
export const ROLLOUT_COPIES_IN_FLIGHT = 256;
/**
 * Rendered copies kept for the next clusters whose copy is the same (same
 * revision), by bytes: a Rollout without per-cluster values is rendered
 * once for the whole fleet.
 */
export const ROLLOUT_RENDERED_COPIES_BYTES = 64 * 1024 * 1024;
/** Longest report line the hub reads from an agent's report stream; longer lines are dropped whole. */
export const MAX_ROLLOUT_REPORT_LINE_BYTES = 4 * 1024 * 1024;
/**
 * How long the hub waits before opening a cluster's report stream again
 * after it ended while the tunnel stays up; after a stream that was refused
 * or broken, the first of the delays that double up to
 * {@link ROLLOUT_REPORTS_REOPEN_MAX_MS}.
 */
export const ROLLOUT_REPORTS_REOPEN_MS = 5_000;
/**
 * Longest wait before a refused or broken report stream is opened again:
 * an agent that keeps refusing costs the hub one stream a minute, and one
 * that recovers reports within a minute.
 */
export const ROLLOUT_REPORTS_REOPEN_MAX_MS = 60_000;
/**
 * Most bytes of rendered objects a dry run answers with. Every placed
 * cluster's copy is rendered (so every customization error is found); past
 * this budget the objects of the remaining clusters are left out of the
 * answer, their revision still shown.
 */
export const MAX_DRY_RUN_OBJECT_BYTES = 16 * 1024 * 1024;
/** Longest reason of a cluster hold. */
export const MAX_HOLD_REASON_LENGTH = 1024;
/** Most properties one cluster may have (they are read by every rollout's customization). */
export const MAX_CLUSTER_PROPERTIES = 256;
/** Longest value of one cluster property. */
export const MAX_CLUSTER_PROPERTY_VALUE_LENGTH = 4096;
/**
 * How long a replica forwarding an operator request to the replica that
 * holds the cluster's tunnel waits for that replica's TCP connect and TLS
 * handshake. Replicas sit on one network: a peer that takes longer is down
 * or overloaded, and the operator is answered 502 rather than kept waiting.
 */
export const PEER_CONNECT_TIMEOUT_MS = 10_000;
/**
 * Lifetime of the client certificate a replica issues itself (under the hub
 * CA) for forwarding to other replicas. It is made afresh at every start and
 * lives only in memory, so the bound matters only for a replica running
 * longer than this without restart.
 */
export const REPLICA_CERT_VALIDITY_DAYS = 365;
/**
 * How long the leading replica waits for another replica to hand a copy or
 * a removal to an agent it holds: the holder's own deadline for the agent
 * ({@link ROLLOUT_DELIVERY_TIMEOUT_MS}) and a margin for the hop.
 */
export const PEER_ROLLOUT_DELIVERY_TIMEOUT_MS = ROLLOUT_DELIVERY_TIMEOUT_MS + 15_000;
/**
 * Attempts the leading replica makes to hand one copy or removal to the
 * replica holding the cluster's tunnel while that replica still claims it
 * and gives no outcome. With the delays below they span longer than a
 * replica's lease (etcd/limits.ts REPLICA_LEASE_TTL_S): a dead holder's
 * claim is gone before the last attempt.
 */
export const PEER_ROLLOUT_DELIVERY_ATTEMPTS = 8;
/** First delay between those attempts; it doubles. */
export const PEER_ROLLOUT_RETRY_MS = 500;
/** Longest delay between those attempts. */
export const PEER_ROLLOUT_RETRY_MAX_MS = 5_000;
/**
 * Most bytes of report lines a replica forwards to the leader in one
 * request. One report line is at most {@link MAX_ROLLOUT_REPORT_LINE_BYTES},
 * so a line always fits.
 */
export const MAX_PEER_REPORT_BATCH_BYTES = 2 * MAX_ROLLOUT_REPORT_LINE_BYTES;
/** Largest body the leader reads of forwarded reports: a batch, and the JSON around its lines. */
export const MAX_PEER_REPORTS_BODY_BYTES = MAX_PEER_REPORT_BATCH_BYTES + 1024 * 1024;
/**
 * Most bytes of reports a replica keeps for the leader while it cannot
 * reach one (during an election). Only the latest report of each cluster
 * and rollout is kept; past this bound new lines are not taken, so the
 * agents keep them and send them again.
 */
export const MAX_FORWARDED_REPORTS_QUEUED_BYTES = 64 * 1024 * 1024;
/** First delay before forwarded reports are sent again after the leader could not take them. */
export const PEER_REPORTS_RETRY_MS = 250;
/** Longest such delay: a new leader is found this soon after it took the lead. */
export const PEER_REPORTS_RETRY_MAX_MS = 4_000;

/**
 * How long the hub waits before opening a cluster's health stream again
 * after it ended while the tunnel stays up; doubling, up to
 * {@link HEALTH_STREAM_REOPEN_MAX_MS}, while it keeps failing.
 */
export const HEALTH_STREAM_REOPEN_MS = 5_000;
/** The longest wait between two attempts at a cluster's health stream. */
export const HEALTH_STREAM_REOPEN_MAX_MS = 5 * 60_000;
/**
 * The shortest time between two writes of one cluster's health report to
 * the store: a report that changes sooner is written when the interval has
 * passed (the latest one), so the store's load is bounded whatever an
 * agent sends.
 */
export const HEALTH_STORE_MIN_INTERVAL_MS = 10_000;
/**
 * The web view reads the registered clusters from the store at most this
 * often: requests within it share one read (at 10,000 clusters a read costs
 * about 100 ms, more than a page may take). Connection state is never
 * cached: it is read from the open tunnels at every request.
 */
export const CLUSTER_LIST_FRESH_MS = 1_000;
/**
 * Past {@link CLUSTER_LIST_FRESH_MS} and up to this age, a request is
 * answered from the last read while a new read runs; past it, the request
 * waits for a new read. So labels, registrations and deletions show in the
 * views at most this late.
 */
export const CLUSTER_LIST_STALE_MS = 5_000;

/**
 * Spreading the agents over the replicas again (replicas/rebalancer.ts):
 * every {@link REBALANCE_INTERVAL_MS}, a replica holding more than its share
 * × (1 + {@link REBALANCE_MARGIN}) + {@link REBALANCE_SLACK} tunnels asks
 * at most {@link REBALANCE_MAX_MOVES_PER_ROUND} of its idle ones (no user
 * stream open, connected for {@link REBALANCE_MIN_TUNNEL_AGE_MS} at least)
 * to move to a replica below its share. With three replicas, 10 % keeps
 * each under 37 % of the agents; 250 moves in 5 s is 50 resumed TLS
 * handshakes a second, a small part of what a replica takes in a storm.
 */
export const REBALANCE_INTERVAL_MS = 5_000;
export const REBALANCE_MARGIN = 0.1;
export const REBALANCE_SLACK = 16;
export const REBALANCE_MAX_MOVES_PER_ROUND = 250;
/** A tunnel that just arrived is not sent on at once (no ping-pong while counts catch up). */
export const REBALANCE_MIN_TUNNEL_AGE_MS = 30_000;
