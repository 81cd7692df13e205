/**
 * Sizes written the Kubernetes way (`256Mi`, `1Gi`, `500M`, or plain bytes),
 * for the cache bound flags.
 */
import { ValidationError } from '../errors.js';

const UNITS: Record<string, number> = {
  '': 1,
  K: 1e3,
  M: 1e6,
  G: 1e9,
  Ki: 1024,
  Mi: 1024 ** 2,
  Gi: 1024 ** 3,
};

/**
 * Parses a byte size.
 *
 * @throws {ValidationError} `E_BYTE_SIZE`.
 */
export function parseByteSize(text: string, flag: string): number {
  const match = /^(\d+)(|K|M|G|Ki|Mi|Gi)$/.exec(text.trim());
  const bytes = match ? Number(match[1]) * UNITS[match[2]!]! : Number.NaN;
  if (!Number.isSafeInteger(bytes) || bytes <= 0) {
    throw new ValidationError(`invalid ${flag} ${JSON.stringify(text)}: expected a positive size such as 256Mi`, {
      code: 'E_BYTE_SIZE',
      hints: ['Sizes are bytes, or a number with K, M, G (powers of 1000) or Ki, Mi, Gi (powers of 1024).'],
    });
  }
  return bytes;
}
