import { describe, expect, it } from 'vitest';
import { resolveKubeconfigView, type KubeconfigFile } from '../../../src/kube/kubeconfig-view.js';

const DISK: Record<string, string> = { '/home/ops/.kube/certs/ca.pem': 'ca-file\n', '/etc/k/ca.pem': 'etc-ca\n' };
const readFile = (path: string): string => {
  const text = DISK[path];
  if (text === undefined) throw new Error(`open ${path}: no such file or directory`);
  return text;
};
const view = (files: KubeconfigFile[], context?: string) => resolveKubeconfigView(files, { context, readFile });

const A = `clusters:
- name: c1
  cluster: { server: "https://a:6443", certificate-authority: certs/ca.pem, tls-server-name: api.internal }
users:
- name: u1
  user: { token: abc }
contexts:
- name: x
  context: { cluster: c1, user: u1, namespace: ns1 }
`;
const B = `current-context: cy
clusters:
- name: c1
  cluster: { server: "https://override:6443" }
- name: c2
  cluster: { server: "https://b:6443", insecure-skip-tls-verify: true }
contexts:
- name: cy
  context: { cluster: c2 }
`;

describe('resolveKubeconfigView: kubeconfig files as kubectl reads them', () => {
  const files = [
    { path: '/home/ops/.kube/a.yaml', text: A },
    { path: '/home/ops/.kube/missing.yaml', text: undefined },
    { path: '/etc/k/b.yaml', text: B },
  ];
  it('takes current-context from the first file that sets one, and each name from the first file that has it', () => {
    expect(view(files)).toEqual({
      contextName: 'cy',
      cluster: { name: 'c2', server: 'https://b:6443', isInsecureSkipTlsVerify: true },
    });
    expect(view(files, 'x')).toEqual({
      contextName: 'x',
      namespace: 'ns1',
      cluster: {
        name: 'c1',
        server: 'https://a:6443',
        certificateAuthority: 'ca-file\n',
        isInsecureSkipTlsVerify: false,
        tlsServerName: 'api.internal',
      },
      user: { name: 'u1', token: 'abc', hasExec: false, hasAuthProvider: false },
    });
  });
  it('refuses what kubectl refuses, with its words', () => {
    expect(() => view([{ path: '/a', text: A }])).toThrow(/current-context must exist in order to minify/);
    expect(() => view(files, 'nope')).toThrow(/cannot locate context nope/);
    expect(() =>
      view([{ path: '/a', text: 'current-context: x\ncontexts:\n- name: x\n  context: { cluster: gone }\n' }]),
    ).toThrow(/cannot locate cluster gone/);
    expect(() => view([{ path: '/a', text: 'contexts:\n- name: y\n  context: {}\n' }], 'y')).toThrow(/not a string/);
    expect(() =>
      view([{ path: '/a', text: 'clusters:\n- name: c\n  cluster: {}\n- name: c\n  cluster: {}\n' }]),
    ).toThrow(/duplicate name "c"/);
    const both = `current-context: x\nclusters:\n- name: c\n  cluster: { certificate-authority: /etc/k/ca.pem, certificate-authority-data: eA== }\ncontexts:\n- name: x\n  context: { cluster: c }\n`;
    expect(() => view([{ path: '/a', text: both }])).toThrow(/both path and contents/);
  });
});
