/**
 * What the on-disk cache finds and makes when it opens `<cache-dir>`: the
 * directories (root only, modes tightened if they were looser), the
 * per-install HMAC key `install.key` (made once, kept across restarts), and
 * the index of the entries already there, rebuilt from each file's first
 * bytes in recency order (the files' mtimes). A temporary a crash left, or
 * a file whose name does not match the key it holds, is removed.
 *
 * An install key that is not what edgeadm writes (64 hex digits; an empty
 * or torn file after a power loss on storage that does not honour fsync)
 * is replaced and the entries are dropped: they were keyed with the lost
 * key and can never be found again. Refusing to start instead would leave
 * the node's kubelet, which talks only to the proxy, with no API server at
 * all, online or not (superedge#418: an edge proxy that does not start
 * after a reboot takes the whole node down).
 */
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  readdirSync,
  rmSync,
  statSync,
  unlinkSync,
} from 'node:fs';
import { join } from 'node:path';
import { writeSecretFileAtomic } from '../trust/secret-file.js';
import { peekCacheEntryMeta, type CacheEntryMeta } from './cache-entry.js';
import { entryFileNameOf } from './cache-key.js';

/** Mode of the cache directories: root only. */
export const CACHE_DIR_MODE = 0o700;
/** Bytes of the per-install identity key. */
export const INSTALL_KEY_BYTES = 32;
/** What `install.key` holds: the key's bytes in hex. */
const INSTALL_KEY_PATTERN = /^[0-9a-f]{64}$/;
/** Bytes read from each entry at start to index it. */
const INDEX_PEEK_BYTES = 16 * 1024;

/** One entry file as the cache indexes it. */
export interface IndexRecord {
  file: string;
  size: number;
  meta: CacheEntryMeta | undefined;
  /** When the file's mtime was last moved to mark a use (ms since epoch). */
  touchedAt: number;
}

/** What {@link prepareCacheDir} found. */
export interface PreparedCacheDir {
  /** The per-install HMAC key. */
  key: Buffer;
  /** Why the key was made again and the entries dropped, when it was. */
  replacedKeyBecause?: string;
}

/**
 * Makes `dir` and `dir/entries` (mode 0700) and returns the install key,
 * made on first use, and made again (the entries dropped) when the file
 * holds anything but a key (see the module comment).
 */
export function prepareCacheDir(dir: string): PreparedCacheDir {
  for (const path of [dir, join(dir, 'entries')]) {
    mkdirSync(path, { recursive: true, mode: CACHE_DIR_MODE });
    chmodSync(path, CACHE_DIR_MODE);
  }
  const keyPath = join(dir, 'install.key');
  let text: string | undefined;
  try {
    text = readFileSync(keyPath, 'latin1');
  } catch {
    text = undefined;
  }
  if (text !== undefined && INSTALL_KEY_PATTERN.test(text)) return { key: Buffer.from(text, 'latin1') };
  const replacedKeyBecause =
    text === undefined
      ? undefined
      : `${keyPath} held ${text.length === 0 ? 'nothing' : `${text.length} bytes that are not a key`}`;
  if (replacedKeyBecause !== undefined) {
    for (const name of readdirSync(join(dir, 'entries'))) rmSync(join(dir, 'entries', name), { force: true });
  }
  writeSecretFileAtomic(keyPath, randomBytes(INSTALL_KEY_BYTES).toString('hex'));
  const key = readFileSync(keyPath);
  return replacedKeyBecause === undefined ? { key } : { key, replacedKeyBecause };
}

/** The entries in `entriesDir`, least recently used first; leftovers and misnamed files are removed. */
export function scanEntries(entriesDir: string): IndexRecord[] {
  const found: IndexRecord[] = [];
  for (const name of readdirSync(entriesDir)) {
    const path = join(entriesDir, name);
    if (name.endsWith('.tmp')) {
      unlinkSync(path); // a write that crashed before its rename
      continue;
    }
    if (!/^[0-9a-f]{64}$/.test(name)) continue;
    const stat = statSync(path);
    const head = Buffer.alloc(Math.min(INDEX_PEEK_BYTES, stat.size));
    const fd = openSync(path, 'r');
    try {
      readSync(fd, head, 0, head.length, 0);
    } finally {
      closeSync(fd);
    }
    const meta = peekCacheEntryMeta(head);
    if (meta && entryFileNameOf(meta.key) !== name) {
      unlinkSync(path); // renamed or planted: it can never be looked up
      continue;
    }
    found.push({ file: name, size: stat.size, meta, touchedAt: stat.mtimeMs });
  }
  return found.sort((a, b) => a.touchedAt - b.touchedAt);
}
