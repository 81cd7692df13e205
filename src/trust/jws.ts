/**
 * The detached JWS that signs cluster-info for one bootstrap token.
 *
 * RFC 7515 compact serialization with the payload left out (Appendix F):
 * `base64url(header) + ".." + base64url(HMAC-SHA256(secret, header "." payload))`,
 * where the header is exactly `{"alg":"HS256","kid":"<token id>"}` and the
 * payload is the cluster-info kubeconfig as stored. A joining node that knows
 * the token can check that whoever served cluster-info knows it too, which
 * is what makes the CA in it trustworthy before any TLS trust exists.
 *
 * The bytes match what the controller manager's bootstrap signer writes, so
 * edgeadm can both sign cluster-info itself and verify the signer's output.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** The only algorithm in use. */
export const JWS_ALGORITHM = 'HS256';

/** What to sign or verify. */
export interface DetachedJwsInput {
  /** The exact kubeconfig text, trailing newline and all. */
  content: string;
  tokenId: string;
  /** The token secret: the HMAC key. */
  tokenSecret: string;
}

/**
 * The protected header. Field order matters: the signature covers these
 * exact bytes, and verifiers rebuild them rather than read them.
 */
function protectedHeader(tokenId: string): string {
  return base64url(Buffer.from(JSON.stringify({ alg: JWS_ALGORITHM, kid: tokenId }), 'utf8'));
}

function base64url(bytes: Buffer): string {
  return bytes.toString('base64url');
}

/** Computes `header..signature` for `content`. */
export function computeDetachedSignature(input: DetachedJwsInput): string {
  const header = protectedHeader(input.tokenId);
  const payload = base64url(Buffer.from(input.content, 'utf8'));
  const signature = createHmac('sha256', Buffer.from(input.tokenSecret, 'utf8'))
    .update(`${header}.${payload}`, 'ascii')
    .digest();
  return `${header}..${base64url(signature)}`;
}

/**
 * True when `signature` is the detached JWS of `content` under this token.
 * The comparison takes the same time wherever the strings differ, so the
 * answer leaks nothing about the expected signature.
 */
export function isDetachedSignatureValid(input: DetachedJwsInput & { signature: string }): boolean {
  const expected = Buffer.from(computeDetachedSignature(input), 'utf8');
  const given = Buffer.from(input.signature, 'utf8');
  return expected.length === given.length && timingSafeEqual(expected, given);
}
