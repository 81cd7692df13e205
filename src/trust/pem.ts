/**
 * PEM certificate bundles: splitting a bundle (a CA file, cluster-info's
 * `certificate-authority-data`) into its certificates.
 *
 * Blocks other than CERTIFICATE are skipped, as Go's certificate PEM parser
 * skips them, so a bundle with a key or comments in it still reads.
 */
import { X509Certificate } from 'node:crypto';
import { ValidationError } from '../errors.js';

/** A certificate block, with its DER bytes and Node's parsed view. */
export interface PemCertificate {
  /** The block's text, from `-----BEGIN` to `-----END CERTIFICATE-----`. */
  pem: string;
  der: Buffer;
  certificate: X509Certificate;
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----\r?\n([\s\S]*?)-----END \1-----/g;

/**
 * Parses every CERTIFICATE block in `bundle`.
 *
 * @param what - names the input in errors (`"the file /etc/kubernetes/pki/ca.crt"`).
 * @throws {ValidationError} `E_CERT_PARSE` when a block does not parse, or
 * when there is no certificate at all.
 */
export function parsePemCertificates(bundle: string | Buffer, what = 'the input'): PemCertificate[] {
  const text = typeof bundle === 'string' ? bundle : bundle.toString('latin1');
  const certificates: PemCertificate[] = [];
  for (const match of text.matchAll(PEM_BLOCK)) {
    if (match[1] !== 'CERTIFICATE') continue;
    const der = Buffer.from((match[2] ?? '').replace(/\s+/g, ''), 'base64');
    let certificate: X509Certificate;
    try {
      certificate = new X509Certificate(der);
    } catch (error) {
      throw new ValidationError(
        `certificate ${certificates.length + 1} in ${what} does not parse: ${(error as Error).message}`,
        { code: 'E_CERT_PARSE', cause: error },
      );
    }
    certificates.push({ pem: match[0], der, certificate });
  }
  if (certificates.length === 0) {
    throw new ValidationError(`${what} does not contain any PEM certificate`, {
      code: 'E_CERT_PARSE',
      hints: ['Pass a PEM file that starts with "-----BEGIN CERTIFICATE-----".'],
    });
  }
  return certificates;
}
