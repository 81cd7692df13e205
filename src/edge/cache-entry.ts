/**
 * The on-disk form of one cache entry — a pure codec, tested by feeding it
 * bytes.
 *
 * ```
 * EDGEADM-CACHE-ENTRY v1 sha256=<hex of payload> length=<payload bytes>\n
 * <payload> = <metadata JSON>\n<response body>
 * ```
 *
 * The checksum covers the metadata and the body, so a torn write, a flipped
 * bit or a hand-edited file is detected and the entry dropped, never served.
 */
import { createHash } from 'node:crypto';

/** The first bytes of every entry file. */
export const CACHE_ENTRY_MAGIC = 'EDGEADM-CACHE-ENTRY v1';
const HEADER_PATTERN = /^EDGEADM-CACHE-ENTRY v1 sha256=([0-9a-f]{64}) length=(\d+)$/;

/** What an entry says about the answer it holds. */
export interface CacheEntryMeta {
  /** The full cache key (identity hash, representation, path, query): never a secret. */
  key: string;
  /** The identity hash alone, for lookups within one identity. */
  identityKey: string;
  path: string;
  contentType: string;
  /** When the answer was stored or last patched (ISO 8601). */
  storedAt: string;
}

/** A decoded entry. */
export interface CacheEntry {
  meta: CacheEntryMeta;
  body: Buffer;
}

/** Why an entry file was refused. */
export class CorruptCacheEntryError extends Error {
  constructor(why: string) {
    super(`corrupt cache entry: ${why}`);
    this.name = 'CorruptCacheEntryError';
  }
}

/** Encodes an entry with its checksum header. */
export function encodeCacheEntry(entry: CacheEntry): Buffer {
  const payload = Buffer.concat([Buffer.from(`${JSON.stringify(entry.meta)}\n`), entry.body]);
  const digest = createHash('sha256').update(payload).digest('hex');
  return Buffer.concat([Buffer.from(`${CACHE_ENTRY_MAGIC} sha256=${digest} length=${payload.length}\n`), payload]);
}

/**
 * Decodes and verifies an entry file.
 *
 * @throws {CorruptCacheEntryError} on a bad header, a length or checksum mismatch, or bad metadata.
 */
export function decodeCacheEntry(data: Buffer): CacheEntry {
  const headerEnd = data.indexOf(0x0a);
  if (headerEnd < 0) throw new CorruptCacheEntryError('no header line');
  const header = HEADER_PATTERN.exec(data.subarray(0, headerEnd).toString('latin1'));
  if (!header) throw new CorruptCacheEntryError('bad header');
  const payload = data.subarray(headerEnd + 1);
  if (payload.length !== Number(header[2])) throw new CorruptCacheEntryError('length mismatch (torn write?)');
  if (createHash('sha256').update(payload).digest('hex') !== header[1])
    throw new CorruptCacheEntryError('checksum mismatch');
  const metaEnd = payload.indexOf(0x0a);
  if (metaEnd < 0) throw new CorruptCacheEntryError('no metadata line');
  return { meta: parseMeta(payload.subarray(0, metaEnd).toString('utf8')), body: payload.subarray(metaEnd + 1) };
}

/**
 * Reads only the metadata of an entry from its first bytes (used to index
 * the cache at start without reading every body). Not verified: the
 * checksum is checked when the entry is read to be served.
 */
export function peekCacheEntryMeta(head: Buffer): CacheEntryMeta | undefined {
  const headerEnd = head.indexOf(0x0a);
  if (headerEnd < 0 || !HEADER_PATTERN.test(head.subarray(0, headerEnd).toString('latin1'))) return undefined;
  const metaEnd = head.indexOf(0x0a, headerEnd + 1);
  if (metaEnd < 0) return undefined;
  try {
    return parseMeta(head.subarray(headerEnd + 1, metaEnd).toString('utf8'));
  } catch {
    return undefined;
  }
}

function parseMeta(text: string): CacheEntryMeta {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new CorruptCacheEntryError('metadata is not JSON');
  }
  const meta = value as Partial<CacheEntryMeta> | null;
  if (
    !meta ||
    typeof meta.key !== 'string' ||
    typeof meta.identityKey !== 'string' ||
    typeof meta.path !== 'string' ||
    typeof meta.contentType !== 'string' ||
    typeof meta.storedAt !== 'string'
  ) {
    throw new CorruptCacheEntryError('metadata fields missing');
  }
  return meta as CacheEntryMeta;
}
