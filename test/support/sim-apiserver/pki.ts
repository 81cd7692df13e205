/**
 * The simulated API server's certificates: a self-signed CA generated per
 * server (or loaded from disk by the CLI, so a restarted process keeps its
 * trust), the HTTPS serving certificate with the listen address among its
 * SANs, and client certificates in the form kube-apiserver authenticates
 * (CN = user name, one O per group). Keys are ECDSA P-256.
 */
import 'reflect-metadata';
import { isIP } from 'node:net';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto);

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

const KEY_ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGNING_ALGORITHM = { name: 'ECDSA', hash: 'SHA-256' } as const;
/** Validity of the generated CA; long enough for any test run, short enough to look deliberate. */
const CA_VALIDITY_DAYS = 3650;
/** Validity of serving and client certificates. */
const LEAF_VALIDITY_DAYS = 365;
/** Certificates are back-dated a little so that small clock differences between processes don't matter. */
const CLOCK_SKEW_MS = 5 * 60_000;
const DAY_MS = 86_400_000;

/** A PEM certificate and its PEM (PKCS#8) private key. */
export interface CertificateAndKey {
  certPem: string;
  keyPem: string;
}

/** Who a client certificate names: the user (CN) and groups (O). */
export interface ClientIdentity {
  user: string;
  groups?: string[];
}

function toPem(der: ArrayBuffer, label: string): string {
  const base64 = Buffer.from(der).toString('base64');
  const lines = base64.match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

function fromPem(pem: string): Buffer {
  return Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
}

function validity(days: number): { notBefore: Date; notAfter: Date } {
  const now = Date.now();
  return { notBefore: new Date(now - CLOCK_SKEW_MS), notAfter: new Date(now + days * DAY_MS) };
}

async function generateKeys(): Promise<CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify'])) as CryptoKeyPair;
}

async function exportKeyPem(key: CryptoKey): Promise<string> {
  return toPem(await webcrypto.subtle.exportKey('pkcs8', key), 'PRIVATE KEY');
}

function randomSerial(): string {
  // A positive 64-bit serial: clear the top bit so the DER integer stays positive.
  const bytes = webcrypto.getRandomValues(new Uint8Array(8));
  bytes[0] = (bytes[0] ?? 0) & 0x7f;
  return Buffer.from(bytes).toString('hex');
}

/** The simulation's certificate authority. */
export class SimCertificateAuthority {
  readonly certPem: string;
  readonly keyPem: string;
  readonly #cert: x509.X509Certificate;
  readonly #privateKey: CryptoKey;

  private constructor(cert: x509.X509Certificate, privateKey: CryptoKey, keyPem: string) {
    this.#cert = cert;
    this.#privateKey = privateKey;
    this.certPem = cert.toString('pem');
    this.keyPem = keyPem;
  }

