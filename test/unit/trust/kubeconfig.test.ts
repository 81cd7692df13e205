import fc from 'fast-check';
import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import {
  readKubeconfigCluster,
  renderBootstrapKubeconfig,
  renderClusterInfoKubeconfig,
} from '../../../src/trust/kubeconfig.js';

const caPem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
const caData = Buffer.from(caPem).toString('base64');

describe('renderClusterInfoKubeconfig', () => {
  it('writes one unnamed cluster and nothing else, in the layout Kubernetes tools write', () => {
    expect(renderClusterInfoKubeconfig({ server: 'https://10.0.0.10:6443', caPem })).toBe(
      [
        'apiVersion: v1',
        'clusters:',
        '- cluster:',
        `    certificate-authority-data: ${caData}`,
        '    server: https://10.0.0.10:6443',
        '  name: ""',
        'contexts: null',
        'current-context: ""',
        'kind: Config',
        'preferences: {}',
        'users: null',
        '',
      ].join('\n'),
    );
  });

  it('reads back to the same server and CA', () => {
    const text = renderClusterInfoKubeconfig({ server: 'https://[fd00::10]:6443', caPem });
    expect(readKubeconfigCluster(text, 'x')).toEqual({ name: '', server: 'https://[fd00::10]:6443', caPem });
  });
});

describe('renderBootstrapKubeconfig', () => {
  it('writes the TLS-bootstrap shape: cluster kubernetes, user tls-bootstrap-token-user with the token', () => {
    const text = renderBootstrapKubeconfig({
      server: 'https://10.0.0.10:6443',
      caPem,
      token: 'abcdef.0123456789abcdef',
    });
    expect(load(text)).toEqual({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        { name: 'kubernetes', cluster: { server: 'https://10.0.0.10:6443', 'certificate-authority-data': caData } },
      ],
      contexts: [
        {
          name: 'tls-bootstrap-token-user@kubernetes',
          context: { cluster: 'kubernetes', user: 'tls-bootstrap-token-user' },
        },
      ],
      'current-context': 'tls-bootstrap-token-user@kubernetes',
      preferences: {},
      users: [{ name: 'tls-bootstrap-token-user', user: { token: 'abcdef.0123456789abcdef' } }],
    });
    expect(readKubeconfigCluster(text, 'x')).toEqual({ name: 'kubernetes', server: 'https://10.0.0.10:6443', caPem });
  });

  it('quotes a token that YAML would otherwise read as a number', () => {
    const token = '123456.1234567890123456';
    const text = renderBootstrapKubeconfig({ server: 'https://h:1', caPem, token });
    expect(text).toContain(`token: "${token}"`);
    expect((load(text) as { users: Array<{ user: { token: unknown } }> }).users[0]?.user.token).toBe(token);
  });
});

describe('readKubeconfigCluster', () => {
  it("uses the current context's cluster when there is no unnamed one", () => {
    const text = [
      'clusters:',
      '- name: other',
      '  cluster: {server: "https://other:6443", certificate-authority-data: "eA=="}',
      '- name: main',
      `  cluster: {server: "https://main:6443", certificate-authority-data: "${caData}"}`,
      'contexts:',
      '- name: ctx',
      '  context: {cluster: main}',
      'current-context: ctx',
    ].join('\n');
    expect(readKubeconfigCluster(text, 'x')).toMatchObject({ name: 'main', server: 'https://main:6443', caPem });
  });

  it.each([
    ['a: [', "couldn't parse the kubeconfig file in the cluster-info ConfigMap: "],
    ['- a list', "couldn't parse the kubeconfig file in the cluster-info ConfigMap: it is not a YAML mapping"],
    ['clusters: []', 'malformed kubeconfig in the cluster-info ConfigMap: it has no unnamed cluster'],
    [
      'clusters:\n- name: ""\n  cluster: {server: "http://x:1", certificate-authority-data: "eA=="}',
      'malformed kubeconfig in the cluster-info ConfigMap: the cluster has no https:// server',
    ],
    [
      'clusters:\n- name: ""\n  cluster: {server: "https://x:1"}',
      'malformed kubeconfig in the cluster-info ConfigMap: the cluster has no certificate-authority-data',
    ],
  ])('refuses %j', (text, message) => {
    expect(() => readKubeconfigCluster(text, 'the cluster-info ConfigMap')).toThrow(
      expect.objectContaining({ code: 'E_KUBECONFIG_INVALID', message: expect.stringContaining(message) }),
    );
  });
});

