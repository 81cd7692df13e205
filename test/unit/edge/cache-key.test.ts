import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  acceptsPlainJson,
  cacheKeyOf,
  classifyRequest as classifyChecked,
  entryFileNameOf,
  identityKeyOf,
  representationOf,
  type ClassifiedRequest,
} from '../../../src/edge/cache-key.js';
import { parseApiPath } from '../../../src/kube/api-path.js';

/** Classifies a target that must pass the one path rule. */
function classifyRequest(method: string, target: string, accept: string | undefined): ClassifiedRequest {
  const checked = parseApiPath(target);
  if (!checked.ok) throw new Error(`${target}: ${checked.message}`);
  return classifyChecked(method, checked.value, accept);
}

const KUBECTL_TABLE_ACCEPT =
  'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';

describe('identityKeyOf', () => {
  const installKey = randomBytes(32);

  it('is stable for one identity and differs between identities and installs', () => {
    const alice = { principal: 'token:alice', impersonation: [] };
    expect(identityKeyOf(installKey, alice)).toBe(identityKeyOf(installKey, alice));
    expect(identityKeyOf(installKey, alice)).not.toBe(
      identityKeyOf(installKey, { principal: 'token:bob', impersonation: [] }),
    );
    expect(identityKeyOf(installKey, alice)).not.toBe(identityKeyOf(randomBytes(32), alice));
  });

  it('never contains the token, and separates impersonated requests (in any header order)', () => {
    const key = identityKeyOf(installKey, { principal: 'token:super-secret-token', impersonation: [] });
    expect(key).toMatch(/^[0-9a-f]{32}$/);
    expect(key).not.toContain('super-secret-token');
    const asBob = identityKeyOf(installKey, {
      principal: 'token:a',
      impersonation: ['impersonate-user=bob', 'impersonate-group=g'],
    });
    expect(asBob).not.toBe(identityKeyOf(installKey, { principal: 'token:a', impersonation: [] }));
    expect(asBob).toBe(
      identityKeyOf(installKey, {
        principal: 'token:a',
        impersonation: ['impersonate-group=g', 'impersonate-user=bob'],
      }),
    );
  });
});

