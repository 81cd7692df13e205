import { X509Certificate, webcrypto } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { caPinOf, caPinsOfPem, checkCaPins, parseCaPin, parseCaPins } from '../../../src/trust/ca-pin.js';
import { createCa } from '../../../src/trust/pki.js';
import { x509 } from '../../../src/trust/x509.js';

// Test vectors from the Kubernetes repository's
// cmd/kubeadm/app/util/pubkeypin/pubkeypin_test.go, verbatim.
const testCertPEM = `
-----BEGIN CERTIFICATE-----
MIIDRDCCAiygAwIBAgIJAJgVaCXvC6HkMA0GCSqGSIb3DQEBBQUAMB8xHTAbBgNV
BAMTFGt1YmVhZG0ta2V5cGlucy10ZXN0MCAXDTE3MDcwNTE3NDMxMFoYDzIxMTcw
NjExMTc0MzEwWjAfMR0wGwYDVQQDExRrdWJlYWRtLWtleXBpbnMtdGVzdDCCASIw
DQYJKoZIhvcNAQEBBQADggEPADCCAQoCggEBAK0ba8mHU9UtYlzM1Own2Fk/XGjR
J4uJQvSeGLtz1hID1IA0dLwruvgLCPadXEOw/f/IWIWcmT+ZmvIHZKa/woq2iHi5
+HLhXs7aG4tjKGLYhag1hLjBI7icqV7ovkjdGAt9pWkxEzhIYClFMXDjKpMSynu+
YX6nZ9tic1cOkHmx2yiZdMkuriRQnpTOa7bb03OC1VfGl7gHlOAIYaj4539WCOr8
+ACTUMJUFEHcRZ2o8a/v6F9GMK+7SC8SJUI+GuroXqlMAdhEv4lX5Co52enYaClN
+D9FJLRpBv2YfiCQdJRaiTvCBSxEFz6BN+PtP5l2Hs703ZWEkOqCByM6HV8CAwEA
AaOBgDB+MB0GA1UdDgQWBBRQgUX8MhK2rWBWQiPHWcKzoWDH5DBPBgNVHSMESDBG
gBRQgUX8MhK2rWBWQiPHWcKzoWDH5KEjpCEwHzEdMBsGA1UEAxMUa3ViZWFkbS1r
ZXlwaW5zLXRlc3SCCQCYFWgl7wuh5DAMBgNVHRMEBTADAQH/MA0GCSqGSIb3DQEB
BQUAA4IBAQCaAUif7Pfx3X0F08cxhx8/Hdx4jcJw6MCq6iq6rsXM32ge43t8OHKC
pJW08dk58a3O1YQSMMvD6GJDAiAfXzfwcwY6j258b1ZlI9Ag0VokvhMl/XfdCsdh
AWImnL1t4hvU5jLaImUUMlYxMcSfHBGAm7WJIZ2LdEfg6YWfZh+WGbg1W7uxLxk6
y4h5rWdNnzBHWAGf7zJ0oEDV6W6RSwNXtC0JNnLaeIUm/6xdSddJlQPwUv8YH4jX
c1vuFqTnJBPcb7W//R/GI2Paicm1cmns9NLnPR35exHxFTy+D1yxmGokpoPMdife
aH+sfuxT8xeTPb3kjzF9eJTlnEquUDLM
-----END CERTIFICATE-----`;

const expectedHash = `sha256:345959acb2c3b2feb87d281961c893f62a314207ef02599f1cc4a5fb255480b3`;

