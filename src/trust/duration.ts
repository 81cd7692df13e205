/**
 * Go-style durations (`30s`, `5m`, `1h30m`, `1.5h`, `300ms`), as kubeadm's
 * `--discovery-timeout` and `--ttl` take them, so operators can pass the
 * same values to edgeadm. Durations are held as milliseconds.
 */
import { ValidationError } from '../errors.js';

/** Milliseconds per unit, as Go's time.ParseDuration knows them. */
const UNIT_MS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3, // U+00B5 micro sign
  μs: 1e-3, // U+03BC Greek small letter mu
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

const MS_PER_SECOND = 1000;
const MS_PER_MINUTE = 60_000;
const MS_PER_HOUR = 3_600_000;

/** One `<number><unit>` element of a duration, anchored at the current position. */
const ELEMENT = /^(\d*)(?:\.(\d*))?([^\d.]+)/;

/**
 * Parses a Go duration string into milliseconds.
 *
 * Accepts what Go's `time.ParseDuration` accepts: an optional sign, then one
 * or more decimal numbers each followed by a unit (`ns`, `us`, `µs`, `ms`,
 * `s`, `m`, `h`), or the bare `0`.
 *
 * @throws {ValidationError} `E_DURATION_INVALID`, naming what is wrong.
 */
export function parseGoDuration(text: string): number {
  const invalid = (why: string): ValidationError =>
    new ValidationError(`invalid duration ${JSON.stringify(text)}: ${why}`, {
      code: 'E_DURATION_INVALID',
      hints: ['Durations are written as in Go and kubeadm, for example 30s, 5m, 1h30m or 24h.'],
    });

  let rest = text.trim();
  let sign = 1;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    if (rest.startsWith('-')) sign = -1;
    rest = rest.slice(1);
  }
  if (rest === '0') return 0;
  if (rest === '') throw invalid('it is empty');

  let total = 0;
  while (rest !== '') {
    const match = ELEMENT.exec(rest);
    if (!match) {
      throw /^[\d.]+$/.test(rest) ? invalid(`missing unit after "${rest}"`) : invalid('expected a number and a unit');
    }
    const [whole, integer = '', fraction, unit = ''] = match;
    if (integer === '' && (fraction === undefined || fraction === ''))
      throw invalid('expected a number before the unit');
    const unitMs = UNIT_MS[unit];
    if (unitMs === undefined) throw invalid(`unknown unit ${JSON.stringify(unit)}`);
    total += Number(`${integer === '' ? '0' : integer}.${fraction ?? '0'}`) * unitMs;
    rest = rest.slice(whole.length);
  }
  if (!Number.isFinite(total)) throw invalid('it is too large');
  return sign * total;
}

/**
 * Formats milliseconds the way Go prints a duration (`5m0s`, `1h30m0s`,
 * `500ms`), so messages show durations in the form the flags take.
 */
export function formatGoDuration(ms: number): string {
  if (ms === 0) return '0s';
  if (ms < 0) return `-${formatGoDuration(-ms)}`;
  if (ms < MS_PER_SECOND) return `${trimNumber(ms)}ms`;
  const hours = Math.floor(ms / MS_PER_HOUR);
  const minutes = Math.floor((ms % MS_PER_HOUR) / MS_PER_MINUTE);
  const seconds = trimNumber((ms % MS_PER_MINUTE) / MS_PER_SECOND);
  if (hours > 0) return `${hours}h${minutes}m${seconds}s`;
  if (minutes > 0) return `${minutes}m${seconds}s`;
  return `${seconds}s`;
}

/** Up to millisecond precision, without trailing zeros. */
function trimNumber(value: number): string {
  return String(Number(value.toFixed(3)));
}
