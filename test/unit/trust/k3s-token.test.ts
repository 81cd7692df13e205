import { createHash, webcrypto } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildK3sToken, k3sCaHash, parseK3sToken, verifyK3sCaHash } from '../../../src/trust/k3s-token.js';
import { createCa, issueCertificate, type CertificateAuthority } from '../../../src/trust/pki.js';
import { x509 } from '../../../src/trust/x509.js';

const sha256 = (bytes: Buffer | string): string => createHash('sha256').update(bytes).digest('hex');
const derOf = (pem: string): Buffer => Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ''), 'base64');

/** An intermediate CA signed by `root`, made with the X.509 library directly (edgeadm's PKI makes roots only). */
async function intermediateCa(root: CertificateAuthority): Promise<CertificateAuthority> {
  const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify']);
  const rootKeyId = root.certificate.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId as string;
  const certificate = await x509.X509CertificateGenerator.create({
    serialNumber: '0a',
    subject: 'CN=k3s-intermediate-ca',
    issuer: root.certificate.subjectName,
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 365 * 24 * 3600 * 1000),
    signingAlgorithm: root.signingAlgorithm,
    publicKey: keys.publicKey,
    signingKey: root.privateKey,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      new x509.AuthorityKeyIdentifierExtension(rootKeyId),
    ],
  });
  return {
    certPem: `${certificate.toString('pem')}\n`,
    keyPem: '',
    certificate,
    privateKey: keys.privateKey,
    signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' } as webcrypto.EcdsaParams,
  };
}

let root: CertificateAuthority;
let intermediate: CertificateAuthority;
let otherRoot: CertificateAuthority;
const token = { id: 'abcdef', secret: '0123456789abcdef' };

beforeAll(async () => {
  root = await createCa({ commonName: 'k3s-server-ca' });
  intermediate = await intermediateCa(root);
  otherRoot = await createCa({ commonName: 'other-ca' });
});

describe('k3sCaHash', () => {
  it('hashes the literal bytes of a one-certificate bundle, newlines included', () => {
    expect(k3sCaHash(root.certPem)).toBe(sha256(root.certPem));
    expect(k3sCaHash(`${root.certPem}\n`)).toBe(sha256(`${root.certPem}\n`));
    expect(k3sCaHash(`${root.certPem}\n`)).not.toBe(k3sCaHash(root.certPem));
    expect(k3sCaHash(Buffer.from(root.certPem))).toBe(sha256(root.certPem));
  });

  it('hashes the DER of the root that the first certificate chains to, for a bundle of several', () => {
    const bundle = intermediate.certPem + root.certPem;
    expect(k3sCaHash(bundle)).toBe(sha256(derOf(root.certPem)));
  });

  it('follows a chain through intermediates from a leaf first', async () => {
    const leaf = await issueCertificate({ ca: intermediate, commonName: 'k3s', usages: ['server'] });
    const bundle = leaf.certPem + intermediate.certPem + otherRoot.certPem + root.certPem;
    expect(k3sCaHash(bundle)).toBe(sha256(derOf(root.certPem)));
  });

  it('falls back to the literal bytes when the first certificate chains to nothing in the bundle', () => {
    const bundle = intermediate.certPem + otherRoot.certPem;
    expect(k3sCaHash(bundle)).toBe(sha256(bundle));
  });

  it('falls back to the literal bytes when the chain is not valid at that time', () => {
    const bundle = intermediate.certPem + root.certPem;
    expect(k3sCaHash(bundle, new Date('2199-01-01T00:00:00Z'))).toBe(sha256(bundle));
  });

  it('refuses a bundle without a certificate', () => {
    expect(() => k3sCaHash('nothing here')).toThrow(expect.objectContaining({ code: 'E_CERT_PARSE' }));
  });
});

