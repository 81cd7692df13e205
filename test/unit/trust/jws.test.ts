import { describe, expect, it } from 'vitest';
import { computeDetachedSignature, isDetachedSignatureValid } from '../../../src/trust/jws.js';

// Vectors from the Kubernetes repository's cluster-bootstrap jws_test.go, verbatim.
const content = 'Hello from the other side. I must have called a thousand times.';
const secret = 'my voice is my passcode';
const id = 'joshua';

describe('computeDetachedSignature (upstream vectors)', () => {
  it('signs content with the token secret', () => {
    expect(computeDetachedSignature({ content, tokenId: id, tokenSecret: secret })).toBe(
      'eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..VShe2taLd-YTrmWuRkcL_8QTNDHYxQIEBsAYYiIj1_8',
    );
  });

  it('signs empty content', () => {
    expect(computeDetachedSignature({ content: '', tokenId: id, tokenSecret: secret })).toBe(
      'eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..7Ui1ALizW4jXphVUB7xUqC9vLYLL9RZeOFfVLoB7Tgk',
    );
  });

  it('signs with an empty secret', () => {
    expect(computeDetachedSignature({ content, tokenId: id, tokenSecret: '' })).toBe(
      'eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..UfkqvDGiIFxrMnFseDj9LYJOLNrvjW8aHhF71mvvAs8',
    );
  });

  it('puts exactly {"alg":"HS256","kid":"<id>"} in the header and leaves the payload out', () => {
    const [header, payload, signature] = computeDetachedSignature({ content, tokenId: id, tokenSecret: secret }).split(
      '.',
    );
    expect(Buffer.from(header as string, 'base64url').toString()).toBe('{"alg":"HS256","kid":"joshua"}');
    expect(payload).toBe('');
    expect(signature).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });
});

describe('isDetachedSignatureValid', () => {
  const sig = 'eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..VShe2taLd-YTrmWuRkcL_8QTNDHYxQIEBsAYYiIj1_8';

  it('accepts the upstream signature for its inputs', () => {
    expect(isDetachedSignatureValid({ signature: sig, content, tokenId: id, tokenSecret: secret })).toBe(true);
  });

  it('rejects the upstream signature with "foo" appended', () => {
    expect(isDetachedSignatureValid({ signature: `${sig}foo`, content, tokenId: id, tokenSecret: secret })).toBe(false);
  });

  it('rejects a wrong secret, another token id, changed content, and a signature with the payload attached', () => {
    expect(isDetachedSignatureValid({ signature: sig, content, tokenId: id, tokenSecret: `${secret}!` })).toBe(false);
    expect(isDetachedSignatureValid({ signature: sig, content, tokenId: 'joshub', tokenSecret: secret })).toBe(false);
    expect(
      isDetachedSignatureValid({ signature: sig, content: `${content}\n`, tokenId: id, tokenSecret: secret }),
    ).toBe(false);
    const attached = sig.replace('..', `.${Buffer.from(content).toString('base64url')}.`);
    expect(isDetachedSignatureValid({ signature: attached, content, tokenId: id, tokenSecret: secret })).toBe(false);
  });
});
