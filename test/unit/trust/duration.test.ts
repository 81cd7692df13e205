import { describe, expect, it } from 'vitest';
import { formatGoDuration, parseGoDuration } from '../../../src/trust/duration.js';

describe('parseGoDuration', () => {
  it.each([
    ['0', 0],
    ['30s', 30_000],
    ['5m', 300_000],
    ['1h30m', 5_400_000],
    ['1h30m15s', 5_415_000],
    ['1.5h', 5_400_000],
    ['.5s', 500],
    ['5.s', 5000],
    ['300ms', 300],
    ['1500us', 1.5],
    ['1500µs', 1.5],
    ['1500μs', 1.5],
    ['2000000ns', 2],
    ['24h', 86_400_000],
    ['+5m', 300_000],
    ['-5m', -300_000],
    ['1m1m', 120_000],
  ])('reads %j as %d ms', (text, ms) => {
    expect(parseGoDuration(text)).toBeCloseTo(ms, 9);
  });

  it.each([
    ['', 'it is empty'],
    ['5', 'missing unit after "5"'],
    ['1h5', 'missing unit after "5"'],
    ['5x', 'unknown unit "x"'],
    ['5 m', 'unknown unit " m"'],
    ['m', 'expected a number before the unit'],
    ['.s', 'expected a number before the unit'],
    ['1d', 'unknown unit "d"'],
  ])('rejects %j: %s', (text, why) => {
    expect(() => parseGoDuration(text)).toThrow(
      expect.objectContaining({
        code: 'E_DURATION_INVALID',
        exitCode: 3,
        message: `invalid duration ${JSON.stringify(text)}: ${why}`,
      }),
    );
  });
});

describe('formatGoDuration', () => {
  it.each([
    [0, '0s'],
    [500, '500ms'],
    [1000, '1s'],
    [1500, '1.5s'],
    [300_000, '5m0s'],
    [5_415_000, '1h30m15s'],
    [86_400_000, '24h0m0s'],
    [-60_000, '-1m0s'],
  ])('prints %d ms as %j, and it reads back', (ms, text) => {
    expect(formatGoDuration(ms)).toBe(text);
    expect(parseGoDuration(text)).toBe(ms);
  });
});

describe('parseGoDuration messages', () => {
  it.each([
    ['5', 'missing unit after "5"'],
    ['55', 'missing unit after "55"'],
    ['1h5', 'missing unit after "5"'],
    ['..x', 'expected a number and a unit'],
    ['..x5', 'expected a number and a unit'],
    [`${'9'.repeat(400)}h`, 'it is too large'],
  ])('refuses %j: %s, and shows how durations are written', (text, why) => {
    expect(() => parseGoDuration(text)).toThrow(
      expect.objectContaining({
        code: 'E_DURATION_INVALID',
        message: `invalid duration ${JSON.stringify(text)}: ${why}`,
        hints: ['Durations are written as in Go and kubeadm, for example 30s, 5m, 1h30m or 24h.'],
      }),
    );
  });

  it('reads a duration with spaces around it', () => {
    expect(parseGoDuration(' 5m ')).toBe(300_000);
  });
});
