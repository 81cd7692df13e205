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

/** The words for the offline buckets of the fleet summary. */
export const OFFLINE_LABELS = {
  lt5m: 'under 5 minutes',
  lt1h: '5 minutes to 1 hour',
  lt1d: '1 hour to 1 day',
  gte1d: 'over 1 day',
  never: 'never connected',
} as const;
