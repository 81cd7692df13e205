/**
 * Hub tokens and user tokens: making them, formatting them and hashing
 * them. Whether a hub token may still be used is decided in one place,
 * `store/hub-token-state.ts`, which both stores apply.
 */
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { formatBootstrapToken, generateBootstrapToken, type BootstrapToken } from '../../trust/bootstrap-token.js';
import type { HubTokenRecord } from '../store/store.js';

/** Default hub token lifetime: one hour, short because a token can register clusters. */
export const DEFAULT_HUB_TOKEN_TTL_MS = 60 * 60 * 1000;
/** Bytes of randomness in a user bearer token. */
const USER_TOKEN_BYTES = 32;
/** User tokens carry a prefix so that they are recognisable (and redactable) wherever they leak. */
export const USER_TOKEN_PREFIX = 'edgeadm-hub-';

/** Makes a new hub token record. */
export function newHubToken(options: { ttlMs: number; usages?: number; now?: Date }): {
  record: HubTokenRecord;
  token: BootstrapToken;
} {
  const now = options.now ?? new Date();
  const token = generateBootstrapToken();
  const record: HubTokenRecord = { id: token.id, secret: token.secret, createdAt: now.toISOString() };
  if (options.ttlMs > 0) record.expiresAt = new Date(now.getTime() + options.ttlMs).toISOString();
  if (options.usages !== undefined) record.usagesLeft = options.usages;
  return { record, token };
}

/** The `<id>.<secret>` form of a stored token. */
export function formatHubToken(record: HubTokenRecord): string {
  return formatBootstrapToken({ id: record.id, secret: record.secret });
}

/** A new user bearer token. A credential: shown once, stored only as a hash. */
export function newUserToken(): string {
  return `${USER_TOKEN_PREFIX}${randomBytes(USER_TOKEN_BYTES).toString('base64url')}`;
}

/**
 * The stored form of a user token: its SHA-256, in hex. Computed on every
 * proxied request, so with the one-shot `hash` (no Hash object per call).
 */
export function hashUserToken(token: string): string {
  return hash('sha256', token, 'hex');
}

/** Compares two secrets in constant time. */
export function secretsEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  return left.length === right.length && timingSafeEqual(left, right);
}