describe('buildK3sToken / parseK3sToken', () => {
  it('builds K10<hash>::<id>.<secret> and parses it back', () => {
    const text = buildK3sToken({ caBundle: root.certPem, credentials: token });
    expect(text).toBe(`K10${sha256(root.certPem)}::abcdef.0123456789abcdef`);
    expect(parseK3sToken(text)).toEqual({
      caHash: sha256(root.certPem),
      credentials: { kind: 'bootstrap-token', token },
    });
  });

  it('builds and parses username:password credentials', () => {
    const text = buildK3sToken({ caBundle: root.certPem, credentials: { username: 'server', password: 'p:a:ss' } });
    expect(text).toBe(`K10${sha256(root.certPem)}::server:p:a:ss`);
    expect(parseK3sToken(text)).toEqual({
      caHash: sha256(root.certPem),
      credentials: { kind: 'password', username: 'server', password: 'p:a:ss' },
    });
  });

  it('reads bare bootstrap tokens and bare passwords as tokens without a CA hash', () => {
    expect(parseK3sToken('abcdef.0123456789abcdef')).toEqual({
      caHash: undefined,
      credentials: { kind: 'bootstrap-token', token },
    });
    expect(parseK3sToken('s3cr3t')).toEqual({
      caHash: undefined,
      credentials: { kind: 'password', username: '', password: 's3cr3t' },
    });
    expect(parseK3sToken('K10::node:pw')).toEqual({
      caHash: undefined,
      credentials: { kind: 'password', username: 'node', password: 'pw' },
    });
  });

  it.each([
    ['', 'invalid k3s token: token must not be empty'],
    [`K10${'a'.repeat(63)}::abcdef.0123456789abcdef`, 'invalid k3s token: invalid token CA hash length'],
    [`K10${'A'.repeat(64)}::abcdef.0123456789abcdef`, 'invalid k3s token: the CA hash must be lowercase hexadecimal'],
    [`K10${'a'.repeat(64)}::server:`, 'invalid k3s token: invalid token format'],
    [`K10${'a'.repeat(64)}::justapassword`, 'invalid k3s token: invalid token format'],
    [`K10${'g'.repeat(64)}::abcdef.0123456789abcdef`, 'invalid k3s token: the CA hash must be lowercase hexadecimal'],
    [`K10x${'a'.repeat(63)}::abcdef.0123456789abcdef`, 'invalid k3s token: the CA hash must be lowercase hexadecimal'],
    [`K10${'a'.repeat(63)}x::abcdef.0123456789abcdef`, 'invalid k3s token: the CA hash must be lowercase hexadecimal'],
  ])('refuses %j', (text, message) => {
    expect(() => parseK3sToken(text)).toThrow(
      expect.objectContaining({
        code: 'E_K3S_TOKEN_INVALID',
        message,
        hints: ['A full k3s token looks like K10<64 hex>::<id>.<secret> or K10<64 hex>::server:<password>.'],
      }),
    );
  });

  it('reads a K10 token without "::" as credentials only, as the k3s agent does', () => {
    expect(parseK3sToken('K10node:pw')).toEqual({
      caHash: undefined,
      credentials: { kind: 'password', username: 'node', password: 'pw' },
    });
  });

  it('refuses to build with credentials k3s could not read back', () => {
    for (const credentials of [
      { username: 'a:b', password: 'x' },
      { username: '', password: 'x' },
      { username: 'server', password: '' },
    ]) {
      expect(() => buildK3sToken({ caBundle: root.certPem, credentials })).toThrow(
        expect.objectContaining({
          code: 'E_K3S_TOKEN_INVALID',
          message: 'a k3s token needs a username without ":" and a non-empty password',
        }),
      );
    }
    expect(() =>
      buildK3sToken({ caBundle: root.certPem, credentials: { id: 'ABCDEF', secret: token.secret } }),
    ).toThrow(expect.objectContaining({ code: 'E_TOKEN_INVALID' }));
  });
});

describe('verifyK3sCaHash', () => {
  it('passes the bundle the token was built from, and fails another with the k3s message', () => {
    const parsed = parseK3sToken(buildK3sToken({ caBundle: root.certPem, credentials: token }));
    expect(() => verifyK3sCaHash(parsed, root.certPem)).not.toThrow();
    expect(() => verifyK3sCaHash(parsed, otherRoot.certPem)).toThrow(
      expect.objectContaining({
        code: 'E_K3S_CA_HASH_MISMATCH',
        message: `token CA hash does not match the Cluster CA certificate hash: ${sha256(root.certPem)} != ${sha256(otherRoot.certPem)}`,
      }),
    );
  });

  it('passes anything for a token without a hash', () => {
    expect(() => verifyK3sCaHash(parseK3sToken('abcdef.0123456789abcdef'), otherRoot.certPem)).not.toThrow();
  });
});

