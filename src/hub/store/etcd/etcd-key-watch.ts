/**
 * One watch of etcd under the key prefix, through any replica's changes:
 * each change is told first to the store (which drops what its read caches
 * hold for the key), then to every listener (the coordination's changes).
 * Reconnected, the watcher resumes from the last revision it heard, so
 * nothing is missed and the caches stay (they are what keeps kubectl
 * sessions served while etcd has no quorum). A history compacted past that
 * revision cannot be replayed: the watcher reports an error, and the store
 * starts its caches over.
 */
import type { Watcher } from 'etcd3';
import type { EtcdConnection } from './etcd-client.js';
import type { EtcdKeyEvent } from './etcd-keyspace.js';

/** What the store does on a change, and when changes may have been missed. */
export interface KeyWatchHandlers {
  /** A key (relative to the prefix) changed. */
  changed(relative: string): void;
  /** Changes may have been missed (a compacted history): start over. */
  lost(): void;
}

/** The store's watch of its prefix. */
export class EtcdKeyWatch {
  readonly #watcher: Watcher;
  readonly #listeners: Set<(event: EtcdKeyEvent) => void>;

  private constructor(watcher: Watcher, listeners: Set<(event: EtcdKeyEvent) => void>) {
    this.#watcher = watcher;
    this.#listeners = listeners;
  }

  /** Starts watching the connection's prefix. */
  static async start(etcd: EtcdConnection, handlers: KeyWatchHandlers): Promise<EtcdKeyWatch> {
    const prefix = etcd.prefix;
    const listeners = new Set<(event: EtcdKeyEvent) => void>();
    const watcher = await etcd.read(() => etcd.client.watch().prefix(prefix).create());
    const dispatch = (type: 'put' | 'delete', key: Buffer, value?: Buffer): void => {
      const relative = key.toString('utf8').slice(prefix.length);
      handlers.changed(relative);
      const event: EtcdKeyEvent = value === undefined ? { type, key: relative } : { type, key: relative, value };
      for (const listener of listeners) listener(event);
    };
    watcher.on('put', (kv) => dispatch('put', kv.key, kv.value));
    watcher.on('delete', (kv) => dispatch('delete', kv.key));
    watcher.on('error', () => handlers.lost());
    return new EtcdKeyWatch(watcher, listeners);
  }

  /** Calls `listener` for every change under the prefix; returns how to stop. */
  listen(listener: (event: EtcdKeyEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Stops watching. */
  async cancel(): Promise<void> {
    await this.#watcher.cancel().catch(() => undefined);
  }
}
