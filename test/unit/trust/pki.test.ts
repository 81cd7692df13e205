import { X509Certificate, createPrivateKey, createPublicKey, generateKeyPairSync, webcrypto } from 'node:crypto';
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
  type KeyAlgorithm,
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

/** The extension of `type` in a certificate, through the X.509 library (Node does not expose criticality). */
function extensionOf<T extends x509.Extension>(pem: string, type: new (raw: ArrayBuffer) => T): T | null {
  return new x509.X509Certificate(pem).getExtension(type);
}

/** A CA certificate for `keys`, made with the X.509 library: for key types and shapes edgeadm's own CAs never have. */
async function foreignCa(options: {
  keys: webcrypto.CryptoKeyPair;
  signingAlgorithm: webcrypto.Algorithm | webcrypto.EcdsaParams;
  withSubjectKeyId?: boolean;
}): Promise<string> {
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: 'CN=foreign-ca',
    notBefore: new Date(Date.now() - DAY_MS),
    notAfter: new Date(Date.now() + 365 * DAY_MS),
    signingAlgorithm: options.signingAlgorithm,
    keys: options.keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true),
      ...((options.withSubjectKeyId ?? true)
        ? [await x509.SubjectKeyIdentifierExtension.create(options.keys.publicKey)]
        : []),
    ],
  });
  return `${certificate.toString('pem')}\n`;
}

async function pkcs8Pem(key: webcrypto.CryptoKey): Promise<string> {
  return createPrivateKey({
    key: Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key)),
    format: 'der',
    type: 'pkcs8',
  })
    .export({ type: 'pkcs8', format: 'pem' })
    .toString();
}

describe('key types', () => {
  it('generates RSA 3072 and 4096 keys when asked', async () => {
    const [a, b] = await Promise.all([
      createCsr({ commonName: 'a', keyAlgorithm: 'rsa-3072' }),
      createCsr({ commonName: 'b', keyAlgorithm: 'rsa-4096' }),
    ]);
    expect(createPrivateKey(a.keyPem).asymmetricKeyDetails?.modulusLength).toBe(3072);
    expect(createPrivateKey(b.keyPem).asymmetricKeyDetails?.modulusLength).toBe(4096);
  });

  it('refuses a key type it does not know, naming the ones it does', async () => {
    await expect(createCa({ commonName: 'x', keyAlgorithm: 'dsa-1024' as KeyAlgorithm })).rejects.toThrow(
      expect.objectContaining({
        code: 'E_KEY_ALGORITHM',
        exitCode: 3,
        message: 'unknown key algorithm "dsa-1024"',
        hints: ['Use one of: ecdsa-p256, rsa-2048, rsa-3072, rsa-4096.'],
      }),
    );
  });
});

describe('PEM output', () => {
  it('writes keys, certificates and requests as 64-column PEM ending in a newline, as OpenSSL and Go write it', async () => {
    const ca = await createCa({ commonName: 'pem-ca', keyAlgorithm: 'rsa-2048' });
    const leaf = await issueCertificate({ ca, commonName: 'leaf', usages: ['server'] });
    const { csrPem, keyPem } = await createCsr({ commonName: 'req' });
    const { certPem: signed } = await signCsr({ ca, csrPem, usages: ['client'] });
    for (const pem of [ca.keyPem, ca.certPem, leaf.certPem, leaf.keyPem, csrPem, keyPem, signed]) {
      expect(pem).toMatch(
        /^-----BEGIN [A-Z ]+-----\n([A-Za-z0-9+/]{64}\n)*[A-Za-z0-9+/=]{1,64}\n-----END [A-Z ]+-----\n$/,
      );
    }
    // An RSA 2048 key is far longer than one line.
    expect(ca.keyPem.split('\n').length).toBeGreaterThan(10);
  });
});

describe('serial numbers', () => {
  it('are 16 random bytes, positive and without a leading zero octet', async () => {
    const ca = await createCa({ commonName: 'serial-ca' });
    const leaf = await issueCertificate({ ca, commonName: 'leaf', usages: ['client'] });
    for (const pem of [ca.certPem, leaf.certPem]) {
      const serial = new X509Certificate(pem).serialNumber;
      expect(serial).toMatch(/^[0-9A-F]{32}$/);
      expect(Number.parseInt(serial.slice(0, 2), 16) & 0xc0).toBe(0x40);
    }
  });
});