const testCert2PEM = `
-----BEGIN CERTIFICATE-----
MIID9jCCAt6gAwIBAgIJAN5MXZDic7qYMA0GCSqGSIb3DQEBBQUAMFkxCzAJBgNV
BAYTAkFVMRMwEQYDVQQIEwpTb21lLVN0YXRlMSEwHwYDVQQKExhJbnRlcm5ldCBX
aWRnaXRzIFB0eSBMdGQxEjAQBgNVBAMTCXRlc3RDZXJ0MjAgFw0xNzA3MjQxNjA0
MDFaGA8yMTE3MDYzMDE2MDQwMVowWTELMAkGA1UEBhMCQVUxEzARBgNVBAgTClNv
bWUtU3RhdGUxITAfBgNVBAoTGEludGVybmV0IFdpZGdpdHMgUHR5IEx0ZDESMBAG
A1UEAxMJdGVzdENlcnQyMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA
0brwpJYN2ytPWzRBtZSVc3dhkQlA59AzxzqeLLkano0Pxo9NIc3T/y58nnRI8uaS
I1P7BzUfJTiUEvmAtX8NggqKK4ld/gPrU+IRww1CUYS4KCkA/0d0ctPy0JwBCjD+
b57G3rmNE8c+0jns6J96ZzNtqmv6N+ZlFBAXm1p4S+k0kGi5+hoQ6H7SYXjk2lG+
r/8jPQEjy/NSdw1dcCA0Nc6o+hPr32927dS6J9KOhBeXNYUNdbuDDmroM9/gN2e/
YMSA1olLeDPQ7Xvhk0PIyEDnHh83AffPCx5yM3htVRGddjIsPAVUJEL3z5leJtxe
fzyPghOhHJY0PXqznDQTcwIDAQABo4G+MIG7MB0GA1UdDgQWBBRP0IJqv/5rQ4Uf
SByl77dJeEapRDCBiwYDVR0jBIGDMIGAgBRP0IJqv/5rQ4UfSByl77dJeEapRKFd
pFswWTELMAkGA1UEBhMCQVUxEzARBgNVBAgTClNvbWUtU3RhdGUxITAfBgNVBAoT
GEludGVybmV0IFdpZGdpdHMgUHR5IEx0ZDESMBAGA1UEAxMJdGVzdENlcnQyggkA
3kxdkOJzupgwDAYDVR0TBAUwAwEB/zANBgkqhkiG9w0BAQUFAAOCAQEA0RIMHc10
wHHPMh9UflqBgDMF7gfbOL0juJfGloAOcohWWfMZBBJ0CQKMy3xRyoK3HmbW1eeb
iATjesw7t4VEAwf7mgKAd+eTfWYB952uq5qYJ2TI28mSofEq1Wz3RmrNkC1KCBs1
u+YMFGwyl6necV9zKCeiju4jeovI1GA38TvH7MgYln6vMJ+FbgOXj7XCpek7dQiY
KGaeSSH218mGNQaWRQw2Sm3W6cFdANoCJUph4w18s7gjtFpfV63s80hXRps+vEyv
jEQMEQpG8Ss7HGJLGLBw/xAmG0e//XS/o2dDonbGbvzToFByz8OGxjMhk6yV6hdd
+iyvsLAw/MYMSA==
-----END CERTIFICATE-----
`;

/** The SPKI pin of testCert2PEM, recomputed (the upstream test only says it must not match). */
const testCert2Hash = 'sha256:d1ef16989563fe7775f81a7dc55ce16a467ca9baedae2d081cb0a068b6a81971';

const cert1 = new X509Certificate(testCertPEM.trim());
const cert2 = new X509Certificate(testCert2PEM.trim());

describe('caPinOf (upstream vector)', () => {
  it('hashes the SubjectPublicKeyInfo of the upstream test certificate to the upstream hash', () => {
    expect(caPinOf(cert1)).toBe(expectedHash);
  });

  it('gives the second test certificate a different pin', () => {
    expect(caPinOf(cert2)).toBe(testCert2Hash);
  });

  it('pins every certificate of a bundle, in order, skipping other PEM blocks', () => {
    const bundle = `${testCertPEM}\n-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n${testCert2PEM}`;
    expect(caPinsOfPem(bundle)).toEqual([expectedHash, testCert2Hash]);
  });

  it('refuses input without a certificate', () => {
    expect(() => caPinsOfPem('hello', 'the file x.pem')).toThrow(
      expect.objectContaining({ code: 'E_CERT_PARSE', message: 'the file x.pem does not contain any PEM certificate' }),
    );
  });

  it('hashes the key, not the certificate: a CA re-issued with the same key keeps its pin', async () => {
    const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
    const keys = await webcrypto.subtle.generateKey(algorithm, false, ['sign', 'verify']);
    const issue = async (name: string, serialNumber: string): Promise<X509Certificate> =>
      new X509Certificate(
        (
          await x509.X509CertificateGenerator.createSelfSigned({
            name,
            serialNumber,
            keys,
            signingAlgorithm: algorithm,
          })
        ).toString('pem'),
      );
    const original = await issue('CN=edge-ca', '01');
    const reissued = await issue('CN=edge-ca-2030', '02');
    expect(original.raw.equals(reissued.raw)).toBe(false);
    expect(caPinOf(reissued)).toBe(caPinOf(original));
    const otherKey = new X509Certificate((await createCa({ commonName: 'edge-ca' })).certPem);
    expect(caPinOf(otherKey)).not.toBe(caPinOf(original));
  });
});

