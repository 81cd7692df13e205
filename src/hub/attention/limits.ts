/**
 * Every bound and default of the attention list (issue #38), in one place:
 * its pages, its thresholds and the window in which an agent's own hub
 * certificate counts as expiring.
 */
import { AGENT_CERT_RENEWAL_DAYS } from '../limits.js';
import { CERT_RENEW_CHECK_INTERVAL_MS } from '../../tunnel/limits.js';

const DAY_MS = 86_400_000;

/** Rows per page when the request does not say (as the clusters list). */
export const DEFAULT_ATTENTION_PAGE_SIZE = 50;
/** Most rows one page holds (as the clusters list). */
export const MAX_ATTENTION_PAGE_SIZE = 200;
/** Longest label selector accepted. */
export const MAX_ATTENTION_SELECTOR_LENGTH = 1_000;

/**
 * Seconds a cluster must have been disconnected to count as offline, by
 * default: none. The hub shows a cluster Disconnected only once its tunnel
 * was silent past TUNNEL_SILENCE_LIMIT_MS at one of its sweeps
 * (src/tunnel/limits.ts: within two heartbeats of its last frame), and that
 * silence is the debounce: listing every Disconnected cluster at once names
 * an offline site within two heartbeats, as issue #38 asks.
 */
export const DEFAULT_OFFLINE_FOR_S = 0;
/** Largest `offlineFor`: a year. */
export const MAX_OFFLINE_FOR_S = 365 * 86_400;
/** Days within which a certificate's expiry counts, by default (the 30). */
export const DEFAULT_CERTS_WITHIN_DAYS = 30;
/** Largest `certsWithin`: ten years. */
export const MAX_CERTS_WITHIN_DAYS = 3_650;

/**
 * Time left on an agent's hub client certificate below which it counts as
 * expiring, whatever `certsWithin` says. The hub issues it for 30 days and
 * the agent renews it online AGENT_CERT_RENEWAL_DAYS (10) before it
 * expires, so a healthy agent's certificate always has 10 to 30 days left:
 * counted against 30 days, every cluster of the fleet would be listed. It
 * counts once its renewal is overdue by two of the agent's renewal checks
 * (an hour each): the agent could not renew (offline, or refused), and the
 * cluster cannot reconnect once the certificate expires. (`hub certs check`
 * and the alert rules hold it to the renewal point itself.)
 */
export const HUB_CLIENT_CERT_OVERDUE_WITHIN_MS = AGENT_CERT_RENEWAL_DAYS * DAY_MS - 2 * CERT_RENEW_CHECK_INTERVAL_MS;