describe('validity and subject checks', () => {
  it.each([0, -1, 1.5, Number.NaN])('refuses a validity of %s days', async (days) => {
    const message = `invalid certificate validity: ${days} days`;
    await expect(createCa({ commonName: 'x', validityDays: days })).rejects.toThrow(
      expect.objectContaining({ code: 'E_CERT_VALIDITY', exitCode: 3, message }),
    );
  });

  it('starts a leaf five minutes early and ends it the given number of days later', async () => {
    const ca = await createCa({ commonName: 'validity-ca', now });
    const leaf = new X509Certificate(
      (await issueCertificate({ ca, commonName: 'x', usages: ['server'], validityDays: 1, now })).certPem,
    );
    expect(leaf.validFromDate.getTime()).toBe(now.getTime() - NOT_BEFORE_BACKDATE_MS);
    expect(leaf.validToDate.getTime()).toBe(now.getTime() + DAY_MS);
  });

  it.each(['', '   '])('refuses a common name of %j', async (commonName) => {
    await expect(createCa({ commonName })).rejects.toThrow(
      expect.objectContaining({ code: 'E_CERT_SUBJECT', exitCode: 3, message: 'a certificate needs a common name' }),
    );
  });
});

describe('subject alternative names', () => {
  it.each(['a', 'a.b', 'x.a', 'api.site-42.example', '*.apps.example', `${'a'.repeat(63)}.example`, 'A1-b.C'])(
    'accepts the DNS name %j',
    async (name) => {
      const { csrPem } = await createCsr({ commonName: 'x', dnsNames: [name] });
      expect(describeCsr(csrPem).dnsNames).toEqual([name]);
    },
  );

  it.each([
    '',
    '*',
    'a..b',
    '-a',
    'a-',
    'a.-b',
    'bad name',
    'a_b',
    'a.b_',
    '*.*.a',
    'a.*.b',
    `${'a'.repeat(64)}.example`,
  ])('refuses the DNS name %j, naming it', async (name) => {
    await expect(createCsr({ commonName: 'x', dnsNames: [name] })).rejects.toThrow(
      expect.objectContaining({
        code: 'E_CERT_SAN',
        message: `invalid DNS name for a certificate: ${JSON.stringify(name)}`,
      }),
    );
  });

  it('refuses an IP address that is not one, naming it', async () => {
    await expect(createCsr({ commonName: 'x', ipAddresses: ['10.0.0.256'] })).rejects.toThrow(
      expect.objectContaining({ code: 'E_CERT_SAN', message: 'invalid IP address for a certificate: "10.0.0.256"' }),
    );
  });

  it('leaves the extension out when there are no names (an empty one is invalid, RFC 5280 4.2.1.6)', async () => {
    const ca = await createCa({ commonName: 'san-ca' });
    const leaf = await issueCertificate({ ca, commonName: 'client', usages: ['client'] });
    expect(extensionOf(leaf.certPem, x509.SubjectAlternativeNameExtension)).toBeNull();
    const { csrPem } = await createCsr({ commonName: 'client' });
    expect(new x509.Pkcs10CertificateRequest(csrPem).extensions).toEqual([]);
    expect(describeCsr(csrPem)).toMatchObject({ dnsNames: [], ipAddresses: [] });
    const { certPem } = await signCsr({ ca, csrPem, usages: ['client'] });
    expect(extensionOf(certPem, x509.SubjectAlternativeNameExtension)).toBeNull();
  });
});

