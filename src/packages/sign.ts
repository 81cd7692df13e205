/**
 * `signPackage`: signs a package that was built elsewhere, or unsigned, or
 * signed with a key being rotated out (`edgeadm package sign`).
 *
 * The package is verified first (an archive edgeadm would refuse is never
 * signed), then copied with the new signature as its second entry in place
 * of any old one: the tar stream is copied entry for entry, so the manifest
 * and every file keep their exact bytes, and only the gzip wrapping is
 * written anew. The copy is verified again and must carry the very manifest
 * that was verified (a file swapped in between is refused), then renamed
 * over the output.
 *
 * The signature is made here with a private key, or made elsewhere and
 * attached: `cosign sign-blob --key cosign.key manifest.json` (with a key
 * edgeadm cannot read, a KMS key, a hardware token) writes one in the same
 * format.
 */
import { createReadStream } from 'node:fs';
import { Duplex } from 'node:stream';
import { createGunzip, createGzip } from 'node:zlib';
import { Header } from 'tar';
import { ValidationError } from '../errors.js';
import { BUILD_GZIP_LEVEL, entryHeader, padding, writeAtomically } from './build.js';
import { PackageError, PackageErrorCode } from './errors.js';
import { DEFAULT_PACKAGE_LIMITS } from './limits.js';
import { MANIFEST_PATH } from './manifest.js';
import {
  checkPackageOrigin,
  decodeSignature,
  signManifest,
  SIGNATURE_MODE,
  SIGNATURE_PATH,
  type PackageTrust,
  type SignerCheck,
} from './signature.js';
import type { PrivateSigningKey } from './signing-keys.js';
import { verifyPackage, type VerifiedPackage } from './verify.js';

const TAR_BLOCK = 512;

/** What to sign, and with what. */
export interface SignPackageOptions {
  /** The package to sign. */
  file: string;
  /** Where the signed package goes; the package itself (replaced atomically) when absent. */
  output?: string;
  /** Signs with this key... */
  signingKey?: PrivateSigningKey;
  /** ...or attaches this signature, made elsewhere over the package's manifest.json. */
  signature?: Buffer;
  /** Checked against the new signature before anything is written (an attached signature is then known good). */
  trust?: PackageTrust;
}

/** A signed package, verified after writing. */
export interface SignedPackage extends VerifiedPackage {
  /** Whether the package carried a signature before (now replaced). */
  hadSignature: boolean;
  /** The signing key's fingerprint, when a key signed it here. */
  signedBy?: string;
}

/**
 * Signs a package. See the module comment.
 *
 * @throws {ValidationError} `E_FLAG_INVALID` without a key or a signature, or with both;
 * the package's own refusals; `E_PACKAGE_SIGNATURE` for an attached signature
 * that is malformed or does not verify with `trust`.
 */
export async function signPackage(options: SignPackageOptions): Promise<SignedPackage> {
  if ((options.signingKey === undefined) === (options.signature === undefined)) {
    throw new ValidationError(
      'give exactly one of a signing key (--key) and a signature made elsewhere (--signature)',
      {
        code: 'E_FLAG_INVALID',
      },
    );
  }
  const before = await verifyPackage(options.file);
  const signature =
    options.signingKey === undefined
      ? Buffer.from(decodeSignature(options.signature!).toString('base64'), 'latin1')
      : Buffer.from(signManifest(before.manifestBytes, options.signingKey), 'latin1');
  let signer: SignerCheck | undefined;
  if (options.trust !== undefined) signer = checkPackageOrigin(before.manifestBytes, signature, options.trust);

  const output = options.output ?? options.file;
  await writeAtomically(output, [
    createReadStream(options.file),
    createGunzip(),
    Duplex.from((tar: AsyncIterable<Buffer>) => copyWithSignature(tar, signature)),
    createGzip({ level: BUILD_GZIP_LEVEL }),
  ]);
  const after = await verifyPackage(output, options.trust === undefined ? {} : { trust: options.trust });
  if (after.manifestSha256 !== before.manifestSha256) {
    throw new PackageError(
      PackageErrorCode.Corrupt,
      `${options.file} changed while it was being signed; ${output} holds another manifest than the one signed`,
      { entry: MANIFEST_PATH, hints: ['Make sure nothing writes the package while it is signed, then sign it again.'] },
    );
  }
  return {
    ...after,
    ...(signer === undefined ? {} : { signer }),
    hadSignature: before.signatureBytes !== undefined,
    ...(options.signingKey === undefined ? {} : { signedBy: options.signingKey.fingerprint }),
  };
}