  /** Generates a new self-signed CA named `CN=<commonName>`. */
  static async generate(commonName = 'sim-apiserver-ca'): Promise<SimCertificateAuthority> {
    const keys = await generateKeys();
    const cert = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: randomSerial(),
      name: [{ CN: [commonName] }],
      keys,
      signingAlgorithm: SIGNING_ALGORITHM,
      ...validity(CA_VALIDITY_DAYS),
      extensions: [
        new x509.BasicConstraintsExtension(true, undefined, true),
        new x509.KeyUsagesExtension(
          x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature,
          true,
        ),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      ],
    });
    return new SimCertificateAuthority(cert, keys.privateKey, await exportKeyPem(keys.privateKey));
  }

  /** Loads a CA written earlier by {@link SimCertificateAuthority.generate}. */
  static async load(certPem: string, keyPem: string): Promise<SimCertificateAuthority> {
    const cert = new x509.X509Certificate(certPem);
    const privateKey = await webcrypto.subtle.importKey('pkcs8', fromPem(keyPem), KEY_ALGORITHM, true, ['sign']);
    return new SimCertificateAuthority(cert, privateKey, keyPem);
  }

  /** Issues a TLS serving certificate valid for the given DNS names and IP addresses. */
  async issueServing(sans: string[], validityDays = LEAF_VALIDITY_DAYS): Promise<CertificateAndKey> {
    const unique = [...new Set(sans)];
    const names = unique.map((value) => ({ type: isIP(value) ? ('ip' as const) : ('dns' as const), value }));
    return this.#issue({
      subject: [{ CN: ['sim-apiserver'] }],
      usage: x509.ExtendedKeyUsage.serverAuth,
      extraExtensions: [new x509.SubjectAlternativeNameExtension(names)],
      validityDays,
    });
  }

  /** Issues a client certificate that the simulated server authenticates as `user` in `groups`. */
  async issueClient(identity: ClientIdentity): Promise<CertificateAndKey> {
    return this.#issue({
      subject: [{ CN: [identity.user] }, ...(identity.groups ?? []).map((group) => ({ O: [group] }))],
      usage: x509.ExtendedKeyUsage.clientAuth,
      extraExtensions: [],
    });
  }

  async #issue(spec: {
    subject: x509.JsonName;
    usage: string;
    extraExtensions: x509.Extension[];
    validityDays?: number;
  }): Promise<CertificateAndKey> {
    const keys = await generateKeys();
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: randomSerial(),
      subject: spec.subject,
      issuer: this.#cert.subject,
      publicKey: keys.publicKey,
      signingKey: this.#privateKey,
      signingAlgorithm: SIGNING_ALGORITHM,
      ...validity(spec.validityDays ?? LEAF_VALIDITY_DAYS),
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
        new x509.ExtendedKeyUsageExtension([spec.usage]),
        await x509.AuthorityKeyIdentifierExtension.create(this.#cert),
        ...spec.extraExtensions,
      ],
    });
    return { certPem: cert.toString('pem'), keyPem: await exportKeyPem(keys.privateKey) };
  }

  /**
   * Signs a PKCS#10 request as kube-controller-manager's csrsigning
   * controller signs a client certificate: the request's key and subject,
   * client auth. The caller has checked the request.
   */
  async signClientRequest(request: CertificateRequestInfo): Promise<string> {
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: randomSerial(),
      subject: request.subject,
      issuer: this.#cert.subject,
      publicKey: request.publicKey,
      signingKey: this.#privateKey,
      signingAlgorithm: SIGNING_ALGORITHM,
      ...validity(LEAF_VALIDITY_DAYS),
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth]),
        await x509.AuthorityKeyIdentifierExtension.create(this.#cert),
      ],
    });
    return cert.toString('pem');
  }
}

/** What the simulation reads from a PKCS#10 certificate request. */
export interface CertificateRequestInfo {
  /** The subject as written. */
  subject: string;
  commonName: string | undefined;
  organizations: string[];
  /** Whether the request asks for any subject alternative name. */
  hasAlternativeNames: boolean;
  /** Whether the request is signed by the key it carries. */
  isSignatureValid: boolean;
  publicKey: x509.PublicKey;
}

/** Parses a PEM PKCS#10 request; throws on anything else. */
export async function readCertificateRequest(pem: string): Promise<CertificateRequestInfo> {
  const request = new x509.Pkcs10CertificateRequest(pem);
  const name = request.subjectName;
  return {
    subject: request.subject,
    commonName: name.getField('CN')[0],
    organizations: name.getField('O'),
    hasAlternativeNames: request.extensions.some(
      (extension) => extension instanceof x509.SubjectAlternativeNameExtension,
    ),
    isSignatureValid: await request.verify(),
    publicKey: request.publicKey,
  };
}

/** A new key and a PKCS#10 request for a client identity (CN = user, O = groups), as a kubelet makes for TLS bootstrap. */
export async function createClientCertificateRequest(
  identity: ClientIdentity,
): Promise<{ requestPem: string; keyPem: string }> {
  const keys = await generateKeys();
  const request = await x509.Pkcs10CertificateRequestGenerator.create({
    name: [{ CN: [identity.user] }, ...(identity.groups ?? []).map((group) => ({ O: [group] }))],
    keys,
    signingAlgorithm: SIGNING_ALGORITHM,
  });
  return { requestPem: request.toString('pem'), keyPem: await exportKeyPem(keys.privateKey) };
}