describe('constraints that verifiers enforce', () => {
  it('marks a CA basic constraints and key usage critical', async () => {
    const ca = await createCa({ commonName: 'critical-ca' });
    expect(extensionOf(ca.certPem, x509.BasicConstraintsExtension)).toMatchObject({ ca: true, critical: true });
    expect(extensionOf(ca.certPem, x509.KeyUsagesExtension)?.critical).toBe(true);
  });

  it('marks a leaf as no CA, critically, with critical key usage: digitalSignature, and keyEncipherment only for RSA keys', async () => {
    const ca = await createCa({ commonName: 'leaf-ca' });
    const ec = await issueCertificate({ ca, commonName: 'ec', usages: ['server'] });
    const rsaCsr = await createCsr({ commonName: 'rsa', keyAlgorithm: 'rsa-2048' });
    const ecCsr = await createCsr({ commonName: 'ec-csr' });
    const fromRsaCsr = (await signCsr({ ca, csrPem: rsaCsr.csrPem, usages: ['client'] })).certPem;
    const fromEcCsr = (await signCsr({ ca, csrPem: ecCsr.csrPem, usages: ['client'] })).certPem;
    for (const pem of [ec.certPem, fromRsaCsr, fromEcCsr]) {
      expect(extensionOf(pem, x509.BasicConstraintsExtension)).toMatchObject({ ca: false, critical: true });
      expect(extensionOf(pem, x509.KeyUsagesExtension)?.critical).toBe(true);
    }
    expect(keyUsages(fromRsaCsr)).toBe(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment);
    expect(keyUsages(fromEcCsr)).toBe(x509.KeyUsageFlags.digitalSignature);
  });

  it('refuses a certificate without usages, saying what a usage is', async () => {
    const ca = await createCa({ commonName: 'usage-ca' });
    await expect(issueCertificate({ ca, commonName: 'x', usages: [] })).rejects.toThrow(
      expect.objectContaining({
        code: 'E_CERT_USAGE',
        message: 'a certificate needs at least one usage (server or client)',
      }),
    );
  });
});

describe('loadCa with the CAs other tools make', () => {
  it('signs with an ECDSA P-384 CA, with SHA-384', async () => {
    const keys = (await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-384' }, true, [
      'sign',
      'verify',
    ])) as webcrypto.CryptoKeyPair;
    const certPem = await foreignCa({
      keys,
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-384' } as webcrypto.EcdsaParams,
    });
    const ca = await loadCa({ certPem, keyPem: await pkcs8Pem(keys.privateKey) });
    const leaf = await issueCertificate({ ca, commonName: 'edge', usages: ['server'] });
    expect(new X509Certificate(leaf.certPem).verify(new X509Certificate(certPem).publicKey)).toBe(true);
    expect(new x509.X509Certificate(leaf.certPem).signatureAlgorithm).toMatchObject({
      name: 'ECDSA',
      hash: { name: 'SHA-384' },
    });
  });

  it('signs with an Ed25519 CA', async () => {
    const keys = (await webcrypto.subtle.generateKey({ name: 'Ed25519' }, true, [
      'sign',
      'verify',
    ])) as unknown as webcrypto.CryptoKeyPair;
    const certPem = await foreignCa({ keys, signingAlgorithm: { name: 'Ed25519' } });
    const ca = await loadCa({ certPem, keyPem: await pkcs8Pem(keys.privateKey) });
    const { csrPem } = await createCsr({ commonName: 'agent' });
    const { certPem: signed } = await signCsr({ ca, csrPem, usages: ['client'] });
    expect(new X509Certificate(signed).verify(new X509Certificate(certPem).publicKey)).toBe(true);
  });

  it('points the authority key id at a CA key without a subject key id', async () => {
    const keys = (await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, [
      'sign',
      'verify',
    ])) as webcrypto.CryptoKeyPair;
    const certPem = await foreignCa({
      keys,
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' } as webcrypto.EcdsaParams,
      withSubjectKeyId: false,
    });
    const ca = await loadCa({ certPem, keyPem: await pkcs8Pem(keys.privateKey) });
    const leaf = await issueCertificate({ ca, commonName: 'edge', usages: ['server'] });
    const expected = (await x509.AuthorityKeyIdentifierExtension.create(keys.publicKey)).keyId;
    expect(expected).toMatch(/^[0-9a-f]{40}$/);
    expect(extensionOf(leaf.certPem, x509.AuthorityKeyIdentifierExtension)?.keyId).toBe(expected);
  });

  it('keeps the loaded private key inside (not extractable)', async () => {
    const created = await createCa({ commonName: 'k3s-server-ca' });
    const loaded = await loadCa({ certPem: created.certPem, keyPem: created.keyPem });
    expect(loaded.privateKey.extractable).toBe(false);
    await expect(webcrypto.subtle.exportKey('pkcs8', loaded.privateKey)).rejects.toThrow();
  });

  it('refuses key types it cannot sign with, naming the type and curve', async () => {
    const ec = generateKeyPairSync('ec', { namedCurve: 'secp256k1' });
    const dsa = generateKeyPairSync('dsa', { modulusLength: 2048, divisorLength: 256 });
    for (const [pair, message] of [
      [ec, 'unsupported CA key type ec (secp256k1)'],
      [dsa, 'unsupported CA key type dsa'],
    ] as const) {
      // A certificate for that public key; its own signature does not matter to loadCa.
      const signer = (await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, [
        'sign',
        'verify',
      ])) as webcrypto.CryptoKeyPair;
      const certificate = await x509.X509CertificateGenerator.create({
        serialNumber: '02',
        subject: 'CN=odd-ca',
        issuer: 'CN=odd-ca',
        notBefore: new Date(Date.now() - DAY_MS),
        notAfter: new Date(Date.now() + DAY_MS),
        signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
        publicKey: new x509.PublicKey(pair.publicKey.export({ type: 'spki', format: 'der' })),
        signingKey: signer.privateKey,
      });
      const keyPem = pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
      await expect(loadCa({ certPem: certificate.toString('pem'), keyPem })).rejects.toThrow(
        expect.objectContaining({
          code: 'E_KEY_ALGORITHM',
          exitCode: 3,
          message,
          hints: ['edgeadm signs with RSA, ECDSA P-256 or P-384, and Ed25519 CA keys.'],
        }),
      );
    }
  });

  it('says why a CA does not load', async () => {
    const a = await createCa({ commonName: 'a' });
    const b = await createCa({ commonName: 'b' });
    await expect(loadCa({ certPem: a.certPem, keyPem: b.keyPem })).rejects.toThrow(
      expect.objectContaining({ message: 'the CA private key does not belong to the CA certificate' }),
    );
    await expect(loadCa({ certPem: a.certPem, keyPem: 'not a key' })).rejects.toThrow(
      expect.objectContaining({
        code: 'E_CA_LOAD',
        message: expect.stringMatching(/^cannot read the CA certificate or key: .+/),
      }),
    );
  });
});

