/**
 * The hub hashes a connection's bearer token once per Authorization header
 * value (hub-context.ts). What must not change with it: the user is looked
 * up, and their expiry checked, at every request of the connection, so a
 * user removed or given a new token is refused at their very next request,
 * and a connection whose header changes is judged by the new header.
 */
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { HubContext } from '../../../../src/hub/api/hub-context.js';
import { authenticateUser } from '../../../../src/hub/identity/authenticate.js';
import { hashUserToken } from '../../../../src/hub/identity/hub-tokens.js';
import type { UserRecord } from '../../../../src/hub/store/store.js';

function userWith(name: string, token: string, expiresAt?: string): UserRecord {
  return {
    name,
    tokenHash: hashUserToken(token),
    clustersSelector: '',
    groups: [],
    isAdmin: false,
    createdAt: '2029-01-01T00:00:00.000Z',
    ...(expiresAt === undefined ? {} : { expiresAt }),
  };
}

/** A store whose users can be replaced between requests, at a clock the test sets. */
function liveContext(users: UserRecord[], clock: { now: string }): HubContext {
  const store = {
    findUserByTokenHash: (hash: string) => Promise.resolve(users.find((user) => user.tokenHash === hash)),
  };
  return { store, now: () => new Date(clock.now) } as unknown as HubContext;
}

/** A request on `socket` (one kept-alive connection) with this Authorization header. */
function on(socket: object, authorization?: string): IncomingMessage {
  return { socket, headers: authorization === undefined ? {} : { authorization } } as unknown as IncomingMessage;
}

describe('hub authentication on a kept-alive connection', () => {
  it('refuses a user removed between two requests of one connection', async () => {
    const users = [userWith('alice', 'alice-token')];
    const context = liveContext(users, { now: '2029-06-01T00:00:00Z' });
    const connection = {};
    expect((await authenticateUser(context, on(connection, 'Bearer alice-token')))?.name).toBe('alice');
    users.length = 0;
    expect(await authenticateUser(context, on(connection, 'Bearer alice-token'))).toBeUndefined();
  });

  it("refuses a user's old token on the same connection once the token was replaced", async () => {
    const users = [userWith('alice', 'old-token')];
    const context = liveContext(users, { now: '2029-06-01T00:00:00Z' });
    const connection = {};
    expect((await authenticateUser(context, on(connection, 'Bearer old-token')))?.name).toBe('alice');
    users[0] = userWith('alice', 'new-token');
    expect(await authenticateUser(context, on(connection, 'Bearer old-token'))).toBeUndefined();
    expect((await authenticateUser(context, on(connection, 'Bearer new-token')))?.name).toBe('alice');
  });

  it('refuses a token on the same connection from the instant it expires', async () => {
    const clock = { now: '2029-12-31T23:59:59.999Z' };
    const context = liveContext([userWith('alice', 'alice-token', '2030-01-01T00:00:00.000Z')], clock);
    const connection = {};
    expect((await authenticateUser(context, on(connection, 'Bearer alice-token')))?.name).toBe('alice');
    clock.now = '2030-01-01T00:00:00.000Z';
    expect(await authenticateUser(context, on(connection, 'Bearer alice-token'))).toBeUndefined();
  });

  it('judges each request by its own header: another token, a malformed one, or none', async () => {
    const context = liveContext([userWith('alice', 'alice-token'), userWith('bob', 'bob-token')], {
      now: '2029-06-01T00:00:00Z',
    });
    const connection = {};
    expect((await authenticateUser(context, on(connection, 'Bearer alice-token')))?.name).toBe('alice');
    expect((await authenticateUser(context, on(connection, 'Bearer bob-token')))?.name).toBe('bob');
    expect(await authenticateUser(context, on(connection, 'Basic bob-token'))).toBeUndefined();
    expect(await authenticateUser(context, on(connection, 'Bearer bob-tokenx'))).toBeUndefined();
    expect(await authenticateUser(context, on(connection))).toBeUndefined();
    expect((await authenticateUser(context, on(connection, 'Bearer alice-token')))?.name).toBe('alice');
    // Another connection with bob's header is bob, whatever this one saw.
    expect((await authenticateUser(context, on({}, 'Bearer bob-token')))?.name).toBe('bob');
  });
});
