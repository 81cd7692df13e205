import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BAD_PROXY_PATH_CODE, parseProxyUrl } from '../../../../src/hub/api/proxy-target.js';
import { kubeStatus } from '../../../../src/hub/http/http-replies.js';
import { parseApiPath } from '../../../../src/kube/api-path.js';

/** Where the agent's API server is, for checking where a forwarded path would lead. */
const ORIGIN = 'https://api.cluster.invalid:6443';

/** Pieces an attacker strings together after `/clusters/NAME`. */
const hostilePiece = fc.constantFrom(
  '/',
  '//',
  '\\',
  '.',
  '..',
  '%2e',
  '%2E',
  '%2f',
  '%5C',
  '%',
  '%00',
  '@',
  ':',
  '?',
  '#',
  ' ',
  'http:',
  'https://',
  '127.0.0.1:22',
  'evil.example:8443',
  '[::1]:6443',
  '.edgeadm',
  'hello',
  'é',
  '\uff0f',
  'api',
  'v1',
  'pods',
  'x=1',
  '&',
);
const hostileSuffix = fc.array(hostilePiece, { maxLength: 10 }).map((pieces) => pieces.join(''));

describe('parseProxyUrl', () => {
  it('splits the cluster name from the API path', () => {
    expect(parseProxyUrl('/clusters/store-1/api/v1/pods?watch=1')).toEqual({
      cluster: 'store-1',
      path: '/api/v1/pods?watch=1',
    });
    expect(parseProxyUrl('/clusters/store-1')).toEqual({ cluster: 'store-1', path: '/' });
    expect(parseProxyUrl('/clusters/store-1?timeout=32s')).toEqual({ cluster: 'store-1', path: '/?timeout=32s' });
  });

  it('refuses what is not a cluster URL', () => {
    expect(parseProxyUrl('/hub/v1/clusters')).toBeUndefined();
    expect(parseProxyUrl('/clusters/Bad_Name/api')).toBeUndefined();
    expect(parseProxyUrl('/clusters/../etc')).toBeUndefined();
  });

  it('takes as cluster names the DNS labels the hub registers, at most 63 characters', () => {
    const longest = 'a'.repeat(63);
    expect(parseProxyUrl(`/clusters/${longest}/api`)).toEqual({ cluster: longest, path: '/api' });
    expect(parseProxyUrl(`/clusters/${longest}a/api`)).toBeUndefined();
    expect(parseProxyUrl('/clusters/-dev/api')).toBeUndefined();
    expect(parseProxyUrl('/clusters//api')).toBeUndefined();
  });

  it.each([
    ['//127.0.0.1:22/steal-me', /empty segment/],
    ['/\\127.0.0.1:22/steal-me', /backslash/],
    ['/..//127.0.0.1:22/', /segment/],
    ['/api/v1/../../version', /"\.\." segment/],
    ['/api/v1/%2e%2e/x', /"\.\." segment/],
    ['/api/v1/namespaces%2fkube-system', /encoded/],
    ['/.edgeadm/hello', /\/\.edgeadm\//],
    ['/.edgeadm/refuse', /\/\.edgeadm\//],
    ['/.EDGEADM/welcome', /\/\.edgeadm\//],
  ])('refuses %s, which is not an API path, before anything is forwarded', (suffix, why) => {
    const target = parseProxyUrl(`/clusters/dev${suffix}`);
    expect(target).toMatchObject({ cluster: 'dev', refusal: expect.stringMatching(why) });
    expect(target).not.toHaveProperty('path');
  });

  it('answers refusals as a Kubernetes Status that carries the edgeadm code', () => {
    expect(JSON.parse(kubeStatus(400, 'no', BAD_PROXY_PATH_CODE))).toMatchObject({
      kind: 'Status',
      reason: 'BadRequest',
      code: 400,
      details: { causes: [{ reason: 'E_HUB_PROXY_PATH' }] },
    });
  });

  it('forwards a generated path only as itself, only when it is an API path, and never to another origin', () => {
    fc.assert(
      fc.property(hostileSuffix, (suffix) => {
        const url = `/clusters/dev${suffix}`;
        const target = parseProxyUrl(url);
        if (target === undefined || target.refusal !== undefined) return;
        // The path is the rest of the URL after the cluster name, byte for byte ("/" added before a bare query).
        const rest = url.slice(`/clusters/${target.cluster}`.length);
        expect(target.path).toBe(rest === '' || rest.startsWith('?') ? `/${rest}` : rest);
        expect(parseApiPath(target.path).ok).toBe(true);
        // Whatever reader resolves it against the API server stays at the API server.
        expect(new URL(target.path, ORIGIN).origin).toBe(ORIGIN);
        expect(target.path.toLowerCase().startsWith('/.edgeadm/')).toBe(false);
      }),
      { numRuns: 5000 },
    );
  });
});