describe('signCsr failures', () => {
  it('names a request that does not parse', async () => {
    const ca = await createCa({ commonName: 'csr-ca' });
    await expect(signCsr({ ca, csrPem: 'not a csr', usages: ['client'] })).rejects.toThrow(
      expect.objectContaining({
        code: 'E_CSR_INVALID',
        message: expect.stringMatching(/^the certificate signing request does not parse: .+/),
      }),
    );
  });

  it('refuses a request for a name no certificate may carry, with the SAN error', async () => {
    const ca = await createCa({ commonName: 'csr-ca' });
    const keys = (await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, [
      'sign',
      'verify',
    ])) as webcrypto.CryptoKeyPair;
    // Made with the X.509 library directly: createCsr would refuse the name itself.
    const csr = await x509.Pkcs10CertificateRequestGenerator.create({
      name: 'CN=agent',
      keys,
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
      extensions: [new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: 'evil name' }])],
    });
    await expect(signCsr({ ca, csrPem: csr.toString('pem'), usages: ['client'] })).rejects.toThrow(
      expect.objectContaining({ code: 'E_CERT_SAN', message: 'invalid DNS name for a certificate: "evil name"' }),
    );
  });

  it('wraps a signing failure in its own error', async () => {
    const ca = await createCa({ commonName: 'csr-ca' });
    // A CA record that holds the CA's public key where the private key belongs: WebCrypto refuses to sign.
    const broken = { ...ca, privateKey: await ca.certificate.publicKey.export() };
    const { csrPem } = await createCsr({ commonName: 'agent' });
    await expect(signCsr({ ca: broken, csrPem, usages: ['client'] })).rejects.toThrow(
      expect.objectContaining({
        code: 'E_CSR_SIGN',
        exitCode: 1,
        message: expect.stringMatching(/^cannot sign the certificate request: .+/),
      }),
    );
  });
});
