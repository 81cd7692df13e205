/**
 * Every limit, timeout and interval of the edge-proxy in one place, so an
 * operator reading why the proxy went offline (or evicted an entry) finds
 * the number behind it here.
 */

/** Default listen address: loopback only, the node's own kubelet and agents. */
export const DEFAULT_LISTEN = '127.0.0.1:10261';
/** Default address of the plain-HTTP `/healthz` and `/metrics` endpoint. */
export const DEFAULT_METRICS_LISTEN = '127.0.0.1:10262';
/** Default cache directory. */
export const DEFAULT_CACHE_DIR = '/var/lib/edgeadm/edge-proxy';
/** Default bound on the bytes the cache keeps on disk (256 MiB). */
export const DEFAULT_CACHE_MAX_BYTES = 256 * 1024 * 1024;
/** Default bound on the number of cached entries. */
export const DEFAULT_CACHE_MAX_ENTRIES = 10_000;
/** The largest response body the cache keeps; larger ones are forwarded but not cached. */
export const MAX_CACHED_BODY_BYTES = 16 * 1024 * 1024;

/** TCP+TLS connect budget towards the upstream: beyond it the upstream counts as unreachable (as a kubelet's 3 s). */
export const UPSTREAM_CONNECT_TIMEOUT_MS = 3_000;
/** How long a cacheable GET waits for response headers before it is answered from the cache instead. */
export const UPSTREAM_RESPONSE_TIMEOUT_MS = 10_000;
/** How often the files of a `--client-cert-map` entry are checked for a rotated certificate (the kubelet rotates its own). */
export const CLIENT_CERT_RELOAD_CHECK_MS = 30_000;
/**
 * How often `--tls-cert`/`--tls-key` files are checked for a new serving
 * certificate (a k3s agent writes a new kubelet serving certificate at every
 * start, and the proxy serves with it on a k3s edge node).
 */
export const SERVING_CERT_RELOAD_CHECK_MS = 30_000;
/** Default interval of the `/readyz` probe while online. */
export const DEFAULT_HEALTH_INTERVAL = '5s';
/**
 * How often the autonomy controller (`edgeadm agent autonomy`) checks the
 * pods on edge nodes: a pod bound to an edge node that loses its link
 * within this keeps Kubernetes' 300 s (src/edge/autonomy-controller.ts).
 * One LIST of the cluster's pods per pass.
 */
export const AUTONOMY_CONTROLLER_INTERVAL = '10s';
/** Probe interval while offline: short, so the proxy switches back as soon as the upstream returns. */
export const OFFLINE_PROBE_INTERVAL_MS = 1_000;
/** Budget of one `/readyz` probe. */
export const HEALTH_PROBE_TIMEOUT_MS = 3_000;
/** Largest request body read to decide an offline write (node registration). */
export const MAX_OFFLINE_WRITE_BODY_BYTES = 1024 * 1024;
/** Largest watch event line accepted from the upstream (an object is at most ~1.5 MiB in etcd). */
export const MAX_WATCH_EVENT_BYTES = 4 * 1024 * 1024;
/**
 * Cache entries up to this size are read synchronously when served: from
 * the page cache that costs microseconds, against four thread-pool round
 * trips (open, stat, read, close) for an asynchronous read, which made an
 * offline object GET slower than the API server's own. Larger entries (a
 * LIST) are read asynchronously, so they never hold up other requests.
 */
export const SYNC_READ_MAX_BYTES = 64 * 1024;
/** Watch events for one cached list are written to disk at most this often. */
export const LIST_FLUSH_DELAY_MS = 100;
/**
 * How long an idle client connection is kept open. Long, like the API
 * server's: a TLS handshake is expensive on a small edge CPU, and the
 * kubelet's requests come seconds apart.
 */
export const CLIENT_KEEP_ALIVE_TIMEOUT_MS = 90_000;
/** How long shutdown waits for open connections before it closes them. */
export const SHUTDOWN_GRACE_MS = 2_000;
/**
 * Bytes of upstream answers held in memory at once to be cached, over all
 * concurrent GETs (each also bounded by {@link MAX_CACHED_BODY_BYTES}).
 * Without it, a dozen concurrent large LISTs took the proxy from 84 to
 * 282 MB (issue #22), far past the node agent's memory budget. Beyond it an
 * answer still streams to its client, only it is not cached (a later read
 * caches it); waiting instead would stall the kubelet behind someone
 * else's large list. Two of the largest cacheable answers fit at once.
 */
export const MAX_BUFFERED_CACHE_BYTES = 2 * MAX_CACHED_BODY_BYTES;
/**
 * Open watches per identity (token, mapped certificate or anonymous, with
 * its impersonation). Each takes two descriptors (client and upstream) and
 * a held watch needs no upstream authentication while offline, so one
 * client must not be able to open them without end (300 watches took 626
 * descriptors, issue #22). A kubelet watches its Node, its Pods, Services
 * and a few cluster objects, plus one watch per ConfigMap or Secret its
 * pods mount: 250 leaves room for a full node (110 pods) of those. Beyond
 * it: 429 with a Status, and the client retries as it does for the API
 * server's own 429.
 */
export const MAX_WATCHES_PER_IDENTITY = 250;
/**
 * Open watches over all identities: a bound that made-up tokens cannot get
 * around (offline, a new watch is only held for an identity whose list is
 * cached, so each one was once authenticated upstream; this covers the
 * online case too). Four full kubelets' worth.
 */
export const MAX_WATCHES_TOTAL = 4 * MAX_WATCHES_PER_IDENTITY;
/** Seconds a 429 for too many watches asks the client to wait before retrying. */
export const WATCH_QUOTA_RETRY_AFTER_SECONDS = 5;
/**
 * The largest k3s supervisor start-up answer held to be kept
 * (`--k3s-supervisor`): a certificate, its CA chain and its key, or the
 * server's configuration, are a few KiB; 1 MiB is far beyond any of them
 * and bounds what a misbehaving upstream can make the proxy hold.
 */
export const MAX_K3S_SUPERVISOR_ANSWER_BYTES = 1024 * 1024;
/**
 * The most k3s agent tunnels (`/v1-k3s/connect`) held open while the server
 * is unreachable. An agent opens one per supervisor address, and the proxy
 * names one (itself); a few more cover an agent restarting before its old
 * connection is seen closed. Beyond it: 503, so a looping client cannot
 * pile up sockets.
 */
export const MAX_HELD_K3S_TUNNELS = 4;
