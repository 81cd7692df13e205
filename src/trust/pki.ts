/**
 * The PKI edgeadm needs: a cluster or hub CA, serving and client
 * certificates with SANs, and certificate signing requests (made on the
 * joining side, signed on the CA side, so private keys never travel).
 *
 * Certificates are built with @peculiar/x509 over Node's WebCrypto; nothing
 * here encodes ASN.1 by hand. Keys are PKCS#8 PEM, which Go's TLS stack,
 * kube-apiserver, k3s and OpenSSL all read.
 */
import { createPrivateKey, createPublicKey, randomBytes, webcrypto, type KeyObject } from 'node:crypto';
import { isIP } from 'node:net';
import { ValidationError, EdgeadmError } from '../errors.js';
import { CA_VALIDITY_DAYS, CERT_VALIDITY_DAYS, NOT_BEFORE_BACKDATE_MS, SERIAL_NUMBER_BYTES } from './limits.js';
import { x509 } from './x509.js';

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

/** Key types edgeadm can generate. */
export type KeyAlgorithm = 'ecdsa-p256' | 'rsa-2048' | 'rsa-3072' | 'rsa-4096';
/** ECDSA P-256: small, fast on small edge CPUs, and accepted everywhere Kubernetes runs. */
export const DEFAULT_KEY_ALGORITHM: KeyAlgorithm = 'ecdsa-p256';
export { CA_VALIDITY_DAYS, CERT_VALIDITY_DAYS, NOT_BEFORE_BACKDATE_MS } from './limits.js';
const MS_PER_DAY = 24 * 60 * 60 * 1000;

/** What a leaf certificate may be used for. */
export type CertificateUsage = 'server' | 'client';

/** A CA that can sign: its certificate and private key. */
export interface CertificateAuthority {
  certPem: string;
  /** PKCS#8 PEM. A secret: never log it. */
  keyPem: string;
  certificate: x509.X509Certificate;
  privateKey: CryptoKey;
  /** The algorithm the CA key signs with (follows the key type). */
  signingAlgorithm: webcrypto.Algorithm | webcrypto.EcdsaParams;
}

/** A certificate and its private key, as PEM. */
export interface CertificateAndKey {
  certPem: string;
  /** PKCS#8 PEM. A secret: never log it. */
  keyPem: string;
}

/** The subject and names of a certificate or request. */
export interface SubjectOptions {
  commonName: string;
  /** `O=` values; Kubernetes reads them as the client's groups. */
  organizations?: readonly string[];
  dnsNames?: readonly string[];
  /** IPv4 or IPv6 addresses. */
  ipAddresses?: readonly string[];
}

/** Options for {@link createCa}. */
export interface CreateCaOptions {
  commonName: string;
  keyAlgorithm?: KeyAlgorithm;
  validityDays?: number;
  /** The clock, for tests. */
  now?: Date;
}

/** Options for {@link issueCertificate}. */
export interface IssueCertificateOptions extends SubjectOptions {
  ca: CertificateAuthority;
  usages: readonly CertificateUsage[];
  keyAlgorithm?: KeyAlgorithm;
  validityDays?: number;
  now?: Date;
}

/** Options for {@link createCsr}. */
export interface CreateCsrOptions extends SubjectOptions {
  keyAlgorithm?: KeyAlgorithm;
}

/** A certificate signing request and the private key that stays with its maker. */
export interface CsrAndKey {
  csrPem: string;
  /** PKCS#8 PEM. A secret: never log it. */
  keyPem: string;
}

/** Options for {@link signCsr}. */
export interface SignCsrOptions {
  ca: CertificateAuthority;
  csrPem: string;
  /** The signer decides usages; the request does not. */
  usages: readonly CertificateUsage[];
  validityDays?: number;
  now?: Date;
}

/** What a parsed CSR asks for. */
export interface CsrInfo {
  subject: string;
  commonName: string | undefined;
  organizations: string[];
  dnsNames: string[];
  ipAddresses: string[];
}

const subtle = webcrypto.subtle;
/** The subjectAltName extension's object identifier. */
const SUBJECT_ALT_NAME_OID = '2.5.29.17';