/**
 * The package's tar stream with `signature` as its second entry: the first
 * entry (the manifest, at most the manifest limit, so the buffer is bounded)
 * as it is, then the signature (any old one dropped), then everything else
 * unchanged. Only plain ustar headers are expected for the first two entries,
 * which is what verification let through for these two names. The file is
 * read again here, after it was verified: a first entry larger than any
 * manifest (the file replaced in between) is refused before it is buffered.
 */
export async function* copyWithSignature(tar: AsyncIterable<Buffer>, signature: Buffer): AsyncGenerator<Buffer> {
  let pending: Buffer = Buffer.alloc(0);
  let state: 'manifest' | 'second' | 'rest' = 'manifest';
  let mtime = new Date(0);
  for await (const chunk of tar) {
    if (state === 'rest') {
      yield chunk;
      continue;
    }
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    if (state === 'manifest') {
      const entry = wholeEntry(pending);
      if (entry === undefined) continue;
      if (entryName(entry.header) !== MANIFEST_PATH) throw notSignable(`its first entry is not ${MANIFEST_PATH}`);
      mtime = entry.header.mtime ?? mtime;
      yield pending.subarray(0, entry.length);
      pending = pending.subarray(entry.length);
      state = 'second';
    }
    if (state === 'second') {
      if (pending.length < TAR_BLOCK) continue;
      const header = new Header(pending.subarray(0, TAR_BLOCK));
      if (entryName(header) === SIGNATURE_PATH) {
        const entry = wholeEntry(pending);
        if (entry === undefined) continue;
        pending = pending.subarray(entry.length);
      }
      yield entryHeader(SIGNATURE_PATH, signature.length, SIGNATURE_MODE, mtime);
      yield signature;
      yield padding(signature.length);
      yield pending;
      pending = Buffer.alloc(0);
      state = 'rest';
    }
  }
  if (state !== 'rest') throw notSignable('the archive ends inside its first entries');
}

/** An entry's package path: GNU tar writes `./manifest.json` for `tar -czf PKG ./manifest.json …`, which verify accepts. */
function entryName(header: Header): string {
  return (header.path ?? '').replace(/^\.\//, '');
}

/** The first entry of `bytes` when all of it (header, content, padding) is there. */
function wholeEntry(bytes: Buffer): { header: Header; length: number } | undefined {
  if (bytes.length < TAR_BLOCK) return undefined;
  const header = new Header(bytes.subarray(0, TAR_BLOCK));
  if (!header.cksumValid || header.type !== 'File' || header.size === undefined) {
    throw notSignable('its first entries are not plain tar file headers');
  }
  if (header.size > DEFAULT_PACKAGE_LIMITS.maxManifestBytes) {
    throw notSignable(
      `its first entry is ${header.size} bytes, more than a manifest can be (it changed since it was verified)`,
    );
  }
  const length = TAR_BLOCK + Math.ceil(header.size / TAR_BLOCK) * TAR_BLOCK;
  return bytes.length >= length ? { header, length } : undefined;
}

function notSignable(why: string): PackageError {
  return new PackageError(PackageErrorCode.Corrupt, `the package cannot be signed in place: ${why}`, {
    hints: ['Rebuild it with "edgeadm package build --sign-key KEY".'],
  });
}
