/**
 * Whether a hub token may still be used. One function decides, and both the
 * discovery document and registration ask it (through the store's
 * `useHubToken`), so a token refused at one is refused at the other. Beside
 * the stores because both of them apply it inside their one write. Pure: no I/O.
 */
import type { HubTokenRecord } from './store.js';

/** Whether a hub token may be used now. */
export type HubTokenState = 'usable' | 'expired' | 'spent';

/** Decides whether `token` may be used at `now`: not expired, and usages left if limited. */
export function hubTokenState(token: HubTokenRecord, now: Date): HubTokenState {
  if (token.expiresAt !== undefined && Date.parse(token.expiresAt) <= now.getTime()) return 'expired';
  if (token.usagesLeft !== undefined && token.usagesLeft <= 0) return 'spent';
  return 'usable';
}
