/**
 * Watch streams of the simulated API server: one JSON event per line
 * (`{"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":…}`) over a
 * chunked HTTP response. A watch without a resourceVersion (or with "0")
 * starts with synthetic ADDED events for the current objects; a watch from a
 * version replays the kept history after it, or ends with an ERROR event
 * carrying 410 Expired when that history is gone — as the real server's
 * watch cache answers. Selector changes are reported as the real server
 * does: an object that starts matching is ADDED, one that stops is DELETED.
 * Bookmarks (`allowWatchBookmarks`), `sendInitialEvents` and
 * `timeoutSeconds` are honoured. A watcher that stops reading is cut off
 * once its unsent backlog passes a bound, instead of growing memory.
 */
import type { ServerResponse } from 'node:http';
import type { ResourceDefinition } from './resources.js';
import { groupVersionOf } from './resources.js';
import type { FieldSelector, LabelSelector } from './selectors.js';
import type { KubeObject, SimStore, StoreEvent } from './store.js';
import type { IncludeObject } from './tables.js';
import { TABLE_CONTENT_TYPE, toTable } from './tables.js';
import { badRequest, expired } from './status.js';

/** Default interval between bookmark events. */
export const DEFAULT_BOOKMARK_INTERVAL_MS = 10_000;
/** Unsent bytes after which a watcher that does not read is disconnected. */
export const WATCH_BACKLOG_LIMIT_BYTES = 16 * 1024 * 1024;
/** The annotation that marks the bookmark ending the initial events of a `sendInitialEvents` watch. */
const INITIAL_EVENTS_END_ANNOTATION = 'k8s.io/initial-events-end';

/** What one watch request asks for. */
export interface WatchRequest {
  definition: ResourceDefinition;
  /** Empty for all namespaces (or a cluster-scoped type). */
  namespace: string;
  /** Set when the watch names one object (legacy `/watch/…/<name>` paths). */
  name: string;
  labels: LabelSelector;
  fields: FieldSelector;
  resourceVersion: string | null;
  allowBookmarks: boolean;
  sendInitialEvents: boolean;
  timeoutSeconds: number | undefined;
  /** When set, events carry Table rows instead of objects. */
  table: { includeObject: IncludeObject } | undefined;
  bookmarkIntervalMs: number;
}

/** Hooks the server gives a watch: pause handling and bookkeeping. */
export interface WatchHooks {
  /** Whether delivery is held (the server is paused); held events go out on resume. */
  isHeld(): boolean;
  /** Registers a callback for when delivery resumes; returns the unregister function. */
  onResume(callback: () => void): () => void;
  onClose(): void;
}

type WireEvent = { type: string; object: unknown };

function matches(request: WatchRequest, object: KubeObject): boolean {
  if (request.namespace && request.definition.namespaced && object.metadata.namespace !== request.namespace)
    return false;
  if (request.name && object.metadata.name !== request.name) return false;
  return request.labels.matches(object.metadata.labels) && request.fields.matches(object);
}

/** Maps a store change to what this watcher sees, honouring selector transitions. */
function translate(request: WatchRequest, event: StoreEvent): { type: string; object: KubeObject } | undefined {
  if (
    event.definition.group !== request.definition.group ||
    event.definition.resource !== request.definition.resource
  ) {
    return undefined;
  }
  const isNow = event.type !== 'DELETED' && matches(request, event.object);
  const wasBefore = event.previous !== undefined && matches(request, event.previous);
  if (event.type === 'DELETED')
    return wasBefore || matches(request, event.object) ? { type: 'DELETED', object: event.object } : undefined;
  if (event.type === 'ADDED') return isNow ? { type: 'ADDED', object: event.object } : undefined;
  if (isNow && wasBefore) return { type: 'MODIFIED', object: event.object };
  if (isNow) return { type: 'ADDED', object: event.object };
  if (wasBefore) return { type: 'DELETED', object: event.object };
  return undefined;
}

/**
 * Serves one watch on `res` until the client leaves, the timeout passes, or
 * `stop` is called. Throws an ApiError before anything is written for a
 * malformed resourceVersion.
 */
