/**
 * The cache read/write path of GET and LIST answers: storing a whole JSON
 * answer, finding the entry that answers a request offline (its own, the
 * JSON form of it, or an object inside a cached LIST of its collection), and
 * writing that answer with the `x-edgeadm-edge-proxy: cached` header.
 *
 * The decisions (which collections hold an object, which object of a list
 * answers a GET, which answer is whole) are pure functions, tested without
 * a cache.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../log/run-log.js';
import { CACHE_HEADER, apiStatus, sendStatus } from './api-status.js';
import { acceptsPlainJson, cacheKeyOf, type ClassifiedRequest } from './cache-key.js';
import type { CacheEntry } from './cache-entry.js';
import type { DiskCache } from './disk-cache.js';
import { isKubeList, type KubeListLike, type KubeObjectLike } from './list-patch.js';
import type { RequestCounters } from './metrics.js';

/** Whether a request's answer is stored, and served from the cache offline. */
export function isCacheableRead(classified: ClassifiedRequest): boolean {
  return classified.verb === 'read' && classified.isCacheable && classified.representation !== undefined;
}

/** The object an object path names, and the collection paths whose LIST holds it. */
export interface ObjectInCollections {
  namespace: string | undefined;
  name: string;
  collections: ReadonlySet<string>;
}

/**
 * For an object path (`/api/v1/namespaces/ns/pods/p`, `/api/v1/nodes/n`), the
 * LISTs that would hold it: its namespace's collection and the all-namespaces
 * one. `undefined` for anything else.
 */
export function collectionsHolding(path: string): ObjectInCollections | undefined {
  const match = /^(\/api\/v1|\/apis\/[^/]+\/[^/]+)(?:\/namespaces\/([^/]+))?\/([^/]+)\/([^/]+)$/.exec(path);
  if (!match) return undefined;
  const [, prefix, namespace, resource, name] = match;
  const collections = new Set([
    namespace ? `${prefix}/namespaces/${namespace}/${resource}` : `${prefix}/${resource}`,
    `${prefix}/${resource}`,
  ]);
  return { namespace, name: name!, collections };
}

/** The object named `name` (in `namespace`, when given) of a LIST, as a GET of it would answer. */
export function objectFromList(
  list: KubeListLike,
  namespace: string | undefined,
  name: string,
): Record<string, unknown> | undefined {
  const item = list.items.find(
    (candidate: KubeObjectLike) =>
      candidate.metadata?.name === name && (namespace === undefined || candidate.metadata?.namespace === namespace),
  );
  if (!item) return undefined;
  return { kind: list.kind!.replace(/List$/, ''), apiVersion: list['apiVersion'], ...item };
}

/** Whether a JSON answer is whole: a page of a chunked LIST (`metadata.continue` set) is not the list. */
export function isWholeAnswer(parsed: unknown): boolean {
  const listContinue = (parsed as { metadata?: { continue?: unknown } } | null)?.metadata?.continue;
  return !(typeof listContinue === 'string' && listContinue !== '');
}

/** Stores answers and answers requests from the cache. */
export class CachedAnswers {
  constructor(
    private readonly cache: DiskCache,
    private readonly counters: RequestCounters,
    private readonly logger: Logger,
  ) {}

  /** An object GET answered from a cached LIST of its collection (kubelet reads its Node this way offline). */
  async findInCachedList(identityKey: string, path: string): Promise<CacheEntry | undefined> {
    const wanted = collectionsHolding(path);
    if (!wanted) return undefined;
    for (const meta of this.cache.entriesOf(identityKey)) {
      if (!wanted.collections.has(meta.path) || !meta.key.startsWith(`${identityKey} json `)) continue;
      const entry = await this.cache.get(meta.key);
      if (!entry) continue;
      let list: unknown;
      try {
        list = JSON.parse(entry.body.toString('utf8'));
      } catch {
        continue;
      }
      if (!isKubeList(list)) continue;
      const object = objectFromList(list, wanted.namespace, wanted.name);
      if (object) return { meta: entry.meta, body: Buffer.from(JSON.stringify(object)) };
    }
    return undefined;
  }

  /** The entry that answers a read offline, if the cache has one. */
  async lookup(accept: string | undefined, classified: ClassifiedRequest, identityKey: string) {
    let entry = await this.cache.get(cacheKeyOf(identityKey, classified));
    if (!entry && classified.representation !== 'json' && acceptsPlainJson(accept)) {
      entry = await this.cache.get(cacheKeyOf(identityKey, { ...classified, representation: 'json' }));
    }
    if (!entry && acceptsPlainJson(accept) && classified.query === '') {
      entry = await this.findInCachedList(identityKey, classified.path);
    }
    return entry;
  }

  /** Answers a read from the cache; a miss is 503, never 404. */
  async serve(
    req: IncomingMessage,
    res: ServerResponse,
    classified: ClassifiedRequest,
    identityKey: string,
  ): Promise<void> {
    const entry = await this.lookup(req.headers.accept, classified, identityKey);
    if (!entry) {
      this.counters.count('cache_miss_offline');
      // Not 404: a kubelet would take "not found" as "deleted" and kill pods.
      sendStatus(
        res,
        apiStatus(
          503,
          'ServiceUnavailable',
          `edge-proxy: the API server is unreachable and this node has no cached answer for GET ${classified.path}`,
        ),
      );
      return;
    }
    this.counters.count('cache_hit_offline');
    res.writeHead(200, {
      'content-type': entry.meta.contentType,
      'content-length': entry.body.length,
      'cache-control': 'no-cache, private',
      [CACHE_HEADER]: `cached; stored=${entry.meta.storedAt}`,
    });
    res.end(entry.body);
  }

  /** Stores a whole JSON answer under `key`; anything else is left out. A failed write is logged, not thrown. */
  store(key: string, identityKey: string, classified: ClassifiedRequest, contentType: string, body: Buffer) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      return Promise.resolve();
    }
    if (!isWholeAnswer(parsed)) return Promise.resolve();
    return this.cache
      .put({ meta: { key, identityKey, path: classified.path, contentType, storedAt: new Date().toISOString() }, body })
      .catch((error) => this.logger.warn(`edge-proxy: cannot cache ${classified.path}: ${(error as Error).message}`));
  }

  /** Whether a verified entry is stored under `key`. */
  async has(key: string): Promise<boolean> {
    return (await this.cache.get(key)) !== undefined;
  }

  /** Drops the entry of an answer the API server now says is gone (404). */
  forget(key: string): void {
    void this.cache.delete(key);
  }
}
