/** register-cloud's request (src/registration/register-request.ts): parsed and checked with no I/O. */
import { describe, expect, it } from 'vitest';
import { parseRegisterRequest, type RegisterInput } from '../../../src/registration/register-request.js';

const PIN = `sha256:${'a'.repeat(64)}`;
const input: RegisterInput = {
  hub: 'hub-1.example:9443, hub-2.example:9443',
  token: 'abcdef.0123456789abcdef',
  caCertHashes: [PIN],
  cluster: 'shop-1',
  labels: 'env=prod,region=eu',
  kubeconfig: '/etc/edge/admin.yaml',
  createServiceAccount: true,
  discoveryTimeout: '2m',
};

describe('the register-cloud request', () => {
  it('carries parsed values: the token, the pins, the timeout, the labels and every hub address', () => {
    const request = parseRegisterRequest(input);
    expect(request).toMatchObject({
      cluster: 'shop-1',
      labels: { env: 'prod', region: 'eu' },
      hubAddresses: ['https://hub-1.example:9443', 'https://hub-2.example:9443'],
      discoveryEndpoint: 'hub-1.example:9443',
      kubeconfig: '/etc/edge/admin.yaml',
      createServiceAccount: true,
    });
    expect(request.discovery.token).toEqual({ id: 'abcdef', secret: '0123456789abcdef' });
    expect(request.discovery.caPins).toEqual([PIN]);
    expect(request.discovery.timeoutMs).toBe(120_000);
    expect(
      parseRegisterRequest({ ...input, labels: { env: 'prod' }, discoveryTimeout: 5_000 }).discovery.timeoutMs,
    ).toBe(5_000);
  });

  it('takes the kubeconfig from KUBECONFIG when none is given', () => {
    const { kubeconfig: _given, ...rest } = input;
    expect(parseRegisterRequest({ ...rest, env: { KUBECONFIG: '/root/edge.yaml' } }).kubeconfig).toBe(
      '/root/edge.yaml',
    );
  });

  it("refuses each malformed input with its code, in the hub's words", () => {
    const code = (change: Partial<RegisterInput>): string | undefined => {
      try {
        parseRegisterRequest({ ...input, ...change });
        return undefined;
      } catch (error) {
        return (error as { code?: string }).code;
      }
    };
    expect(code({ token: 'BADTOKEN' })).toBe('E_TOKEN_INVALID');
    expect(code({ caCertHashes: ['sha256:abc'] })).toBe('E_CA_PIN_INVALID');
    expect(code({ caCertHashes: [] })).toBe('E_DISCOVERY_NO_PIN');
    expect(code({ cluster: 'Shop_1' })).toBe('E_HUB_CLUSTER_NAME');
    expect(code({ labels: { 'bad key': 'x' } })).toBe('E_LABELS_INVALID');
    expect(code({ discoveryTimeout: '5 minutes' })).toBe('E_DURATION_INVALID');
    expect(code({ hub: 'a:1,,b:2' })).toBe('E_HUB_ADDRESS');
    expect(code({ proxy: 'https://proxy.local:3128' })).toBe('E_PROXY_URL');
    expect(() => parseRegisterRequest({ ...input, caCertHashes: [] })).toThrow(/--hub-ca-cert-hash/);
  });
});
