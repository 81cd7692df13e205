/**
 * What the web view keeps per hub: its files, its sessions (with their
 * lifetime and sweep), its change watcher, its cache of the clusters list
 * and its count of open event streams. Made on the first request.
 */
import type { HubContext } from '../api/hub-context.js';
import { WebAssets } from './assets.js';
import { ClusterListCache } from '../store/cluster-list-cache.js';
import { FleetWatcher } from './events.js';
import {
  MAX_WEB_SESSION_LIFETIME_MS,
  MIN_WEB_SESSION_LIFETIME_MS,
  WEB_SESSION_LIFETIME_ENV,
  WEB_SESSION_LIFETIME_MS,
  WEB_SESSION_SWEEP_MS,
} from './limits.js';
import { SessionStore } from './sessions.js';

/** What the view keeps per hub: its files, its sessions, its watcher. */
export interface WebState {
  assets: WebAssets | undefined;
  sessions: SessionStore;
  watcher: FleetWatcher;
  clusters: ClusterListCache;
  streams: number;
  /** Streams open now, by user name. */
  streamsByUser: Map<string, number>;
}

const states = new WeakMap<HubContext, WebState>();

/** The session lifetime: {@link WEB_SESSION_LIFETIME_ENV} when set (within bounds), else the default. */
export function sessionLifetimeMs(env: NodeJS.ProcessEnv = process.env): number {
  const text = env[WEB_SESSION_LIFETIME_ENV];
  if (text === undefined || text === '') return WEB_SESSION_LIFETIME_MS;
  const value = Number(text);
  if (!Number.isSafeInteger(value)) return WEB_SESSION_LIFETIME_MS;
  return Math.min(MAX_WEB_SESSION_LIFETIME_MS, Math.max(MIN_WEB_SESSION_LIFETIME_MS, value));
}

/** The view's state for a hub, made on its first request. */
export function stateOf(context: HubContext): WebState {
  let state = states.get(context);
  if (state === undefined) {
    const sessions = new SessionStore({ lifetimeMs: sessionLifetimeMs(), now: () => context.now().getTime() });
    const sweep = setInterval(() => sessions.sweep(), WEB_SESSION_SWEEP_MS);
    sweep.unref();
    state = {
      assets: WebAssets.load(),
      sessions,
      watcher: new FleetWatcher(context),
      clusters: context.clusterList ?? new ClusterListCache({ store: context.store }),
      streams: 0,
      streamsByUser: new Map(),
    };
    states.set(context, state);
  }
  return state;
}

/**
 * A cluster's stored part changed (heard from the store, made by this
 * replica or another): the web view's cached list is read again at the next
 * request, and open pages are told. Nothing when the view was never used.
 */
export function webClusterChanged(context: HubContext, cluster: string): void {
  const state = states.get(context);
  if (state === undefined) return;
  state.clusters.invalidate();
  state.watcher.touch(cluster);
}