/** The cluster entry of a kubeconfig loaded back, for round-trip checks. */
function loadedCluster(text: string): { server: unknown; 'certificate-authority-data': unknown } {
  return (load(text) as { clusters: Array<{ cluster: { server: unknown; 'certificate-authority-data': unknown } }> })
    .clusters[0]!.cluster;
}

describe('rendered kubeconfigs read back to exactly the values given', () => {
  // Values whose first or last characters mean something to YAML: written plain, they would read as
  // something else (a tag, an alias, a comment, a nested mapping, a list) or not at all.
  it.each(['!tag', '*alias', '&anchor', '#comment', '- item', '1: b', 'a: b', 'https://x:1 #c', 'ab\n- c', '%x'])(
    '%j',
    (value) => {
      const text = renderClusterInfoKubeconfig({ server: value, caPem });
      expect(loadedCluster(text).server).toBe(value);
      const bootstrap = renderBootstrapKubeconfig({ server: 'https://h:1', caPem, token: value });
      expect((load(bootstrap) as { users: Array<{ user: { token: unknown } }> }).users[0]?.user.token).toBe(value);
    },
  );

  it('for any text', () => {
    const text = fc.string({ unit: 'binary', maxLength: 40 });
    fc.assert(
      fc.property(text, text, (server, token) => {
        const bootstrap = load(renderBootstrapKubeconfig({ server, caPem, token })) as {
          users: Array<{ user: { token: unknown } }>;
        };
        return (
          loadedCluster(renderClusterInfoKubeconfig({ server, caPem })).server === server &&
          bootstrap.users[0]?.user.token === token
        );
      }),
      { numRuns: 100 },
    );
  });

  it('plain only when plain is unambiguous: a URL and base64 stay unquoted, everything else is quoted', () => {
    const text = renderClusterInfoKubeconfig({ server: 'https://[fd00::10]:6443/path@x%2F+y=z', caPem });
    expect(text).toContain(`    certificate-authority-data: ${caData}\n`);
    expect(text).toContain('    server: https://[fd00::10]:6443/path@x%2F+y=z\n');
    expect(renderClusterInfoKubeconfig({ server: '1https://x', caPem })).toContain('    server: "1https://x"\n');
    expect(renderClusterInfoKubeconfig({ server: 'https://x:1 ', caPem })).toContain('    server: "https://x:1 "\n');
  });
});

