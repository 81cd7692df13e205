/**
 * The limits of `upgrade node` (cordon, drain, swap, Ready gate) and of
 * `fleet upgrade`, each named. The skew numbers and `upgrade apply`'s
 * limits are in limits.ts.
 */

/** How long a drain may take by default (`--drain-timeout`): every eviction accepted and every Pod gone. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 5 * 60_000;

/**
 * How long to wait before asking again after an eviction refused with 429
 * (a PodDisruptionBudget that allows no disruption now): kubectl drain's 5 s.
 */
export const EVICTION_RETRY_MS = 5_000;

/** How often a drain asks whether the evicted Pods are gone. */
export const POD_GONE_POLL_MS = 500;

/** How long one API request of the drain may take. */
export const DRAIN_REQUEST_TIMEOUT_MS = 15_000;

/** How long `kubeadm upgrade node` may take on a node. */
export const KUBEADM_UPGRADE_NODE_TIMEOUT_MS = 5 * 60_000;

/** Pods named in a drain refusal's message; the rest are counted (all are in the error's details). */
export const MAX_PODS_IN_MESSAGE = 10;
