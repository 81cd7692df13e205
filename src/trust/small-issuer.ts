/**
 * A small X.509 issuer on `node:crypto` alone, for the edge-proxy's own CA and
 * serving certificate (src/edge/serving-cert.ts).
 *
 * Why not the PKI library (src/trust/pki.ts): the edge-proxy is a
 * long-running agent on small edge nodes, and it makes these certificates in
 * its own process at its first start. Loading the library (@peculiar/x509,
 * its ASN.1 schemas, WebCrypto) kept about 4 MiB of the agent's resident memory
 * until the process restarted (bench/edge-proxy/RESULTS.md). This module
 * writes the two DER structures it needs by hand and signs them with
 * `crypto.sign`; everything else in edgeadm keeps using pki.ts.
 *
 * What it makes is what pki.ts makes for the same request: ECDSA P-256 keys
 * (PKCS#8 PEM), SHA-256 signatures (or SHA-384 / RSA PKCS#1 v1.5 with SHA-256
 * when an existing CA's key is of that kind), random 16-byte serial numbers,
 * validity backdated by NOT_BEFORE_BACKDATE_MS; a CA with basic constraints
 * CA:true, key usage certSign, cRLSign and digitalSignature (both critical)
 * and a subject key identifier; a serving certificate with CA:false, key
 * usage digitalSignature (both critical), extended key usage serverAuth, the
 * CA's key identifier and the subject alternative names.
 * test/unit/trust/small-issuer.test.ts checks them against OpenSSL.
 */
import {
  createHash,
  createPrivateKey,
  generateKeyPairSync,
  randomBytes,
  sign,
  X509Certificate,
  type KeyObject,
} from 'node:crypto';
import { isIP } from 'node:net';
import { ValidationError } from '../errors.js';
import { CA_VALIDITY_DAYS, CERT_VALIDITY_DAYS, NOT_BEFORE_BACKDATE_MS, SERIAL_NUMBER_BYTES } from './limits.js';

/** A certificate and its private key, as PEM (the key PKCS#8). */
export interface IssuedPair {
  certPem: string;
  keyPem: string;
}

const MS_PER_DAY = 24 * 60 * 60 * 1000;

// DER writing: each function returns one complete TLV.

function length(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let rest = n; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function tlv(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), length(body.length), body]);
}

const sequence = (...items: Buffer[]): Buffer => tlv(0x30, ...items);
const set = (...items: Buffer[]): Buffer => tlv(0x31, ...items);
const octetString = (content: Buffer): Buffer => tlv(0x04, content);
const bitString = (content: Buffer): Buffer => tlv(0x03, Buffer.from([0]), content);
const explicit = (n: number, content: Buffer): Buffer => tlv(0xa0 | n, content);
const TRUE = Buffer.from([0x01, 0x01, 0xff]);
const NULL = Buffer.from([0x05, 0x00]);

