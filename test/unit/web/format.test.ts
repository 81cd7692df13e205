/** How the web view writes times and counts (web/src/format.ts). */
import { describe, expect, it } from 'vitest';
import { ago, count, until, utc, when } from '../../../web/src/format.js';

const now = Date.parse('2026-11-28T21:43:10.000Z');

describe('web view formats', () => {
  it('writes a time in UTC to the minute, with how long ago, and never for none', () => {
    expect(when('2026-11-28T21:40:05.123Z', now)).toBe('2026-11-28 21:40 UTC (3 min ago)');
    // Another zone's offset is read, and written in UTC.
    expect(when('2026-11-28T23:00:00+02:00', now)).toBe('2026-11-28 21:00 UTC (43 min ago)');
    expect(when(undefined, now)).toBe('never');
    expect(when('not a time', now)).toBe('not a time');
    expect(ago('2026-11-25T21:43:10.000Z', now)).toBe('3 d ago');
  });

  it('writes an expiry as how far away it is, or how long ago it passed', () => {
    expect(until('2026-12-07T21:43:10.000Z', now)).toBe('in 9 d');
    expect(until('2026-11-28T23:43:10.000Z', now)).toBe('in 2 h');
    expect(until('2026-11-26T21:43:10.000Z', now)).toBe('2 d ago');
    expect(utc('2026-12-07T21:43:59.000Z')).toBe('2026-12-07 21:43 UTC');
    expect(utc('soon')).toBe('soon');
  });

  it('says "1 object" and "2 objects"', () => {
    expect(count(1, 'object')).toBe('1 object');
    expect(count(0, 'object')).toBe('0 objects');
    expect(count(2, 'object')).toBe('2 objects');
  });
});