/** Options for {@link makeCertificate}: every field the chain rules look at. */
interface CertificateSpec {
  subject: string;
  /** Self-signed when absent. */
  issuer?: { name: string; keys: webcrypto.CryptoKeyPair };
  /** A fresh key pair when absent. */
  keys?: webcrypto.CryptoKeyPair;
  notBefore: Date;
  notAfter: Date;
  isCa?: boolean;
  /** Subject key identifier: computed from the key by default, or none. */
  subjectKeyId?: 'from-key' | 'none';
  /**
   * Authority key identifier: none by default; `'issuer-key'` for the
   * issuer's key id (its own for a self-signed certificate, as OpenSSL writes
   * roots); `'issuer-and-serial'` for the other form, without a key id.
   */
  authorityKeyId?: 'none' | 'issuer-key' | 'issuer-and-serial';
}

const EC_P256 = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };

async function newKeys(): Promise<webcrypto.CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(EC_P256, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
}

let serial = 0x10;

/**
 * A certificate made with the X.509 library directly, for chain shapes that
 * edgeadm's PKI never makes but a k3s server may serve (custom CAs made with
 * OpenSSL, renewed intermediates, certificates without key identifiers).
 */
async function makeCertificate(spec: CertificateSpec): Promise<{ pem: string; keys: webcrypto.CryptoKeyPair }> {
  const keys = spec.keys ?? (await newKeys());
  const issuerKeys = spec.issuer?.keys ?? keys;
  const extensions: x509.Extension[] = [];
  if (spec.isCa ?? true) {
    extensions.push(
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
    );
  } else {
    extensions.push(new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true));
  }
  if ((spec.subjectKeyId ?? 'from-key') === 'from-key') {
    extensions.push(await x509.SubjectKeyIdentifierExtension.create(keys.publicKey));
  }
  const authority = spec.authorityKeyId ?? 'none';
  if (authority === 'issuer-key') {
    extensions.push(await x509.AuthorityKeyIdentifierExtension.create(issuerKeys.publicKey));
  } else if (authority === 'issuer-and-serial') {
    extensions.push(
      new x509.AuthorityKeyIdentifierExtension({
        name: new x509.GeneralNames([{ type: 'dns', value: 'issuer.example' }]),
        serialNumber: '01',
      }),
    );
  }
  serial += 1;
  const certificate = await x509.X509CertificateGenerator.create({
    serialNumber: serial.toString(16).padStart(2, '0'),
    subject: spec.subject,
    issuer: spec.issuer?.name ?? spec.subject,
    notBefore: spec.notBefore,
    notAfter: spec.notAfter,
    signingAlgorithm: EC_P256,
    publicKey: keys.publicKey,
    signingKey: issuerKeys.privateKey,
    extensions,
  });
  return { pem: `${certificate.toString('pem')}\n`, keys };
}

const HOUR_MS = 3600 * 1000;
const DAY_MS = 24 * HOUR_MS;
/** The time chains are checked at in the tests below; every certificate is made around it. */
const T = new Date('2030-06-01T12:00:00Z');
const at = (offsetMs: number): Date => new Date(T.getTime() + offsetMs);
const YEAR = { notBefore: at(-DAY_MS), notAfter: at(365 * DAY_MS) };

