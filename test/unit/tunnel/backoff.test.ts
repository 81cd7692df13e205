import { describe, expect, it } from 'vitest';
import { reconnectDelayMs } from '../../../src/tunnel/backoff.js';

describe('reconnectDelayMs', () => {
  it('doubles the ceiling per attempt, up to the maximum', () => {
    const top = (attempt: number): number =>
      reconnectDelayMs({ attempt, baseMs: 100, maxMs: 1000, random: () => 0.999999 });
    expect([top(0), top(1), top(2), top(3), top(10)]).toEqual([99, 199, 399, 799, 999]);
  });

  it('jitters over the whole range', () => {
    expect(reconnectDelayMs({ attempt: 5, baseMs: 100, maxMs: 1000, random: () => 0 })).toBe(0);
    expect(reconnectDelayMs({ attempt: 5, baseMs: 100, maxMs: 1000, random: () => 0.5 })).toBe(500);
  });
});
