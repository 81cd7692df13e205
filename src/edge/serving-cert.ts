/**
 * The edge-proxy's serving certificate when `--tls-cert`/`--tls-key` are
 * not given: a small CA of its own (made once, kept in `<cache-dir>/pki`,
 * 0600) and a serving certificate for the listen address, reissued when the
 * address changes. Clients trust `<cache-dir>/pki/ca.crt`. Nothing is
 * hard-coded: keys are generated on the node.
 */
import { X509Certificate } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { writeSecretFileAtomic } from '../trust/secret-file.js';
import type * as Pki from '../trust/pki.js';
import type { CertificateAndKey } from '../trust/pki.js';

/** The CA and serving certificate in use. */
export interface ServingMaterial extends CertificateAndKey {
  /** The CA clients should trust. */
  caPem: string;
  caFile: string;
}

function covers(certPem: string, host: string): boolean {
  const certificate = new X509Certificate(certPem);
  const isValid = Date.parse(certificate.validTo) > Date.now();
  return isValid && (isIP(host) ? certificate.checkIP(host) !== undefined : certificate.checkHost(host) !== undefined);
}

/** Loads, or makes, the CA and a serving certificate for `host` under `dir`. */
export async function ensureServingCertificate(options: { dir: string; host: string }): Promise<ServingMaterial> {
  mkdirSync(options.dir, { recursive: true, mode: 0o700 });
  chmodSync(options.dir, 0o700);
  const file = (name: string): string => join(options.dir, name);
  // The PKI library is large; it is loaded only when a certificate must be made (not on every start).
  const loadPki = (): Promise<typeof Pki> => import('../trust/pki.js');
  let caPair: CertificateAndKey;
  if (existsSync(file('ca.crt')) && existsSync(file('ca.key'))) {
    caPair = { certPem: readFileSync(file('ca.crt'), 'utf8'), keyPem: readFileSync(file('ca.key'), 'utf8') };
  } else {
    const { createCa } = await loadPki();
    const created = await createCa({ commonName: 'edgeadm-edge-proxy-ca' });
    caPair = { certPem: created.certPem, keyPem: created.keyPem };
    writeSecretFileAtomic(file('ca.key'), caPair.keyPem);
    writeSecretFileAtomic(file('ca.crt'), caPair.certPem);
  }
  if (existsSync(file('tls.crt')) && existsSync(file('tls.key'))) {
    const certPem = readFileSync(file('tls.crt'), 'utf8');
    if (covers(certPem, options.host)) {
      return { certPem, keyPem: readFileSync(file('tls.key'), 'utf8'), caPem: caPair.certPem, caFile: file('ca.crt') };
    }
  }
  const { issueCertificate, loadCa } = await loadPki();
  const ca = await loadCa(caPair);
  const names = new Set([options.host, '127.0.0.1', 'localhost']);
  const serving = await issueCertificate({
    ca,
    commonName: 'edgeadm-edge-proxy',
    usages: ['server'],
    ipAddresses: [...names].filter((name) => isIP(name) !== 0),
    dnsNames: [...names].filter((name) => isIP(name) === 0),
  });
  writeSecretFileAtomic(file('tls.key'), serving.keyPem);
  writeSecretFileAtomic(file('tls.crt'), serving.certPem);
  return { ...serving, caPem: caPair.certPem, caFile: file('ca.crt') };
}
