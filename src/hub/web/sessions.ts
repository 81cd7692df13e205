/**
 * Web view sessions: a hub user's bearer token is exchanged once, at
 * sign-in, for a random session id carried in a cookie
 * (`HttpOnly; Secure; SameSite=Strict; Path=/ui`, with an expiry), and a
 * second random value, the CSRF token, that the page sends back in a header
 * on every state-changing request.
 *
 * Sessions live in this process's memory only, keyed by a SHA-256 of their
 * id (a memory dump shows no usable id). So with several hub replicas a
 * session is known only to the replica that created it: a request that a
 * load balancer sends to another replica is answered 401 and the page asks
 * to sign in again (pin `/ui/` to one replica, or accept the extra
 * sign-ins), and a hub restart signs everyone out. Nothing about a session
 * is written to the store.
 *
 * The session does not hold the user's rights: each request reads the user
 * again from the store by the token's hash, so that a user deleted,
 * replaced or expired since sign-in loses access at once.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { MAX_WEB_SESSIONS, MAX_WEB_SESSIONS_PER_USER, WEB_SESSION_ID_BYTES } from './limits.js';

/** The session cookie's name; the `__Secure-` prefix makes browsers refuse it without `Secure`. */
export const SESSION_COOKIE = '__Secure-edgeadm-session';
/** The header the page sends its CSRF token in. */
export const CSRF_HEADER = 'x-edgeadm-csrf';
/** The path the cookie is limited to. */
export const SESSION_COOKIE_PATH = '/ui';

/** One signed-in session. */
export interface WebSession {
  /** SHA-256 (hex) of the session id: the key it is stored under. */
  readonly key: string;
  /** The per-session token the page echoes in {@link CSRF_HEADER}. */
  readonly csrfToken: string;
  readonly userName: string;
  /** The hash of the token the user signed in with: the user is read again by it on every request. */
  readonly tokenHash: string;
  readonly createdAt: number;
  readonly expiresAt: number;
  /** Live-update streams open now. */
  streams: number;
}

/** A session just created: its id is returned once, for the cookie, and never stored. */
export interface NewSession {
  id: string;
  session: WebSession;
}

function keyOf(id: string): string {
  return createHash('sha256').update(id).digest('hex');
}

/** Sessions in memory, with their expiry read from an injected clock. */
export class SessionStore {
  readonly #sessions = new Map<string, WebSession>();
  readonly #now: () => number;
  readonly #lifetimeMs: number;
  readonly #maxSessions: number;
  readonly #maxPerUser: number;

  constructor(options: { lifetimeMs: number; now: () => number; maxSessions?: number; maxPerUser?: number }) {
    this.#now = options.now;
    this.#lifetimeMs = options.lifetimeMs;
    this.#maxSessions = options.maxSessions ?? MAX_WEB_SESSIONS;
    this.#maxPerUser = options.maxPerUser ?? MAX_WEB_SESSIONS_PER_USER;
  }

  /** How long a session lasts. */
  get lifetimeMs(): number {
    return this.#lifetimeMs;
  }

  /** Sessions held now (expired ones included until swept). */
  get size(): number {
    return this.#sessions.size;
  }

