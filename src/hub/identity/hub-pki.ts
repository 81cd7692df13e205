/**
 * The hub's PKI under `<data-dir>/pki`: the hub CA (made on first start, or
 * given), and a serving certificate for the names the hub is reached by.
 * Agents pin the CA (`--hub-ca-cert-hash`), and the CA signs their client
 * certificates, so it is kept across restarts; the serving certificate is
 * re-issued at every start, so a changed `--advertise-address` just works.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { caPinOf } from '../../trust/ca-pin.js';
import { parsePemCertificates } from '../../trust/pem.js';
import { createCa, issueCertificate, loadCa, type CertificateAuthority } from '../../trust/pki.js';
import { writeSecretFileAtomic } from '../../trust/secret-file.js';

/** The hub CA's common name. */
export const HUB_CA_COMMON_NAME = 'edgeadm-hub-ca';
/** Lifetime of the serving certificate (it is re-issued at each start anyway). */
export const HUB_SERVING_CERT_VALIDITY_DAYS = 365;

/** The hub's key material, loaded. */
export interface HubPki {
  ca: CertificateAuthority;
  /** `sha256:…` pin of the CA's public key: what `--hub-ca-cert-hash` takes. */
  caPin: string;
  servingCertPem: string;
  /** A secret: never log it. */
  servingKeyPem: string;
  /** Whether the CA was made by this call. */
  isNewCa: boolean;
}

/** Options of {@link ensureHubPki}. */
export interface HubPkiOptions {
  dataDir: string;
  /** Host names and IPs the serving certificate must name. */
  names: readonly string[];
  /** A CA to adopt on first start instead of making one (PEM files). */
  caCertFile?: string;
  caKeyFile?: string;
}

/** Loads or makes the hub CA, and issues a fresh serving certificate. */
export async function ensureHubPki(options: HubPkiOptions): Promise<HubPki> {
  const dir = join(options.dataDir, 'pki');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const certPath = join(dir, 'ca.crt');
  const keyPath = join(dir, 'ca.key');
  let ca: CertificateAuthority;
  let isNewCa = false;
  if (existsSync(certPath) && existsSync(keyPath)) {
    ca = await loadCa({ certPem: readFileSync(certPath, 'utf8'), keyPem: readFileSync(keyPath, 'utf8') });
  } else if (options.caCertFile !== undefined && options.caKeyFile !== undefined) {
    ca = await loadCa({
      certPem: readFileSync(options.caCertFile, 'utf8'),
      keyPem: readFileSync(options.caKeyFile, 'utf8'),
    });
    writeSecretFileAtomic(keyPath, ca.keyPem);
    writeFileSync(certPath, ca.certPem, { mode: 0o644 });
    isNewCa = true;
  } else {
    ca = await createCa({ commonName: HUB_CA_COMMON_NAME });
    writeSecretFileAtomic(keyPath, ca.keyPem);
    writeFileSync(certPath, ca.certPem, { mode: 0o644 });
    isNewCa = true;
  }
  return hubPkiFor(ca, options.names, isNewCa);
}

/**
 * The PKI of a hub whose CA is loaded: issues the serving certificate for
 * `names` (and localhost) under it. Hubs on etcd share one CA from the store
 * and issue their own serving certificates with this.
 */
export async function hubPkiFor(
  ca: CertificateAuthority,
  hostNames: readonly string[],
  isNewCa: boolean,
): Promise<HubPki> {
  const names = [...new Set(['localhost', '127.0.0.1', ...hostNames].filter((n) => n !== '' && n !== '0.0.0.0'))];
  const serving = await issueCertificate({
    ca,
    commonName: 'edgeadm-hub',
    usages: ['server'],
    dnsNames: names.filter((n) => isIP(n) === 0),
    ipAddresses: names.filter((n) => isIP(n) !== 0 && n !== '::'),
    validityDays: HUB_SERVING_CERT_VALIDITY_DAYS,
  });
  const first = parsePemCertificates(ca.certPem, 'the hub CA')[0];
  if (first === undefined) throw new Error('the hub CA file holds no certificate');
  return {
    ca,
    caPin: caPinOf(first.certificate),
    servingCertPem: serving.certPem,
    servingKeyPem: serving.keyPem,
    isNewCa,
  };
}