/** WebCrypto parameters for generating a key of each type, and signing with it. */
function keyParameters(algorithm: KeyAlgorithm): {
  generate: webcrypto.RsaHashedKeyGenParams | webcrypto.EcKeyGenParams;
  sign: webcrypto.Algorithm | webcrypto.EcdsaParams;
} {
  switch (algorithm) {
    case 'ecdsa-p256':
      return {
        generate: { name: 'ECDSA', namedCurve: 'P-256' },
        sign: { name: 'ECDSA', hash: 'SHA-256' },
      };
    case 'rsa-2048':
    case 'rsa-3072':
    case 'rsa-4096':
      return {
        generate: {
          name: 'RSASSA-PKCS1-v1_5',
          modulusLength: Number(algorithm.slice('rsa-'.length)),
          publicExponent: new Uint8Array([1, 0, 1]),
          hash: 'SHA-256',
        },
        sign: { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' },
      };
    default:
      throw new ValidationError(`unknown key algorithm ${JSON.stringify(algorithm)}`, {
        code: 'E_KEY_ALGORITHM',
        hints: ['Use one of: ecdsa-p256, rsa-2048, rsa-3072, rsa-4096.'],
      });
  }
}

async function generateKeyPair(algorithm: KeyAlgorithm): Promise<CryptoKeyPair> {
  return subtle.generateKey(keyParameters(algorithm).generate, true, ['sign', 'verify']);
}

async function privateKeyPem(key: CryptoKey): Promise<string> {
  const der = Buffer.from(await subtle.exportKey('pkcs8', key));
  return toPem('PRIVATE KEY', der);
}

function toPem(label: string, der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

/** A random, positive serial number, in hex. */
function randomSerialNumber(): string {
  const bytes = randomBytes(SERIAL_NUMBER_BYTES);
  // Positive (top bit clear) and of full length (no leading zero octet).
  bytes[0] = ((bytes[0] as number) & 0x7f) | 0x40;
  return bytes.toString('hex');
}

function validity(now: Date | undefined, days: number): { notBefore: Date; notAfter: Date } {
  if (!Number.isInteger(days) || days <= 0) {
    throw new ValidationError(`invalid certificate validity: ${days} days`, { code: 'E_CERT_VALIDITY' });
  }
  const start = (now ?? new Date()).getTime();
  return { notBefore: new Date(start - NOT_BEFORE_BACKDATE_MS), notAfter: new Date(start + days * MS_PER_DAY) };
}

/** A distinguished name: one RDN per organization, then the common name. */
function distinguishedName(options: SubjectOptions): x509.JsonName {
  if (options.commonName.trim() === '') {
    throw new ValidationError('a certificate needs a common name', { code: 'E_CERT_SUBJECT' });
  }
  return [...(options.organizations ?? []).map((o) => ({ O: [o] })), { CN: [options.commonName] }];
}

/** The SAN entries, checked: IPs must be IPs, DNS names must look like host names. */
function alternativeNames(options: Pick<SubjectOptions, 'dnsNames' | 'ipAddresses'>): x509.JsonGeneralName[] {
  const names: x509.JsonGeneralName[] = [];
  for (const dns of options.dnsNames ?? []) {
    if (
      !/^(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/.test(dns)
    ) {
      throw new ValidationError(`invalid DNS name for a certificate: ${JSON.stringify(dns)}`, { code: 'E_CERT_SAN' });
    }
    names.push({ type: 'dns', value: dns });
  }
  for (const ip of options.ipAddresses ?? []) {
    if (isIP(ip) === 0) {
      throw new ValidationError(`invalid IP address for a certificate: ${JSON.stringify(ip)}`, { code: 'E_CERT_SAN' });
    }
    names.push({ type: 'ip', value: ip });
  }
  return names;
}

/**
 * Makes a new self-signed CA: basic constraints CA:true (critical), key
 * usage certSign, cRLSign and digitalSignature (critical), and a subject
 * key identifier that the certificates it signs point back to.
 */
export async function createCa(options: CreateCaOptions): Promise<CertificateAuthority> {
  const algorithm = options.keyAlgorithm ?? DEFAULT_KEY_ALGORITHM;
  const { sign } = keyParameters(algorithm);
  const keys = await generateKeyPair(algorithm);
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerialNumber(),
    name: distinguishedName({ commonName: options.commonName }),
    ...validity(options.now, options.validityDays ?? CA_VALIDITY_DAYS),
    signingAlgorithm: sign,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return {
    certPem: certificate.toString('pem') + '\n',
    keyPem: await privateKeyPem(keys.privateKey),
    certificate,
    privateKey: keys.privateKey,
    signingAlgorithm: sign,
  };
}

/** WebCrypto import parameters and signing algorithm for an existing private key. */
function importParameters(key: KeyObject): {
  import: webcrypto.AlgorithmIdentifier | webcrypto.RsaHashedImportParams | webcrypto.EcKeyImportParams;
  sign: webcrypto.Algorithm | webcrypto.EcdsaParams;
} {
  const type = key.asymmetricKeyType;
  if (type === 'rsa') {
    return {
      import: { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' },
      sign: { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' },
    };
  }
  if (type === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    if (curve === 'prime256v1') {
      return {
        import: { name: 'ECDSA', namedCurve: 'P-256' },
        sign: { name: 'ECDSA', hash: 'SHA-256' },
      };
    }
    if (curve === 'secp384r1') {
      return {
        import: { name: 'ECDSA', namedCurve: 'P-384' },
        sign: { name: 'ECDSA', hash: 'SHA-384' },
      };
    }
  }
  if (type === 'ed25519') return { import: { name: 'Ed25519' }, sign: { name: 'Ed25519' } };
  throw new ValidationError(
    `unsupported CA key type ${type ?? 'unknown'}${key.asymmetricKeyDetails?.namedCurve ? ` (${key.asymmetricKeyDetails.namedCurve})` : ''}`,
    { code: 'E_KEY_ALGORITHM', hints: ['edgeadm signs with RSA, ECDSA P-256 or P-384, and Ed25519 CA keys.'] },
  );
}

/**
 * Loads an existing CA (a k3s or kubeadm control plane's, or the hub's)
 * from PEM, and checks that the key belongs to the certificate.
 *
 * @throws {ValidationError} `E_CA_LOAD` or `E_CA_KEY_MISMATCH`.
 */
export async function loadCa(pem: CertificateAndKey): Promise<CertificateAuthority> {
  let keyObject: KeyObject;
  let certificate: x509.X509Certificate;
  try {
    keyObject = createPrivateKey(pem.keyPem);
    certificate = new x509.X509Certificate(pem.certPem);
  } catch (error) {
    throw new ValidationError(`cannot read the CA certificate or key: ${(error as Error).message}`, {
      code: 'E_CA_LOAD',
      cause: error,
    });
  }
  const keySpki = createPublicKey(keyObject).export({ type: 'spki', format: 'der' });
  if (!keySpki.equals(Buffer.from(certificate.publicKey.rawData))) {
    throw new ValidationError('the CA private key does not belong to the CA certificate', {
      code: 'E_CA_KEY_MISMATCH',
    });
  }
  const parameters = importParameters(keyObject);
  return {
    certPem: pem.certPem,
    keyPem: pem.keyPem,
    certificate,
    privateKey: keyObject.toCryptoKey(parameters.import, false, ['sign']),
    signingAlgorithm: parameters.sign,
  };
}

/** The extensions of a leaf certificate signed by `ca`. */
async function leafExtensions(options: {
  ca: CertificateAuthority;
  usages: readonly CertificateUsage[];
  names: x509.JsonGeneralName[];
  isRsaKey: boolean;
}): Promise<x509.Extension[]> {
  if (options.usages.length === 0) {
    throw new ValidationError('a certificate needs at least one usage (server or client)', { code: 'E_CERT_USAGE' });
  }
  const caKeyId = options.ca.certificate.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId;
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    // Key encipherment only means something for RSA key transport.
    new x509.KeyUsagesExtension(
      x509.KeyUsageFlags.digitalSignature | (options.isRsaKey ? x509.KeyUsageFlags.keyEncipherment : 0),
      true,
    ),
    new x509.ExtendedKeyUsageExtension(
      [...new Set(options.usages)].map((usage) =>
        usage === 'server' ? x509.ExtendedKeyUsage.serverAuth : x509.ExtendedKeyUsage.clientAuth,
      ),
    ),
    caKeyId
      ? new x509.AuthorityKeyIdentifierExtension(caKeyId)
      : await x509.AuthorityKeyIdentifierExtension.create(options.ca.certificate.publicKey),
  ];
  if (options.names.length > 0) extensions.push(new x509.SubjectAlternativeNameExtension(options.names));
  return extensions;
}

/** Makes a new key and a certificate for it, signed by `ca`. */
export async function issueCertificate(options: IssueCertificateOptions): Promise<CertificateAndKey> {
  const algorithm = options.keyAlgorithm ?? DEFAULT_KEY_ALGORITHM;
  const keys = await generateKeyPair(algorithm);
  const certificate = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerialNumber(),
    subject: distinguishedName(options),
    issuer: options.ca.certificate.subjectName,
    ...validity(options.now, options.validityDays ?? CERT_VALIDITY_DAYS),
    signingAlgorithm: options.ca.signingAlgorithm,
    publicKey: keys.publicKey,
    signingKey: options.ca.privateKey,
    extensions: await leafExtensions({
      ca: options.ca,
      usages: options.usages,
      names: alternativeNames(options),
      isRsaKey: algorithm.startsWith('rsa-'),
    }),
  });
  return { certPem: certificate.toString('pem') + '\n', keyPem: await privateKeyPem(keys.privateKey) };
}

/** Makes a new key and a PKCS#10 request for it, with the SANs in an extension request. */
export async function createCsr(options: CreateCsrOptions): Promise<CsrAndKey> {
  const algorithm = options.keyAlgorithm ?? DEFAULT_KEY_ALGORITHM;
  const keys = await generateKeyPair(algorithm);
  const names = alternativeNames(options);
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: distinguishedName(options),
    keys,
    signingAlgorithm: keyParameters(algorithm).sign,
    extensions: names.length > 0 ? [new x509.SubjectAlternativeNameExtension(names)] : [],
  });
  return { csrPem: csr.toString('pem') + '\n', keyPem: await privateKeyPem(keys.privateKey) };
}

