/**
 * Token generation as it draws from the random source: bytes that would
 * bias the characters (252-255, because 256 is not a multiple of 36) are
 * skipped. The random source is replaced by one whose every draw starts
 * with those four bytes.
 */
import type * as Crypto from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';

/** A byte that stands for "a" (226 % 36 = 10). */
const BYTE_OF_A = 226;

vi.mock('node:crypto', async (importOriginal) => {
  const original = await importOriginal<typeof Crypto>();
  return {
    ...original,
    randomBytes: (size: number): Buffer =>
      Buffer.from([252, 253, 254, 255, ...Array.from({ length: Math.max(0, size - 4) }, () => BYTE_OF_A)]),
  };
});

const { generateBootstrapToken } = await import('../../../src/trust/bootstrap-token.js');

describe('generateBootstrapToken from a known random source', () => {
  it('skips the bytes that would bias the characters', () => {
    expect(generateBootstrapToken()).toEqual({ id: 'aaaaaa', secret: 'aaaaaaaaaaaaaaaa' });
  });
});
