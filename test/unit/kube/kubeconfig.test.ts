import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { kubeCredentialsOf, mergeKubeconfig, renderKubeconfig } from '../../../src/kube/kubeconfig.js';

const credentials = { server: 'https://10.0.0.10:6443', caPem: 'CA', token: 'secret-token', contextName: 'x' };

describe('kubeconfig', () => {
  it('renders credentials and reads them back', async () => {
    const text = renderKubeconfig(credentials, 'edgeadm-cp');
    expect(await kubeCredentialsOf(text, { what: 't' })).toEqual({ ...credentials, contextName: 'edgeadm-cp' });
  });

  it('resolves file references through the reader it is given', async () => {
    const text = [
      'apiVersion: v1',
      'clusters: [{name: c, cluster: {server: "https://s:6443", certificate-authority: /ca.crt}}]',
      'users: [{name: u, user: {client-certificate: /c.crt, client-key: /c.key}}]',
      'contexts: [{name: x, context: {cluster: c, user: u}}]',
      'current-context: x',
    ].join('\n');
    const files: Record<string, string> = { '/ca.crt': 'CA', '/c.crt': 'CERT', '/c.key': 'KEY' };
    const read = await kubeCredentialsOf(text, { what: 't', readFile: async (p) => files[p]! });
    expect(read).toMatchObject({ caPem: 'CA', clientCertificatePem: 'CERT', clientKeyPem: 'KEY' });
  });

  it('merges a new context into an existing file, keeping the others and making it current', () => {
    const existing = renderKubeconfig({ ...credentials, server: 'https://old:6443' }, 'old');
    const merged = load(mergeKubeconfig(existing, renderKubeconfig(credentials, 'new'), { setCurrent: true })) as {
      contexts: Array<{ name: string }>;
      'current-context': string;
    };
    expect(merged.contexts.map((c) => c.name)).toEqual(['old', 'new']);
    expect(merged['current-context']).toBe('new');
  });

  it('replaces a context of the same name instead of duplicating it', () => {
    const first = mergeKubeconfig(undefined, renderKubeconfig(credentials, 'a'), { setCurrent: true });
    const second = mergeKubeconfig(first, renderKubeconfig({ ...credentials, token: 't2' }, 'a'), { setCurrent: true });
    const parsed = load(second) as { users: Array<{ user: { token: string } }> };
    expect(parsed.users).toHaveLength(1);
    expect(parsed.users[0]!.user.token).toBe('t2');
  });

  it('says which context is missing', async () => {
    await expect(kubeCredentialsOf(renderKubeconfig(credentials, 'a'), { what: 't', context: 'b' })).rejects.toThrow(
      /no context named "b"/,
    );
  });
});
