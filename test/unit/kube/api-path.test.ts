import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_API_PATH_LENGTH, parseApiPath } from '../../../src/kube/api-path.js';

const ORIGIN = 'https://api.cluster.invalid:6443';

/** Pieces an attacker strings together: separators, encodings, dots, schemes, unicode. */
const hostilePiece = fc.constantFrom(
  '/',
  '//',
  '\\',
  '.',
  '..',
  '%2e',
  '%2E%2e',
  '%2f',
  '%2F',
  '%5c',
  '%',
  '%zz',
  '%00',
  '@',
  ':',
  '?',
  '#',
  ' ',
  '\t',
  '\n',
  'http:',
  'https://evil.example:8443',
  '127.0.0.1:22',
  'é',
  '\u2215',
  '\uff0f',
  'api',
  'v1',
  'namespaces',
  'default',
  'pods',
  'x=1',
  '&',
  ';',
  '~',
);
const hostileTarget = fc.array(hostilePiece, { minLength: 0, maxLength: 12 }).map((pieces) => pieces.join(''));

describe('parseApiPath', () => {
  it('accepts ordinary API paths and keeps them byte for byte', () => {
    for (const target of [
      '/',
      '/api',
      '/api/v1/namespaces/default/pods?labelSelector=app%3Dweb&limit=500',
      '/apis/apps/v1/namespaces/kube-system/deployments/coredns',
      '/api/v1/namespaces/default/pods/web-1/exec?command=sh&stdin=true',
      '/api/v1/nodes/edge-1/proxy/metrics',
      '/version?timeout=32s',
      '/api/v1/namespaces/default/configmaps/a.b..c',
    ]) {
      const result = parseApiPath(target);
      expect(result, target).toMatchObject({ ok: true, value: { target } });
    }
  });

  it.each([
    ['//evil.example:8443/steal-me', 'empty-segment'],
    ['/\\evil.example:8443/steal-me', 'backslash'],
    ['\\\\evil.example/x', 'backslash'],
    ['evil.example/x', 'not-absolute'],
    ['http://evil.example/x', 'not-absolute'],
    ['', 'not-absolute'],
    ['?watch=1', 'not-absolute'],
    ['/api/v1/namespaces/default/configmaps\\cm1', 'backslash'],
    ['/api/v1/secrets/topsecret/%2e%2e/%2e%2e/%2e%2e/default/configmaps/cm1', 'dot-segment'],
    ['/api/v1/../v1/nodes', 'dot-segment'],
    ['/api/v1/./nodes', 'dot-segment'],
    ['/api/v1/.%2E/nodes', 'dot-segment'],
    ['/api/v1/nodes/', 'empty-segment'],
    ['/api//v1', 'empty-segment'],
    ['/api/v1/namespaces%2fdefault', 'encoded-separator'],
    ['/api/v1/namespaces%5Cdefault', 'encoded-separator'],
    ['/api/v1/nodes%', 'bad-escape'],
    ['/api/v1/nodes%g0', 'bad-escape'],
    ['/api/v1/nodes#frag', 'bad-character'],
    ['/api/v1/nodes x', 'bad-character'],
    ['/api/v1/nodes\r\nX-Remote-User: admin', 'bad-character'],
    ['/api/v1/nod\u00e9s', 'bad-character'],
    [`/${'a'.repeat(9000)}`, 'too-long'],
  ])('refuses %j as %s', (target, problem) => {
    expect(parseApiPath(target)).toMatchObject({ ok: false, problem });
  });

  it('a path it accepts reaches only the origin, and the URL parser reads it exactly as given', () => {
    fc.assert(
      fc.property(hostileTarget, (target) => {
        const result = parseApiPath(target);
        if (!result.ok) return;
        const url = new URL(ORIGIN + result.value.target);
        expect(url.origin).toBe(ORIGIN);
        expect(url.pathname).toBe(result.value.path);
        expect(url.search.replace(/^\?/, '')).toBe(result.value.query);
        // The same string resolved as a reference (what `new URL(path, server)` did) changes nothing either.
        const resolved = new URL(result.value.target, ORIGIN);
        expect(resolved.href).toBe(url.href);
      }),
      { numRuns: 5000, seed: 20261124 },
    );
  });

  it('a path it accepts has no dot, empty or encoded-separator segment', () => {
    fc.assert(
      fc.property(hostileTarget, (target) => {
        const result = parseApiPath(target);
        if (!result.ok || result.value.path === '/') return;
        for (const segment of result.value.path.slice(1).split('/')) {
          const decoded = decodeURIComponent(segment);
          expect(['', '.', '..']).not.toContain(decoded);
          expect(decoded).not.toMatch(/[/\\]/);
        }
      }),
      { numRuns: 5000, seed: 7 },
    );
  });

  // The message is what the user reads in the 400 answer: each refusal names its own reason.
  it.each([
    ['/api\\v1', 'backslash', 'the request path holds a backslash'],
    ['/api v1', 'bad-character', 'the request path holds a character that must be percent-encoded'],
    ['/api/%zz', 'bad-escape', 'the request path holds a malformed percent escape'],
    ['api/v1', 'not-absolute', 'the request path does not start with "/"'],
    ['/api/a%2Fb', 'encoded-separator', 'the request path holds an encoded "/" or "\\"'],
    ['/api//v1', 'empty-segment', 'the request path holds an empty segment ("//" or a trailing "/")'],
    ['/api/../v1', 'dot-segment', 'the request path holds a "." or ".." segment'],
  ])('refuses %s as %s, saying why', (target, problem, message) => {
    expect(parseApiPath(target)).toEqual({ ok: false, problem, message });
  });

  it(`accepts a target of exactly ${MAX_API_PATH_LENGTH} characters and refuses one more`, () => {
    const longest = `/api?${'q'.repeat(MAX_API_PATH_LENGTH - 5)}`;
    expect(longest).toHaveLength(MAX_API_PATH_LENGTH);
    expect(parseApiPath(longest).ok).toBe(true);
    expect(parseApiPath(`${longest}q`)).toEqual({
      ok: false,
      problem: 'too-long',
      message: `the request path is longer than ${MAX_API_PATH_LENGTH} characters`,
    });
  });
});
