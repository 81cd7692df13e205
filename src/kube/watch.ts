/**
 * LIST then WATCH from the list's resourceVersion, for ever: the informer
 * pattern in its smallest form, for controllers that only need to know
 * *that* something changed (they reconcile from fresh reads, level
 * triggered). Each event calls `onChange`; a watch the server ends
 * (`timeoutSeconds`), a `410 Gone` (the resourceVersion too old) or a
 * broken connection is followed by a new LIST and WATCH, which also calls
 * `onChange` (something may have changed while no watch was open).
 *
 * Backpressure: events are only counted, never queued, so a reader of any
 * speed holds one line at most; a line longer than {@link MAX_WATCH_LINE_BYTES}
 * ends the watch (it is re-listed).
 */
import type { KubeClient, KubeList, KubeObject } from './client.js';

/** The longest event line held while it arrives (one object; the API server's own limit is 3 MiB per request body). */
export const MAX_WATCH_LINE_BYTES = 8 * 1024 * 1024;
/** How long the server keeps one watch open; then it is re-listed and opened again. */
export const WATCH_TIMEOUT_SECONDS = 300;
/** The pause before a failed LIST or WATCH is tried again. */
export const WATCH_RETRY_MS = 2_000;

/** What {@link watchChanges} watches and whom it tells. */
export interface WatchChangesOptions {
  client: KubeClient;
  /** A collection path (`/api/v1/nodes`). */
  path: string;
  labelSelector?: string;
  signal: AbortSignal;
  onChange: () => void;
  /** Told when a LIST or WATCH fails (it is retried). */
  onError?: (error: Error) => void;
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });
}

/** Reads one watch until it ends; throws on a 410 or a bad line (the caller re-lists). */
async function readWatch(options: WatchChangesOptions, resourceVersion: string): Promise<void> {
  const query: Record<string, string> = {
    watch: '1',
    resourceVersion,
    allowWatchBookmarks: 'true',
    timeoutSeconds: String(WATCH_TIMEOUT_SECONDS),
    ...(options.labelSelector ? { labelSelector: options.labelSelector } : {}),
  };
  // A connection that dies silently must not hold the watch beyond its own timeout.
  const bound = AbortSignal.any([options.signal, AbortSignal.timeout((WATCH_TIMEOUT_SECONDS + 30) * 1000)]);
  const response = await options.client.stream(options.path, query, bound);
  let pending = '';
  for await (const chunk of response) {
    pending += (chunk as Buffer).toString('utf8');
    if (pending.length > MAX_WATCH_LINE_BYTES) throw new Error('a watch event line is over the bound');
    let newline = pending.indexOf('\n');
    while (newline >= 0) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      newline = pending.indexOf('\n');
      const event = JSON.parse(line) as { type?: string; object?: { code?: number } };
      if (event.type === 'ERROR') throw new Error(`the watch ended with status ${event.object?.code ?? '?'}`);
      if (event.type !== 'BOOKMARK') options.onChange();
    }
  }
}

/** Watches `path` until the signal aborts. */
export async function watchChanges(options: WatchChangesOptions): Promise<void> {
  while (!options.signal.aborted) {
    try {
      const query = options.labelSelector ? { labelSelector: options.labelSelector } : {};
      const list = await options.client.request<KubeList<KubeObject> & { metadata?: { resourceVersion?: string } }>(
        'GET',
        options.path,
        { query },
      );
      options.onChange();
      await readWatch(options, list.metadata?.resourceVersion ?? '0');
    } catch (error) {
      if (options.signal.aborted) return;
      options.onError?.(error as Error);
      await pause(WATCH_RETRY_MS, options.signal);
    }
  }
}
