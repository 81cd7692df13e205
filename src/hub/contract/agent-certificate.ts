/**
 * What the hub writes into every agent's client certificate, and what the
 * agent side (registration) and the hub's tunnel check read back from it.
 */

/** The organization (group) of every agent certificate. */
export const AGENT_CERT_ORGANIZATION = 'edgeadm:hub:clusters';
