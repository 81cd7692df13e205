/**
 * Lifetimes and sizes of the certificates edgeadm makes, shared by the PKI
 * library's issuer (pki.ts) and the edge-proxy's small one (small-issuer.ts),
 * so that both make certificates of the same shape.
 */

/** CA lifetime: ten years, as kubeadm's CA. */
export const CA_VALIDITY_DAYS = 3650;
/** Leaf certificate lifetime: one year, as kubeadm's serving and client certificates. */
export const CERT_VALIDITY_DAYS = 365;
/**
 * Certificates start this long before they are made, so that a host whose
 * clock runs a little behind (common at edge sites without NTP) still
 * accepts them.
 */
export const NOT_BEFORE_BACKDATE_MS = 5 * 60 * 1000;
/** Bytes of randomness in a serial number (RFC 5280 allows up to 20 octets). */
export const SERIAL_NUMBER_BYTES = 16;
