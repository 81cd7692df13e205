/**
 * The agent keeps group lists it has read from the hub's identity header
 * (`readIdentity` with a `GroupsCache`): whatever came before, an identity
 * read with the cache must be exactly the one read without it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GROUPS_CACHE_MAX_ENTRIES } from '../../../src/tunnel/limits.js';
import {
  forwardableRequestHeaderList,
  forwardableRequestHeaders,
  GROUPS_HEADER,
  readIdentity,
  USER_HEADER,
  type GroupsCache,
} from '../../../src/tunnel/protocol.js';

/** Names with and without control characters, and header texts that are and are not group lists. */
const name = fc.constantFrom('alice', 'bob', 'system:masters', 'al\u0001ice', 'dev\r\nX-Evil: 1', '', 'o\u007fps');
const groupsText = fc.oneof(
  fc.array(name, { maxLength: 3 }).map((groups) => JSON.stringify(groups)),
  fc.constantFrom('not json', '{"0":"dev"}', '[1]', '"dev"', 'null', '[]'),
);

describe('agent identity: the group lists it keeps', () => {
  it('reads every identity exactly as without the cache, after any sequence of others', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(name, groupsText), { minLength: 1, maxLength: 30 }), (reads) => {
        const cache: GroupsCache = new Map();
        for (const [user, groups] of reads) {
          const headers = { [USER_HEADER]: user, [GROUPS_HEADER]: groups };
          expect(readIdentity(headers, cache)).toEqual(readIdentity(headers));
        }
      }),
    );
  });

  it('keeps no list that fails the checks, and never more than its bound', () => {
    const cache: GroupsCache = new Map();
    expect(readIdentity({ [USER_HEADER]: 'bob', [GROUPS_HEADER]: '["o\\u0007ps"]' }, cache)).toBeUndefined();
    expect(cache.size).toBe(0);
    for (let i = 0; i < GROUPS_CACHE_MAX_ENTRIES + 10; i += 1) {
      readIdentity({ [USER_HEADER]: 'bob', [GROUPS_HEADER]: JSON.stringify([`group-${i}`]) }, cache);
      expect(cache.size).toBeLessThanOrEqual(GROUPS_CACHE_MAX_ENTRIES);
    }
  });
});

describe('forwarded request headers as a flat list', () => {
  const headerName = fc.constantFrom(
    'accept',
    'user-agent',
    'authorization',
    'impersonate-user',
    'impersonate-group',
    'x-remote-user',
    'x-forwarded-for',
    'edgeadm-impersonate-user',
    'connection',
    'host',
    ':path',
    'sec-websocket-protocol',
    'content-type',
    'cookie',
  );
  const value = fc.constantFrom(
    'application/json',
    'base64url.bearer.authorization.k8s.io.c2VjcmV0, v4.channel.k8s.io',
    'base64url.bearer.authorization.k8s.io.c2VjcmV0',
    'root',
    '',
  );

  // Names as node:http and node:http2 give them: lower-case, each once.
  it('keeps and drops exactly the headers the object form keeps and drops, in the same order', () => {
    fc.assert(
      fc.property(
        fc.dictionary(headerName, fc.oneof(value, fc.array(value, { maxLength: 3 })), { maxKeys: 8 }),
        (headers) => {
          const asObject = forwardableRequestHeaders(headers);
          const expected: string[] = [];
          for (const [key, kept] of Object.entries(asObject)) {
            for (const one of Array.isArray(kept) ? kept : [kept]) expected.push(key, one);
          }
          expect(forwardableRequestHeaderList(headers)).toEqual(expected);
        },
      ),
    );
  });
});
