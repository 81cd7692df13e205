/**
 * Who a request is: the hub user its bearer token names, if the token is
 * valid and not expired. One function, used by the operator API, the kube
 * proxy and the web view alike; it needs only the store and the hub's clock.
 */
import type { IncomingMessage } from 'node:http';
import { bearerToken } from '../http/http-replies.js';
import type { HubStore, UserRecord } from '../store/store.js';
import { hashUserToken } from './hub-tokens.js';

/** What authentication reads: the users in the store, and the hub's clock (tests decide the time). */
export interface UserDirectory {
  store: HubStore;
  now(): Date;
}

/**
 * The last Authorization header of each connection and its token's hash: a
 * kubectl sends the same header on every request of a kept-alive
 * connection, so the hash is computed once per connection, not per request.
 * Only the hashing is saved: the user is still looked up by the hash, and
 * their expiry checked, at every request, so a removed or replaced user is
 * refused at their next request.
 */
const tokenHashes = new WeakMap<object, { header: string; tokenHash: string }>();

/** The user a request's bearer token names, if it is valid and not expired. */
export async function authenticateUser(context: UserDirectory, req: IncomingMessage): Promise<UserRecord | undefined> {
  const header = req.headers.authorization;
  const known = req.socket ? tokenHashes.get(req.socket) : undefined;
  if (known !== undefined && known.header === header) return userByTokenHash(context, known.tokenHash);
  const token = bearerToken(req);
  if (token === undefined) return undefined;
  const tokenHash = hashUserToken(token);
  if (typeof header === 'string' && typeof req.socket === 'object' && req.socket !== null) {
    tokenHashes.set(req.socket, { header, tokenHash });
  }
  return userByTokenHash(context, tokenHash);
}

/**
 * The user whose token hashes to `tokenHash`, if not expired: the web
 * view's sessions keep the hash and check the user again by it on every
 * request, under this same rule.
 */
export async function userByTokenHash(context: UserDirectory, tokenHash: string): Promise<UserRecord | undefined> {
  const user = await context.store.findUserByTokenHash(tokenHash);
  if (user === undefined) return undefined;
  if (user.expiresAt !== undefined && Date.parse(user.expiresAt) <= context.now().getTime()) return undefined;
  return user;
}

/** The name of the admin user `hub serve` creates. */
export const HUB_ADMIN_USER = 'edgeadm-hub-admin';
