import { describe, expect, it } from 'vitest';
import { hubRefusalOf } from '../../../src/hub-client/cluster-probe.js';
import { kubeStatus } from '../../../src/hub/http/http-replies.js';

describe('hubRefusalOf (newcomer point 13)', () => {
  it('reads the hub’s own refusal from its Status', () => {
    expect(hubRefusalOf(403, kubeStatus(403, 'cluster "store-999" is not registered', 'E_HUB_FORBIDDEN'))).toEqual({
      status: 403,
      code: 'E_HUB_FORBIDDEN',
      message: 'cluster "store-999" is not registered',
    });
  });

  it('leaves successes and the cluster’s own answers to kubectl', () => {
    expect(hubRefusalOf(200, '{"major":"1"}')).toBeUndefined();
    expect(hubRefusalOf(403, kubeStatus(403, 'forbidden: User "alice" cannot get path "/version"'))).toBeUndefined();
    expect(hubRefusalOf(502, 'not json')).toBeUndefined();
  });
});
