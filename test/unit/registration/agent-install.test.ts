import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { readKubeconfigFile } from '../../../src/kube/kubeconfig.js';
import { createCa, issueCertificate } from '../../../src/trust/pki.js';
import { agentKubeconfigContent } from '../../../src/registration/agent-install.js';

// Real key material: the kubeconfig reader checks that the client key parses and matches its certificate.
const ca = await createCa({ commonName: 'kubernetes' });
const client = await issueCertificate({ ca, commonName: 'admin', usages: ['client'] });
const [CA, CERT, KEY] = [ca.certPem, client.certPem, client.keyPem];

function kubeconfig(cluster: string, user: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: c',
    '  cluster:',
    '    server: https://10.0.0.1:6443',
    cluster,
    'users:',
    '- name: u',
    '  user:',
    user,
    'contexts:',
    '- name: x',
    '  context: {cluster: c, user: u}',
    'current-context: x',
    '',
  ].join('\n');
}

describe("the agent's kubeconfig in its data directory", () => {
  it('inlines every file the given kubeconfig refers to, so the agent reads nothing outside its data directory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-kubeconfig-'));
    writeFileSync(join(dir, 'ca.crt'), CA);
    writeFileSync(join(dir, 'client.crt'), CERT);
    writeFileSync(join(dir, 'client.key'), KEY);
    const path = join(dir, 'admin.yaml');
    writeFileSync(
      path,
      kubeconfig(
        `    certificate-authority: ${join(dir, 'ca.crt')}`,
        '    client-certificate: client.crt\n    client-key: client.key',
      ),
    );
    const written = (await agentKubeconfigContent(path)).toString('utf8');
    expect(written).not.toContain(dir);
    expect(written).not.toMatch(/certificate-authority:|client-certificate:|client-key:/);
    // Read back from a directory where none of the files are, it gives the same credentials.
    const elsewhere = join(mkdtempSync(join(tmpdir(), 'agent-data-')), 'upstream.kubeconfig');
    writeFileSync(elsewhere, written);
    const [original, copy] = [await readKubeconfigFile(path), await readKubeconfigFile(elsewhere)];
    expect(copy).toMatchObject({
      server: original.server,
      caPem: CA,
      clientCertificatePem: CERT,
      clientKeyPem: KEY,
    });
  });

  it('keeps a TLS opt-out the given kubeconfig had when it inlines a token file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-kubeconfig-'));
    writeFileSync(join(dir, 'token'), 'sa-token');
    const path = join(dir, 'admin.yaml');
    writeFileSync(path, kubeconfig('    insecure-skip-tls-verify: true', `    tokenFile: ${join(dir, 'token')}`));
    const written = (await agentKubeconfigContent(path)).toString('utf8');
    expect(written).not.toContain('tokenFile');
    const document = load(written) as { clusters: { cluster: Record<string, unknown> }[] };
    expect(document.clusters[0]!.cluster['insecure-skip-tls-verify']).toBe(true);
    const elsewhere = join(mkdtempSync(join(tmpdir(), 'agent-data-')), 'upstream.kubeconfig');
    writeFileSync(elsewhere, written);
    expect(await readKubeconfigFile(elsewhere)).toMatchObject({ token: 'sa-token', isInsecureSkipTlsVerify: true });
  });

  it('copies a self-contained kubeconfig byte for byte (a re-run then finds it unchanged)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-kubeconfig-'));
    const path = join(dir, 'sa.yaml');
    writeFileSync(
      path,
      kubeconfig(
        `    certificate-authority-data: ${Buffer.from(CA).toString('base64')}`,
        '    token: sa-token  # kept as written',
      ),
    );
    expect((await agentKubeconfigContent(path)).equals(readFileSync(path))).toBe(true);
  });
});
