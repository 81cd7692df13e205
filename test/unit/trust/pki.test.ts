import { X509Certificate, createPrivateKey, createPublicKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  CA_VALIDITY_DAYS,
  NOT_BEFORE_BACKDATE_MS,
  createCa,
  createCsr,
  describeCsr,
  issueCertificate,
  loadCa,
  signCsr,
} from '../../../src/trust/pki.js';
import { x509 } from '../../../src/trust/x509.js';

const DAY_MS = 24 * 3600 * 1000;
const now = new Date('2025-06-01T00:00:00Z');

/** Extended key usages of a certificate, as OIDs. */
function extendedKeyUsages(certPem: string): string[] {
  const extension = new x509.X509Certificate(certPem).getExtension(x509.ExtendedKeyUsageExtension);
  return (extension?.usages ?? []).map(String);
}

function keyUsages(certPem: string): number | undefined {
  return new x509.X509Certificate(certPem).getExtension(x509.KeyUsagesExtension)?.usages;
}

describe('createCa', () => {
  it('makes an ECDSA P-256 CA by default: CA:true, certSign, ten years, self-signed', async () => {
    const ca = await createCa({ commonName: 'edgeadm-ca', now });
    const cert = new X509Certificate(ca.certPem);
    expect(cert.ca).toBe(true);
    expect(cert.subject).toBe('CN=edgeadm-ca');
    expect(cert.issuer).toBe('CN=edgeadm-ca');
    expect(cert.publicKey.asymmetricKeyType).toBe('ec');
    expect(cert.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(cert.verify(cert.publicKey)).toBe(true);
    expect(cert.validFromDate.getTime()).toBe(now.getTime() - NOT_BEFORE_BACKDATE_MS);
    expect(cert.validToDate.getTime()).toBe(now.getTime() + CA_VALIDITY_DAYS * DAY_MS);
    expect(keyUsages(ca.certPem)).toBe(
      x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature,
    );
    expect(createPrivateKey(ca.keyPem).asymmetricKeyType).toBe('ec');
    expect(ca.keyPem).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
  });

  it('makes an RSA CA when asked', async () => {
    const ca = await createCa({ commonName: 'rsa-ca', keyAlgorithm: 'rsa-2048' });
    const cert = new X509Certificate(ca.certPem);
    expect(cert.publicKey.asymmetricKeyType).toBe('rsa');
    expect(cert.publicKey.asymmetricKeyDetails?.modulusLength).toBe(2048);
    expect(cert.verify(cert.publicKey)).toBe(true);
  });

  it('gives each CA a fresh positive serial number', async () => {
    const [a, b] = await Promise.all([createCa({ commonName: 'a' }), createCa({ commonName: 'b' })]);
    const serialA = new X509Certificate(a!.certPem).serialNumber;
    expect(serialA).not.toBe(new X509Certificate(b!.certPem).serialNumber);
    expect(Number.parseInt(serialA.slice(0, 2), 16)).toBeLessThan(0x80);
  });
});

describe('issueCertificate', () => {
  it('issues a serving certificate with DNS and IP SANs, serverAuth, signed by the CA', async () => {
    const ca = await createCa({ commonName: 'edgeadm-ca' });
    const leaf = await issueCertificate({
      ca,
      commonName: 'kube-apiserver',
      dnsNames: ['kubernetes.default.svc', 'api.site-42.example'],
      ipAddresses: ['10.0.0.10', 'fd00::10'],
      usages: ['server'],
    });
    const cert = new X509Certificate(leaf.certPem);
    const caCert = new X509Certificate(ca.certPem);
    expect(cert.ca).toBe(false);
    expect(cert.checkIssued(caCert)).toBe(true);
    expect(cert.verify(caCert.publicKey)).toBe(true);
    expect(cert.checkHost('api.site-42.example')).toBe('api.site-42.example');
    expect(cert.checkIP('10.0.0.10')).toBe('10.0.0.10');
    expect(cert.checkIP('fd00::10')).toBe('fd00::10');
    expect(cert.checkIP('10.0.0.11')).toBeUndefined();
    expect(extendedKeyUsages(leaf.certPem)).toEqual([x509.ExtendedKeyUsage.serverAuth]);
    expect(keyUsages(leaf.certPem)).toBe(x509.KeyUsageFlags.digitalSignature);
    // The private key matches the certificate.
    expect(createPrivateKey(leaf.keyPem).asymmetricKeyType).toBe('ec');
  });

  it('issues a client certificate whose organizations are the groups', async () => {
    const ca = await createCa({ commonName: 'hub-ca', keyAlgorithm: 'rsa-2048' });
    const leaf = await issueCertificate({
      ca,
      commonName: 'system:node:edge-1',
      organizations: ['system:nodes'],
      usages: ['client'],
      keyAlgorithm: 'rsa-2048',
    });
    const cert = new X509Certificate(leaf.certPem);
    expect(cert.subject.split('\n')).toEqual(['O=system:nodes', 'CN=system:node:edge-1']);
    expect(cert.verify(new X509Certificate(ca.certPem).publicKey)).toBe(true);
    expect(extendedKeyUsages(leaf.certPem)).toEqual([x509.ExtendedKeyUsage.clientAuth]);
    expect(keyUsages(leaf.certPem)).toBe(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment);
  });

  it('points the authority key id at the CA subject key id', async () => {
    const ca = await createCa({ commonName: 'edgeadm-ca' });
    const leaf = await issueCertificate({ ca, commonName: 'x', usages: ['server', 'client'] });
    const caKeyId = new x509.X509Certificate(ca.certPem).getExtension(x509.SubjectKeyIdentifierExtension)?.keyId;
    const aki = new x509.X509Certificate(leaf.certPem).getExtension(x509.AuthorityKeyIdentifierExtension)?.keyId;
    expect(caKeyId).toMatch(/^[0-9a-f]+$/);
    expect(aki).toBe(caKeyId);
    expect(extendedKeyUsages(leaf.certPem)).toEqual([
      x509.ExtendedKeyUsage.serverAuth,
      x509.ExtendedKeyUsage.clientAuth,
    ]);
  });

  it('refuses bad SANs and empty usages', async () => {
    const ca = await createCa({ commonName: 'edgeadm-ca' });
    await expect(
      issueCertificate({ ca, commonName: 'x', ipAddresses: ['10.0.0.256'], usages: ['server'] }),
    ).rejects.toThrow(expect.objectContaining({ code: 'E_CERT_SAN' }));
    await expect(issueCertificate({ ca, commonName: 'x', dnsNames: ['bad name'], usages: ['server'] })).rejects.toThrow(
      expect.objectContaining({ code: 'E_CERT_SAN' }),
    );
    await expect(issueCertificate({ ca, commonName: 'x', usages: [] })).rejects.toThrow(
      expect.objectContaining({ code: 'E_CERT_USAGE' }),
    );
  });
});

describe('CSRs', () => {
  it('creates a request with subject and SANs, and the CA signs it with the usages it decides', async () => {
    const ca = await createCa({ commonName: 'hub-ca' });
    const { csrPem, keyPem } = await createCsr({
      commonName: 'system:edgeadm:agent:store-042',
      organizations: ['system:edgeadm:agents'],
      dnsNames: ['store-042.example'],
      ipAddresses: ['192.0.2.42'],
    });
    expect(csrPem).toMatch(/^-----BEGIN CERTIFICATE REQUEST-----\n/);
    expect(describeCsr(csrPem)).toEqual({
      subject: 'O=system:edgeadm:agents, CN=system:edgeadm:agent:store-042',
      commonName: 'system:edgeadm:agent:store-042',
      organizations: ['system:edgeadm:agents'],
      dnsNames: ['store-042.example'],
      ipAddresses: ['192.0.2.42'],
    });

    const { certPem } = await signCsr({ ca, csrPem, usages: ['client'] });
    const cert = new X509Certificate(certPem);
    expect(cert.verify(new X509Certificate(ca.certPem).publicKey)).toBe(true);
    expect(cert.subject.split('\n')).toEqual(['O=system:edgeadm:agents', 'CN=system:edgeadm:agent:store-042']);
    expect(cert.checkIP('192.0.2.42')).toBe('192.0.2.42');
    expect(extendedKeyUsages(certPem)).toEqual([x509.ExtendedKeyUsage.clientAuth]);
    // The certificate carries the requester's key, which never left the requester.
    expect(cert.publicKey.export({ type: 'spki', format: 'der' })).toEqual(
      createPublicKey(createPrivateKey(keyPem)).export({ type: 'spki', format: 'der' }),
    );
  });

  it('refuses a request whose signature does not verify', async () => {
    const ca = await createCa({ commonName: 'hub-ca' });
    const { csrPem } = await createCsr({ commonName: 'agent', keyAlgorithm: 'rsa-2048' });
    const der = Buffer.from(csrPem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
    der[der.length - 5] = (der[der.length - 5] as number) ^ 0xff; // flip bits inside the signature
    const tampered = `-----BEGIN CERTIFICATE REQUEST-----\n${der.toString('base64')}\n-----END CERTIFICATE REQUEST-----\n`;
    await expect(signCsr({ ca, csrPem: tampered, usages: ['client'] })).rejects.toThrow(
      expect.objectContaining({
        code: 'E_CSR_INVALID',
        message: 'the certificate signing request has an invalid signature',
      }),
    );
    await expect(signCsr({ ca, csrPem: 'not a csr', usages: ['client'] })).rejects.toThrow(
      expect.objectContaining({ code: 'E_CSR_INVALID' }),
    );
  });
});

describe('loadCa', () => {
  it('loads a CA from PEM and signs with it', async () => {
    for (const keyAlgorithm of ['ecdsa-p256', 'rsa-2048'] as const) {
      const created = await createCa({ commonName: 'k3s-server-ca', keyAlgorithm });
      const loaded = await loadCa({ certPem: created.certPem, keyPem: created.keyPem });
      const leaf = await issueCertificate({ ca: loaded, commonName: 'edge', usages: ['server'] });
      expect(new X509Certificate(leaf.certPem).verify(new X509Certificate(created.certPem).publicKey)).toBe(true);
    }
  });

  it('refuses a key that does not belong to the certificate', async () => {
    const a = await createCa({ commonName: 'a' });
    const b = await createCa({ commonName: 'b' });
    await expect(loadCa({ certPem: a.certPem, keyPem: b.keyPem })).rejects.toThrow(
      expect.objectContaining({ code: 'E_CA_KEY_MISMATCH' }),
    );
    await expect(loadCa({ certPem: 'junk', keyPem: a.keyPem })).rejects.toThrow(
      expect.objectContaining({ code: 'E_CA_LOAD' }),
    );
  });
});
