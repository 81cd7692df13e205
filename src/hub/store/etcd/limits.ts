/**
 * Every bound and period of the hub's etcd store and replica coordination,
 * in one place.
 */

/** Deadline of every unary etcd call: past it the call fails and the store reports etcd unavailable. */
export const ETCD_CALL_DEADLINE_MS = 3000;
/** How long the client waits for a connection to an etcd endpoint. */
export const ETCD_DIAL_TIMEOUT_MS = 5000;
/** Keys read per request when listing a prefix (thousands of clusters are read in pages, at one revision). */
export const ETCD_LIST_PAGE_SIZE = 500;
/** Attempts of one compare-and-swap before it gives up (another replica kept changing the same record). */
export const ETCD_CAS_MAX_ATTEMPTS = 32;
/**
 * Time to live of a replica's lease (seconds): its record, tunnel claims
 * and leadership vanish this long after the replica stops renewing it (etcd3
 * renews at a third of it).
 */
export const REPLICA_LEASE_TTL_S = 10;
/** Period of the health probe (a linearizable read): how fast lost and regained quorum are noticed. */
export const ETCD_HEALTH_PROBE_MS = 1000;
/**
 * Shortest interval between two writes of a connected cluster's `lastSeen`
 * when nothing else of its status changed. The hub refreshes `lastSeen`
 * every 30 s per tunnel; on etcd that would be a write per heartbeat, which
 * the replicas must not make (liveness is the tunnel claim, held in memory
 * and under the replica's lease), so only coarse progress is written.
 */
export const ETCD_LAST_SEEN_WRITE_INTERVAL_MS = 15 * 60_000;
/** Entries of each read cache (clusters by name, users by token hash) before it is emptied. */
export const ETCD_READ_CACHE_MAX_ENTRIES = 50_000;
/** The key prefix every record of the hub lives under. */
export const DEFAULT_ETCD_KEY_PREFIX = '/edgeadm/hub/';
/** Most operations in one etcd transaction (etcd's default `--max-txn-ops`); larger batches are split. */
export const ETCD_MAX_TXN_OPS = 128;