  /**
   * Creates a session for a user. When the user holds
   * {@link MAX_WEB_SESSIONS_PER_USER} sessions already, their own oldest
   * goes; when the store is full, the oldest of all goes.
   */
  create(user: { name: string; tokenHash: string }): NewSession {
    const id = randomBytes(WEB_SESSION_ID_BYTES).toString('base64url');
    const now = this.#now();
    const session: WebSession = {
      key: keyOf(id),
      csrfToken: randomBytes(WEB_SESSION_ID_BYTES).toString('base64url'),
      userName: user.name,
      tokenHash: user.tokenHash,
      createdAt: now,
      expiresAt: now + this.#lifetimeMs,
      streams: 0,
    };
    // Map keeps insertion order: the first of the user's sessions met is their oldest.
    const own = [...this.#sessions.values()].filter((held) => held.userName === user.name);
    for (const held of own.slice(0, Math.max(0, own.length - this.#maxPerUser + 1))) this.#sessions.delete(held.key);
    while (this.#sessions.size >= this.#maxSessions) {
      // Map keeps insertion order: the first key is the oldest session.
      const oldest = this.#sessions.keys().next().value;
      if (oldest === undefined) break;
      this.#sessions.delete(oldest);
    }
    this.#sessions.set(session.key, session);
    return { id, session };
  }

  /** The live session a cookie's id names; an expired one is forgotten and not returned. */
  get(id: string | undefined): WebSession | undefined {
    if (id === undefined || id === '') return undefined;
    const key = keyOf(id);
    const session = this.#sessions.get(key);
    if (session === undefined) return undefined;
    if (session.expiresAt <= this.#now()) {
      this.#sessions.delete(key);
      return undefined;
    }
    return session;
  }

  /** Whether a session is still held and not expired (a stream asks this at each beat). */
  isLive(session: WebSession): boolean {
    return this.#sessions.get(session.key) === session && session.expiresAt > this.#now();
  }

  /** Ends a session (sign-out). */
  delete(session: WebSession): void {
    this.#sessions.delete(session.key);
  }

  /** Forgets every expired session. */
  sweep(): void {
    const now = this.#now();
    for (const [key, session] of this.#sessions) if (session.expiresAt <= now) this.#sessions.delete(key);
  }
}

/** The value of one cookie in a `Cookie` header, if present exactly once. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  const found: string[] = [];
  for (const part of header.split(';')) {
    const at = part.indexOf('=');
    if (at === -1) continue;
    if (part.slice(0, at).trim() === name) found.push(part.slice(at + 1).trim());
  }
  // Two cookies of the same name (one planted by a sibling site over plain HTTP, say): trust neither.
  return found.length === 1 ? found[0] : undefined;
}

/** The `Set-Cookie` value that hands a session to the browser. */
export function sessionCookie(id: string, expiresAt: number, now: number): string {
  const maxAge = Math.max(0, Math.floor((expiresAt - now) / 1000));
  return [
    `${SESSION_COOKIE}=${id}`,
    `Path=${SESSION_COOKIE_PATH}`,
    `Max-Age=${maxAge}`,
    `Expires=${new Date(expiresAt).toUTCString()}`,
    'HttpOnly',
    'Secure',
    'SameSite=Strict',
  ].join('; ');
}

/** The `Set-Cookie` value that removes the session cookie (sign-out). */
export function clearedSessionCookie(): string {
  return `${SESSION_COOKIE}=; Path=${SESSION_COOKIE_PATH}; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; Secure; SameSite=Strict`;
}

/** What {@link csrfVerdict} looks at. */
export interface CsrfInput {
  method: string;
  /** The `Host` header: the origin the page must come from is `https://HOST`. */
  host: string | undefined;
  origin: string | undefined;
  secFetchSite: string | undefined;
  /** The token in {@link CSRF_HEADER}. */
  headerToken: string | undefined;
  /** The session's CSRF token; undefined for sign-in, which has no session yet. */
  sessionToken: string | undefined;
}

/** Methods that change nothing, which need no CSRF check. */
const SAFE_METHODS = new Set(['GET', 'HEAD']);

function equalSecrets(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * Whether a request may change something: undefined when it may, else why
 * not. A state-changing request must come from the hub's own pages: the
 * browser's `Sec-Fetch-Site` says `same-origin`, or, from a browser that
 * sends no such header, `Origin` is the hub's own `https://HOST`; one of the
 * two must be present. With a session, the page must also echo the
 * session's CSRF token, which a page of another site cannot read.
 */
export function csrfVerdict(input: CsrfInput): string | undefined {
  if (SAFE_METHODS.has(input.method.toUpperCase())) return undefined;
  if (input.secFetchSite !== undefined) {
    if (input.secFetchSite !== 'same-origin') return `a ${input.secFetchSite} request cannot change anything`;
  } else if (input.origin === undefined) {
    return 'a request that changes something must say where it comes from (Origin)';
  }
  if (input.origin !== undefined) {
    if (input.host === undefined || input.origin !== `https://${input.host}`) {
      return 'a request from another origin cannot change anything';
    }
  }
  if (input.sessionToken !== undefined) {
    if (input.headerToken === undefined || !equalSecrets(input.headerToken, input.sessionToken)) {
      return `the ${CSRF_HEADER} header is missing or wrong`;
    }
  }
  return undefined;
}
