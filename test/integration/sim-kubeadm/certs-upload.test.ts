/**
 * The SIMULATED kubeadm's upload-certs and download-certs (not kubeadm's)
 * against the simulated API server in-process: the entries edgeadm's own
 * decryption reads (the two implementations agree on nonce first, tag
 * last), the owner token that carries the expiry, the Role that lets a
 * bootstrap token get only that Secret, a download that writes the CA
 * files, a wrong key that fails as kubeadm fails and writes nothing, a
 * re-upload that replaces the Secret, and a missing one.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decryptWithCertificateKey } from '../../../src/cluster/control-plane-join.js';
import { startSimApiServer, type SimApiServer } from '../../support/sim-apiserver/index.js';
import { SimCertificateAuthority } from '../../support/sim-apiserver/pki.js';
import { call } from '../../support/sim-node.js';
import { downloadCerts, uploadCerts } from '../../support/sim-kubeadm/certs-upload.js';
import type { KubeconfigAccess } from '../../support/sim-kubeadm/layout.js';

const CERTS = '/api/v1/namespaces/kube-system/secrets/kubeadm-certs';
const b64 = (text: string): string => Buffer.from(text).toString('base64');

let server: SimApiServer;
let admin: KubeconfigAccess;
let bootstrap: KubeconfigAccess;
let ca: SimCertificateAuthority;
let pki: string;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the test reads parsed API objects loosely
type Doc = Record<string, any>;

async function get(access: KubeconfigAccess, path: string): Promise<{ status: number; body: Doc }> {
  const response = await call({ ...access, method: 'GET', url: `${access.server}${path}` });
  return { status: response.status, body: JSON.parse(response.body) as Doc };
}

beforeAll(async () => {
  server = await startSimApiServer();
  admin = { server: server.url, caPem: server.caPem, token: server.adminToken };
  ca = await SimCertificateAuthority.generate('kubernetes');
  pki = mkdtempSync(join(tmpdir(), 'sim-kubeadm-pki-'));
  writeFileSync(join(pki, 'ca.crt'), ca.certPem);
  writeFileSync(join(pki, 'ca.key'), ca.keyPem);
  // A node bootstrap token, as edgeadm creates them.
  const created = await call({
    ...admin,
    method: 'POST',
    url: `${server.url}/api/v1/namespaces/kube-system/secrets`,
    body: {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'bootstrap.kubernetes.io/token',
      metadata: { name: 'bootstrap-token-abcdef', namespace: 'kube-system' },
      data: {
        'token-id': b64('abcdef'),
        'token-secret': b64('0123456789abcdef'),
        'usage-bootstrap-authentication': b64('true'),
        'auth-extra-groups': b64('system:bootstrappers:kubeadm:default-node-token'),
      },
    },
  });
  expect(created.status).toBe(201);
  bootstrap = { server: server.url, caPem: server.caPem, token: 'abcdef.0123456789abcdef' };
});

afterAll(async () => {
  await server?.stop();
});

/** kubeadm's certificate-key lifetime (`kubeadm init phase upload-certs`): the Secret goes after two hours. */
const TWO_HOURS_MS = 2 * 60 * 60_000;

describe('the simulated kubeadm upload-certs and download-certs', () => {
  const key = randomBytes(32).toString('hex');

  it('uploads every transferred file encrypted, owned by a 2-hour token, readable by node bootstrap tokens only', async () => {
    // The token's expiry is read from the clock during the upload: it lies 2 h after a moment within it.
    const uploadStarted = Date.now();
    await uploadCerts(admin, key, pki);
    const uploadEnded = Date.now();
    const secret = (await get(admin, CERTS)).body;
    expect(Object.keys(secret.data).sort()).toEqual(
      [
        'ca.crt',
        'ca.key',
        'etcd-ca.crt',
        'etcd-ca.key',
        'front-proxy-ca.crt',
        'front-proxy-ca.key',
        'sa.key',
        'sa.pub',
      ].sort(),
    );
    expect(secret.data['sa.key']).toBe('');
    expect(Buffer.from(secret.data['ca.key'], 'base64').toString('latin1')).not.toContain('PRIVATE KEY');
    // edgeadm's decryption reads what the simulation wrote.
    expect(decryptWithCertificateKey(secret.data['ca.key'], key)).toBe(ca.keyPem);
    const owner = secret.metadata.ownerReferences[0];
    expect(owner).toMatchObject({ kind: 'Secret', controller: true });
    const token = (await get(admin, `/api/v1/namespaces/kube-system/secrets/${owner.name}`)).body;
    const expires = Date.parse(Buffer.from(token.data.expiration, 'base64').toString('utf8'));
    expect(expires).toBeGreaterThanOrEqual(uploadStarted + TWO_HOURS_MS);
    expect(expires).toBeLessThanOrEqual(uploadEnded + TWO_HOURS_MS);
    expect(token.data).not.toHaveProperty('usage-bootstrap-authentication');
    expect((await get(bootstrap, CERTS)).status).toBe(200);
    expect((await get(bootstrap, `/api/v1/namespaces/kube-system/secrets/${owner.name}`)).status).toBe(403);
  });

  it('fails on a wrong key as kubeadm does, writing nothing', async () => {
    const target = mkdtempSync(join(tmpdir(), 'sim-kubeadm-join-'));
    await expect(downloadCerts(bootstrap, randomBytes(32).toString('hex'), target)).rejects.toThrow(
      'error decoding secret data with provided key: cipher: message authentication failed',
    );
    expect(readdirSync(target)).toEqual([]);
  });

  it('downloads the CA files with the right key', async () => {
    const target = mkdtempSync(join(tmpdir(), 'sim-kubeadm-join-'));
    expect(await downloadCerts(bootstrap, key, target)).toEqual([join(target, 'ca.crt'), join(target, 'ca.key')]);
    expect(readFileSync(join(target, 'ca.crt'), 'utf8')).toBe(ca.certPem);
    expect(readFileSync(join(target, 'ca.key'), 'utf8')).toBe(ca.keyPem);
  });

  it('replaces the Secret on a re-upload, dropping what was added to the old one', async () => {
    await call({
      ...admin,
      method: 'PATCH',
      url: `${server.url}${CERTS}`,
      contentType: 'application/merge-patch+json',
      body: { metadata: { annotations: { 'edgeadm.io/expires': 'soon' } } },
    });
    const fresh = randomBytes(32).toString('hex');
    await uploadCerts(admin, fresh, pki);
    const secret = (await get(admin, CERTS)).body;
    expect(secret.metadata.annotations ?? {}).not.toHaveProperty('edgeadm.io/expires');
    expect(decryptWithCertificateKey(secret.data['ca.crt'], fresh)).toBe(ca.certPem);
    const target = mkdtempSync(join(tmpdir(), 'sim-kubeadm-join-'));
    await expect(downloadCerts(bootstrap, key, target)).rejects.toThrow('error decoding secret data');
  });

  it('says the Secret may have expired when it is gone', async () => {
    await call({ ...admin, method: 'DELETE', url: `${server.url}${CERTS}` });
    await expect(downloadCerts(bootstrap, key, mkdtempSync(join(tmpdir(), 'sim-kubeadm-join-')))).rejects.toThrow(
      /Secret "kubeadm-certs" was not found in the "kube-system" Namespace\. This Secret might have expired/,
    );
  });
});
