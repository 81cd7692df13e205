import { describe, expect, it } from 'vitest';
import { parsePemCertificates } from '../../../src/trust/pem.js';
import { createCa } from '../../../src/trust/pki.js';

describe('parsePemCertificates', () => {
  it('reads every certificate of a bundle given as text or as bytes, skipping other blocks', async () => {
    const [a, b] = await Promise.all([createCa({ commonName: 'a' }), createCa({ commonName: 'b' })]);
    const bundle = `${a.certPem}${a.keyPem}${b.certPem}`;
    for (const input of [bundle, Buffer.from(bundle, 'latin1')]) {
      expect(parsePemCertificates(input).map((c) => c.certificate.subject)).toEqual(['CN=a', 'CN=b']);
    }
  });

  it('names the certificate that does not parse, and the input it is in', () => {
    const broken = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n';
    expect(() => parsePemCertificates(broken, 'the file ca.crt')).toThrow(
      expect.objectContaining({
        code: 'E_CERT_PARSE',
        message: expect.stringMatching(/^certificate 1 in the file ca\.crt does not parse: /),
      }),
    );
    expect(() => parsePemCertificates(broken)).toThrow(/^certificate 1 in the input does not parse/);
  });

  it('says what a certificate file starts with when there is none', () => {
    expect(() => parsePemCertificates('hello')).toThrow(
      expect.objectContaining({
        code: 'E_CERT_PARSE',
        message: 'the input does not contain any PEM certificate',
        hints: ['Pass a PEM file that starts with "-----BEGIN CERTIFICATE-----".'],
      }),
    );
  });
});
