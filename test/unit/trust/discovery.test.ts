import { describe, expect, it } from 'vitest';
import { discoverClusterInfo, parseDiscoveryEndpoint, type DiscoveryOptions } from '../../../src/trust/discovery.js';

/** Nothing listens here: an option error must be reported before any request. */
const UNREACHABLE = '127.0.0.1:1';
const PIN = `sha256:${'ab'.repeat(32)}`;

async function failure(options: Partial<DiscoveryOptions>): Promise<Record<string, unknown>> {
  try {
    await discoverClusterInfo({
      endpoint: UNREACHABLE,
      token: 'abcdef.0123456789abcdef',
      caCertHashes: [PIN],
      // Long enough that reaching the network would time the test out.
      timeoutMs: 600_000,
      ...options,
    });
  } catch (error) {
    return error as Record<string, unknown>;
  }
  throw new Error('expected discovery to fail');
}

describe('parseDiscoveryEndpoint', () => {
  it.each([
    ['10.0.0.10:6443', { host: '10.0.0.10', port: 6443 }],
    ['api.site-42.example:443', { host: 'api.site-42.example', port: 443 }],
    ['[fd00::10]:6443', { host: 'fd00::10', port: 6443 }],
    ['localhost:1', { host: 'localhost', port: 1 }],
  ])('reads %j', (endpoint, target) => {
    expect(parseDiscoveryEndpoint(endpoint)).toEqual(target);
  });

  it.each([
    ['10.0.0.10', 'expected host:port'],
    ['https://10.0.0.10:6443', 'expected host:port'],
    ['fd00::10:6443', 'expected host:port'],
    ['[10.0.0.1]:6443', 'the part in brackets is not an IPv6 address'],
    ['10.0.0.10:0', 'port 0 is out of range'],
    ['10.0.0.10:70000', 'port 70000 is out of range'],
    ['bad_host:6443', 'the host is neither an IP address nor a DNS name'],
  ])('refuses %j: %s', (endpoint, why) => {
    expect(() => parseDiscoveryEndpoint(endpoint)).toThrow(
      expect.objectContaining({
        code: 'E_DISCOVERY_ENDPOINT_INVALID',
        exitCode: 3,
        message: `invalid API server endpoint ${JSON.stringify(endpoint)}: ${why}`,
      }),
    );
  });
});

describe('discoverClusterInfo option checks (before any request)', () => {
  it('refuses to run with neither a pin nor the unsafe flag, explaining both', async () => {
    const error = await failure({ caCertHashes: [] });
    expect(error.code).toBe('E_DISCOVERY_NO_PIN');
    expect(error.exitCode).toBe(3);
    expect(error.message).toContain('using token-based discovery without --discovery-token-ca-cert-hash can be unsafe');
    const hints = (error.hints as string[]).join('\n');
    expect(hints).toContain('--discovery-token-ca-cert-hash sha256:<hash>');
    expect(hints).toContain('edgeadm certs ca-hash');
    expect(hints).toContain('--discovery-token-unsafe-skip-ca-verification');
  });

  it("wraps a malformed pin in kubeadm's words", async () => {
    const error = await failure({ caCertHashes: [PIN, 'sha256:0011223344'] });
    expect(error.code).toBe('E_CA_PIN_INVALID');
    expect(error.exitCode).toBe(3);
    expect(error.message).toBe(
      'invalid discovery token CA certificate hash: invalid hash "sha256:0011223344", expected a 32 byte SHA-256 hash, found 5 bytes',
    );
  });

  it('refuses a malformed token', async () => {
    const error = await failure({ token: 'abcdef.0123456789ABCDEF' });
    expect(error.code).toBe('E_TOKEN_INVALID');
    expect(error.exitCode).toBe(3);
  });

  it('refuses a token object that holds no well-formed token, as a string would be', async () => {
    const error = await failure({ token: { id: 'ABCDEF', secret: '0123456789abcdef' } });
    expect(error.code).toBe('E_TOKEN_INVALID');
  });

  it('refuses a malformed endpoint and a non-positive timeout', async () => {
    expect((await failure({ endpoint: '10.0.0.10' })).code).toBe('E_DISCOVERY_ENDPOINT_INVALID');
    expect((await failure({ timeoutMs: 0 })).code).toBe('E_DISCOVERY_TIMEOUT_INVALID');
  });
});