function readCsr(csrPem: string): x509.Pkcs10CertificateRequest {
  try {
    return new x509.Pkcs10CertificateRequest(csrPem);
  } catch (error) {
    throw new ValidationError(`the certificate signing request does not parse: ${(error as Error).message}`, {
      code: 'E_CSR_INVALID',
      cause: error,
    });
  }
}

/** What a CSR asks for: subject, organizations and SANs. */
export function describeCsr(csrPem: string): CsrInfo {
  const csr = readCsr(csrPem);
  const san = csr.getExtension(SUBJECT_ALT_NAME_OID);
  const names = san instanceof x509.SubjectAlternativeNameExtension ? san.names.toJSON() : [];
  return {
    subject: csr.subject,
    commonName: csr.subjectName.getField('CN')[0],
    organizations: csr.subjectName.getField('O'),
    dnsNames: names.filter((name) => name.type === 'dns').map((name) => name.value),
    ipAddresses: names.filter((name) => name.type === 'ip').map((name) => name.value),
  };
}

/**
 * Signs a CSR with `ca`, after checking the request's own signature (proof
 * that the requester holds the key). The subject and SANs come from the
 * request; usages, lifetime and constraints come from the signer. Whether
 * the requester may have that subject is the caller's policy decision.
 *
 * @throws {ValidationError} `E_CSR_INVALID` for a request that does not parse or verify.
 */
