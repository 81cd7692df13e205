import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseJoinRequest, type JoinFlagValues } from '../../../src/cluster/join-request.js';
import { isEdgeadmError } from '../../../src/errors.js';

const TOKEN = 'abcdef.0123456789abcdef';
const PIN = `sha256:${'AB'.repeat(32)}`;

function parse(flags: JoinFlagValues, extra: { endpoint?: string; configText?: string; only?: string } = {}) {
  return parseJoinRequest({
    endpoint: extra.endpoint ?? '10.0.0.10:6443',
    flags: {
      token: TOKEN,
      'discovery-token-ca-cert-hash': [PIN],
      'install-pkg-path': './pkg.tar.gz',
      ...flags,
    },
    ...(extra.configText === undefined ? {} : { config: { configText: extra.configText, configFile: 'join.yaml' } }),
    ...(extra.only === undefined ? {} : { only: extra.only }),
  });
}

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    return (error as { code?: string }).code;
  }
  return undefined;
}

describe('parseJoinRequest', () => {
  it('gives the layers below parsed types: a BootstrapToken, canonical pins, a split endpoint, milliseconds', () => {
    const request = parse({ 'discovery-timeout': '1m30s', 'node-labels': 'zone=a', 'skip-phases': ['labels'] });
    expect(request.discovery).toEqual({
      endpoint: { host: '10.0.0.10', port: 6443 },
      token: { id: 'abcdef', secret: '0123456789abcdef' },
      caPins: [`sha256:${'ab'.repeat(32)}`],
      isUnsafeSkipCaVerification: false,
      timeoutMs: 90_000,
    });
    expect(request).toMatchObject({
      distribution: 'k3s',
      installPackage: './pkg.tar.gz',
      nodeLabels: { zone: 'a' },
      enableEdge: false,
      isControlPlane: false,
      run: { isDryRun: false, ignorePreflightErrors: [], skipPhases: ['labels'] },
    });
  });

  it('takes what the flags leave out from the config file, and the flags win', () => {
    const configText = [
      'apiVersion: edgeadm.io/v1alpha1',
      'kind: JoinConfiguration',
      'endpoint: 10.0.0.99:6443',
      'discoveryTimeout: 10s',
      'nodeLabels: {site: north}',
    ].join('\n');
    const request = parse({}, { configText, endpoint: '10.0.0.10:6443' });
    expect(request.discovery.endpoint).toEqual({ host: '10.0.0.10', port: 6443 });
    expect(request.discovery.timeoutMs).toBe(10_000);
    expect(request.nodeLabels).toEqual({ site: 'north' });
  });

  it.each([
    ['a malformed token', { token: 'BADTOKEN' }, 'E_TOKEN_INVALID'],
    ['a malformed pin', { 'discovery-token-ca-cert-hash': ['sha256:abc'] }, 'E_CA_PIN_INVALID'],
    ['no pin', { 'discovery-token-ca-cert-hash': [] }, 'E_DISCOVERY_NO_PIN'],
    ['a malformed timeout', { 'discovery-timeout': '5 minutes' }, 'E_DURATION_INVALID'],
    ['a zero timeout', { 'discovery-timeout': '0s' }, 'E_DURATION_INVALID'],
    ['no package', { 'install-pkg-path': undefined }, 'E_NO_PACKAGE'],
    ['an unknown distribution', { distribution: 'microk8s' }, 'E_DISTRIBUTION_UNKNOWN'],
    ['a label Kubernetes refuses', { 'node-labels': 'a=b c' }, 'E_FLAG_INVALID'],
    ['a node name Kubernetes refuses', { 'node-name': 'Node_1' }, 'E_FLAG_INVALID'],
    ['--control-plane without a key', { 'control-plane': true }, 'E_FLAG_MISSING'],
    ['a malformed key', { 'control-plane': true, 'certificate-key': 'abc' }, 'E_CERTIFICATE_KEY_INVALID'],
    [
      '--control-plane with --enable-edge',
      { 'control-plane': true, 'certificate-key': 'a'.repeat(64), 'enable-edge': true },
      'E_FLAG_CONFLICT',
    ],
    ['an unknown phase to skip', { 'skip-phases': ['no-such-phase'] }, 'E_UNKNOWN_PHASE'],
  ] as Array<[string, JoinFlagValues, string]>)('refuses %s with %s', (_name, flags, code) => {
    expect(codeOf(() => parse(flags))).toBe(code);
  });

  it('refuses a malformed endpoint, an unknown phase to run alone, and a config field of the wrong type', () => {
    expect(codeOf(() => parse({}, { endpoint: '10.0.0.10' }))).toBe('E_DISCOVERY_ENDPOINT_INVALID');
    expect(codeOf(() => parse({}, { only: 'no-such-phase' }))).toBe('E_UNKNOWN_PHASE');
    const configText = ['apiVersion: edgeadm.io/v1alpha1', 'kind: JoinConfiguration', 'caCertHashes: 12'].join('\n');
    expect(codeOf(() => parse({ 'discovery-token-ca-cert-hash': undefined }, { configText }))).toBe('E_CONFIG_INVALID');
  });

  it('reports the trust mistake first, whatever else is wrong later', () => {
    expect(
      codeOf(() =>
        parse({
          token: 'BADTOKEN',
          'install-pkg-path': undefined,
          distribution: 'microk8s',
          'skip-phases': ['no-such-phase'],
        }),
      ),
    ).toBe('E_TOKEN_INVALID');
  });

  it('refuses any string that is not a token with E_TOKEN_INVALID, never another error', () => {
    fc.assert(
      fc.property(
        fc.string().filter((text) => !/^[a-z0-9]{6}\.[a-z0-9]{16}$/.test(text) && text !== ''),
        (token) => {
          try {
            parse({ token });
          } catch (error) {
            return isEdgeadmError(error) && error.code === 'E_TOKEN_INVALID';
          }
          return false;
        },
      ),
    );
  });

  it('parses --autonomy-duration with --enable-edge into seconds (0: for ever), and refuses it otherwise', () => {
    expect(parse({ 'enable-edge': true, 'autonomy-duration': '72h' }).autonomyDuration).toEqual({
      kind: 'seconds',
      seconds: 259_200,
    });
    expect(parse({ 'enable-edge': true, 'autonomy-duration': '0' }).autonomyDuration).toEqual({ kind: 'forever' });
    expect(parse({ 'enable-edge': true }).autonomyDuration).toBeUndefined();
    expect(codeOf(() => parse({ 'autonomy-duration': '1h' }))).toBe('E_FLAG_MISSING');
    for (const bad of ['-1h', '1.5s', 'a day']) {
      expect(codeOf(() => parse({ 'enable-edge': true, 'autonomy-duration': bad }))).toBe('E_DURATION_INVALID');
    }
  });
});