describe('classifyRequest', () => {
  it('keeps only the selectors, not timeouts, limits, resourceVersion or watch', () => {
    const a = classifyRequest(
      'GET',
      '/api/v1/pods?limit=500&resourceVersion=0&labelSelector=app%3Dweb&timeoutSeconds=5',
      undefined,
    );
    const b = classifyRequest('GET', '/api/v1/pods?labelSelector=app%3Dweb', 'application/json');
    expect(a).toMatchObject({
      verb: 'read',
      isCacheable: true,
      path: '/api/v1/pods',
      query: 'labelSelector=app%3Dweb',
      representation: 'json',
    });
    expect(cacheKeyOf('id', a)).toBe(cacheKeyOf('id', b));
    expect(cacheKeyOf('id', a)).not.toBe(
      cacheKeyOf('id', classifyRequest('GET', '/api/v1/pods?fieldSelector=spec.nodeName%3Dn1', undefined)),
    );
  });

  it('maps a watch, also a legacy /watch/ path, to the key of the list it keeps current', () => {
    const list = classifyRequest(
      'GET',
      '/api/v1/namespaces/default/pods?fieldSelector=spec.nodeName%3Dn1',
      'application/json',
    );
    const watch = classifyRequest(
      'GET',
      '/api/v1/namespaces/default/pods?watch=true&resourceVersion=7&fieldSelector=spec.nodeName%3Dn1',
      'application/json',
    );
    const legacy = classifyRequest(
      'GET',
      '/api/v1/watch/namespaces/default/pods?fieldSelector=spec.nodeName%3Dn1',
      'application/json',
    );
    expect(watch.verb).toBe('watch');
    expect(legacy.verb).toBe('watch');
    expect(cacheKeyOf('id', watch)).toBe(cacheKeyOf('id', list));
    expect(cacheKeyOf('id', legacy)).toBe(cacheKeyOf('id', list));
  });

  it('does not cache writes, list continuations, followed logs or non-API paths', () => {
    expect(classifyRequest('POST', '/api/v1/namespaces/default/pods', undefined).verb).toBe('other');
    expect(classifyRequest('GET', '/api/v1/pods?continue=abc', undefined).verb).toBe('other');
    expect(classifyRequest('GET', '/api/v1/namespaces/d/pods/p/log?follow=true', undefined).verb).toBe('other');
    expect(classifyRequest('GET', '/metrics', undefined).verb).toBe('other');
  });

  it("caches the kubelet's reflector LIST (resourceVersion=0&limit=500) under the key of the list itself", () => {
    const reflector = classifyRequest(
      'GET',
      '/api/v1/pods?fieldSelector=spec.nodeName%3Dn1&limit=500&resourceVersion=0',
      'application/vnd.kubernetes.protobuf,application/json',
    );
    expect(reflector).toMatchObject({ verb: 'read', isCacheable: true });
    expect(cacheKeyOf('id', reflector)).toBe(
      cacheKeyOf('id', classifyRequest('GET', '/api/v1/pods?fieldSelector=spec.nodeName%3Dn1', undefined)),
    );
    // "Not older than" answers are current too.
    for (const query of ['resourceVersion=42', 'resourceVersion=42&resourceVersionMatch=NotOlderThan&limit=5']) {
      expect(classifyRequest('GET', `/api/v1/pods?${query}`, undefined).isCacheable, query).toBe(true);
    }
  });

  it('does not cache a LIST that asks for history: resourceVersionMatch=Exact, or limit with a non-zero resourceVersion', () => {
    for (const query of [
      'resourceVersion=42&resourceVersionMatch=Exact',
      'resourceVersion=42&resourceVersionMatch=Exact&limit=500',
      'limit=500&resourceVersion=42',
    ]) {
      const request = classifyRequest('GET', `/api/v1/pods?${query}`, undefined);
      expect([request.verb, request.isCacheable], query).toEqual(['read', false]);
    }
  });

  it('does not cache answers the key cannot tell apart: unknown parameters and backend proxy paths', () => {
    for (const target of [
      '/api/v1/namespaces/d/pods/p/log?container=sidecar',
      '/api/v1/namespaces/d/pods/p/log?tailLines=10',
      '/api/v1/namespaces/d/configmaps?x=1',
      '/api/v1/namespaces/d/services/s/proxy/page',
      '/api/v1/namespaces/d/pods/p/proxy',
      '/api/v1/nodes/n1/proxy/metrics',
      '/api/v1/proxy/namespaces/d/services/s',
    ]) {
      expect(classifyRequest('GET', target, undefined).isCacheable, target).toBe(false);
    }
    // A resource or namespace merely named "proxy" is still an API object.
    expect(classifyRequest('GET', '/api/v1/namespaces/proxy/configmaps/proxy', undefined).isCacheable).toBe(true);
    // A watch with unknown parameters is relayed without keeping a list.
    expect(classifyRequest('GET', '/api/v1/pods?watch=true&x=1', undefined)).toMatchObject({
      verb: 'watch',
      isCacheable: false,
    });
  });

  it('keeps Table answers apart from JSON ones', () => {
    const table = classifyRequest('GET', '/api/v1/pods', KUBECTL_TABLE_ACCEPT);
    const json = classifyRequest('GET', '/api/v1/pods', 'application/json');
    expect(cacheKeyOf('id', table)).not.toBe(cacheKeyOf('id', json));
  });
});

describe('representationOf and acceptsPlainJson', () => {
  it('reads what form of answer a client takes', () => {
    expect(representationOf(undefined)).toBe('json');
    expect(representationOf('application/vnd.kubernetes.protobuf,application/json')).toBe('json');
    expect(representationOf('application/vnd.kubernetes.protobuf')).toBeUndefined();
    expect(representationOf(KUBECTL_TABLE_ACCEPT)).toContain('as=Table');
    expect(acceptsPlainJson(KUBECTL_TABLE_ACCEPT)).toBe(true);
    expect(acceptsPlainJson('application/json;as=Table;v=v1;g=meta.k8s.io')).toBe(false);
  });
});

describe('entryFileNameOf', () => {
  it('is a fixed-length hash, so no path or selector reaches the file system', () => {
    expect(entryFileNameOf('id json /api/v1/namespaces/../../etc?labelSelector=a')).toMatch(/^[0-9a-f]{64}$/);
  });
});
