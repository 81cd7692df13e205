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
