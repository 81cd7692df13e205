import { describe, expect, it } from 'vitest';
import { resolveIdentity } from '../../../src/edge/request-identity.js';

const mapped = new Set(['system:node:edge-1']);

describe('resolveIdentity', () => {
  it('takes a bearer token over a client certificate, and sends the request upstream without the mapped certificate', () => {
    const resolved = resolveIdentity(
      { authorization: 'Bearer  abc.def ' },
      { isAuthorized: true, cn: 'system:node:edge-1' },
      mapped,
    );
    expect(resolved).toEqual({ identity: { principal: 'token:abc.def', impersonation: [] }, clientCertCn: undefined });
  });

  it('maps a trusted client certificate by its CN, and refuses an unmapped or untrusted one rather than proxy it', () => {
    expect(resolveIdentity({}, { isAuthorized: true, cn: 'system:node:edge-1' }, mapped)).toEqual({
      identity: { principal: 'cert:system:node:edge-1', impersonation: [] },
      clientCertCn: 'system:node:edge-1',
    });
    expect(resolveIdentity({}, { isAuthorized: true, cn: 'system:node:other' }, mapped)).toEqual({
      refusal: 'no --client-cert-map entry for client certificate CN "system:node:other"',
    });
    expect(resolveIdentity({}, { isAuthorized: true, cn: undefined }, mapped)).toEqual({
      refusal: 'no --client-cert-map entry for client certificate CN ""',
    });
    expect(resolveIdentity({}, { isAuthorized: false, cn: 'system:node:edge-1' }, mapped)).toEqual({
      refusal: 'the client certificate is not signed by a CA edge-proxy trusts',
    });
  });

  it('keeps other credentials and anonymity apart, and makes Impersonate-* headers part of every identity', () => {
    expect(resolveIdentity({ authorization: 'Basic dTpw' }, undefined, mapped)).toEqual({
      identity: { principal: 'authorization:Basic dTpw', impersonation: [] },
      clientCertCn: undefined,
    });
    // "Bearer" with nothing after it is not a token.
    expect(resolveIdentity({ authorization: 'Bearer ' }, undefined, mapped)).toMatchObject({
      identity: { principal: 'authorization:Bearer ' },
    });
    const anonymous = resolveIdentity(
      { 'impersonate-user': 'alice', 'impersonate-group': ['a', 'b'] as unknown as string },
      undefined,
      mapped,
    );
    expect(anonymous).toEqual({
      identity: { principal: 'anonymous', impersonation: ['impersonate-user=alice', 'impersonate-group=a,b'] },
      clientCertCn: undefined,
    });
    const token = resolveIdentity({ authorization: 'Bearer t', 'impersonate-user': 'bob' }, undefined, mapped);
    expect(token).toMatchObject({ identity: { principal: 'token:t', impersonation: ['impersonate-user=bob'] } });
  });
});
