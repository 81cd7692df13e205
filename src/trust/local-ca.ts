/**
 * The CA certificate file of a control plane and its pins, for
 * `certs ca-hash`: a file the operator names, or else the local control
 * plane's cluster CA, k3s first (edgeadm's default distribution), then
 * kubeadm.
 */
import { existsSync, readFileSync } from 'node:fs';
import { EdgeadmError, ValidationError } from '../errors.js';
import { caPinOf } from './ca-pin.js';
import { parsePemCertificates } from './pem.js';

/** The k3s server's cluster CA (it signs the API server's serving certificate). */
export const K3S_SERVER_CA_PATH = '/var/lib/rancher/k3s/server/tls/server-ca.crt';
/** kubeadm's cluster CA. */
export const KUBEADM_CA_PATH = '/etc/kubernetes/pki/ca.crt';
/** Searched in this order. */
export const LOCAL_CA_PATHS: readonly string[] = [K3S_SERVER_CA_PATH, KUBEADM_CA_PATH];

/**
 * The first CA certificate file that exists.
 *
 * @param candidates - the paths to try; defaults to {@link LOCAL_CA_PATHS}.
 * @throws {EdgeadmError} `E_CA_NOT_FOUND` (exit 3), naming every path tried.
 */
export function findLocalCaCertificate(candidates: readonly string[] = LOCAL_CA_PATHS): string {
  const found = candidates.find((path) => existsSync(path));
  if (found !== undefined) return found;
  throw new EdgeadmError(
    `no cluster CA certificate found: neither ${candidates.join(' nor ')} exists (is this a control-plane node?)`,
    {
      code: 'E_CA_NOT_FOUND',
      exitCode: 3,
      hints: ['Run this on a control-plane node, or pass the CA certificate with --cert FILE.'],
    },
  );
}

/** One certificate of a CA file and its pin. */
export interface CertificatePin {
  pin: string;
  subject: string;
  notAfter: string;
}

/** The pins of a CA file. */
export interface CaFilePins {
  file: string;
  certificates: CertificatePin[];
}

/**
 * Reads a CA file (or the local control plane's) and pins every certificate in it, in order.
 *
 * @throws {ValidationError} `E_CERT_READ` / `E_CERT_PARSE`, or `E_CA_NOT_FOUND`.
 */
export function readCaFilePins(options: { certFile?: string | undefined; candidates?: readonly string[] }): CaFilePins {
  const file = options.certFile ?? findLocalCaCertificate(options.candidates);
  let content: Buffer;
  try {
    content = readFileSync(file);
  } catch (error) {
    throw new ValidationError(`cannot read the CA certificate ${file}: ${(error as Error).message}`, {
      code: 'E_CERT_READ',
      cause: error,
    });
  }
  return {
    file,
    certificates: parsePemCertificates(content, file).map(({ certificate }) => ({
      pin: caPinOf(certificate),
      subject: certificate.subject.replace(/\n/g, ', '),
      notAfter: certificate.validToDate.toISOString(),
    })),
  };
}
