import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseApiPath } from '../../../src/kube/api-path.js';
import {
  controlPathOf,
  decodeUpgradeRequest,
  encodeUpgradeRequest,
  forwardableRequestHeaders,
  forwardableResponseHeaders,
  forwardableUpgradeHeaders,
  HELLO_PATH,
  GROUPS_HEADER,
  identityHeaders,
  readIdentity,
  REFUSE_PATH,
  renderUpgradeRequestHead,
  WELCOME_PATH,
  USER_HEADER,
} from '../../../src/tunnel/protocol.js';

/** Headers that claim an identity the edge API server or an auth proxy might believe. */
const IDENTITY_CLAIMS = {
  'X-Remote-User': 'system:admin',
  'X-Remote-Group': 'system:masters',
  'X-Remote-Extra-Scopes': 'all',
  'X-Remote-Uid': '0',
  'Remote-User': 'root',
  'X-Forwarded-User': 'root',
  'X-Forwarded-Groups': 'system:masters',
  'X-Forwarded-Email': 'root@example.com',
  'X-Forwarded-Access-Token': 'tok',
  'X-Forwarded-For': '10.0.0.1',
  Forwarded: 'for=10.0.0.1',
  'X-Real-IP': '10.0.0.1',
  'X-Auth-Request-User': 'root',
  'X-WebAuth-User': 'root',
  'X-SSL-Client-Cert': 'cert',
  'X-Client-Cert': 'cert',
  'X-Forwarded-Client-Cert': 'Hash=1',
  'Impersonate-Uid': '0',
  'Impersonate-Extra-Scopes': 'all',
  'Proxy-Authorization': 'Basic eA==',
  Cookie: 'session=1',
};

