/**
 * The web view's sessions and CSRF check (src/hub/web/sessions.ts), with
 * generated inputs: sessions end at their expiry on the injected clock and
 * not before, ids are unguessable and never collide, a cookie named twice
 * is trusted in neither copy, and no state-changing request from anywhere
 * but the hub's own page passes the CSRF check.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  clearedSessionCookie,
  cookieValue,
  csrfVerdict,
  SESSION_COOKIE,
  sessionCookie,
  SessionStore,
  type CsrfInput,
} from '../../../../src/hub/web/sessions.js';
import { sessionLifetimeMs } from '../../../../src/hub/web/web-state.js';
import {
  MAX_WEB_SESSION_LIFETIME_MS,
  MIN_WEB_SESSION_LIFETIME_MS,
  WEB_SESSION_LIFETIME_ENV,
  WEB_SESSION_LIFETIME_MS,
} from '../../../../src/hub/web/limits.js';

const USER = { name: 'alice', tokenHash: 'ab'.repeat(32) };

describe('SessionStore', () => {
  it('keeps a session until its expiry on the injected clock, and not a moment longer', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1e9 }), fc.integer({ min: 0, max: 2e9 }), (lifetimeMs, elapsed) => {
        let now = 1_700_000_000_000;
        const store = new SessionStore({ lifetimeMs, now: () => now });
        const { id, session } = store.create(USER);
        expect(session.expiresAt).toBe(now + lifetimeMs);
        now += elapsed;
        const found = store.get(id);
        if (elapsed < lifetimeMs) {
          expect(found).toBe(session);
          expect(store.isLive(session)).toBe(true);
        } else {
          expect(found).toBeUndefined();
          expect(store.isLive(session)).toBe(false);
        }
      }),
    );
  });

  it('ends a session exactly at its expiry', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1e9 }), (lifetimeMs) => {
        let now = 0;
        const store = new SessionStore({ lifetimeMs, now: () => now });
        const { id, session } = store.create(USER);
        now = lifetimeMs - 1;
        expect(store.get(id)).toBe(session);
        now = lifetimeMs;
        expect(store.get(id)).toBeUndefined();
      }),
    );
  });

  it('finds no session for any id it did not issue', () => {
    const store = new SessionStore({ lifetimeMs: 60_000, now: () => 0 });
    const { id } = store.create(USER);
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (other) => {
        fc.pre(other !== id);
        expect(store.get(other)).toBeUndefined();
      }),
    );
    expect(store.get(undefined)).toBeUndefined();
    expect(store.get('')).toBeUndefined();
  });

  it('issues distinct ids and CSRF tokens of 256 random bits, and stores neither id in the clear', () => {
    const store = new SessionStore({ lifetimeMs: 60_000, now: () => 0 });
    const ids = new Set<string>();
    const tokens = new Set<string>();
    for (let i = 0; i < 2000; i += 1) {
      const { id, session } = store.create(USER);
      expect(id).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(session.key).not.toContain(id);
      ids.add(id);
      tokens.add(session.csrfToken);
    }
    expect(ids.size).toBe(2000);
    expect(tokens.size).toBe(2000);
  });

  it('drops the oldest session when full, and ends a session on sign-out', () => {
    const store = new SessionStore({ lifetimeMs: 60_000, now: () => 0, maxSessions: 3 });
    const made = [store.create(USER), store.create(USER), store.create(USER), store.create(USER)];
    expect(store.size).toBe(3);
    expect(store.get(made[0]?.id)).toBeUndefined();
    expect(store.get(made[3]?.id)).toBeDefined();
    store.delete(made[3]!.session);
    expect(store.get(made[3]?.id)).toBeUndefined();
  });

  it("drops a user's own oldest session past their bound, never another user's", () => {
    const users = ['alice', 'bob', 'carol'].map((name) => ({ name, tokenHash: name }));
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...users), { maxLength: 60 }),
        fc.integer({ min: 1, max: 5 }),
        (signIns, maxPerUser) => {
          const store = new SessionStore({ lifetimeMs: 60_000, now: () => 0, maxSessions: 1000, maxPerUser });
          const made = signIns.map((user) => ({ user, id: store.create(user).id }));
          for (const user of users) {
            const own = made.filter((one) => one.user === user);
            // Exactly the user's newest maxPerUser sessions are held.
            own.forEach((one, index) => expect(store.get(one.id) !== undefined).toBe(index >= own.length - maxPerUser));
          }
        },
      ),
    );
  });

  it('sweeps out expired sessions only', () => {
    let now = 0;
    const store = new SessionStore({ lifetimeMs: 1000, now: () => now });
    store.create(USER);
    now = 500;
    const young = store.create(USER);
    now = 1000;
    store.sweep();
    expect(store.size).toBe(1);
    expect(store.get(young.id)).toBe(young.session);
  });
});

describe('session cookies', () => {
  it('are HttpOnly, Secure, SameSite=Strict, limited to /ui, with the session expiry', () => {
    const cookie = sessionCookie('ID', 1_000_000 + 3_600_000, 1_000_000);
    const parts = cookie.split('; ');
    expect(parts[0]).toBe(`${SESSION_COOKIE}=ID`);
    expect(parts).toEqual(
      expect.arrayContaining(['HttpOnly', 'Secure', 'SameSite=Strict', 'Path=/ui', 'Max-Age=3600']),
    );
    expect(clearedSessionCookie()).toContain('Max-Age=0');
  });

  it('read one cookie out of any header, and trust neither copy of a cookie sent twice', () => {
    const name = fc.stringMatching(/^[A-Za-z0-9_-]{1,12}$/);
    const value = fc.stringMatching(/^[A-Za-z0-9_-]{0,20}$/);
    fc.assert(
      fc.property(fc.array(fc.tuple(name, value), { maxLength: 8 }), value, (others, mine) => {
        const rest = others.filter(([key]) => key !== SESSION_COOKIE);
        const pairs = [...rest, [SESSION_COOKIE, mine] as const];
        const header = pairs.map(([key, item]) => `${key}=${item}`).join('; ');
        expect(cookieValue(header, SESSION_COOKIE)).toBe(mine);
        expect(cookieValue(`${header}; ${SESSION_COOKIE}=planted`, SESSION_COOKIE)).toBeUndefined();
        expect(cookieValue(rest.map(([key, item]) => `${key}=${item}`).join('; '), SESSION_COOKIE)).toBeUndefined();
      }),
    );
  });
});

describe('csrfVerdict', () => {
  const host = fc.constantFrom('127.0.0.1:9443', 'hub.example.com', '[::1]:9443', 'hub.example.com:443');
  const token = fc.stringMatching(/^[A-Za-z0-9_-]{1,43}$/);
  const unsafe = fc.constantFrom('POST', 'PUT', 'DELETE', 'PATCH', 'post', 'OPTIONS');
  const anyText = fc.option(fc.string({ maxLength: 40 }), { nil: undefined });

  /** The hub's own page: same origin, its Origin, its session's token. */
  const ownPage = (method: string, hub: string, secret: string | undefined): CsrfInput => ({
    method,
    host: hub,
    origin: `https://${hub}`,
    secFetchSite: 'same-origin',
    headerToken: secret,
    sessionToken: secret,
  });

  it("lets the hub's own page change things", () => {
    fc.assert(
      fc.property(unsafe, host, fc.option(token, { nil: undefined }), (method, hub, secret) => {
        expect(csrfVerdict(ownPage(method, hub, secret))).toBeUndefined();
        // A browser without Sec-Fetch-Site: Origin alone.
        expect(csrfVerdict({ ...ownPage(method, hub, secret), secFetchSite: undefined })).toBeUndefined();
      }),
    );
  });

  it('refuses every state-changing request another site sends', () => {
    fc.assert(
      fc.property(
        unsafe,
        host,
        token,
        fc.constantFrom('cross-site', 'same-site', 'none'),
        anyText,
        (method, hub, secret, site, origin) => {
          expect(
            csrfVerdict({ ...ownPage(method, hub, secret), secFetchSite: site, origin: origin ?? `https://${hub}` }),
          ).toBeDefined();
        },
      ),
    );
  });

  it('refuses a request whose Origin is not the hub, or that names no origin at all', () => {
    fc.assert(
      fc.property(unsafe, host, token, fc.string({ maxLength: 40 }), (method, hub, secret, origin) => {
        fc.pre(origin !== `https://${hub}`);
        expect(csrfVerdict({ ...ownPage(method, hub, secret), origin })).toBeDefined();
        expect(csrfVerdict({ ...ownPage(method, hub, secret), origin, secFetchSite: undefined })).toBeDefined();
      }),
    );
    expect(csrfVerdict({ ...ownPage('POST', 'h', 't'), origin: undefined, secFetchSite: undefined })).toBeDefined();
  });

  it("refuses a session's request without its exact CSRF token", () => {
    fc.assert(
      fc.property(
        unsafe,
        host,
        token,
        fc.option(fc.string({ maxLength: 50 }), { nil: undefined }),
        (m, hub, s, sent) => {
          fc.pre(sent !== s);
          expect(csrfVerdict({ ...ownPage(m, hub, s), headerToken: sent })).toBeDefined();
        },
      ),
    );
  });

  it('asks nothing of requests that change nothing', () => {
    fc.assert(
      fc.property(fc.constantFrom('GET', 'HEAD', 'get'), anyText, anyText, anyText, (method, origin, site, sent) => {
        expect(
          csrfVerdict({ method, host: 'h', origin, secFetchSite: site, headerToken: sent, sessionToken: 'secret' }),
        ).toBeUndefined();
      }),
    );
  });
});

describe('sessionLifetimeMs', () => {
  it('reads the environment within its bounds, and falls back on nonsense', () => {
    expect(sessionLifetimeMs({})).toBe(WEB_SESSION_LIFETIME_MS);
    expect(sessionLifetimeMs({ [WEB_SESSION_LIFETIME_ENV]: '5000' })).toBe(5000);
    expect(sessionLifetimeMs({ [WEB_SESSION_LIFETIME_ENV]: '1' })).toBe(MIN_WEB_SESSION_LIFETIME_MS);
    expect(sessionLifetimeMs({ [WEB_SESSION_LIFETIME_ENV]: '1e30' })).toBe(WEB_SESSION_LIFETIME_MS);
    expect(sessionLifetimeMs({ [WEB_SESSION_LIFETIME_ENV]: String(2 ** 50) })).toBe(MAX_WEB_SESSION_LIFETIME_MS);
    expect(sessionLifetimeMs({ [WEB_SESSION_LIFETIME_ENV]: 'soon' })).toBe(WEB_SESSION_LIFETIME_MS);
  });
});
