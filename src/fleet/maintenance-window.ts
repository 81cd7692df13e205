/**
 * `fleet upgrade`'s maintenance window: when a new host may start. Hosts
 * already running when it closes finish; no other starts, and the run says
 * when the window opens again so that `--resume` can be run then.
 *
 * Two forms: a daily window (`--window-start 22:00 --window-end 04:00`, in
 * UTC, possibly across midnight; the k3s system-upgrade-controller's Plan
 * windows are daily too) or one ISO 8601 interval (`--window
 * 2026-11-24T22:00Z/2026-11-25T04:00Z`, or a start and a duration,
 * `2026-11-24T22:00Z/PT6H`). Pure: the clock is the caller's.
 */
import { ValidationError } from '../errors.js';

/** A parsed window. */
export type MaintenanceWindow =
  | { kind: 'daily'; startMinute: number; endMinute: number; text: string }
  | { kind: 'interval'; start: Date; end: Date; text: string };

const MINUTES_PER_DAY = 24 * 60;
const MS_PER_MINUTE = 60_000;

function usage(message: string): ValidationError {
  return new ValidationError(message, {
    code: 'E_FLEET_WINDOW',
    hints: [
      'A daily window in UTC: --window-start 22:00 --window-end 04:00.',
      'Or one ISO 8601 interval: --window 2026-11-24T22:00Z/2026-11-25T04:00Z (or START/PT6H).',
    ],
  });
}

function minuteOf(text: string, flag: string): number {
  const match = /^([01]\d|2[0-3]):([0-5]\d)$/.exec(text.trim());
  if (match === null) throw usage(`${flag} ${text}: expected HH:MM (UTC), such as 22:00`);
  return Number(match[1]) * 60 + Number(match[2]);
}

/** An ISO 8601 duration of days, hours, minutes (PT6H, P1DT2H30M), in ms. */
function durationMs(text: string): number | undefined {
  const match = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?)?$/.exec(text);
  if (match === null || text === 'P' || text === 'PT') return undefined;
  const [, days, hours, minutes] = match;
  return ((Number(days ?? 0) * 24 + Number(hours ?? 0)) * 60 + Number(minutes ?? 0)) * MS_PER_MINUTE;
}

function instant(text: string): Date | undefined {
  // A time zone is required: a window on many sites must not depend on this machine's.
  if (!/(Z|[+-]\d{2}:?\d{2})$/.test(text)) return undefined;
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

/**
 * Parses the window flags; undefined when none is given.
 *
 * @throws {ValidationError} `E_FLEET_WINDOW` for a malformed or empty window, or both forms at once.
 */
export function parseMaintenanceWindow(input: {
  start?: string | undefined;
  end?: string | undefined;
  interval?: string | undefined;
}): MaintenanceWindow | undefined {
  const hasDaily = input.start !== undefined || input.end !== undefined;
  if (input.interval !== undefined) {
    if (hasDaily) throw usage('give --window or --window-start/--window-end, not both');
    const [from, to, extra] = input.interval.trim().split('/');
    const start = from === undefined ? undefined : instant(from);
    const duration = to === undefined ? undefined : durationMs(to);
    const end =
      to === undefined
        ? undefined
        : duration !== undefined && start
          ? new Date(start.getTime() + duration)
          : instant(to);
    if (extra !== undefined || start === undefined || end === undefined) {
      throw usage(`--window ${input.interval}: expected START/END or START/DURATION, with time zones`);
    }
    if (end.getTime() <= start.getTime()) throw usage(`--window ${input.interval}: it ends before it starts`);
    return { kind: 'interval', start, end, text: `${start.toISOString()}/${end.toISOString()}` };
  }
  if (!hasDaily) return undefined;
  if (input.start === undefined || input.end === undefined) {
    throw usage('--window-start and --window-end go together');
  }
  const startMinute = minuteOf(input.start, '--window-start');
  const endMinute = minuteOf(input.end, '--window-end');
  if (startMinute === endMinute) throw usage('--window-start and --window-end are the same time: the window is empty');
  return { kind: 'daily', startMinute, endMinute, text: `${input.start.trim()}-${input.end.trim()} UTC daily` };
}

/** Whether a new host may start at `now`. */
export function isWindowOpen(window: MaintenanceWindow, now: Date): boolean {
  if (window.kind === 'interval') return now >= window.start && now < window.end;
  const minute = now.getUTCHours() * 60 + now.getUTCMinutes();
  return window.startMinute < window.endMinute
    ? minute >= window.startMinute && minute < window.endMinute
    : minute >= window.startMinute || minute < window.endMinute;
}

/** When the window opens next after `now` (undefined: an interval that is over). */
export function nextOpening(window: MaintenanceWindow, now: Date): Date | undefined {
  if (window.kind === 'interval') return now < window.start ? window.start : undefined;
  const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  let opening = midnight + window.startMinute * MS_PER_MINUTE;
  if (opening <= now.getTime()) opening += MINUTES_PER_DAY * MS_PER_MINUTE;
  return new Date(opening);
}

/** The skipped hosts' message when the window is closed at `now`: when to `--resume`. */
export function windowClosedMessage(window: MaintenanceWindow, now: Date, runId: string): string {
  const next = nextOpening(window, now);
  return next === undefined
    ? `not started: the maintenance window ${window.text} is over; give a new window and run fleet upgrade --resume ${runId}`
    : `not started: outside the maintenance window (${window.text}); it opens again at ${next.toISOString()}: run fleet upgrade --resume ${runId} then`;
}
