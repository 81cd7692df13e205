/**
 * Times as the CLI's tables show them: an age ("3m ago") rather than an
 * ISO time, which `--json` keeps. Pure: the time is passed in.
 */

/** "12s", "3m", "2h", "5d": how long `ms` is, in its largest whole unit. */
export function shortDuration(ms: number): string {
  const seconds = Math.floor(Math.max(0, ms) / 1000);
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86_400)}d`;
}

/** "3m ago" from an ISO time; "never" without one; the time itself when it is none. */
export function ageOf(iso: string | undefined, now: number): string {
  if (iso === undefined) return 'never';
  const at = Date.parse(iso);
  return Number.isNaN(at) ? iso : `${shortDuration(now - at)} ago`;
}

/** A cluster's LAST SEEN cell: "connected" while it is, else how long ago it was last seen. */
export function lastSeenCell(cluster: { state: string; lastSeen?: string | undefined }, now: number): string {
  return cluster.state === 'Connected' ? 'connected' : ageOf(cluster.lastSeen, now);
}

/** "in 9d" or "3d ago" (an expiry already past); the time itself when it is none. */
export function untilOf(iso: string, now: number): string {
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return iso;
  return at >= now ? `in ${shortDuration(at - now)}` : `${shortDuration(now - at)} ago`;
}
