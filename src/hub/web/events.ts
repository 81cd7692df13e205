/**
 * Live updates for the web view: one watcher per hub compares, every
 * {@link EVENT_POLL_MS} while anyone listens, which clusters have an open
 * tunnel and what each rollout shows, and tells every listener the names
 * that changed. Each browser's stream (server-sent events) passes on only
 * the names its user may see, and the page then reads them again through
 * the same scoped API; an event carries no more than a name and a state.
 *
 * Comparing snapshots instead of hooking the hub's tunnel table keeps the
 * view out of the hub's connection code, and costs one pass over the
 * tunnel map per interval, only while a view is open.
 */
import type { ServerResponse } from 'node:http';
import type { HubContext } from '../api/hub-context.js';
import type { RolloutActor } from '../rollouts/rollout-permissions.js';
import {
  EVENT_HEARTBEAT_MS,
  EVENT_POLL_MS,
  EVENT_RETRY_MS,
  EVENT_STREAM_DEADLINE_MS,
  MAX_EVENT_NAMES,
  MAX_EVENT_STREAM_BUFFER_BYTES,
} from './limits.js';

/** A cluster whose connection changed, or whose stored part did (with its connection as it is). */
export interface ClusterChange {
  name: string;
  state: 'Connected' | 'Disconnected';
}

/** What changed since the last look. */
export interface FleetChange {
  clusters: ClusterChange[];
  /** Rollouts whose shown status changed (or that were created or deleted). */
  rollouts: string[];
}

/** Sees every rollout, to notice changes; what a user is told is filtered per stream. */
const WATCHER: RolloutActor = { user: 'edgeadm-web-watcher', groups: [], clustersSelector: '', isAdmin: true };

/** Watches the hub's tunnels and rollouts while someone listens. */
export class FleetWatcher {
  readonly #context: HubContext;
  readonly #pollMs: number;
  readonly #listeners = new Set<(change: FleetChange) => void>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #connected = new Set<string>();
  #rolloutKeys = new Map<string, string>();
  #polledAt = 0;
  /**
   * For clusters seen going away: the last poll that still found their
   * tunnel open. The store's `lastSeen` is written a moment after the tunnel
   * closes (and refreshed only every so often while open); until then this
   * is the truer "last seen".
   */
  readonly #lastOpenAt = new Map<string, number>();
  /** Clusters whose stored part (hold, labels, properties) changed since the last poll. */
  readonly #touched = new Set<string>();

  constructor(context: HubContext, pollMs = EVENT_POLL_MS) {
    this.#context = context;
    this.#pollMs = pollMs;
  }