export async function signCsr(options: SignCsrOptions): Promise<{ certPem: string }> {
  const csr = readCsr(options.csrPem);
  if (!(await csr.verify())) {
    throw new ValidationError('the certificate signing request has an invalid signature', { code: 'E_CSR_INVALID' });
  }
  const info = describeCsr(options.csrPem);
  const isRsaKey = csr.publicKey.algorithm.name.startsWith('RSA');
  let certificate: x509.X509Certificate;
  try {
    certificate = await x509.X509CertificateGenerator.create({
      serialNumber: randomSerialNumber(),
      subject: csr.subjectName,
      issuer: options.ca.certificate.subjectName,
      ...validity(options.now, options.validityDays ?? CERT_VALIDITY_DAYS),
      signingAlgorithm: options.ca.signingAlgorithm,
      publicKey: csr.publicKey,
      signingKey: options.ca.privateKey,
      extensions: await leafExtensions({
        ca: options.ca,
        usages: options.usages,
        names: alternativeNames({ dnsNames: info.dnsNames, ipAddresses: info.ipAddresses }),
        isRsaKey,
      }),
    });
  } catch (error) {
    if (error instanceof EdgeadmError) throw error;
    throw new EdgeadmError(`cannot sign the certificate request: ${(error as Error).message}`, {
      code: 'E_CSR_SIGN',
      cause: error,
    });
  }
  return { certPem: certificate.toString('pem') + '\n' };
}