function oid(dotted: string): Buffer {
  const arcs = dotted.split('.').map(Number);
  const bytes: number[] = [40 * arcs[0]! + arcs[1]!];
  for (const arc of arcs.slice(2)) {
    const base128: number[] = [arc & 0x7f];
    for (let rest = Math.floor(arc / 128); rest > 0; rest = Math.floor(rest / 128))
      base128.unshift(0x80 | (rest & 0x7f));
    bytes.push(...base128);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** A positive INTEGER from big-endian bytes (a leading zero byte when the top bit is set). */
function unsignedInteger(bytes: Buffer): Buffer {
  return tlv(0x02, bytes[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes);
}

/** UTCTime through 2049, GeneralizedTime from 2050 (RFC 5280, 4.1.2.5). */
function time(date: Date): Buffer {
  const iso = date.toISOString(); // 2026-11-24T20:36:53.123Z
  const digits = iso.slice(0, 19).replace(/[-T:]/g, '') + 'Z'; // 20261124203653Z
  const year = date.getUTCFullYear();
  return year < 2050 ? tlv(0x17, Buffer.from(digits.slice(2), 'ascii')) : tlv(0x18, Buffer.from(digits, 'ascii'));
}

/** A key usage BIT STRING from bit numbers (RFC 5280: digitalSignature 0 ... cRLSign 6), minimally encoded. */
function keyUsage(bits: number[]): Buffer {
  let value = 0;
  for (const bit of bits) value |= 0x80 >> bit;
  let unused = 0;
  while (unused < 7 && (value & (1 << unused)) === 0) unused++;
  return tlv(0x03, Buffer.from([unused, value]));
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return critical ? sequence(oid(id), TRUE, octetString(value)) : sequence(oid(id), octetString(value));
}

/** A name of one common name. */
function commonNameOnly(commonName: string): Buffer {
  if (commonName.trim() === '')
    throw new ValidationError('a certificate needs a common name', { code: 'E_CERT_SUBJECT' });
  return sequence(set(sequence(oid('2.5.4.3'), tlv(0x0c, Buffer.from(commonName, 'utf8')))));
}

function ipAddressBytes(ip: string): Buffer {
  if (isIP(ip) === 4) return Buffer.from(ip.split('.').map(Number));
  // IPv6: expand "::" and write the eight groups.
  const [head, tail] = ip.includes('::') ? ip.split('::') : [ip, undefined];
  const groups = (part: string | undefined): string[] => (part ? part.split(':') : []);
  const left = groups(head);
  const right = groups(tail);
  const all =
    tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  const bytes = Buffer.alloc(16);
  all.forEach((group, i) => bytes.writeUInt16BE(parseInt(group, 16), i * 2));
  return bytes;
}

function subjectAlternativeNames(dnsNames: readonly string[], ipAddresses: readonly string[]): Buffer {
  for (const ip of ipAddresses) {
    // Dotted-quad IPv4 only, and IPv6 without an embedded IPv4 tail or a zone.
    if (isIP(ip) === 0 || (isIP(ip) === 6 && (ip.includes('.') || ip.includes('%')))) {
      throw new ValidationError(`invalid IP address for a certificate: ${JSON.stringify(ip)}`, { code: 'E_CERT_SAN' });
    }
  }
  for (const dns of dnsNames) {
    if (!/^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/.test(dns)) {
      throw new ValidationError(`invalid DNS name for a certificate: ${JSON.stringify(dns)}`, { code: 'E_CERT_SAN' });
    }
  }
  return sequence(
    ...dnsNames.map((dns) => tlv(0x82, Buffer.from(dns, 'ascii'))),
    ...ipAddresses.map((ip) => tlv(0x87, ipAddressBytes(ip))),
  );
}

// DER reading: just enough to take the subject and key identifier of an existing CA.

interface Element {
  tag: number;
  /** Offset of the tag byte. */
  start: number;
  /** Offset of the content. */
  content: number;
  /** Offset after the content. */
  end: number;
}

function readElement(der: Buffer, offset: number, limit = der.length): Element {
  if (offset + 2 > limit) throw new Error('truncated DER');
  const tag = der[offset]!;
  let size = der[offset + 1]!;
  let content = offset + 2;
  if (size & 0x80) {
    const count = size & 0x7f;
    if (count === 0 || count > 4 || content + count > limit) throw new Error('unsupported DER length');
    size = 0;
    for (let i = 0; i < count; i++) size = size * 256 + der[content + i]!;
    content += count;
  }
  if (content + size > limit) throw new Error('truncated DER');
  return { tag, start: offset, content, end: content + size };
}

function childrenOf(der: Buffer, parent: Element): Element[] {
  const out: Element[] = [];
  for (let offset = parent.content; offset < parent.end;) {
    const child = readElement(der, offset, parent.end);
    out.push(child);
    offset = child.end;
  }
  return out;
}

/** The raw subject name and the key identifier certificates issued by `caDer` must point to. */
function issuerFields(caDer: Buffer): { subject: Buffer; keyId: Buffer } {
  const certificate = readElement(caDer, 0);
  const tbs = childrenOf(caDer, childrenOf(caDer, certificate)[0]!);
  const first = tbs[0]!.tag === 0xa0 ? 1 : 0;
  const subject = tbs[first + 4]!;
  const spki = tbs[first + 5]!;
  for (const field of tbs.slice(first + 6)) {
    if (field.tag !== 0xa3) continue;
    for (const ext of childrenOf(caDer, childrenOf(caDer, field)[0]!)) {
      const parts = childrenOf(caDer, ext);
      if (!caDer.subarray(parts[0]!.start, parts[0]!.end).equals(oid('2.5.29.14'))) continue;
      const value = parts[parts.length - 1]!;
      const keyId = readElement(caDer, value.content, value.end);
      return { subject: caDer.subarray(subject.start, subject.end), keyId: caDer.subarray(keyId.content, keyId.end) };
    }
  }
  return {
    subject: caDer.subarray(subject.start, subject.end),
    keyId: subjectKeyId(caDer.subarray(spki.start, spki.end)),
  };
}

/** RFC 5280 4.2.1.2 method 1: SHA-1 of the subjectPublicKey bits of a SubjectPublicKeyInfo. */
function subjectKeyId(spkiDer: Buffer): Buffer {
  const [, key] = childrenOf(spkiDer, readElement(spkiDer, 0));
  return createHash('sha1')
    .update(spkiDer.subarray(key!.content + 1, key!.end))
    .digest();
}

/** The signature algorithm a CA key signs with: its AlgorithmIdentifier and `crypto.sign`'s digest. */
function signatureAlgorithm(key: KeyObject): { identifier: Buffer; digest: string } {
  const type = key.asymmetricKeyType;
  const curve = key.asymmetricKeyDetails?.namedCurve;
  if (type === 'ec' && curve === 'prime256v1')
    return { identifier: sequence(oid('1.2.840.10045.4.3.2')), digest: 'sha256' };
  if (type === 'ec' && curve === 'secp384r1')
    return { identifier: sequence(oid('1.2.840.10045.4.3.3')), digest: 'sha384' };
  if (type === 'rsa') return { identifier: sequence(oid('1.2.840.113549.1.1.11'), NULL), digest: 'sha256' };
  throw new ValidationError(`unsupported CA key type ${type ?? 'unknown'}${curve ? ` (${curve})` : ''}`, {
    code: 'E_CA_KEY_TYPE',
  });
}

function validity(now: Date, days: number): Buffer {
  const start = now.getTime();
  return sequence(time(new Date(start - NOT_BEFORE_BACKDATE_MS)), time(new Date(start + days * MS_PER_DAY)));
}

function serialNumber(): Buffer {
  const bytes = randomBytes(SERIAL_NUMBER_BYTES);
  // Positive, and minimally encoded: never a leading zero octet.
  bytes[0] = (bytes[0]! & 0x7f) | 0x40;
  return unsignedInteger(bytes);
}

function signed(tbs: Buffer, signingKey: KeyObject): string {
  const algorithm = signatureAlgorithm(signingKey);
  const der = sequence(tbs, algorithm.identifier, bitString(sign(algorithm.digest, tbs, signingKey)));
  return new X509Certificate(der).toString();
}

function newKey(): { privateKey: KeyObject; spki: Buffer; keyPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    privateKey,
    spki: publicKey.export({ type: 'spki', format: 'der' }),
    keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
  };
}

/** Makes a self-signed CA (ECDSA P-256). */
export function createSmallCa(options: { commonName: string; now?: Date; validityDays?: number }): IssuedPair {
  const key = newKey();
  const name = commonNameOnly(options.commonName);
  const signatureId = signatureAlgorithm(key.privateKey).identifier;
  const tbs = sequence(
    explicit(0, Buffer.from([0x02, 0x01, 0x02])),
    serialNumber(),
    signatureId,
    name,
    validity(options.now ?? new Date(), options.validityDays ?? CA_VALIDITY_DAYS),
    name,
    key.spki,
    explicit(
      3,
      sequence(
        extension('2.5.29.19', true, sequence(TRUE)),
        extension('2.5.29.15', true, keyUsage([0, 5, 6])),
        extension('2.5.29.14', false, octetString(subjectKeyId(key.spki))),
      ),
    ),
  );
  return { certPem: signed(tbs, key.privateKey), keyPem: key.keyPem };
}

/** Makes a key and a serving certificate for it (serverAuth, ECDSA P-256), signed by `ca`. */
export function issueSmallServingCertificate(options: {
  ca: IssuedPair;
  commonName: string;
  dnsNames: readonly string[];
  ipAddresses: readonly string[];
  now?: Date;
  validityDays?: number;
}): IssuedPair {
  const caKey = createPrivateKey(options.ca.keyPem);
  const issuer = issuerFields(new X509Certificate(options.ca.certPem).raw);
  const key = newKey();
  const extensions = [
    extension('2.5.29.19', true, sequence()),
    extension('2.5.29.15', true, keyUsage([0])),
    extension('2.5.29.37', false, sequence(oid('1.3.6.1.5.5.7.3.1'))),
    extension('2.5.29.35', false, sequence(tlv(0x80, issuer.keyId))),
  ];
  if (options.dnsNames.length + options.ipAddresses.length > 0) {
    extensions.push(extension('2.5.29.17', false, subjectAlternativeNames(options.dnsNames, options.ipAddresses)));
  }
  const tbs = sequence(
    explicit(0, Buffer.from([0x02, 0x01, 0x02])),
    serialNumber(),
    signatureAlgorithm(caKey).identifier,
    issuer.subject,
    validity(options.now ?? new Date(), options.validityDays ?? CERT_VALIDITY_DAYS),
    commonNameOnly(options.commonName),
    key.spki,
    explicit(3, sequence(...extensions)),
  );
  return { certPem: signed(tbs, caKey), keyPem: key.keyPem };
}
