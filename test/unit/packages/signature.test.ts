/**
 * Package signatures (src/packages/signature.ts), pure: a signature over the
 * manifest bytes verifies with its key only, over those bytes only; the
 * origin check refuses what it must when a key is pinned and checks nothing,
 * saying so, when none is.
 */
import { createPublicKey, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  checkPackageOrigin,
  decodeSignature,
  MAX_SIGNATURE_BYTES,
  signManifest,
  uncheckedOriginWarning,
  UNPINNED_TRUST,
  type PackageTrust,
} from '../../../src/packages/signature.js';
import {
  generateSigningKeyPair,
  parsePrivateSigningKey,
  parsePublicSigningKey,
} from '../../../src/packages/signing-keys.js';

const pairA = generateSigningKeyPair();
const pairB = generateSigningKeyPair();
const privateA = parsePrivateSigningKey(pairA.privateKeyPem, 'a.key');
const publicA = parsePublicSigningKey(pairA.publicKeyPem, 'a.pub');
const publicB = parsePublicSigningKey(pairB.publicKeyPem, 'b.pub');
const manifest = Buffer.from('{"formatVersion":1,"name":"edge-k3s"}\n');
const signed = Buffer.from(signManifest(manifest, privateA), 'latin1');
const trustA: PackageTrust = { keys: [publicA] };

describe('signManifest', () => {
  it('writes base64 of a DER ECDSA P-256 / SHA-256 signature that the public key verifies (what cosign checks)', () => {
    const der = Buffer.from(signed.toString('latin1'), 'base64');
    expect(der[0]).toBe(0x30); // an ASN.1 SEQUENCE of r and s
    expect(verify('sha256', manifest, { key: createPublicKey(pairA.publicKeyPem), dsaEncoding: 'der' }, der)).toBe(
      true,
    );
  });
});

describe('checkPackageOrigin with a key pinned', () => {
  it('accepts the signature of that key over these manifest bytes, naming the key', () => {
    expect(checkPackageOrigin(manifest, signed, trustA)).toEqual({
      isChecked: true,
      isSigned: true,
      fingerprint: publicA.fingerprint,
      keyFile: 'a.pub',
    });
  });

  it('accepts it when the key is one of several pinned (a key rotation in progress)', () => {
    expect(checkPackageOrigin(manifest, signed, { keys: [publicB, publicA] })).toMatchObject({
      fingerprint: publicA.fingerprint,
    });
  });

  it('refuses an unsigned package: E_PACKAGE_UNSIGNED, naming the signature entry and the pinned keys', () => {
    expect(() => checkPackageOrigin(manifest, undefined, trustA)).toThrow(
      expect.objectContaining({
        code: 'E_PACKAGE_UNSIGNED',
        exitCode: 3,
        entry: 'manifest.json.sig',
        message: `the package is not signed (it has no manifest.json.sig), and a trusted key is pinned (${publicA.fingerprint})`,
        details: { entry: 'manifest.json.sig', trustedKeys: [publicA.fingerprint] },
      }),
    );
  });

  it('says how many keys it tried when several are pinned', () => {
    expect(() => checkPackageOrigin(manifest, signed, { keys: [publicB, publicB] })).toThrow(
      expect.objectContaining({
        message: expect.stringMatching(/^the signature does not verify with any of the 2 trusted keys \(/),
        details: { entry: 'manifest.json.sig', trustedKeys: [publicB.fingerprint, publicB.fingerprint] },
      }),
    );
  });

  it('refuses a signature by another key: E_PACKAGE_SIGNATURE, naming the pinned key and the likely causes', () => {
    expect(() => checkPackageOrigin(manifest, signed, { keys: [publicB] })).toThrow(
      expect.objectContaining({
        code: 'E_PACKAGE_SIGNATURE',
        message:
          `the signature does not verify with the trusted key (${publicB.fingerprint}): manifest.json was changed after it was signed, ` +
          'the package was signed by a key that is not trusted, or the signature belongs to another package',
      }),
    );
  });

  it('refuses the signature over a manifest changed by one byte', () => {
    const changed = Buffer.from(manifest.toString().replace('edge-k3s', 'edge-k3z'));
    expect(() => checkPackageOrigin(changed, signed, trustA)).toThrow(
      expect.objectContaining({ code: 'E_PACKAGE_SIGNATURE' }),
    );
  });

  it('refuses a signature entry that is not base64 (saying so, not that the key differs), or too long', () => {
    for (const bad of ['not base64!', '', 'QUJD!', 'QUJDRA=', '  \n', 'QUJD!!!!', '!!!!QUJD']) {
      expect(() => checkPackageOrigin(manifest, Buffer.from(bad), trustA)).toThrow(
        expect.objectContaining({
          code: 'E_PACKAGE_SIGNATURE',
          message: 'manifest.json.sig is not a base64 signature',
        }),
      );
    }
    // Base64 that decodes, but longer than any signature: refused on its size.
    const long = Buffer.alloc(MAX_SIGNATURE_BYTES + 4, 0x41);
    expect(() => checkPackageOrigin(manifest, long, trustA)).toThrow(
      expect.objectContaining({
        message: `manifest.json.sig is ${MAX_SIGNATURE_BYTES + 4} bytes; a signature is at most ${MAX_SIGNATURE_BYTES}`,
      }),
    );
    expect(decodeSignature(Buffer.alloc(MAX_SIGNATURE_BYTES, 0x41)).length).toBe((MAX_SIGNATURE_BYTES / 4) * 3);
  });
});

describe('checkPackageOrigin with no key pinned', () => {
  it('checks nothing, says whether a signature is there, and the warning says the origin is NOT checked', () => {
    const unsigned = checkPackageOrigin(manifest, undefined, UNPINNED_TRUST);
    expect(unsigned).toEqual({ isChecked: false, isSigned: false });
    // Even a signature by nobody trusted passes: without a pin there is nothing to check it against.
    expect(
      checkPackageOrigin(
        manifest,
        Buffer.from(signManifest(manifest, parsePrivateSigningKey(pairB.privateKeyPem, 'b'))),
        UNPINNED_TRUST,
      ),
    ).toEqual({
      isChecked: false,
      isSigned: true,
    });
    expect(uncheckedOriginWarning('edge-k3s', unsigned)).toBe(
      'the origin of package edge-k3s is NOT checked: it is not signed and no trusted key is pinned. ' +
        'Anyone who could write the package could have replaced its files and manifest. ' +
        'Pin the signing public key with --trusted-key FILE to refuse packages that are unsigned or signed by anyone else.',
    );
    expect(uncheckedOriginWarning('edge-k3s', { isChecked: false, isSigned: true })).toContain(
      'NOT checked: it is signed, but no trusted key is pinned.',
    );
    expect(uncheckedOriginWarning('edge-k3s', checkPackageOrigin(manifest, signed, trustA))).toBeUndefined();
  });
});

describe('decodeSignature', () => {
  it('takes base64 with a trailing newline (as editors and other tools write it)', () => {
    expect(
      decodeSignature(Buffer.from(`${signed.toString('latin1')}\n`)).equals(
        Buffer.from(signed.toString('latin1'), 'base64'),
      ),
    ).toBe(true);
  });
});
