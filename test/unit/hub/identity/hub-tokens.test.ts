import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { hashUserToken, newHubToken, newUserToken } from '../../../../src/hub/identity/hub-tokens.js';
import { hubTokenState } from '../../../../src/hub/store/hub-token-state.js';

describe('hub tokens', () => {
  const now = new Date('2026-01-01T00:00:00Z');

  it('is usable within its TTL and expired after it', () => {
    const { record } = newHubToken({ ttlMs: 60_000, now });
    expect(hubTokenState(record, new Date(now.getTime() + 59_000))).toBe('usable');
    expect(hubTokenState(record, new Date(now.getTime() + 60_000))).toBe('expired');
  });

  it('never expires with a TTL of 0, and is spent when its usages are gone', () => {
    const { record } = newHubToken({ ttlMs: 0, usages: 1, now });
    expect(record.expiresAt).toBeUndefined();
    expect(hubTokenState(record, new Date(now.getTime() + 10 ** 12))).toBe('usable');
    expect(hubTokenState({ ...record, usagesLeft: 0 }, now)).toBe('spent');
  });

  it('makes distinct user tokens and stores only a hash of them', () => {
    const a = newUserToken();
    const b = newUserToken();
    expect(a).not.toBe(b);
    expect(hashUserToken(a)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashUserToken(a)).not.toContain(a);
  });

  it('stores a user token as the SHA-256 of its UTF-8 bytes, in hex, so stored hashes keep matching', () => {
    expect(hashUserToken('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    const token = 'tok\u00e9\u{1F511}';
    expect(hashUserToken(token)).toBe(createHash('sha256').update(Buffer.from(token, 'utf8')).digest('hex'));
  });
});