describe('tunnel protocol', () => {
  it("drops the user's credentials, identity claims and hop-by-hop headers from forwarded requests", () => {
    const forwarded = forwardableRequestHeaders({
      Authorization: 'Bearer user-secret',
      'Impersonate-User': 'system:admin',
      'Impersonate-Group': 'system:masters',
      'edgeadm-impersonate-user': 'forged',
      Connection: 'keep-alive',
      Host: 'hub',
      Accept: 'application/json',
      'User-Agent': 'kubectl',
    });
    expect(forwarded).toEqual({ accept: 'application/json', 'user-agent': 'kubectl' });
  });

  it('drops hop-by-hop headers from responses', () => {
    expect(
      forwardableResponseHeaders({
        ':status': 200,
        'transfer-encoding': 'chunked',
        'content-type': 'application/json',
      }),
    ).toEqual({
      'content-type': 'application/json',
    });
  });

  it('round-trips the identity, and refuses a missing or malformed one', () => {
    expect(readIdentity(identityHeaders({ user: 'alice', groups: ['dev', 'ops'] }))).toEqual({
      user: 'alice',
      groups: ['dev', 'ops'],
    });
    expect(readIdentity({})).toBeUndefined();
    expect(readIdentity({ 'edgeadm-impersonate-user': 'a', 'edgeadm-impersonate-groups': '{"x":1}' })).toBeUndefined();
  });

  it('round-trips an upgrade request and refuses header injection', () => {
    const request = {
      method: 'POST',
      path: '/api/v1/namespaces/d/pods/p/exec?command=sh',
      headers: [['Upgrade', 'SPDY/3.1']] as [string, string][],
    };
    expect(decodeUpgradeRequest(encodeUpgradeRequest(request))).toEqual(request);
    const injected = encodeUpgradeRequest({ ...request, headers: [['X', 'a\r\nImpersonate-User: root']] });
    expect(decodeUpgradeRequest(injected)).toBeUndefined();
    expect(decodeUpgradeRequest('not base64 json')).toBeUndefined();
  });

  // Each field of the encoded head ends up in the request head the agent writes to its API server:
  // a line break or a separator anywhere would let a user add a line of their own (an identity claim).
  it.each([
    ['a line break in a header value', { headers: [['X', 'a\nImpersonate-User: root']] }],
    ['a carriage return in a header value', { headers: [['X', 'a\rImpersonate-User: root']] }],
    ['a line break in a header name', { headers: [['X\r\nImpersonate-User', 'root']] }],
    ['a colon in a header name', { headers: [['Impersonate-User: root\r\nX', 'y']] }],
    ['a space in a header name', { headers: [['X Y', 'z']] }],
    ['an empty header name', { headers: [['', 'z']] }],
    ['a space in the path', { path: '/api HTTP/1.1\r\nImpersonate-User: root\r\nX: /' }],
    ['a bare space in the path', { path: '/api/v1 x' }],
    ['a tab in the path', { path: '/api/v1\tx' }],
    ['a line break in the path', { path: '/api/v1\nImpersonate-User:root' }],
    ['a path not starting with /', { path: 'api/v1/namespaces' }],
    ['a method that is not a token', { method: 'GET /x HTTP/1.1\r\nImpersonate-User: root\r\nX:' }],
    ['a lower-case method', { method: 'get' }],
    ['headers that are not a list', { headers: 'Upgrade: SPDY/3.1' }],
    ['a header pair that is not two strings', { headers: [['Upgrade', 3]] }],
  ])('refuses %s', (_what, change) => {
    const request = { method: 'POST', path: '/api/v1/namespaces/d/pods/p/exec', headers: [['Upgrade', 'SPDY/3.1']] };
    const encoded = Buffer.from(JSON.stringify({ ...request, ...change }), 'utf8').toString('base64url');
    expect(decodeUpgradeRequest(encoded)).toBeUndefined();
  });

  it('never lets a decoded request add a line to the head the agent writes', () => {
    const text = fc.string({ unit: fc.constantFrom('a', 'B', '-', ':', ' ', '\t', '\r', '\n', '/', 'é') });
    fc.assert(
      fc.property(
        fc.constantFrom('GET', 'POST', 'get', 'G T', 'GET\r\nX:'),
        text,
        fc.array(fc.tuple(text, text), { maxLength: 3 }),
        (method, path, headers) => {
          const encoded = Buffer.from(JSON.stringify({ method, path: `/${path}`, headers })).toString('base64url');
          const decoded = decodeUpgradeRequest(encoded);
          if (decoded === undefined) return;
          const render = () =>
            renderUpgradeRequestHead({ request: decoded, host: 'api:6443', identity: { user: 'alice', groups: [] } });
          // A path with more than one reading is never written at all.
          if (!parseApiPath(decoded.path).ok) {
            expect(render).toThrow(/unsafe path/);
            return;
          }
          const head = renderUpgradeRequestHead({
            request: decoded,
            host: 'api:6443',
            identity: { user: 'alice', groups: [] },
          });
          const lines = head.split('\r\n');
          const kept = decoded.headers.filter(
            ([name]) => !/^(host|authorization|proxy-authorization|cookie|impersonate-.*|edgeadm-.*)$/i.test(name),
          );
          // Request line, Host, the kept headers, Impersonate-User, then the empty line ending the head.
          expect(lines).toHaveLength(2 + kept.length + 1 + 2);
          expect(lines[0]?.split(' ')).toHaveLength(3);
          expect(lines.filter((line) => /^impersonate-/i.test(line))).toEqual(['Impersonate-User: alice']);
        },
      ),
    );
  });

  it('forwards no header without a value, and response numbers as text', () => {
    expect(forwardableRequestHeaders({ Accept: 'application/json', 'X-Empty': undefined })).toStrictEqual({
      accept: 'application/json',
    });
    expect(
      forwardableResponseHeaders({ 'Content-Length': 12, 'X-Empty': undefined, Warning: ['a', 'b'] }),
    ).toStrictEqual({ 'content-length': '12', warning: ['a', 'b'] });
  });

  // The agent acts as whoever these two headers name: anything but one non-empty user and a list of
  // group names must be refused, never read as some identity.
  it.each([
    ['no user', { [GROUPS_HEADER]: '["dev"]' }],
    ['an empty user', { [USER_HEADER]: '', [GROUPS_HEADER]: '["dev"]' }],
    ['a user that is a list', { [USER_HEADER]: ['alice', 'bob'], [GROUPS_HEADER]: '["dev"]' }],
    ['no groups', { [USER_HEADER]: 'alice' }],
    ['groups that are a list of headers', { [USER_HEADER]: 'alice', [GROUPS_HEADER]: ['["dev"]'] }],
    ['groups that are not JSON', { [USER_HEADER]: 'alice', [GROUPS_HEADER]: '[dev' }],
    ['groups that are one string', { [USER_HEADER]: 'alice', [GROUPS_HEADER]: '"dev"' }],
    ['a group that is a number', { [USER_HEADER]: 'alice', [GROUPS_HEADER]: '[1]' }],
    ['one group of two that is not a string', { [USER_HEADER]: 'alice', [GROUPS_HEADER]: '["dev", null]' }],
  ])('refuses an identity with %s', (_what, headers) => {
    expect(readIdentity(headers)).toBeUndefined();
  });

  it('reads an identity with no groups', () => {
    expect(readIdentity({ [USER_HEADER]: 'alice', [GROUPS_HEADER]: '[]' })).toEqual({ user: 'alice', groups: [] });
  });

  it.each([
    ['a value that is not text', 42],
    ['a method that is a list', { method: ['GET'], path: '/api', headers: [] }],
    ['a method with lower-case letters before capitals', { method: 'xGET', path: '/api', headers: [] }],
    ['a header pair that is a string', { method: 'GET', path: '/api', headers: ['ab'] }],
    ['a header name that is a number', { method: 'GET', path: '/api', headers: [[1, 'x']] }],
  ])('refuses an encoded upgrade head with %s', (_what, value) => {
    const encoded = typeof value === 'number' ? value : Buffer.from(JSON.stringify(value)).toString('base64url');
    expect(decodeUpgradeRequest(encoded)).toBeUndefined();
  });

  it("writes one Host line, the API server's, whatever the user's request said", () => {
    const head = renderUpgradeRequestHead({
      request: {
        method: 'GET',
        path: '/api',
        headers: [
          ['HOST', 'evil.example'],
          ['host', 'evil.example'],
        ],
      },
      host: '10.0.0.1:6443',
      identity: { user: 'alice', groups: [] },
    });
    expect(head.split('\r\n').filter((line) => /^host:/i.test(line))).toEqual(['Host: 10.0.0.1:6443']);
  });

  it("writes the agent's credentials and the impersonation into the upstream request head, never the user's", () => {
    const head = renderUpgradeRequestHead({
      request: {
        method: 'GET',
        path: '/api/v1/namespaces/d/pods/p/portforward',
        headers: [
          ['Connection', 'Upgrade'],
          ['Upgrade', 'SPDY/3.1'],
          ['Authorization', 'Bearer user-secret'],
          ['Impersonate-User', 'system:admin'],
        ],
      },
      host: '10.0.0.1:6443',
      authorization: 'Bearer agent-token',
      identity: { user: 'alice', groups: ['dev'] },
    });
    expect(head).toBe(
      'GET /api/v1/namespaces/d/pods/p/portforward HTTP/1.1\r\nHost: 10.0.0.1:6443\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n' +
        'Authorization: Bearer agent-token\r\nImpersonate-User: alice\r\nImpersonate-Group: dev\r\n\r\n',
    );
  });

  it('drops front-proxy (X-Remote-*), auth-proxy, forwarded-for and client-certificate headers, plain and upgrade', () => {
    const forwarded = forwardableRequestHeaders({ ...IDENTITY_CLAIMS, Accept: 'application/json' });
    expect(forwarded).toEqual({ accept: 'application/json' });
    const upgrade = forwardableUpgradeHeaders([
      ...Object.entries(IDENTITY_CLAIMS),
      ['Connection', 'Upgrade'],
      ['Upgrade', 'websocket'],
      ['Host', 'hub.example'],
    ]);
    expect(upgrade).toEqual([
      ['Connection', 'Upgrade'],
      ['Upgrade', 'websocket'],
    ]);
    const head = renderUpgradeRequestHead({
      request: { method: 'GET', path: '/api', headers: Object.entries(IDENTITY_CLAIMS) },
      host: 'h:6443',
      identity: { user: 'alice', groups: [] },
    });
    expect(head).toBe('GET /api HTTP/1.1\r\nHost: h:6443\r\nImpersonate-User: alice\r\n\r\n');
  });

  it('takes bearer tokens out of Sec-WebSocket-Protocol and keeps the other subprotocols', () => {
    const protocols = 'v5.channel.k8s.io, base64url.bearer.authorization.k8s.io.c2VjcmV0, v4.channel.k8s.io';
    expect(forwardableRequestHeaders({ 'Sec-WebSocket-Protocol': protocols })).toEqual({
      'sec-websocket-protocol': 'v5.channel.k8s.io, v4.channel.k8s.io',
    });
    expect(
      forwardableUpgradeHeaders([['Sec-WebSocket-Protocol', 'base64url.bearer.authorization.k8s.io.c2VjcmV0']]),
    ).toEqual([]);
  });

  it('tells control streams apart by their missing identity, never by the path alone', () => {
    expect(controlPathOf({ ':method': 'GET', ':path': HELLO_PATH })).toBe(HELLO_PATH);
    expect(controlPathOf({ ':method': 'POST', ':path': WELCOME_PATH })).toBe(WELCOME_PATH);
    expect(controlPathOf({ ':method': 'POST', ':path': REFUSE_PATH })).toBe(REFUSE_PATH);
    const user = identityHeaders({ user: 'mallory', groups: [] });
    for (const [method, path] of [
      ['GET', HELLO_PATH],
      ['POST', WELCOME_PATH],
      ['POST', REFUSE_PATH],
    ]) {
      expect(controlPathOf({ ':method': method, ':path': path, ...user })).toBeUndefined();
      // Even a malformed or empty identity marks a user stream.
      expect(controlPathOf({ ':method': method, ':path': path, 'edgeadm-impersonate-user': '' })).toBeUndefined();
      expect(controlPathOf({ ':method': method, ':path': path, 'edgeadm-impersonate-groups': 'x' })).toBeUndefined();
    }
    expect(controlPathOf({ ':method': 'GET', ':path': '/.edgeadm/other' })).toBeUndefined();
    expect(controlPathOf({ ':method': 'GET', ':path': `${HELLO_PATH}?x=1` })).toBeUndefined();
    expect(controlPathOf({ ':method': 'POST', ':path': HELLO_PATH })).toBeUndefined();
  });

  it('serves the extra routes it is given by the same rule: exact method and path, and no identity', () => {
    const routes = [
      { method: 'POST' as const, path: '/.edgeadm/rollout/apply' },
      { method: 'GET' as const, path: '/.edgeadm/rollout/reports' },
    ];
    expect(controlPathOf({ ':method': 'POST', ':path': '/.edgeadm/rollout/apply' }, routes)).toBe(
      '/.edgeadm/rollout/apply',
    );
    expect(controlPathOf({ ':method': 'GET', ':path': '/.edgeadm/rollout/reports' }, routes)).toBe(
      '/.edgeadm/rollout/reports',
    );
    const user = identityHeaders({ user: 'mallory', groups: ['system:masters'] });
    expect(controlPathOf({ ':method': 'POST', ':path': '/.edgeadm/rollout/apply', ...user }, routes)).toBeUndefined();
    expect(
      controlPathOf({ ':method': 'POST', ':path': '/.edgeadm/rollout/apply', 'edgeadm-impersonate-user': '' }, routes),
    ).toBeUndefined();
    expect(controlPathOf({ ':method': 'GET', ':path': '/.edgeadm/rollout/apply' }, routes)).toBeUndefined();
    expect(controlPathOf({ ':method': 'POST', ':path': '/.edgeadm/rollout/apply?x=1' }, routes)).toBeUndefined();
    // Without the routes, the same stream is no control message.
    expect(controlPathOf({ ':method': 'POST', ':path': '/.edgeadm/rollout/apply' })).toBeUndefined();
  });

  it('refuses an identity whose names hold control characters', () => {
    expect(readIdentity(identityHeaders({ user: 'a\r\nImpersonate-User: root', groups: [] }))).toBeUndefined();
    expect(readIdentity(identityHeaders({ user: 'a', groups: ['dev\r\nX: y'] }))).toBeUndefined();
  });

  it('never renders an upgrade head for a path parseApiPath refuses', () => {
    for (const path of ['//127.0.0.1:22/steal-me', '/\\127.0.0.1:22/x', '/api/../version', '/a b']) {
      expect(() =>
        renderUpgradeRequestHead({
          request: { method: 'GET', path, headers: [] },
          host: 'h:6443',
          authorization: 'Bearer agent-token',
          identity: { user: 'alice', groups: [] },
        }),
      ).toThrow(/unsafe path/);
    }
  });
});
