import { describe, expect, it } from 'vitest';
import {
  CorruptCacheEntryError,
  decodeCacheEntry,
  encodeCacheEntry,
  peekCacheEntryMeta,
  type CacheEntry,
} from '../../../src/edge/cache-entry.js';

const entry: CacheEntry = {
  meta: {
    key: 'abc json /api/v1/pods?',
    identityKey: 'abc',
    path: '/api/v1/pods',
    contentType: 'application/json',
    storedAt: '2026-01-01T00:00:00.000Z',
  },
  body: Buffer.from('{"kind":"PodList","items":[]}'),
};

describe('cache entry format', () => {
  it('round-trips, with a checksum header first', () => {
    const encoded = encodeCacheEntry(entry);
    expect(encoded.toString('utf8').split('\n')[0]).toMatch(/^EDGEADM-CACHE-ENTRY v1 sha256=[0-9a-f]{64} length=\d+$/);
    expect(decodeCacheEntry(encoded)).toEqual(entry);
    expect(peekCacheEntryMeta(encoded.subarray(0, 400))).toEqual(entry.meta);
  });

  it('refuses a changed body, a truncated file, a bad header and changed metadata', () => {
    const encoded = encodeCacheEntry(entry);
    const flipped = Buffer.from(encoded);
    flipped.writeUInt8(flipped.readUInt8(flipped.length - 3) ^ 0x01, flipped.length - 3);
    expect(() => decodeCacheEntry(flipped)).toThrow(/checksum mismatch/);
    expect(() => decodeCacheEntry(encoded.subarray(0, encoded.length - 5))).toThrow(/length mismatch/);
    expect(() => decodeCacheEntry(Buffer.from(`garbage\n${encoded.toString()}`))).toThrow(CorruptCacheEntryError);
    const otherMeta = Buffer.from(encoded.toString('utf8').replace('/api/v1/pods"', '/api/v1/podz"'));
    expect(() => decodeCacheEntry(otherMeta)).toThrow(/checksum mismatch/);
    expect(() => decodeCacheEntry(Buffer.alloc(0))).toThrow(/no header/);
  });
});
