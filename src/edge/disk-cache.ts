/**
 * The edge-proxy's on-disk cache: one file per entry under
 * `<cache-dir>/entries`, the directory 0700 and every file 0600 (it holds
 * what the API server told each identity, Secrets included).
 *
 * - Writes are atomic and crash-safe: temporary file, fsync, rename; writes
 *   to one key are serialised so an older answer never lands last. The
 *   directory is not fsynced after the rename, so a power cut may leave an
 *   entry at its previous version — still complete and checksummed, never
 *   half-written.
 * - Every entry carries a checksum (see cache-entry.ts); a corrupt one is
 *   deleted on read and reported as a miss.
 * - Bounded by bytes and by entries, evicting the least recently used.
 * - A full disk degrades, never wedges (issue #22): a write that fails
 *   removes its temporary file; one that fails for lack of space (ENOSPC,
 *   EDQUOT) evicts the least recently used entries to make room and is
 *   tried once more; temporaries a crash left are swept at start. The byte
 *   count (and `/metrics`) is what the cache has on disk: its entries plus
 *   the temporaries of writes in progress, so no byte is ever unaccounted
 *   and eviction can always free what the count says.
 * - The index is rebuilt at start from each file's first bytes, so the cache
 *   survives a restart (recency from the files' mtimes).
 * - The per-install HMAC key of cache-key.ts lives here too (`install.key`);
 *   it and the index rebuilt at start are read by cache-dir.ts.
 * - LIST entries patched by watch events are held in memory and flushed
 *   after {@link LIST_FLUSH_DELAY_MS}, so a busy watch does not rewrite a
 *   large list per event.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { open, readFile, rename, rm, unlink, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { EdgeadmError } from '../errors.js';
import { silentLogger, type Logger } from '../log/run-log.js';
import {
  CorruptCacheEntryError,
  decodeCacheEntry,
  encodeCacheEntry,
  type CacheEntry,
  type CacheEntryMeta,
} from './cache-entry.js';
import { prepareCacheDir, scanEntries, type IndexRecord } from './cache-dir.js';
import { entryFileNameOf } from './cache-key.js';
import { LIST_FLUSH_DELAY_MS, SYNC_READ_MAX_BYTES } from './limits.js';

export { CACHE_DIR_MODE, INSTALL_KEY_BYTES } from './cache-dir.js';

/** Mode of every cache file. */
export const CACHE_FILE_MODE = 0o600;
/**
 * The on-disk recency (mtime) of an entry is refreshed at most this often:
 * recency in memory is exact, and one file-system call per cache hit would
 * double the cost of a hit for an ordering that only matters after a restart.
 */
const TOUCH_INTERVAL_MS = 60_000;

/** Whether a file-system error means the disk (or the quota) is full. */
function isOutOfSpace(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT';
}

/** Options of {@link DiskCache.open}. */
export interface DiskCacheOptions {
  dir: string;
  maxBytes: number;
  maxEntries: number;
  logger?: Logger;
  /** Called when a corrupt entry is dropped (for metrics). */
  onCorrupt?: () => void;
}

interface PendingJson {
  meta: CacheEntryMeta;
  value: unknown;
  timer: NodeJS.Timeout;
}

/** The cache. Create with {@link DiskCache.open}. */
export class DiskCache {
  readonly installKey: Buffer;
  readonly #entriesDir: string;
  readonly #options: DiskCacheOptions;
  readonly #logger: Logger;
  /** Insertion order is recency order: the first record is the least recently used. */
  readonly #index = new Map<string, IndexRecord>();
  readonly #writes = new Map<string, Promise<void>>();
  readonly #pending = new Map<string, PendingJson>();
  /** Bytes of indexed entry files. */
  #bytes = 0;
  /** Bytes of temporary files of writes in progress (counted before their first byte is written). */
  #temporaryBytes = 0;

