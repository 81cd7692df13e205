/**
 * The edge-proxy's serving certificate when `--tls-cert`/`--tls-key` are
 * not given: a small CA of its own (made once, kept in `<cache-dir>/pki`,
 * 0600) and a serving certificate for the listen address, reissued when the
 * address changes. Clients trust `<cache-dir>/pki/ca.crt`. Nothing is
 * hard-coded: keys are generated on the node.
 *
 * Files that cannot be used (empty, torn or mismatched after a power loss on
 * storage that does not honour fsync) are made again, never a reason not to
 * start: the node's kubelet talks only to this proxy, so a proxy that stops
 * at start takes the node down, online or not (superedge#418). A new CA is
 * written before anything trusts it; the kubelet reads `ca.crt` when it
 * starts, after the proxy (the unit orders it so).
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { writeSecretFileAtomic } from '../trust/secret-file.js';
import { createSmallCa, issueSmallServingCertificate } from '../trust/small-issuer.js';
import type { CertificateAndKey } from '../trust/pki.js';

/** The CA and serving certificate in use. */
export interface ServingMaterial extends CertificateAndKey {
  /** The CA clients should trust. */
  caPem: string;
  caFile: string;
}

/** Whether `pair` is a CA certificate with its own key; false for anything unreadable. */
function isUsableCa(pair: CertificateAndKey): boolean {
  try {
    const certificate = new X509Certificate(pair.certPem);
    return certificate.ca && certificate.checkPrivateKey(createPrivateKey(pair.keyPem));
  } catch {
    return false;
  }
}

/** Whether `serving` is valid now, for `host`, with its own key and issued by `caPem`; false for anything unreadable. */
function covers(serving: CertificateAndKey, host: string, caPem: string): boolean {
  try {
    const certificate = new X509Certificate(serving.certPem);
    const isValid = Date.parse(certificate.validTo) > Date.now();
    const isForHost = isIP(host) ? certificate.checkIP(host) !== undefined : certificate.checkHost(host) !== undefined;
    return (
      isValid &&
      isForHost &&
      certificate.checkPrivateKey(createPrivateKey(serving.keyPem)) &&
      certificate.verify(new X509Certificate(caPem).publicKey)
    );
  } catch {
    return false;
  }
}

/** Both files of a pair, or undefined when either is missing. */
function readPair(certFile: string, keyFile: string): CertificateAndKey | undefined {
  if (!existsSync(certFile) || !existsSync(keyFile)) return undefined;
  return { certPem: readFileSync(certFile, 'utf8'), keyPem: readFileSync(keyFile, 'utf8') };
}

/** Loads, or makes, the CA and a serving certificate for `host` under `dir`. */
export async function ensureServingCertificate(options: { dir: string; host: string }): Promise<ServingMaterial> {
  mkdirSync(options.dir, { recursive: true, mode: 0o700 });
  chmodSync(options.dir, 0o700);
  const file = (name: string): string => join(options.dir, name);
  // Made with node:crypto alone (src/trust/small-issuer.ts): the PKI library would stay in this
  // long-running process's memory after its first start.
  let caPair = readPair(file('ca.crt'), file('ca.key'));
  if (caPair === undefined || !isUsableCa(caPair)) {
    caPair = createSmallCa({ commonName: 'edgeadm-edge-proxy-ca' });
    writeSecretFileAtomic(file('ca.key'), caPair.keyPem);
    writeSecretFileAtomic(file('ca.crt'), caPair.certPem);
  }
  const existing = readPair(file('tls.crt'), file('tls.key'));
  if (existing !== undefined && covers(existing, options.host, caPair.certPem)) {
    return { ...existing, caPem: caPair.certPem, caFile: file('ca.crt') };
  }
  const names = new Set([options.host, '127.0.0.1', 'localhost']);
  const serving = issueSmallServingCertificate({
    ca: caPair,
    commonName: 'edgeadm-edge-proxy',
    ipAddresses: [...names].filter((name) => isIP(name) !== 0),
    dnsNames: [...names].filter((name) => isIP(name) === 0),
  });
  writeSecretFileAtomic(file('tls.key'), serving.keyPem);
  writeSecretFileAtomic(file('tls.crt'), serving.certPem);
  return { ...serving, caPem: caPair.certPem, caFile: file('ca.crt') };
}
