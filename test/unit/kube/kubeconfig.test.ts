import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { load } from 'js-yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  kubeCredentialsOf,
  mergeKubeconfig,
  readKubeconfigFile,
  renderKubeconfig,
} from '../../../src/kube/kubeconfig.js';
import { MAX_KUBECONFIG_FILE_BYTES } from '../../../src/kube/limits.js';
import { createCa, issueCertificate, type CertificateAndKey } from '../../../src/trust/pki.js';

let caPem = '';
let client: CertificateAndKey;
let other: CertificateAndKey;
let credentials: { server: string; caPem: string; token: string; contextName: string };

beforeAll(async () => {
  const ca = await createCa({ commonName: 'kubernetes' });
  caPem = ca.certPem;
  client = await issueCertificate({ ca, commonName: 'admin', usages: ['client'] });
  other = await issueCertificate({ ca, commonName: 'other', usages: ['client'] });
  credentials = { server: 'https://10.0.0.10:6443', caPem, token: 'secret-token', contextName: 'x' };
});

/** A kubeconfig in a new directory whose user is `user` (YAML flow mapping text), with files beside it. */
function kubeconfigWith(user: string, files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'kubeconfig-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text, { mode: 0o600 });
  const path = join(dir, 'config');
  writeFileSync(
    path,
    [
      'apiVersion: v1',
      'clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]',
      `users: [{name: u, user: ${user}}]`,
      'contexts: [{name: x, context: {cluster: c, user: u}}]',
      'current-context: x',
    ].join('\n'),
  );
  return path;
}

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
    const files: Record<string, string> = { '/ca.crt': caPem, '/c.crt': client.certPem, '/c.key': client.keyPem };
    const read = await kubeCredentialsOf(text, { what: 't', readFile: async (p) => files[p]! });
    expect(read).toMatchObject({ caPem, clientCertificatePem: client.certPem, clientKeyPem: client.keyPem });
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

describe('kubeconfig files are read as kubectl reads them', () => {
  const write = (lines: string[]): string => {
    const path = join(mkdtempSync(join(tmpdir(), 'kubeconfig-')), 'config');
    writeFileSync(path, lines.join('\n'));
    return path;
  };
  it('does not guess a context when current-context is unset, as kubectl does not', async () => {
    const path = write([
      'clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]',
      'contexts: [{name: x, context: {cluster: c}}]',
    ]);
    await expect(readKubeconfigFile(path)).rejects.toThrow(/current-context must exist/);
    expect(await readKubeconfigFile(path, { context: 'x' })).toMatchObject({ server: 'https://127.0.0.1:6443' });
  });
  it('refuses proxy-url and tls-server-name loudly instead of connecting without them', async () => {
    for (const field of ['proxy-url: "http://proxy:3128"', 'tls-server-name: api.internal']) {
      const path = write([
        `clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", ${field}}}]`,
        'contexts: [{name: x, context: {cluster: c}}]',
        'current-context: x',
      ]);
      await expect(readKubeconfigFile(path)).rejects.toMatchObject({ code: 'E_KUBECONFIG_UNSUPPORTED' });
    }
  });
});

describe('kubeconfig: credentials are checked where they are read', () => {
  it('reads a client certificate and its key, and a one-line token file with its newline', async () => {
    const path = kubeconfigWith('{client-certificate: c.crt, client-key: c.key}', {
      'c.crt': client.certPem,
      'c.key': client.keyPem,
    });
    expect(await readKubeconfigFile(path)).toMatchObject({ clientKeyPem: client.keyPem });
    const tokenPath = kubeconfigWith('{tokenFile: token}', { token: 'abc.def-ghi_jkl\n' });
    expect(await readKubeconfigFile(tokenPath)).toMatchObject({ token: 'abc.def-ghi_jkl' });
  });

  it('refuses a client-key that is not a PEM private key (say /etc/shadow), naming the file', async () => {
    const path = kubeconfigWith('{client-certificate: c.crt, client-key: c.key}', {
      'c.crt': client.certPem,
      'c.key': 'root:$6$salt$hash:19000:0:99999:7:::\n',
    });
    await expect(readKubeconfigFile(path)).rejects.toMatchObject({
      code: 'E_KUBECONFIG_INVALID',
      message: expect.stringMatching(/client-key \(file c\.key\) is not a PEM private key/),
    });
  });

  it('refuses a client-key that is not the key of the client-certificate', async () => {
    const path = kubeconfigWith('{client-certificate: c.crt, client-key: c.key}', {
      'c.crt': client.certPem,
      'c.key': other.keyPem,
    });
    await expect(readKubeconfigFile(path)).rejects.toThrow(/is not the key of/);
  });

  it('refuses a certificate without its key, and a key without its certificate', async () => {
    const certOnly = kubeconfigWith('{client-certificate: c.crt}', { 'c.crt': client.certPem });
    const keyOnly = kubeconfigWith('{client-key: c.key}', { 'c.key': client.keyPem });
    await expect(readKubeconfigFile(certOnly)).rejects.toThrow(/no client-key/);
    await expect(readKubeconfigFile(keyOnly)).rejects.toThrow(/no client-certificate/);
  });

  it('refuses a token file of several lines, or a token with spaces or control characters, without showing it', async () => {
    for (const token of ['secret-1\nsecret-2\n', 'secret words', 'secret\tx', 'secret\u0007x', 'secret-caf\u00e9']) {
      const path = kubeconfigWith('{tokenFile: token}', { token });
      const failure = readKubeconfigFile(path);
      await expect(failure, JSON.stringify(token)).rejects.toThrow(/token \(file token\) holds whitespace or control/);
      await expect(failure).rejects.not.toThrow('secret');
    }
    const inline = kubeconfigWith('{token: "a\\nb"}');
    await expect(readKubeconfigFile(inline)).rejects.toThrow(/holds whitespace or control characters/);
  });

  it('refuses devices, FIFOs and directories without reading them, and files past the size bound', async () => {
    await expect(readKubeconfigFile('/dev/zero')).rejects.toMatchObject({
      code: 'E_KUBECONFIG_READ',
      message: expect.stringContaining('not a regular file'),
    });
    const dir = mkdtempSync(join(tmpdir(), 'kubeconfig-fifo-'));
    execFileSync('mkfifo', [join(dir, 'fifo')]);
    await expect(readKubeconfigFile(join(dir, 'fifo'))).rejects.toThrow(/not a regular file/);
    await expect(readKubeconfigFile(dir)).rejects.toThrow(/not a regular file/);
    const keyDevice = kubeconfigWith('{client-certificate: c.crt, client-key: /dev/zero}', { 'c.crt': client.certPem });
    await expect(readKubeconfigFile(keyDevice)).rejects.toThrow(/\/dev\/zero: it is not a regular file/);
    const big = kubeconfigWith('{tokenFile: token}', { token: 'x'.repeat(MAX_KUBECONFIG_FILE_BYTES + 1) });
    await expect(readKubeconfigFile(big)).rejects.toThrow(/larger than/);
    const binary = join(dir, 'binary');
    writeFileSync(binary, Buffer.from([0xff, 0xfe, 0x00]));
    await expect(readKubeconfigFile(binary)).rejects.toThrow(/not UTF-8/);
  });
});
