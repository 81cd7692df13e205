import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import {
  controlPlaneJoinObjects,
  decryptWithCertificateKey,
  encryptWithCertificateKey,
  generateCertificateKey,
  parseCertificateKey,
  verifyUploadedCerts,
} from '../../../src/cluster/control-plane-join.js';
import { renderK3sServerConfig } from '../../../src/cluster/distributions/k3s.js';
import { kubeadmDistribution } from '../../../src/cluster/distributions/kubeadm.js';
import { createCa } from '../../../src/trust/pki.js';

const serverToken = `K10${'0'.repeat(64)}::server:5ecret`;

describe('the control-plane join credential', () => {
  it('decrypts with the certificate key it was encrypted with, and never holds the plaintext', () => {
    const key = generateCertificateKey();
    const sealed = encryptWithCertificateKey(serverToken, key);
    expect(Buffer.from(sealed, 'base64').toString('latin1')).not.toContain('5ecret');
    expect(decryptWithCertificateKey(sealed, key)).toBe(serverToken);
  });

  it('refuses another key and altered data', () => {
    const sealed = encryptWithCertificateKey(serverToken, generateCertificateKey());
    expect(() => decryptWithCertificateKey(sealed, generateCertificateKey())).toThrow(
      expect.objectContaining({ code: 'E_CERTIFICATE_KEY_MISMATCH' }),
    );
    const key = generateCertificateKey();
    const bytes = Buffer.from(encryptWithCertificateKey(serverToken, key), 'base64');
    bytes[20] = bytes[20]! ^ 1;
    expect(() => decryptWithCertificateKey(bytes.toString('base64'), key)).toThrow(
      expect.objectContaining({ code: 'E_CERTIFICATE_KEY_MISMATCH' }),
    );
  });

  it('takes only 64 hex characters as a key', () => {
    expect(() => parseCertificateKey('abc')).toThrow(expect.objectContaining({ code: 'E_CERTIFICATE_KEY_INVALID' }));
  });

  it('is readable by bootstrap tokens through a Role limited to its one Secret', () => {
    const [secret, role, binding] = controlPlaneJoinObjects({ sealed: 'x', expires: new Date(0) });
    expect(secret!.metadata?.annotations).toEqual({ 'edgeadm.io/expires': '1970-01-01T00:00:00.000Z' });
    expect(role!.rules).toEqual([
      { apiGroups: [''], resources: ['secrets'], resourceNames: ['edgeadm-control-plane-join'], verbs: ['get'] },
    ]);
    expect(binding!.subjects).toEqual([
      {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'Group',
        name: 'system:bootstrappers:kubeadm:default-node-token',
      },
    ]);
  });
});

describe('k3s server config for a joining server', () => {
  it('names the first server and the server token', () => {
    const config = load(
      renderK3sServerConfig({
        nodeName: 'cp-2',
        nodeLabels: {},
        advertiseAddress: '10.0.0.11',
        certSans: ['10.0.0.10'],
        joinServer: 'https://10.0.0.10:6443',
        joinToken: serverToken,
      }),
    ) as Record<string, unknown>;
    expect(config.server).toBe('https://10.0.0.10:6443');
    expect(config.token).toBe(serverToken);
    expect(config['tls-san']).toEqual(['10.0.0.11', '10.0.0.10']);
    expect(config).not.toHaveProperty('cluster-init');
  });
});

describe("kubeadm's uploaded certificates (kubeadm-certs)", async () => {
  const upload = kubeadmDistribution.certsUpload!;
  const ca = await createCa({ commonName: 'cluster-ca' });
  const other = await createCa({ commonName: 'another-ca' });
  const key = generateCertificateKey();
  // Entries as kubeadm writes them: base64 of nonce, ciphertext and tag; a file it did not find is empty.
  const secretOf = (caPem: string, withKey = key) => ({
    data: {
      'ca.crt': encryptWithCertificateKey(caPem, withKey),
      'ca.key': encryptWithCertificateKey('-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n', withKey),
      'sa.key': '',
    },
  });

  it('pass with the key they were encrypted with and the CA discovery verified', () => {
    expect(verifyUploadedCerts(secretOf(ca.certPem), { upload, certificateKey: key, caPem: ca.certPem })).toEqual([
      'ca.crt',
      'ca.key',
    ]);
  });

  it('refuse another key', () => {
    expect(() =>
      verifyUploadedCerts(secretOf(ca.certPem), {
        upload,
        certificateKey: generateCertificateKey(),
        caPem: ca.certPem,
      }),
    ).toThrow(expect.objectContaining({ code: 'E_CERTIFICATE_KEY_MISMATCH' }));
  });

  it("refuse another cluster's CA, and an upload without a CA", () => {
    expect(() =>
      verifyUploadedCerts(secretOf(other.certPem), { upload, certificateKey: key, caPem: ca.certPem }),
    ).toThrow(expect.objectContaining({ code: 'E_CONTROL_PLANE_JOIN_INVALID' }));
    expect(() =>
      verifyUploadedCerts({ data: { 'ca.crt': '' } }, { upload, certificateKey: key, caPem: ca.certPem }),
    ).toThrow(expect.objectContaining({ code: 'E_CONTROL_PLANE_JOIN_INVALID' }));
  });
});