describe('parseCaPin (the upstream TestSet cases)', () => {
  it('rejects junk', () => {
    expect(() => parseCaPin('xyz')).toThrow('invalid hash, expected "format:hex-value". Known format(s) are: sha256');
  });

  it('rejects something too short', () => {
    expect(() => parseCaPin('0011223344')).toThrow(
      'invalid hash, expected "format:hex-value". Known format(s) are: sha256',
    );
    expect(() => parseCaPin('sha256:0011223344')).toThrow(
      'invalid hash "sha256:0011223344", expected a 32 byte SHA-256 hash, found 5 bytes',
    );
  });

  it('rejects something too long', () => {
    expect(() => parseCaPin(expectedHash + expectedHash)).toThrow(/invalid hash, expected "format:hex-value"/);
    expect(() => parseCaPin(`${expectedHash}00`)).toThrow(/expected a 32 byte SHA-256 hash, found 33 bytes/);
  });

  it('accepts the hash in upper case, and returns it in lower case', () => {
    expect(parseCaPin(expectedHash.toUpperCase())).toBe(expectedHash);
    expect(parseCaPin(`Sha256:${expectedHash.slice(7)}`)).toBe(expectedHash);
  });

  it('rejects other formats and non-hex values, as validation errors', () => {
    expect(() => parseCaPin(`md5:${'0'.repeat(32)}`)).toThrow('unknown hash format "md5". Known format(s) are: sha256');
    expect(() => parseCaPin(`sha256:${'g'.repeat(64)}`)).toThrow(
      expect.objectContaining({ code: 'E_CA_PIN_INVALID', exitCode: 3 }),
    );
  });

  it('refuses a value with a non-hex character at either end, and says how to print a good pin', () => {
    const hex = expectedHash.slice(7);
    for (const value of [`x${hex.slice(1)}`, `${hex.slice(0, -1)}x`]) {
      expect(() => parseCaPin(`sha256:${value}`)).toThrow(
        expect.objectContaining({
          message: `invalid hash "sha256:${value}", could not decode SHA-256 from hex`,
          hints: [
            'A pin looks like sha256:<64 hex digits>. Print it on the control plane with "edgeadm certs ca-hash".',
          ],
        }),
      );
    }
  });

  it('drops duplicates across spellings', () => {
    expect(parseCaPins([expectedHash, expectedHash.toUpperCase(), testCert2Hash])).toEqual([
      expectedHash,
      testCert2Hash,
    ]);
  });
});

describe('checkCaPins (CheckAny)', () => {
  it('fails before the pin is allowed, then passes, and still fails for the second certificate', () => {
    expect(checkCaPins([cert1], []).isPinned).toBe(false);
    expect(checkCaPins([cert1], [parseCaPin(expectedHash.toUpperCase())])).toEqual({
      isPinned: true,
      pin: expectedHash,
    });
    expect(checkCaPins([cert2], [expectedHash]).isPinned).toBe(false);
  });

  it('passes a bundle when any certificate in it matches', () => {
    expect(checkCaPins([cert2, cert1], [expectedHash])).toEqual({ isPinned: true, pin: expectedHash });
  });

  it("says which keys were found, in kubeadm's words, joined with ':'", () => {
    expect(checkCaPins([cert1, cert2], [`sha256:${'0'.repeat(64)}`])).toEqual({
      isPinned: false,
      actual: [expectedHash, testCert2Hash],
      message: `none of the public keys "${expectedHash}:${testCert2Hash}" are pinned`,
    });
  });
});
