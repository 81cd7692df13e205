import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CacheEntry } from '../../../src/edge/cache-entry.js';
import { entryFileNameOf } from '../../../src/edge/cache-key.js';
import { DiskCache } from '../../../src/edge/disk-cache.js';

let dir: string;

function entry(key: string, body: string): CacheEntry {
  return {
    meta: {
      key,
      identityKey: key.split(' ')[0]!,
      path: '/api/v1/pods',
      contentType: 'application/json',
      storedAt: new Date().toISOString(),
    },
    body: Buffer.from(body),
  };
}

function open(bounds: { maxBytes?: number; maxEntries?: number } = {}): DiskCache {
  return DiskCache.open({ dir, maxBytes: bounds.maxBytes ?? 1024 * 1024, maxEntries: bounds.maxEntries ?? 100 });
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'edgeadm-disk-cache-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('DiskCache', () => {
  it('stores entries readable by root only, and keeps them and its install key across a reopen', async () => {
    const cache = open();
    await cache.put(entry('id1 json /a?', '{"a":1}'));
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, 'entries')).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, 'entries', entryFileNameOf('id1 json /a?'))).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'install.key')).mode & 0o777).toBe(0o600);

    const reopened = open();
    expect(reopened.installKey.equals(cache.installKey)).toBe(true);
    expect(reopened.entryCount).toBe(1);
    expect((await reopened.get('id1 json /a?'))?.body.toString()).toBe('{"a":1}');
    expect(reopened.entriesOf('id1').map((meta) => meta.key)).toEqual(['id1 json /a?']);
    expect(reopened.entriesOf('id2')).toEqual([]);
  });

  it('evicts the least recently used entries beyond the entry bound', async () => {
    const cache = open({ maxEntries: 2 });
    await cache.put(entry('i a', '1'));
    await cache.put(entry('i b', '2'));
    expect(await cache.get('i a')).toBeDefined(); // a is now more recent than b
    await cache.put(entry('i c', '3'));
    expect(cache.entryCount).toBe(2);
    expect(await cache.get('i b')).toBeUndefined();
    expect(await cache.get('i a')).toBeDefined();
    expect(await cache.get('i c')).toBeDefined();
    expect(readdirSync(join(dir, 'entries'))).toHaveLength(2);
  });

  it('stays within the byte bound', async () => {
    const cache = open({ maxBytes: 1000 });
    for (let i = 0; i < 10; i++) await cache.put(entry(`i k${i}`, 'x'.repeat(200)));
    expect(cache.byteCount).toBeLessThanOrEqual(1000);
    expect(cache.entryCount).toBeGreaterThan(0);
    expect(await cache.get('i k9')).toBeDefined();
    expect(await cache.get('i k0')).toBeUndefined();
  });

  it('drops a corrupt entry on read instead of returning it', async () => {
    let dropped = 0;
    const cache = DiskCache.open({ dir, maxBytes: 1 << 20, maxEntries: 10, onCorrupt: () => dropped++ });
    await cache.put(entry('i k', '{"value":"good"}'));
    const file = join(dir, 'entries', entryFileNameOf('i k'));
    writeFileSync(file, readFileSync(file, 'utf8').replace('good', 'evil'));
    expect(await cache.get('i k')).toBeUndefined();
    expect(dropped).toBe(1);
    expect(readdirSync(join(dir, 'entries'))).toEqual([]);
    expect(cache.entryCount).toBe(0);
  });

  it('removes temporary files a crash left behind, and files whose name does not match their key', async () => {
    const cache = open();
    await cache.put(entry('i k', '{}'));
    const entries = join(dir, 'entries');
    writeFileSync(join(entries, `${entryFileNameOf('i k')}.1234.tmp`), 'half');
    writeFileSync(join(entries, 'f'.repeat(64)), readFileSync(join(entries, entryFileNameOf('i k'))));
    const reopened = open();
    expect(readdirSync(entries)).toEqual([entryFileNameOf('i k')]);
    expect(reopened.entryCount).toBe(1);
  });

  it('lets a delete issued after a write win, even while that write is in flight', async () => {
    const cache = open();
    const writing = cache.put(entry('i k', '{"stale":true}'));
    const deleting = cache.delete('i k');
    await Promise.all([writing, deleting]);
    expect(await cache.get('i k')).toBeUndefined();
    expect(readdirSync(join(dir, 'entries'))).toEqual([]);
    expect(cache.byteCount).toBe(0);
  });

  it('refuses an entry larger than the byte bound instead of evicting everything for it', async () => {
    const cache = open({ maxBytes: 1000 });
    await cache.put(entry('i small', 'x'.repeat(100)));
    await expect(cache.put(entry('i huge', 'x'.repeat(2000)))).rejects.toThrow(/larger than the cache's bound/);
    expect(await cache.get('i small')).toBeDefined();
    expect(readdirSync(join(dir, 'entries'))).toEqual([entryFileNameOf('i small')]);
  });

  it('applies JSON updates in memory at once and writes them on flush', async () => {
    const cache = open();
    await cache.put(entry('i list', '{"n":1}'));
    await cache.updateJson('i list', (value) => {
      (value as { n: number }).n = 2;
      return true;
    });
    expect(JSON.parse((await cache.get('i list'))!.body.toString())).toEqual({ n: 2 });
    await cache.flush();
    expect(JSON.parse((await open().get('i list'))!.body.toString())).toEqual({ n: 2 });
  });
});
