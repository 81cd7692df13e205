import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { encodeCacheEntry } from '../../../src/edge/cache-entry.js';
import { prepareCacheDir, scanEntries } from '../../../src/edge/cache-dir.js';
import { entryFileNameOf } from '../../../src/edge/cache-key.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'edgeadm-cache-dir-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function writeEntry(entries: string, key: string, fileName: string, mtimeSeconds: number): void {
  const meta = { key, identityKey: 'id', path: '/api/v1/pods', contentType: 'application/json', storedAt: 'then' };
  writeFileSync(join(entries, fileName), encodeCacheEntry({ meta, body: Buffer.from('{}') }));
  utimesSync(join(entries, fileName), mtimeSeconds, mtimeSeconds);
}

describe('prepareCacheDir', () => {
  it('tightens a looser directory to root only and keeps one install key across opens', () => {
    mkdirSync(join(dir, 'entries'), { recursive: true, mode: 0o755 });
    chmodSync(join(dir, 'entries'), 0o755);
    const { key } = prepareCacheDir(dir);
    expect(statSync(join(dir, 'entries')).mode & 0o777).toBe(0o700);
    expect(key.length).toBeGreaterThan(0);
    expect(prepareCacheDir(dir).key.equals(key)).toBe(true);
  });

  it.each([
    ['empty', ''],
    ['torn', 'a3f0'],
    ['zeroed', '\0'.repeat(64)],
  ])(
    'starts with a new key and no entries when a power loss left the install key %s, instead of refusing to start',
    (_what, content) => {
      const entries = join(dir, 'entries');
      const before = prepareCacheDir(dir).key;
      writeEntry(entries, 'id json /api/v1/pods', entryFileNameOf('id json /api/v1/pods'), 1000);
      writeFileSync(join(dir, 'install.key'), content);

      const after = prepareCacheDir(dir);
      expect(after.key.toString('latin1')).toMatch(/^[0-9a-f]{64}$/);
      expect(after.key.equals(before)).toBe(false);
      expect(after.replacedKeyBecause).toContain('install.key held');
      // Keyed with the lost key, they could never be found again.
      expect(readdirSync(entries)).toEqual([]);
      // And the new key is kept.
      expect(prepareCacheDir(dir)).toEqual({ key: after.key });
    },
  );
});

describe('scanEntries', () => {
  it('indexes entries least recently used first, and removes temporaries and files named for another key', () => {
    const entries = join(dir, 'entries');
    prepareCacheDir(dir);
    writeEntry(entries, 'id json /new', entryFileNameOf('id json /new'), 3000);
    writeEntry(entries, 'id json /old', entryFileNameOf('id json /old'), 1000);
    writeEntry(entries, 'id json /planted', entryFileNameOf('id json /elsewhere'), 2000);
    writeFileSync(join(entries, `${entryFileNameOf('id json /x')}.ab12.tmp`), 'half');
    writeFileSync(join(entries, 'README'), 'not an entry');

    const records = scanEntries(entries);
    expect(records.map((r) => r.meta?.key)).toEqual(['id json /old', 'id json /new']);
    expect(records[0]!.touchedAt).toBe(1_000_000);
    expect(existsSync(join(entries, entryFileNameOf('id json /elsewhere')))).toBe(false);
    expect(existsSync(join(entries, `${entryFileNameOf('id json /x')}.ab12.tmp`))).toBe(false);
    expect(existsSync(join(entries, 'README'))).toBe(true);
  });
});
