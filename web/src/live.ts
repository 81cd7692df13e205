/**
 * Live updates: one EventSource per page on `/ui/api/events`. Views
 * subscribe to `clusters` or `rollouts` and read again what they show when
 * told; the hub sends names only.
 */
import { useEffect, useRef } from 'preact/hooks';
import { currentSession } from './api';

/** How long changes are gathered before a view reads again (a burst of events, one read). */
const COALESCE_MS = 50;

type Kind = 'clusters' | 'rollouts';
/** The names that changed, or undefined for "everything may have". */
export type ChangeListener = (names: string[] | undefined) => void;

const listeners: Record<Kind, Set<ChangeListener>> = { clusters: new Set(), rollouts: new Set() };
let source: EventSource | undefined;

function dispatch(kind: Kind, event: MessageEvent<string>): void {
  let names: string[] | undefined;
  try {
    const data = JSON.parse(event.data) as { changes?: { name: string }[]; names?: string[]; reload?: boolean };
    names = data.reload ? undefined : (data.names ?? data.changes?.map((change) => change.name));
  } catch {
    names = undefined;
  }
  for (const listener of listeners[kind]) listener(names);
}

/** Opens the stream (once signed in). */
export function startLive(onSignedOut: () => void): () => void {
  source?.close();
  const opened = new EventSource('/ui/api/events');
  source = opened;
  opened.addEventListener('clusters', (event) => dispatch('clusters', event as MessageEvent<string>));
  opened.addEventListener('rollouts', (event) => dispatch('rollouts', event as MessageEvent<string>));
  opened.addEventListener('signed-out', () => {
    opened.close();
    onSignedOut();
  });
  // A stream the hub refused (the session ended) is not retried by the browser: ask whether we are still signed in.
  opened.addEventListener('error', () => {
    if (opened.readyState !== EventSource.CLOSED) return;
    void currentSession().then((session) => {
      if (session === undefined) onSignedOut();
    });
  });
  // After a reconnect anything may have changed meanwhile.
  opened.addEventListener('open', () => {
    for (const kind of ['clusters', 'rollouts'] as const) for (const listener of listeners[kind]) listener(undefined);
  });
  return () => {
    opened.close();
    if (source === opened) source = undefined;
  };
}

/** Calls `reload` when something of `kind` changed (coalesced over a short moment). */
export function useLive(kind: Kind, reload: () => void, isRelevant: (names: string[]) => boolean = () => true): void {
  const latest = useRef(reload);
  latest.current = reload;
  const relevant = useRef(isRelevant);
  relevant.current = isRelevant;
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const listener: ChangeListener = (names) => {
      if (names !== undefined && !relevant.current(names)) return;
      clearTimeout(timer);
      timer = setTimeout(() => latest.current(), COALESCE_MS);
    };
    listeners[kind].add(listener);
    return () => {
      clearTimeout(timer);
      listeners[kind].delete(listener);
    };
  }, [kind]);
}
