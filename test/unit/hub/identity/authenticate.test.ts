import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { HubContext } from '../../../../src/hub/api/hub-context.js';
import { authenticateUser } from '../../../../src/hub/identity/authenticate.js';
import { hashUserToken } from '../../../../src/hub/identity/hub-tokens.js';
import type { UserRecord } from '../../../../src/hub/store/store.js';

const TOKEN = 'edgeadm-hub-alice-secret';
const EXPIRES_AT = '2030-01-01T00:00:00.000Z';

const alice: UserRecord = {
  name: 'alice',
  tokenHash: hashUserToken(TOKEN),
  clustersSelector: 'env=dev',
  groups: ['dev'],
  isAdmin: false,
  createdAt: '2029-01-01T00:00:00.000Z',
  expiresAt: EXPIRES_AT,
};

/** A context with one stored user, looked up by token hash as the SQLite store does, at a set time. */
function contextAt(now: string, users: UserRecord[] = [alice]): HubContext {
  const store = {
    findUserByTokenHash: (hash: string) => Promise.resolve(users.find((user) => user.tokenHash === hash)),
  };
  return { store, now: () => new Date(now) } as unknown as HubContext;
}

function requestWith(authorization?: string): IncomingMessage {
  return { headers: authorization === undefined ? {} : { authorization } } as IncomingMessage;
}

describe('hub authentication of bearer tokens', () => {
  it('names the user whose token hash matches', async () => {
    await expect(authenticateUser(contextAt('2029-06-01T00:00:00Z'), requestWith(`Bearer ${TOKEN}`))).resolves.toBe(
      alice,
    );
  });

  it('refuses a missing, malformed or unknown token', async () => {
    const context = contextAt('2029-06-01T00:00:00Z');
    await expect(authenticateUser(context, requestWith())).resolves.toBeUndefined();
    await expect(authenticateUser(context, requestWith(TOKEN))).resolves.toBeUndefined();
    await expect(authenticateUser(context, requestWith(`Bearer ${TOKEN}x`))).resolves.toBeUndefined();
    await expect(authenticateUser(context, requestWith(`Basic ${TOKEN}`))).resolves.toBeUndefined();
  });

  it("refuses a user's token from the instant it expires, by the hub's clock", async () => {
    const justBefore = new Date(Date.parse(EXPIRES_AT) - 1).toISOString();
    await expect(authenticateUser(contextAt(justBefore), requestWith(`Bearer ${TOKEN}`))).resolves.toBe(alice);
    await expect(authenticateUser(contextAt(EXPIRES_AT), requestWith(`Bearer ${TOKEN}`))).resolves.toBeUndefined();
    await expect(
      authenticateUser(contextAt('2031-01-01T00:00:00Z'), requestWith(`Bearer ${TOKEN}`)),
    ).resolves.toBeUndefined();
  });

  it('keeps a user without an expiry valid at any time', async () => {
    const { expiresAt: _none, ...forever } = alice;
    const context = contextAt('2999-01-01T00:00:00Z', [forever]);
    await expect(authenticateUser(context, requestWith(`Bearer ${TOKEN}`))).resolves.toEqual(forever);
  });
});