export function serveWatch(store: SimStore, request: WatchRequest, res: ServerResponse, hooks: WatchHooks): () => void {
  const rvText = request.resourceVersion;
  let startFrom: number | undefined;
  if (rvText !== null && rvText !== '' && rvText !== '0') {
    if (!/^\d+$/.test(rvText)) throw badRequest(`invalid resource version: ${rvText}`);
    startFrom = Number(rvText);
  }
  const contentType = request.table ? TABLE_CONTENT_TYPE : 'application/json';
  res.writeHead(200, { 'Content-Type': contentType, 'Cache-Control': 'no-cache, private' });
  res.flushHeaders();

  const held: WireEvent[] = [];
  let isClosed = false;
  let lastSentVersion = startFrom ?? Number(store.resourceVersion);
  const timers: NodeJS.Timeout[] = [];

  const wire = (type: string, object: KubeObject): WireEvent => {
    if (!request.table || type === 'BOOKMARK' || type === 'ERROR') return { type, object };
    return {
      type,
      object: toTable(request.definition, [object], {
        resourceVersion: object.metadata.resourceVersion ?? '',
        includeObject: request.table.includeObject,
      }),
    };
  };
  const write = (event: WireEvent): void => {
    if (isClosed) return;
    if (hooks.isHeld()) {
      held.push(event);
      return;
    }
    res.write(`${JSON.stringify(event)}\n`);
    if (res.writableLength > WATCH_BACKLOG_LIMIT_BYTES) stop();
  };
  const send = (type: string, object: KubeObject): void => {
    const version = Number(object.metadata.resourceVersion);
    if (Number.isFinite(version) && version > lastSentVersion) lastSentVersion = version;
    write(wire(type, object));
  };
  const bookmark = (annotations?: Record<string, string>): void => {
    const metadata: Record<string, unknown> = { resourceVersion: String(lastSentVersion) };
    if (annotations) metadata['annotations'] = annotations;
    write({
      type: 'BOOKMARK',
      object: { kind: request.definition.kind, apiVersion: groupVersionOf(request.definition), metadata },
    });
  };

  function stop(): void {
    if (isClosed) return;
    isClosed = true;
    unsubscribe();
    unregisterResume();
    for (const timer of timers) clearTimeout(timer);
    res.end();
    hooks.onClose();
  }

  const unsubscribe = store.subscribe((event) => {
    const seen = translate(request, event);
    if (seen) send(seen.type, seen.object);
    else lastSentVersion = Math.max(lastSentVersion, event.resourceVersion);
  });
  const unregisterResume = hooks.onResume(() => {
    for (const event of held.splice(0)) write(event);
  });
  res.on('close', stop);

  if (startFrom === undefined) {
    // Initial state: every matching object as ADDED, then live changes.
    const initial = store
      .list(request.definition, request.definition.namespaced ? request.namespace || undefined : undefined)
      .filter((o) => matches(request, o));
    lastSentVersion = Number(store.resourceVersion);
    for (const object of initial) write(wire('ADDED', object));
    if (request.sendInitialEvents && request.allowBookmarks) bookmark({ [INITIAL_EVENTS_END_ANNOTATION]: 'true' });
  } else {
    const history = store.eventsSince(startFrom);
    if ('expired' in history) {
      const gone = expired(`too old resource version: ${startFrom} (${history.oldestRetained})`);
      write({ type: 'ERROR', object: gone.status });
      stop();
      return stop;
    }
    for (const event of history) {
      const seen = translate(request, event);
      if (seen) send(seen.type, seen.object);
    }
    lastSentVersion = Math.max(lastSentVersion, Number(store.resourceVersion));
  }

  if (request.allowBookmarks) {
    const interval = setInterval(() => {
      if (held.length === 0) bookmark();
    }, request.bookmarkIntervalMs);
    interval.unref();
    timers.push(interval);
  }
  if (request.timeoutSeconds !== undefined && request.timeoutSeconds > 0) {
    const timeout = setTimeout(stop, request.timeoutSeconds * 1000);
    timeout.unref();
    timers.push(timeout);
  }
  return stop;
}
