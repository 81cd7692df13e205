/** How times and states read on the page. */

/** "3 min ago", "2 h ago", "5 d ago" from an ISO time. */
export function ago(iso: string | undefined, now = Date.now()): string {
  if (iso === undefined) return 'never';
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)} h ago`;
  return `${Math.floor(seconds / 86_400)} d ago`;
}

/** "in 9 d" for a time to come, "3 d ago" for one past: an expiry. */
export function until(iso: string, now = Date.now()): string {
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return iso;
  if (at < now) return ago(iso, now);
  const seconds = Math.round((at - now) / 1000);
  if (seconds < 60) return `in ${seconds} s`;
  if (seconds < 3600) return `in ${Math.floor(seconds / 60)} min`;
  if (seconds < 86_400) return `in ${Math.floor(seconds / 3600)} h`;
  return `in ${Math.floor(seconds / 86_400)} d`;
}

/** "2026-11-28 21:40 UTC": a time in UTC to the minute, like every site's logs; the text itself when it is none. */
export function utc(iso: string): string {
  if (Number.isNaN(Date.parse(iso))) return iso;
  const text = new Date(iso).toISOString();
  return `${text.slice(0, 10)} ${text.slice(11, 16)} UTC`;
}

/** "2026-11-28 21:40 UTC (3 min ago)": a past time as people read it. */
export function when(iso: string | undefined, now = Date.now()): string {
  if (iso === undefined) return 'never';
  if (Number.isNaN(Date.parse(iso))) return iso;
  return `${utc(iso)} (${ago(iso, now)})`;
}

/** "1 object", "3 objects". */
export function count(n: number, noun: string): string {
  return `${n} ${n === 1 ? noun : `${noun}s`}`;
}

/** The words for the offline buckets of the fleet summary. */
export const OFFLINE_LABELS = {
  lt5m: 'under 5 minutes',
  lt1h: '5 minutes to 1 hour',
  lt1d: '1 hour to 1 day',
  gte1d: 'over 1 day',
  never: 'never connected',
} as const;
