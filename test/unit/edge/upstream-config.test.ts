import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseClientCertMapping, readUpstreamConfig } from '../../../src/edge/upstream-config.js';
import { createCa, issueCertificate } from '../../../src/trust/pki.js';

let dir: string;
const b64 = (text: string): string => Buffer.from(text).toString('base64');

function kubeconfig(user: string, cluster = `    certificate-authority-data: ${b64('CA-PEM')}`): string {
  const path = join(dir, 'kubeconfig');
  writeFileSync(
    path,
    [
      'apiVersion: v1',
      'clusters:',
      '- name: up',
      '  cluster:',
      '    server: https://10.0.0.10:6443',
      cluster,
      'users:',
      '- name: me',
      '  user:',
      user,
      'contexts:',
      '- name: ctx',
      '  context: {cluster: up, user: me}',
      'current-context: ctx',
    ].join('\n'),
  );
  return path;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'edgeadm-upstream-config-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('readUpstreamConfig', () => {
  it('reads server, CA and a token', async () => {
    const config = await readUpstreamConfig(kubeconfig('    token: abc'));
    expect(config.server.href).toBe('https://10.0.0.10:6443/');
    expect(config.caPem).toBe('CA-PEM');
    expect(config.credentials).toEqual({ token: 'abc' });
  });

  it('reads a client certificate from files relative to the kubeconfig', async () => {
    const ca = await createCa({ commonName: 'kubernetes' });
    const client = await issueCertificate({ ca, commonName: 'edge-proxy', usages: ['client'] });
    writeFileSync(join(dir, 'c.pem'), client.certPem);
    writeFileSync(join(dir, 'k.pem'), client.keyPem);
    writeFileSync(join(dir, 'ca.crt'), 'CA-FILE');
    const config = await readUpstreamConfig(
      kubeconfig('    client-certificate: c.pem\n    client-key: k.pem', '    certificate-authority: ca.crt'),
    );
    expect(config.caPem).toBe('CA-FILE');
    expect(config.credentials).toEqual({ certPem: client.certPem, keyPem: client.keyPem });
  });

  it('refuses an upstream it cannot verify', async () => {
    await expect(
      readUpstreamConfig(kubeconfig('    token: abc', '    insecure-skip-tls-verify: true')),
    ).rejects.toThrow(/certificate-authority/);
  });

  it('reads a token from tokenFile, relative to the kubeconfig', async () => {
    writeFileSync(join(dir, 'token'), 'from-file\n');
    const config = await readUpstreamConfig(kubeconfig('    tokenFile: token'));
    expect(config.credentials).toEqual({ token: 'from-file' });
  });

  it('names a missing file the kubeconfig refers to', async () => {
    await expect(
      readUpstreamConfig(kubeconfig('    client-certificate: nope.pem\n    client-key: k.pem')),
    ).rejects.toMatchObject({
      code: 'E_EDGE_FILE',
      message: expect.stringContaining('nope.pem'),
    });
  });
});

describe('parseClientCertMapping', () => {
  it('reads CN=certfile,keyfile', () => {
    expect(parseClientCertMapping('system:node:edge-1=/pki/c.pem,/pki/k.pem')).toEqual({
      commonName: 'system:node:edge-1',
      certFile: '/pki/c.pem',
      keyFile: '/pki/k.pem',
    });
    expect(() => parseClientCertMapping('edge-1:/pki/c.pem')).toThrow(/CN=certfile,keyfile/);
  });
});