describe('k3sCaHash: which root a bundle chains to (as the k3s agent, with Go x509 Verify)', () => {
  it('counts a certificate valid from its first second to its last (both bounds included, as Go)', async () => {
    const rootCert = await makeCertificate({
      subject: 'CN=root',
      notBefore: at(-10 * DAY_MS),
      notAfter: at(10 * DAY_MS),
    });
    const inter = await makeCertificate({
      subject: 'CN=intermediate',
      issuer: { name: 'CN=root', keys: rootCert.keys },
      notBefore: at(-HOUR_MS),
      notAfter: at(HOUR_MS),
      authorityKeyId: 'issuer-key',
    });
    const bundle = inter.pem + rootCert.pem;
    const rootHash = sha256(derOf(rootCert.pem));
    expect(k3sCaHash(bundle, at(-HOUR_MS))).toBe(rootHash);
    expect(k3sCaHash(bundle, at(HOUR_MS))).toBe(rootHash);
    // One second outside either bound, the chain does not verify: the literal bytes.
    expect(k3sCaHash(bundle, at(-HOUR_MS - 1000))).toBe(sha256(bundle));
    expect(k3sCaHash(bundle, at(HOUR_MS + 1000))).toBe(sha256(bundle));
  });

  it('does not hash the root of a first certificate that has expired while its root is still valid', async () => {
    const rootCert = await makeCertificate({ subject: 'CN=root', ...YEAR });
    const expired = await makeCertificate({
      subject: 'CN=intermediate',
      issuer: { name: 'CN=root', keys: rootCert.keys },
      notBefore: at(-2 * DAY_MS),
      notAfter: at(-DAY_MS),
      authorityKeyId: 'issuer-key',
    });
    const bundle = expired.pem + rootCert.pem;
    expect(k3sCaHash(bundle, T)).toBe(sha256(bundle));
  });

  it('does not chain through an intermediate that has expired', async () => {
    const rootCert = await makeCertificate({ subject: 'CN=root', ...YEAR });
    const expired = await makeCertificate({
      subject: 'CN=intermediate',
      issuer: { name: 'CN=root', keys: rootCert.keys },
      notBefore: at(-2 * DAY_MS),
      notAfter: at(-DAY_MS),
      authorityKeyId: 'issuer-key',
    });
    const leaf = await makeCertificate({
      subject: 'CN=leaf',
      issuer: { name: 'CN=intermediate', keys: expired.keys },
      ...YEAR,
      isCa: false,
      authorityKeyId: 'issuer-key',
    });
    const bundle = leaf.pem + expired.pem + rootCert.pem;
    expect(k3sCaHash(bundle, T)).toBe(sha256(bundle));
  });

  it('takes a self-signed root with an authority key id equal to its subject key id (as OpenSSL writes roots) as a root', async () => {
    const rootCert = await makeCertificate({ subject: 'CN=openssl-root', ...YEAR, authorityKeyId: 'issuer-key' });
    const inter = await makeCertificate({
      subject: 'CN=intermediate',
      issuer: { name: 'CN=openssl-root', keys: rootCert.keys },
      ...YEAR,
      authorityKeyId: 'issuer-key',
    });
    // The key ids are hex with letters in them, so a case slip would show.
    const rootIds = new x509.X509Certificate(rootCert.pem);
    expect(rootIds.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId).toMatch(/[a-f]/);
    expect(k3sCaHash(inter.pem + rootCert.pem, T)).toBe(sha256(derOf(rootCert.pem)));
  });

  it('takes a certificate without key identifiers, or with an issuer-and-serial authority id, as a root', async () => {
    for (const authorityKeyId of ['none', 'issuer-and-serial'] as const) {
      const rootCert = await makeCertificate({ subject: 'CN=old-root', ...YEAR, subjectKeyId: 'none', authorityKeyId });
      const inter = await makeCertificate({
        subject: 'CN=intermediate',
        issuer: { name: 'CN=old-root', keys: rootCert.keys },
        ...YEAR,
      });
      expect(k3sCaHash(inter.pem + rootCert.pem, T), authorityKeyId).toBe(sha256(derOf(rootCert.pem)));
    }
  });

  it('needs the signature, not only the name: an impostor root with the same name is not the issuer', async () => {
    const rootCert = await makeCertificate({ subject: 'CN=k3s-server-ca', ...YEAR });
    const impostor = await makeCertificate({ subject: 'CN=k3s-server-ca', ...YEAR });
    // No authority key id on the intermediate: only the name and the signature say who issued it.
    const inter = await makeCertificate({
      subject: 'CN=intermediate',
      issuer: { name: 'CN=k3s-server-ca', keys: rootCert.keys },
      ...YEAR,
    });
    expect(k3sCaHash(inter.pem + impostor.pem, T)).toBe(sha256(inter.pem + impostor.pem));
    expect(k3sCaHash(inter.pem + impostor.pem + rootCert.pem, T)).toBe(sha256(derOf(rootCert.pem)));
  });

  it('follows an intermediate only if it issued the certificate before it', async () => {
    const [rootA, rootB] = await Promise.all([
      makeCertificate({ subject: 'CN=root-a', ...YEAR }),
      makeCertificate({ subject: 'CN=root-b', ...YEAR }),
    ]);
    const fromA = await makeCertificate({
      subject: 'CN=intermediate-a',
      issuer: { name: 'CN=root-a', keys: rootA.keys },
      ...YEAR,
      authorityKeyId: 'issuer-key',
    });
    const fromB = await makeCertificate({
      subject: 'CN=intermediate-b',
      issuer: { name: 'CN=root-b', keys: rootB.keys },
      ...YEAR,
      authorityKeyId: 'issuer-key',
    });
    // root-a is missing: intermediate-b and root-b have nothing to do with intermediate-a.
    const bundle = fromA.pem + fromB.pem + rootB.pem;
    expect(k3sCaHash(bundle, T)).toBe(sha256(bundle));
  });

  it('tries every intermediate that could have issued a certificate, past a dead end', async () => {
    const [gone, rootCert] = await Promise.all([
      makeCertificate({ subject: 'CN=retired-root', ...YEAR }),
      makeCertificate({ subject: 'CN=root', ...YEAR }),
    ]);
    // One intermediate key, certified twice: once by a root no longer in the bundle, once by the current one.
    const interKeys = await newKeys();
    const [old, renewed] = await Promise.all([
      makeCertificate({
        subject: 'CN=intermediate',
        keys: interKeys,
        issuer: { name: 'CN=retired-root', keys: gone.keys },
        ...YEAR,
        authorityKeyId: 'issuer-key',
      }),
      makeCertificate({
        subject: 'CN=intermediate',
        keys: interKeys,
        issuer: { name: 'CN=root', keys: rootCert.keys },
        ...YEAR,
        authorityKeyId: 'issuer-key',
      }),
    ]);
    const leaf = await makeCertificate({
      subject: 'CN=leaf',
      issuer: { name: 'CN=intermediate', keys: interKeys },
      ...YEAR,
      isCa: false,
    });
    expect(k3sCaHash(leaf.pem + old.pem + renewed.pem + rootCert.pem, T)).toBe(sha256(derOf(rootCert.pem)));
  });

  it('hashes a first certificate that is itself one of the roots of the bundle, as Go verifies a root', async () => {
    // Self-signed without keyCertSign: it does not issue itself, so only its presence among the roots makes it one.
    const self = await makeCertificate({ subject: 'CN=self', ...YEAR, isCa: false });
    const other = await makeCertificate({ subject: 'CN=other-root', ...YEAR });
    expect(k3sCaHash(self.pem + other.pem + self.pem, T)).toBe(sha256(derOf(self.pem)));
  });

  it('follows chains of up to nine intermediates below the first certificate, and no longer ones', async () => {
    const rootCert = await makeCertificate({ subject: 'CN=root', ...YEAR });
    // chain[0] is issued by the root, chain[i] by chain[i - 1].
    const chain: Array<{ pem: string; keys: webcrypto.CryptoKeyPair }> = [];
    for (let i = 0; i < 11; i += 1) {
      const issuer =
        i === 0 ? { name: 'CN=root', keys: rootCert.keys } : { name: `CN=level-${i - 1}`, keys: chain[i - 1]!.keys };
      chain.push(await makeCertificate({ subject: `CN=level-${i}`, issuer, ...YEAR, authorityKeyId: 'issuer-key' }));
    }
    /** A bundle whose first certificate has `intermediates` certificates between it and the root. */
    const bundleBelow = (intermediates: number): string =>
      chain[intermediates]!.pem +
      chain
        .slice(0, intermediates)
        .reverse()
        .map((c) => c.pem)
        .join('') +
      rootCert.pem;
    expect(k3sCaHash(bundleBelow(9), T)).toBe(sha256(derOf(rootCert.pem)));
    expect(k3sCaHash(bundleBelow(10), T)).toBe(sha256(bundleBelow(10)));
  });

  it('names the CA bundle when it holds no certificate', () => {
    expect(() => k3sCaHash('nothing here')).toThrow(
      expect.objectContaining({ code: 'E_CERT_PARSE', message: 'the CA bundle does not contain any PEM certificate' }),
    );
  });
});