  /** Adds a listener; the returned function removes it. The watcher runs only while it has listeners. */
  subscribe(listener: (change: FleetChange) => void): () => void {
    if (this.#listeners.size === 0) {
      this.#snapshot();
      this.#timer = setInterval(() => this.#poll(), this.#pollMs);
      this.#timer.unref();
    }
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0 && this.#timer !== undefined) {
        clearInterval(this.#timer);
        this.#timer = undefined;
      }
    };
  }

  #connectedNow(): Set<string> {
    const open = new Set<string>();
    for (const [name, tunnel] of this.#context.tunnels) if (tunnel.isOpen) open.add(name);
    return open;
  }

  #rolloutKeysNow(): Map<string, string> {
    const keys = new Map<string, string>();
    for (const item of this.#context.rollouts?.list(WATCHER) ?? []) {
      keys.set(item.name, `${item.revision}|${item.state}|${JSON.stringify(item.counts)}|${item.updatedAt}`);
    }
    return keys;
  }

  /**
   * Tells the next poll that a cluster's stored part changed (an operator
   * held or released it, its labels or properties changed), so that open
   * pages read it again; nothing while no one listens.
   */
  touch(cluster: string): void {
    if (this.#listeners.size > 0) this.#touched.add(cluster);
  }

  /** When a poll last found this cluster's tunnel open, if it was seen going away since the watcher started. */
  lastOpenAt(cluster: string): number | undefined {
    return this.#lastOpenAt.get(cluster);
  }

  #snapshot(): void {
    this.#polledAt = Date.now();
    this.#connected = this.#connectedNow();
    this.#rolloutKeys = this.#rolloutKeysNow();
  }

  #poll(): void {
    const connected = this.#connectedNow();
    const clusters: ClusterChange[] = [];
    for (const name of connected) {
      if (this.#connected.has(name)) continue;
      clusters.push({ name, state: 'Connected' });
      this.#lastOpenAt.delete(name);
    }
    for (const name of this.#connected) {
      if (connected.has(name)) continue;
      clusters.push({ name, state: 'Disconnected' });
      this.#lastOpenAt.set(name, this.#polledAt);
    }
    const changed = new Set(clusters.map((change) => change.name));
    for (const name of this.#touched) {
      if (!changed.has(name)) clusters.push({ name, state: connected.has(name) ? 'Connected' : 'Disconnected' });
    }
    this.#touched.clear();
    this.#polledAt = Date.now();
    const keys = this.#rolloutKeysNow();
    const rollouts: string[] = [];
    for (const [name, key] of keys) if (this.#rolloutKeys.get(name) !== key) rollouts.push(name);
    for (const name of this.#rolloutKeys.keys()) if (!keys.has(name)) rollouts.push(name);
    this.#connected = connected;
    this.#rolloutKeys = keys;
    if (clusters.length === 0 && rollouts.length === 0) return;
    for (const listener of [...this.#listeners]) listener({ clusters, rollouts });
  }
}

/** What one stream needs from the API layer. */
export interface EventStreamOptions {
  res: ServerResponse;
  watcher: FleetWatcher;
  headers: Record<string, string>;
  /** Whether the session is still valid (checked at every heartbeat and event). */
  isSessionLive(): boolean;
  /** The changes this user may see (names outside their reach removed). */
  scope(change: FleetChange): Promise<FleetChange>;
  /** Called once when the stream ends, whatever ended it. */
  onClose(): void;
  heartbeatMs?: number;
  deadlineMs?: number;
}

/**
 * Serves one server-sent events stream: `clusters` and `rollouts` events
 * with the names that changed (`{"reload":true}` when more than
 * {@link MAX_EVENT_NAMES} did), a heartbeat comment, and an end at the
 * deadline or when the session ends. A reader that does not keep up (more
 * than {@link MAX_EVENT_STREAM_BUFFER_BYTES} queued) is cut off; its
 * browser reconnects and reads everything again.
 */
export function serveEventStream(options: EventStreamOptions): void {
  const { res } = options;
  res.writeHead(200, {
    ...options.headers,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'keep-alive',
  });
  res.write(`retry: ${EVENT_RETRY_MS}\n: connected\n\n`);
  let isClosed = false;
  const close = (): void => {
    if (isClosed) return;
    isClosed = true;
    clearInterval(heartbeat);
    clearTimeout(deadline);
    unsubscribe();
    options.onClose();
    if (!res.writableEnded) res.end();
  };
  const send = (text: string): void => {
    if (isClosed) return;
    if (!options.isSessionLive()) {
      res.write('event: signed-out\ndata: {}\n\n');
      close();
      return;
    }
    if (res.writableLength > MAX_EVENT_STREAM_BUFFER_BYTES) {
      res.destroy();
      close();
      return;
    }
    res.write(text);
  };
  const heartbeat = setInterval(() => send(': heartbeat\n\n'), options.heartbeatMs ?? EVENT_HEARTBEAT_MS);
  const deadline = setTimeout(close, options.deadlineMs ?? EVENT_STREAM_DEADLINE_MS);
  heartbeat.unref();
  deadline.unref();
  const unsubscribe = options.watcher.subscribe((change) => {
    options
      .scope(change)
      .then((scoped) => {
        if (scoped.clusters.length > 0) {
          const data = scoped.clusters.length > MAX_EVENT_NAMES ? { reload: true } : { changes: scoped.clusters };
          send(`event: clusters\ndata: ${JSON.stringify(data)}\n\n`);
        }
        if (scoped.rollouts.length > 0) {
          const data = scoped.rollouts.length > MAX_EVENT_NAMES ? { reload: true } : { names: scoped.rollouts };
          send(`event: rollouts\ndata: ${JSON.stringify(data)}\n\n`);
        }
      })
      .catch(() => close());
  });
  res.on('close', close);
}
