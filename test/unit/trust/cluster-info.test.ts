import { describe, expect, it } from 'vitest';
import {
  CLUSTER_INFO_PATH,
  clusterInfoConfigMap,
  jwsSignatureKey,
  parseClusterInfoResponse,
  signClusterInfoData,
  verifyClusterInfo,
} from '../../../src/trust/cluster-info.js';
import { computeDetachedSignature, isDetachedSignatureValid } from '../../../src/trust/jws.js';

const token = { id: 'abcdef', secret: '0123456789abcdef' };
const other = { id: 'zyxwvu', secret: 'fedcba9876543210' };
const kubeconfig = 'apiVersion: v1\nkind: Config\n';

function errorOf(fn: () => unknown): { code: string; message: string } {
  try {
    fn();
  } catch (error) {
    return error as { code: string; message: string };
  }
  throw new Error('expected an error');
}

describe('clusterInfoConfigMap', () => {
  it('is kube-public/cluster-info with the kubeconfig and one signature per token', () => {
    const configMap = clusterInfoConfigMap({ kubeconfig, tokens: [token, other] });
    expect(CLUSTER_INFO_PATH).toBe('/api/v1/namespaces/kube-public/configmaps/cluster-info');
    expect(configMap).toMatchObject({ apiVersion: 'v1', kind: 'ConfigMap' });
    expect(configMap.metadata).toEqual({ name: 'cluster-info', namespace: 'kube-public' });
    expect(Object.keys(configMap.data).sort()).toEqual([
      'jws-kubeconfig-abcdef',
      'jws-kubeconfig-zyxwvu',
      'kubeconfig',
    ]);
    expect(configMap.data['jws-kubeconfig-abcdef']).toBe(
      computeDetachedSignature({ content: kubeconfig, tokenId: token.id, tokenSecret: token.secret }),
    );
    expect(
      isDetachedSignatureValid({
        signature: configMap.data[jwsSignatureKey(other.id)] as string,
        content: kubeconfig,
        tokenId: other.id,
        tokenSecret: other.secret,
      }),
    ).toBe(true);
  });
});

describe('signClusterInfoData', () => {
  it('drops signatures of tokens that no longer sign and keeps other keys', () => {
    const signed = signClusterInfoData({ kubeconfig, 'jws-kubeconfig-old000': 'stale', note: 'kept' }, [token]);
    expect(Object.keys(signed).sort()).toEqual(['jws-kubeconfig-abcdef', 'kubeconfig', 'note']);
  });

  it('refuses data without a kubeconfig', () => {
    expect(errorOf(() => signClusterInfoData({}, [token]))).toMatchObject({
      code: 'E_CLUSTER_INFO_INVALID',
      message: 'cluster-info has no kubeconfig key to sign',
    });
  });

  it('signs for no token when given none', () => {
    expect(clusterInfoConfigMap({ kubeconfig }).data).toStrictEqual({ kubeconfig });
  });
});

describe('verifyClusterInfo', () => {
  it('returns the kubeconfig when the token signed it', () => {
    expect(verifyClusterInfo(clusterInfoConfigMap({ kubeconfig, tokens: [token] }).data, token)).toBe(kubeconfig);
  });

  it("refuses a wrong secret in kubeadm's words", () => {
    const data = clusterInfoConfigMap({ kubeconfig, tokens: [token] }).data;
    expect(errorOf(() => verifyClusterInfo(data, { id: token.id, secret: 'ffffffffffffffff' }))).toMatchObject({
      code: 'E_DISCOVERY_JWS_INVALID',
      message: "failed to verify JWS signature of received cluster info object, can't trust this API Server",
    });
  });

  it('refuses a kubeconfig changed after signing', () => {
    const data = clusterInfoConfigMap({ kubeconfig, tokens: [token] }).data;
    expect(errorOf(() => verifyClusterInfo({ ...data, kubeconfig: `${kubeconfig} ` }, token)).code).toBe(
      'E_DISCOVERY_JWS_INVALID',
    );
  });

  it('refuses an empty signature as an invalid or expired token', () => {
    expect(errorOf(() => verifyClusterInfo({ kubeconfig, 'jws-kubeconfig-abcdef': '' }, token))).toMatchObject({
      code: 'E_DISCOVERY_TOKEN_EXPIRED',
      message:
        'token id "abcdef" is invalid for this cluster or it has expired. Use "edgeadm token create" on the control-plane node to create a new valid token',
    });
  });

  it('refuses an empty kubeconfig, and a missing signature, before any signature check', () => {
    const signedEmpty = {
      kubeconfig: '',
      'jws-kubeconfig-abcdef': computeDetachedSignature({ content: '', tokenId: token.id, tokenSecret: token.secret }),
    };
    expect(errorOf(() => verifyClusterInfo(signedEmpty, token)).code).toBe('E_DISCOVERY_NO_KUBECONFIG');
    const signedForOther = clusterInfoConfigMap({ kubeconfig, tokens: [other] }).data;
    expect(errorOf(() => verifyClusterInfo(signedForOther, token)).code).toBe('E_DISCOVERY_TOKEN_EXPIRED');
  });

  it('says what to check when the signature does not verify', () => {
    const data = clusterInfoConfigMap({ kubeconfig, tokens: [token] }).data;
    expect(errorOf(() => verifyClusterInfo(data, { id: token.id, secret: 'ffffffffffffffff' }))).toMatchObject({
      hints: [
        'The token secret does not match the one the cluster signed with: check for a typo in --token, or create a new token on the control plane.',
        'If the token is right, something between this host and the API server changed the answer.',
      ],
    });
  });

  it('refuses cluster-info without a kubeconfig', () => {
    expect(errorOf(() => verifyClusterInfo({ 'jws-kubeconfig-abcdef': 'x' }, token))).toMatchObject({
      code: 'E_DISCOVERY_NO_KUBECONFIG',
      message:
        "there is no kubeconfig key in the cluster-info ConfigMap. This API Server isn't set up for token bootstrapping, can't connect",
    });
  });
});

describe('parseClusterInfoResponse', () => {
  it('reads the string data of a ConfigMap and tolerates a ConfigMap without data', () => {
    expect(parseClusterInfoResponse(JSON.stringify({ kind: 'ConfigMap', data: { kubeconfig, n: 1 } }))).toEqual({
      kubeconfig,
    });
    expect(parseClusterInfoResponse(JSON.stringify({ kind: 'ConfigMap' }))).toEqual({});
  });

  it('refuses a body that is not JSON or has no data map', () => {
    expect(errorOf(() => parseClusterInfoResponse('<html>')).code).toBe('E_DISCOVERY_BAD_RESPONSE');
    expect(errorOf(() => parseClusterInfoResponse('{"data":[1]}')).code).toBe('E_DISCOVERY_BAD_RESPONSE');
    for (const body of ['{"data":"kubeconfig"}', '{"data":7}']) {
      expect(
        errorOf(() => parseClusterInfoResponse(body)),
        body,
      ).toMatchObject({
        code: 'E_DISCOVERY_BAD_RESPONSE',
        message: 'the cluster-info ConfigMap response has no data map',
      });
    }
    // A JSON null is a ConfigMap without data, as the API would never send but a proxy might.
    expect(parseClusterInfoResponse('null')).toEqual({});
    expect(errorOf(() => parseClusterInfoResponse('<html>')).message).toMatch(
      /^the cluster-info ConfigMap response is not JSON: /,
    );
  });
});
