import { describe, expect, it } from 'vitest';
import { parseProxyUrl } from '../../../src/hub/kube-proxy.js';

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
});
