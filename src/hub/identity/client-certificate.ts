/**
 * Checks of an agent's client certificate that TLS does not repeat when a
 * session is resumed. A resumed session carries the certificate and the
 * chain verdict of its first handshake, so whatever has changed since (the
 * clock passing `notAfter`, a revocation) must be checked by the hub at
 * every connection, resumed or not.
 */
import type { PeerCertificate } from 'node:tls';

/** Whether `now` lies within the certificate's validity period. */
export function isWithinValidity(certificate: PeerCertificate, now: Date = new Date()): boolean {
  const from = Date.parse(certificate.valid_from);
  const to = Date.parse(certificate.valid_to);
  return Number.isFinite(from) && Number.isFinite(to) && from <= now.getTime() && now.getTime() <= to;
}
