import { describe, expect, it } from 'vitest';
import {
  decodeUpgradeRequest,
  encodeUpgradeRequest,
  forwardableRequestHeaders,
  forwardableResponseHeaders,
  identityHeaders,
  readIdentity,
  renderUpgradeRequestHead,
} from '../../../src/tunnel/protocol.js';

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
});
