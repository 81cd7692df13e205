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
