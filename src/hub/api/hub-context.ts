/**
 * What the hub's handlers share: the store, the PKI, the open tunnels and
 * the metrics, plus the authentication of bearer tokens (one function, used
 * by the operator API and the kube proxy alike).
 */
import type { IncomingMessage } from 'node:http';
import type { Logger } from '../../log/run-log.js';
import type { HubTunnel } from '../../tunnel/hub-tunnel.js';
import type { ReplicaCoordination } from '../store/coordination.js';
import type { HubPki } from '../identity/hub-pki.js';
import { hashUserToken } from '../identity/hub-tokens.js';
import { bearerToken } from '../http/http-replies.js';
import type { HubMetrics } from '../metrics.js';
import type { PeerCredentials } from '../replicas/peer-link.js';
import type { RolloutController } from '../rollouts/rollout-controller.js';
import type { HubStore, UserRecord } from '../store/store.js';

/** The hub's shared state. */
export interface HubContext {
  store: HubStore;
  pki: HubPki;
  metrics: HubMetrics;
  logger: Logger;
  /** `https://host:port` the hub is reached at (written into configs and the discovery document). */
  advertiseUrl: string;
  /** Open tunnels by cluster name. */
  tunnels: Map<string, HubTunnel>;
  /** Closes the tunnel of a cluster, if open (on delete). */
  closeTunnel(cluster: string): void;
  /**
   * The hub's clock. Every expiry decision on a credential (user tokens, hub
   * tokens) reads it, so that tests decide what time it is instead of sleeping.
   */
  now(): Date;
  /**
   * The rollout controller; absent where a hub runs without rollouts (tests
   * of other parts), and on a replica that does not lead.
   */
  rollouts?: RolloutController;
  /** The replicas' coordination: who holds which tunnel. Absent: tunnels held here are all there is. */
  coordination?: ReplicaCoordination;
  /** This replica's client certificate towards the others (forwarded operator requests). */
  peerCredentials?: PeerCredentials;
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
export async function authenticateUser(context: HubContext, req: IncomingMessage): Promise<UserRecord | undefined> {
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
export async function userByTokenHash(context: HubContext, tokenHash: string): Promise<UserRecord | undefined> {
  const user = await context.store.findUserByTokenHash(tokenHash);
  if (user === undefined) return undefined;
  if (user.expiresAt !== undefined && Date.parse(user.expiresAt) <= context.now().getTime()) return undefined;
  return user;
}

/** The name of the admin user `hub serve` creates. */
export const HUB_ADMIN_USER = 'edgeadm-hub-admin';