  private constructor(options: DiskCacheOptions, installKey: Buffer) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger;
    this.installKey = installKey;
    this.#entriesDir = join(options.dir, 'entries');
  }

  /**
   * Opens (or creates) the cache in `options.dir`, tightening the directory
   * modes, and indexes the entries found there.
   *
   * @throws {EdgeadmError} `E_EDGE_CACHE_DIR` when the directory cannot be made or read.
   */
  static open(options: DiskCacheOptions): DiskCache {
    try {
      const prepared = prepareCacheDir(options.dir);
      const cache = new DiskCache(options, prepared.key);
      if (prepared.replacedKeyBecause !== undefined) {
        cache.#logger.warn(
          `edge-proxy: ${prepared.replacedKeyBecause}; made a new install key and dropped the cached entries, which it keyed`,
        );
      }
      cache.#indexExisting();
      return cache;
    } catch (error) {
      throw new EdgeadmError(`cannot open the edge-proxy cache in ${options.dir}: ${(error as Error).message}`, {
        code: 'E_EDGE_CACHE_DIR',
        hints: ['--cache-dir must be a local directory that root can write.'],
        cause: error,
      });
    }
  }

  /** Number of entries. */
  get entryCount(): number {
    return this.#index.size;
  }

  /** Bytes on disk taken by entries and by the temporary files of writes in progress. */
  get byteCount(): number {
    return this.#bytes + this.#temporaryBytes;
  }

  /** Whether an entry is indexed (or pending) under `key`, without reading it. */
  has(key: string): boolean {
    return this.#pending.has(key) || this.#index.has(entryFileNameOf(key));
  }

  /** The metadata of every indexed entry of one identity (for lookups such as "is this node known?"). */
  entriesOf(identityKey: string): CacheEntryMeta[] {
    const found: CacheEntryMeta[] = [];
    for (const record of this.#index.values()) if (record.meta?.identityKey === identityKey) found.push(record.meta);
    return found;
  }

  /** Reads and verifies an entry; a corrupt one is deleted and reported as a miss. */
  async get(key: string): Promise<CacheEntry | undefined> {
    const pending = this.#pending.get(key);
    if (pending) return { meta: pending.meta, body: Buffer.from(JSON.stringify(pending.value)) };
    const file = entryFileNameOf(key);
    // A write in flight (a LIST answer just stored) must land first: a watch
    // event that follows it at once would otherwise find no entry to patch.
    await this.#writes.get(file);
    const record = this.#index.get(file);
    if (!record) return undefined;
    let data: Buffer;
    try {
      const path = join(this.#entriesDir, file);
      // A small entry (an object GET, the kubelet's commonest read) is read at once: from the page cache
      // that is a few microseconds, where readFile's open, stat, read and close each go to the thread pool.
      data = record.size <= SYNC_READ_MAX_BYTES ? readFileSync(path) : await readFile(path);
    } catch {
      this.#forget(file);
      return undefined;
    }
    try {
      const entry = decodeCacheEntry(data);
      if (entry.meta.key !== key) throw new CorruptCacheEntryError('key mismatch');
      this.#touch(file, record);
      return entry;
    } catch (error) {
      if (!(error instanceof CorruptCacheEntryError)) throw error;
      this.#logger.warn(`edge-proxy cache: dropped ${file}: ${error.message}`);
      this.#options.onCorrupt?.();
      this.#forget(file);
      await unlink(join(this.#entriesDir, file)).catch(() => {});
      return undefined;
    }
  }

  /** Stores an entry (atomically), then evicts down to the bounds. */
  async put(entry: CacheEntry): Promise<void> {
    const pending = this.#pending.get(entry.meta.key);
    if (pending) {
      clearTimeout(pending.timer);
      this.#pending.delete(entry.meta.key);
    }
    await this.#write(entry);
  }

  /**
   * Updates a JSON entry in memory with `update` (which returns whether it
   * changed anything) and schedules the write. Missing entries are left alone.
   */
  async updateJson(key: string, update: (value: unknown) => boolean): Promise<void> {
    let pending = this.#pending.get(key);
    if (!pending) {
      const entry = await this.get(key);
      if (!entry) return;
      pending = this.#pending.get(key); // another update may have loaded it meanwhile
      if (!pending) {
        let value: unknown;
        try {
          value = JSON.parse(entry.body.toString('utf8'));
        } catch {
          return;
        }
        pending = { meta: entry.meta, value, timer: setTimeout(() => void this.#flush(key), LIST_FLUSH_DELAY_MS) };
        pending.timer.unref();
        this.#pending.set(key, pending);
      }
    }
    if (update(pending.value)) pending.meta = { ...pending.meta, storedAt: new Date().toISOString() };
  }

  /** Removes an entry (after any write to it in progress, so that write cannot bring it back). */
  async delete(key: string): Promise<void> {
    const file = entryFileNameOf(key);
    const pending = this.#pending.get(key);
    if (pending) {
      clearTimeout(pending.timer);
      this.#pending.delete(key);
    }
    await this.#serialise(file, async () => {
      this.#forget(file);
      await rm(join(this.#entriesDir, file), { force: true });
    });
  }

  /** Writes every pending list update now (at shutdown). */
  async flush(): Promise<void> {
    await Promise.all([...this.#pending.keys()].map((key) => this.#flush(key)));
    await Promise.all([...this.#writes.values()]);
  }

  async #flush(key: string): Promise<void> {
    const pending = this.#pending.get(key);
    if (!pending) return;
    clearTimeout(pending.timer);
    this.#pending.delete(key);
    await this.#write({ meta: pending.meta, body: Buffer.from(JSON.stringify(pending.value)) }).catch((error) =>
      this.#logger.warn(`edge-proxy cache: cannot write ${entryFileNameOf(key)}: ${(error as Error).message}`),
    );
  }

  #write(entry: CacheEntry): Promise<void> {
    const file = entryFileNameOf(entry.meta.key);
    const data = encodeCacheEntry(entry);
    return this.#serialise(file, async () => {
      if (data.length > this.#options.maxBytes) {
        // It could only stay by evicting everything else, and would then be evicted itself.
        throw new Error(
          `an entry of ${data.length} bytes is larger than the cache's bound of ${this.#options.maxBytes}`,
        );
      }
      let size: number;
      try {
        size = await this.#writeFile(file, data);
      } catch (error) {
        if (!isOutOfSpace(error)) throw error;
        const freed = await this.#evictAtLeast(data.length);
        this.#logger.warn(
          `edge-proxy cache: the disk is full; evicted ${freed} bytes of least recently used entries and trying again`,
        );
        size = await this.#writeFile(file, data);
      }
      this.#forget(file);
      this.#index.set(file, { file, size, meta: entry.meta, touchedAt: Date.now() });
      this.#bytes += size;
      await this.#evict();
    });
  }

  /** Runs `operation` after every earlier write or delete of the same file (so the last one issued lands last). */
  #serialise(file: string, operation: () => Promise<void>): Promise<void> {
    const previous = this.#writes.get(file) ?? Promise.resolve();
    const next = previous.then(operation);
    const settled = next.catch(() => {});
    this.#writes.set(file, settled);
    void settled.then(() => {
      if (this.#writes.get(file) === settled) this.#writes.delete(file);
    });
    return next;
  }

  /**
   * Writes `data` to a temporary file, syncs it and renames it over
   * `file`; returns the bytes it takes. The temporary is counted from
   * before its first byte until it is renamed or removed, and removed on
   * any failure, so a failed write leaves nothing behind.
   */
  async #writeFile(file: string, data: Buffer): Promise<number> {
    const target = join(this.#entriesDir, file);
    const temporary = `${target}.${randomBytes(4).toString('hex')}.tmp`;
    this.#temporaryBytes += data.length;
    try {
      const handle = await open(temporary, 'wx', CACHE_FILE_MODE);
      try {
        await handle.writeFile(data);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temporary, target);
      return data.length;
    } catch (error) {
      await rm(temporary, { force: true }).catch(() => {});
      throw error;
    } finally {
      this.#temporaryBytes -= data.length;
    }
  }

  /** Evicts least recently used entries until `bytes` are freed (or none is left); returns the bytes freed. */
  async #evictAtLeast(bytes: number): Promise<number> {
    let freed = 0;
    while (freed < bytes) {
      const oldest = this.#index.values().next().value;
      if (!oldest) break;
      freed += oldest.size;
      this.#forget(oldest.file);
      await rm(join(this.#entriesDir, oldest.file), { force: true });
    }
    return freed;
  }

  async #evict(): Promise<void> {
    while (this.#index.size > this.#options.maxEntries || this.byteCount > this.#options.maxBytes) {
      const oldest = this.#index.values().next().value;
      if (!oldest) break;
      this.#forget(oldest.file);
      await rm(join(this.#entriesDir, oldest.file), { force: true });
    }
  }

  #touch(file: string, record: IndexRecord): void {
    this.#index.delete(file);
    this.#index.set(file, record);
    // Recency survives a restart through the mtime; best effort, and not on every hit.
    const now = Date.now();
    if (now - record.touchedAt < TOUCH_INTERVAL_MS) return;
    record.touchedAt = now;
    void utimes(join(this.#entriesDir, file), new Date(now), new Date(now)).catch(() => {});
  }

  #forget(file: string): void {
    const record = this.#index.get(file);
    if (!record) return;
    this.#index.delete(file);
    this.#bytes -= record.size;
  }

  #indexExisting(): void {
    for (const record of scanEntries(this.#entriesDir)) {
      this.#index.set(record.file, record);
      this.#bytes += record.size;
    }
    void this.#evict();
  }
}