describe('readKubeconfigCluster refuses what is not a kubeconfig, and says why', () => {
  const what = 'the cluster-info ConfigMap';
  const refusal = (text: string): unknown => {
    try {
      readKubeconfigCluster(text, what);
    } catch (error) {
      return error;
    }
    throw new Error('expected a refusal');
  };
  const noCluster = `malformed kubeconfig in ${what}: it has no unnamed cluster and no current context that names a cluster`;

  it("gives the YAML parser's own reason for text that is not YAML", () => {
    let parserMessage = '';
    try {
      load('a: [');
    } catch (error) {
      parserMessage = (error as Error).message;
    }
    expect(parserMessage).not.toBe('');
    expect(refusal('a: [')).toMatchObject({
      code: 'E_KUBECONFIG_INVALID',
      message: `couldn't parse the kubeconfig file in ${what}: ${parserMessage}`,
    });
  });

  it.each(['null', '~', 'just a string', '42', '- a\n- b'])('a document that is not a mapping: %j', (text) => {
    expect(refusal(text)).toMatchObject({
      code: 'E_KUBECONFIG_INVALID',
      message: `couldn't parse the kubeconfig file in ${what}: it is not a YAML mapping`,
    });
  });

  it.each([
    ['a cluster entry that is not a mapping', 'clusters:\n- name: ""\n  cluster: "https://x:1"'],
    ['a cluster entry that is null', 'clusters:\n- name: ""\n  cluster: null'],
    ['a current context that names no context', 'clusters:\n- cluster: {server: "https://x:1"}\ncurrent-context: none'],
    ['no current context, and a cluster without a name', 'clusters:\n- cluster: {server: "https://x:1"}'],
  ])('%s', (_, text) => {
    expect(refusal(text)).toMatchObject({ code: 'E_KUBECONFIG_INVALID', message: noCluster });
  });

  it.each([
    ['a server that is a list', '["https://x:1"]'],
    ['a server that only contains https://', '"http://evil.example/https://x:1"'],
    ['a server that is a number', '6443'],
  ])('%s', (_, server) => {
    const text = `clusters:\n- name: ""\n  cluster: {server: ${server}, certificate-authority-data: "${caData}"}`;
    expect(refusal(text)).toMatchObject({
      code: 'E_KUBECONFIG_INVALID',
      message: `malformed kubeconfig in ${what}: the cluster has no https:// server`,
    });
  });

  it.each(['""', '"   "', '"\\n"', '42'])('certificate-authority-data %s', (data) => {
    const text = `clusters:\n- name: ""\n  cluster: {server: "https://x:1", certificate-authority-data: ${data}}`;
    expect(refusal(text)).toMatchObject({
      code: 'E_KUBECONFIG_INVALID',
      message: `malformed kubeconfig in ${what}: the cluster has no certificate-authority-data`,
    });
  });
});

describe('readKubeconfigCluster finds the cluster as kubectl does', () => {
  const cluster = (name: string, server: string): string =>
    `- name: ${name}\n  cluster: {server: "${server}", certificate-authority-data: "${caData}"}`;

  it("takes the current context's cluster, not the first context's", () => {
    const text = [
      'clusters:',
      cluster('first', 'https://first:6443'),
      cluster('second', 'https://second:6443'),
      'contexts:',
      '- name: a',
      '  context: {cluster: first}',
      '- name: b',
      '  context: {cluster: second}',
      'current-context: b',
    ].join('\n');
    expect(readKubeconfigCluster(text, 'x')).toMatchObject({ name: 'second', server: 'https://second:6443' });
  });

  it('skips null entries and a context without a body', () => {
    const text = [
      'clusters:',
      '- null',
      cluster('main', 'https://main:6443'),
      'contexts:',
      '- null',
      '- name: empty',
      '- name: ctx',
      '  context: {cluster: main}',
      'current-context: ctx',
    ].join('\n');
    expect(readKubeconfigCluster(text, 'x')).toMatchObject({ name: 'main', server: 'https://main:6443' });
    expect(() =>
      readKubeconfigCluster(
        [
          'clusters:',
          cluster('main', 'https://main:6443'),
          'contexts:',
          '- name: empty',
          'current-context: empty',
        ].join('\n'),
        'x',
      ),
    ).toThrow(expect.objectContaining({ code: 'E_KUBECONFIG_INVALID' }));
    expect(
      readKubeconfigCluster(['clusters:', '- null', cluster('""', 'https://unnamed:6443')].join('\n'), 'x'),
    ).toMatchObject({
      name: '',
      server: 'https://unnamed:6443',
    });
  });

  it('reads a null name as the empty name, as the Go structures of kubectl read it', () => {
    const text = [
      'clusters:',
      cluster('null', 'https://nameless:6443'),
      'contexts:',
      '- name: ctx',
      '  context: {cluster: null}',
      'current-context: ctx',
    ].join('\n');
    expect(readKubeconfigCluster(text, 'x')).toEqual({ name: '', server: 'https://nameless:6443', caPem });
  });
});
