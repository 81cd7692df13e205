import { describe, expect, it } from 'vitest';
import { parseInitRequest, type InitFlagValues } from '../../../src/cluster/init-request.js';
import { parseResetRequest } from '../../../src/cluster/reset-request.js';

function parse(flags: InitFlagValues, extra: { configText?: string; only?: string } = {}) {
  return parseInitRequest({
    flags: { 'install-pkg-path': './pkg.tar.gz', ...flags },
    userKubeconfigPath: '/home/op/.kube/config',
    ...(extra.configText === undefined ? {} : { config: { configText: extra.configText, configFile: 'init.yaml' } }),
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

describe('parseInitRequest', () => {
  it('gives the layers below parsed types: a BootstrapToken and milliseconds', () => {
    const request = parse({
      token: 'abcdef.0123456789abcdef',
      'token-ttl': '2h',
      'control-plane-endpoint': 'cp.example',
    });
    expect(request).toMatchObject({
      distribution: 'k3s',
      installPackage: './pkg.tar.gz',
      requestedToken: { id: 'abcdef', secret: '0123456789abcdef' },
      tokenTtlMs: 7_200_000,
      controlPlaneEndpoint: 'cp.example',
      podCidr: '10.42.0.0/16',
      userKubeconfigPath: '/home/op/.kube/config',
      run: { isDryRun: false, skipPhases: [] },
    });
  });

  it('keeps --token-ttl 0 (a token for ever), dual-stack networks and --skip-kubeconfig', () => {
    const request = parse({
      'token-ttl': '0',
      'pod-network-cidr': '10.42.0.0/16,fd00:42::/56',
      'skip-kubeconfig': true,
    });
    expect(request.tokenTtlMs).toBe(0);
    expect(request.podCidr).toBe('10.42.0.0/16,fd00:42::/56');
    expect(request.userKubeconfigPath).toBeUndefined();
  });

  it.each([
    ['a malformed token', { token: 'abcdef.0123456789ABCDEF' }, 'E_TOKEN_INVALID'],
    ['a malformed token lifetime', { 'token-ttl': '1 day' }, 'E_DURATION_INVALID'],
    ['a negative token lifetime', { 'token-ttl': '-1h' }, 'E_DURATION_INVALID'],
    [
      'a control-plane endpoint with a bad port',
      { 'control-plane-endpoint': 'cp:99999' },
      'E_DISCOVERY_ENDPOINT_INVALID',
    ],
    ['an advertise address that is a name', { 'apiserver-advertise-address': 'cp.example' }, 'E_FLAG_INVALID'],
    ['a Service network without a prefix', { 'service-cidr': '10.43.0.0' }, 'E_FLAG_INVALID'],
    ['no package', { 'install-pkg-path': undefined }, 'E_NO_PACKAGE'],
    ['--upload-certs without an endpoint', { 'upload-certs': true }, 'E_FLAG_MISSING'],
    ['a malformed certificate key', { 'certificate-key': 'xyz' }, 'E_CERTIFICATE_KEY_INVALID'],
    ['an unknown phase to skip', { 'skip-phases': ['nope'] }, 'E_UNKNOWN_PHASE'],
  ] as Array<[string, InitFlagValues, string]>)('refuses %s with %s', (_name, flags, code) => {
    expect(codeOf(() => parse(flags))).toBe(code);
  });

  it('refuses a config file token of the wrong type as a config mistake', () => {
    const configText = ['apiVersion: edgeadm.io/v1alpha1', 'kind: InitConfiguration', 'token: 12345'].join('\n');
    expect(codeOf(() => parse({}, { configText }))).toBe('E_CONFIG_INVALID');
  });
});

describe('the trusted keys of the install package (issue #39)', () => {
  const config = 'apiVersion: edgeadm.io/v1alpha1\nkind: InitConfiguration\ntrustedKeys: [file.pub]\n';

  it('come from --trusted-key, else from trustedKeys in the config file; none pinned when neither says', () => {
    expect(parse({}).trustedKeyFiles).toEqual([]);
    expect(parse({}, { configText: config }).trustedKeyFiles).toEqual(['file.pub']);
    // A flag given wins over the file, as for every setting.
    expect(parse({ 'trusted-key': ['a.pub', 'b.pub'] }, { configText: config }).trustedKeyFiles).toEqual([
      'a.pub',
      'b.pub',
    ]);
  });

  it('refuses trustedKeys that is not a list as a config mistake', () => {
    const bad = 'apiVersion: edgeadm.io/v1alpha1\nkind: InitConfiguration\ntrustedKeys: file.pub\n';
    expect(codeOf(() => parse({}, { configText: bad }))).toBe('E_CONFIG_INVALID');
  });
});

describe('parseResetRequest', () => {
  it('needs --force or --dry-run, a known distribution and known phases', () => {
    expect(codeOf(() => parseResetRequest({}))).toBe('E_RESET_NOT_CONFIRMED');
    expect(codeOf(() => parseResetRequest({ force: true, distribution: 'microk8s' }))).toBe('E_DISTRIBUTION_UNKNOWN');
    expect(codeOf(() => parseResetRequest({ force: true, 'skip-phases': ['nope'] }))).toBe('E_UNKNOWN_PHASE');
    expect(parseResetRequest({ 'dry-run': true, 'skip-phases': ['cleanup-network,remove-state'] })).toEqual({
      isDryRun: true,
      isForced: false,
      skipPhases: ['cleanup-network', 'remove-state'],
    });
  });

  it('parses --autonomy-duration with --enable-edge (the cluster default for edge nodes), and refuses it otherwise', () => {
    expect(parse({ 'enable-edge': true, 'autonomy-duration': '30m' }).autonomyDuration).toEqual({
      kind: 'seconds',
      seconds: 1_800,
    });
    expect(codeOf(() => parse({ 'autonomy-duration': '30m' }))).toBe('E_FLAG_MISSING');
    expect(codeOf(() => parse({ 'enable-edge': true, 'autonomy-duration': '500ms' }))).toBe('E_DURATION_INVALID');
  });
});
