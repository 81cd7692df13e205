/**
 * CA public-key pins, as `--discovery-token-ca-cert-hash` takes them:
 * `sha256:` and the lowercase hex SHA-256 of the certificate's DER
 * SubjectPublicKeyInfo. Pinning the key rather than the certificate lets a
 * CA be re-issued with the same key without breaking join commands.
 *
 * Parsing and matching follow kubeadm's rules and words, so a pin printed by
 * either tool is accepted by the other and errors read the same.
 */
import { createHash, type X509Certificate } from 'node:crypto';
import { ValidationError } from '../errors.js';
import { parsePemCertificates } from './pem.js';

/** The only pin format: SHA-256. */
export const CA_PIN_FORMAT = 'sha256';
/** A SHA-256 digest is 32 bytes. */
const SHA256_BYTES = 32;

/**
 * A pin in canonical form (`sha256:<64 lowercase hex>`), as only
 * {@link parseCaPin} and {@link caPinOf} make it: code that holds a `CaPin`
 * does not check it again.
 */
export type CaPin = string & { readonly __brand: 'CaPin' };

/**
 * The pin of a certificate's public key.
 *
 * The SubjectPublicKeyInfo is taken from Node's parsed key, re-encoded as
 * DER: for every key type a CA uses (RSA, ECDSA on named curves, Ed25519)
 * that is byte for byte the structure inside the certificate, and it is the
 * same encoding `openssl pkey -pubin -outform der` prints.
 */
export function caPinOf(certificate: X509Certificate): CaPin {
  const spki = certificate.publicKey.export({ type: 'spki', format: 'der' });
  return `${CA_PIN_FORMAT}:${createHash('sha256').update(spki).digest('hex')}` as CaPin;
}

/** The pin of every certificate in a PEM bundle, in order. */
export function caPinsOfPem(bundle: string | Buffer, what?: string): CaPin[] {
  return parsePemCertificates(bundle, what).map(({ certificate }) => caPinOf(certificate));
}

/**
 * Parses one pin, case-insensitively, into its canonical `sha256:<lowercase hex>`.
 *
 * @throws {ValidationError} `E_CA_PIN_INVALID`, with kubeadm's message.
 */
export function parseCaPin(text: string): CaPin {
  const invalid = (message: string): ValidationError =>
    new ValidationError(message, {
      code: 'E_CA_PIN_INVALID',
      hints: ['A pin looks like sha256:<64 hex digits>. Print it on the control plane with "edgeadm certs ca-hash".'],
    });
  const parts = text.split(':');
  if (parts.length !== 2) {
    throw invalid(`invalid hash, expected "format:hex-value". Known format(s) are: ${CA_PIN_FORMAT}`);
  }
  const [format = '', value = ''] = parts;
  if (format.toLowerCase() !== CA_PIN_FORMAT) {
    throw invalid(`unknown hash format ${JSON.stringify(format)}. Known format(s) are: ${CA_PIN_FORMAT}`);
  }
  // Decoded length as hex counts it: half the characters, rounded down.
  const bytes = Math.floor(value.length / 2);
  if (bytes !== SHA256_BYTES) {
    throw invalid(
      `invalid hash ${JSON.stringify(text)}, expected a ${SHA256_BYTES} byte SHA-256 hash, found ${bytes} bytes`,
    );
  }
  if (!/^[0-9a-fA-F]+$/.test(value)) {
    throw invalid(`invalid hash ${JSON.stringify(text)}, could not decode SHA-256 from hex`);
  }
  return `${CA_PIN_FORMAT}:${value.toLowerCase()}` as CaPin;
}

/** Parses several pins, dropping duplicates. */
export function parseCaPins(texts: readonly string[]): CaPin[] {
  return [...new Set(texts.map(parseCaPin))];
}

/** The outcome of checking a CA bundle against pins. */
export type CaPinCheck =
  | { isPinned: true; pin: string }
  | {
      isPinned: false;
      /** The pins of the bundle's certificates, none of which was given. */
      actual: string[];
      /** kubeadm's words: `none of the public keys "sha256:…" are pinned`. */
      message: string;
    };

/**
 * Checks whether any certificate in a bundle matches any pin. A bundle
 * passes when one of its certificates does: a CA in rotation ships old and
 * new certificates together.
 *
 * @param pins - canonical pins, as {@link parseCaPin} returns them.
 */
export function checkCaPins(certificates: readonly X509Certificate[], pins: readonly string[]): CaPinCheck {
  const allowed = new Set(pins);
  const actual: string[] = [];
  for (const certificate of certificates) {
    const pin = caPinOf(certificate);
    if (allowed.has(pin)) return { isPinned: true, pin };
    actual.push(pin);
  }
  return {
    isPinned: false,
    actual,
    message: `none of the public keys ${JSON.stringify(actual.join(':'))} are pinned`,
  };
}
