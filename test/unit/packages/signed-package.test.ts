/**
 * Signed packages end to end in the library (issue #39): built with
 * --sign-key, signed afterwards (by key, or by attaching a signature made
 * elsewhere), and every tampered package of the catalogue refused by
 * verifyPackage with the trusted key pinned; the signature entry's own rules
 * in the scanner; the host-side tree check expecting the signature file.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPackageError } from '../../../src/packages/errors.js';
import { loadPackageTrust } from '../../../src/packages/package-trust.js';
import { signManifest } from '../../../src/packages/signature.js';
import { copyWithSignature, signPackage } from '../../../src/packages/sign.js';
import { compareUnpackedTree } from '../../../src/packages/unpacked-tree.js';
import { verifyPackage } from '../../../src/packages/verify.js';
import { GOOD_FILES, manifestEntry, manifestFor, tarBytes, writeCrafted } from '../../support/package-fixtures.js';
import {
  buildSignedPackage,
  signatureOf,
  TAMPERED_PACKAGES,
  writeSigningKeys,
  type SigningKeys,
} from '../../support/signed-packages.js';
import { renderManifest } from '../../../src/packages/manifest.js';

let dir: string;
let keys: SigningKeys;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edgeadm-signed-'));
  keys = await writeSigningKeys(dir);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const trusted = () => loadPackageTrust([keys.trusted.publicKeyFile]);

describe('a package built with a signing key', () => {
  it('carries the signature as its second entry and verifies with the trusted key, naming it', async () => {
    const built = await buildSignedPackage(dir, { name: 'signed', key: keys.trusted.key });
    expect(built.signedBy).toBe(keys.trusted.fingerprint);
    const tar = gunzipSync(await readFile(built.file));
    expect(tar.subarray(512 * 0, 512 * 0 + 13).toString()).toBe('manifest.json');
    expect((await signatureOf(built.file)).equals(built.signatureBytes!)).toBe(true);
    const verified = await verifyPackage(built.file, { trust: trusted() });
    expect(verified.signer).toEqual({
      isChecked: true,
      isSigned: true,
      fingerprint: keys.trusted.fingerprint,
      keyFile: keys.trusted.publicKeyFile,
    });
  });

  it('still verifies without a pinned key, reporting the origin unchecked', async () => {
    const built = await buildSignedPackage(dir, { name: 'signed-unpinned', key: keys.trusted.key });
    expect((await verifyPackage(built.file)).signer).toEqual({ isChecked: false, isSigned: true });
  });
});

describe('signPackage', () => {
  it('signs an unsigned package in place, keeping the manifest and every file byte for byte', async () => {
    const built = await buildSignedPackage(dir, { name: 'sign-later' });
    const tarBefore = gunzipSync(await readFile(built.file));
    await expect(verifyPackage(built.file, { trust: trusted() })).rejects.toMatchObject({ code: 'E_PACKAGE_UNSIGNED' });
    const signed = await signPackage({ file: built.file, signingKey: keys.trusted.key });
    expect(signed).toMatchObject({ hadSignature: false, signedBy: keys.trusted.fingerprint });
    const tarAfter = gunzipSync(await readFile(built.file));
    const manifestBlocks = 512 + Math.ceil(built.manifestBytes.length / 512) * 512;
    // The same manifest entry, one signature entry (header and one padded block) more, then the same rest.
    expect(tarAfter.subarray(0, manifestBlocks).equals(tarBefore.subarray(0, manifestBlocks))).toBe(true);
    expect(tarAfter.subarray(manifestBlocks + 1024).equals(tarBefore.subarray(manifestBlocks))).toBe(true);
    expect((await verifyPackage(built.file, { trust: trusted() })).manifestSha256).toBe(signed.manifestSha256);
  });

  it('replaces an old signature (key rotation): the new key verifies, the old one no longer does', async () => {
    const built = await buildSignedPackage(dir, { name: 'rotate', key: keys.other.key });
    const output = join(dir, 'rotated.tar.gz');
    const signed = await signPackage({ file: built.file, output, signingKey: keys.trusted.key });
    expect(signed.hadSignature).toBe(true);
    await expect(verifyPackage(output, { trust: trusted() })).resolves.toBeTruthy();
    await expect(verifyPackage(output, { trust: loadPackageTrust([keys.other.publicKeyFile]) })).rejects.toMatchObject({
      code: 'E_PACKAGE_SIGNATURE',
    });
    // Both pinned during a rotation: either signature passes.
    const both = loadPackageTrust([keys.other.publicKeyFile, keys.trusted.publicKeyFile]);
    await expect(verifyPackage(built.file, { trust: both })).resolves.toBeTruthy();
    await expect(verifyPackage(output, { trust: both })).resolves.toBeTruthy();
  });

  it('attaches a signature made elsewhere over manifest.json, and checks it first when told the key', async () => {
    const built = await buildSignedPackage(dir, { name: 'attach' });
    const made = Buffer.from(`${signManifest(built.manifestBytes, keys.trusted.key)}\n`);
    await expect(
      signPackage({ file: built.file, signature: made, trust: loadPackageTrust([keys.other.publicKeyFile]) }),
    ).rejects.toMatchObject({ code: 'E_PACKAGE_SIGNATURE' });
    // Refused before anything was written.
    await expect(verifyPackage(built.file)).resolves.toMatchObject({ signer: { isSigned: false } });
    await signPackage({ file: built.file, signature: made, trust: trusted() });
    await expect(verifyPackage(built.file, { trust: trusted() })).resolves.toBeTruthy();
  });

  it('signs a package that GNU tar made (./ prefixes, directory entries, record padding), which verify accepts', async () => {
    const built = await buildSignedPackage(dir, { name: 'for-gnu-tar' });
    const tree = await mkdtemp(join(dir, 'gnu-tree-'));
    await execa('tar', ['-xzf', built.file, '-C', tree]);
    const file = join(dir, 'gnu-made.tar.gz');
    await execa('tar', [
      '-czf',
      file,
      '-C',
      tree,
      '--owner=0',
      '--group=0',
      './manifest.json',
      './assets',
      './bin',
      './cni',
      './images',
      './sbom.cdx.json',
    ]);
    await signPackage({ file, signingKey: keys.trusted.key });
    const verified = await verifyPackage(file, { trust: trusted() });
    expect(verified.manifestSha256).toBe(createHash('sha256').update(built.manifestBytes).digest('hex'));
  });

  it('refuses a first entry larger than any manifest when it copies (the file replaced after it was verified), holding none of it', async () => {
    const header = tarBytes([{ path: 'manifest.json', declaredSize: 1024 * 1024 * 1024 }], { endMarker: false });
    let chunksRead = 0;
    async function* tar(): AsyncGenerator<Buffer> {
      yield header;
      for (;;) {
        chunksRead += 1;
        if (chunksRead > 100) throw new Error('read on and on');
        yield Buffer.alloc(65_536);
      }
    }
    const copy = async (): Promise<void> => {
      for await (const _ of copyWithSignature(tar(), Buffer.from('c2ln'))) {
        // drained
      }
    };
    await expect(copy()).rejects.toMatchObject({
      code: 'E_PACKAGE_CORRUPT',
      message: expect.stringContaining('more than a manifest can be'),
    });
    expect(chunksRead).toBe(0);
  });

  it('refuses to sign a package that does not verify', async () => {
    const built = await buildSignedPackage(dir, { name: 'broken' });
    const bytes = await readFile(built.file);
    const damaged = join(dir, 'damaged.tar.gz');
    await writeCrafted(damaged, gunzipSync(bytes).subarray(0, 3000));
    await expect(signPackage({ file: damaged, signingKey: keys.trusted.key })).rejects.toSatisfy((error) =>
      isPackageError(error),
    );
  });
});

describe('with the trusted key pinned, verifyPackage refuses every tampered package', () => {
  it.each(TAMPERED_PACKAGES.map((tampered) => [tampered.name, tampered] as const))('%s', async (_name, tampered) => {
    const file = await tampered.make(await mkdtemp(join(dir, 'tampered-')), keys);
    // Intact as far as the manifest goes: only the origin check can catch it.
    await expect(verifyPackage(file)).resolves.toBeTruthy();
    await expect(verifyPackage(file, { trust: trusted() })).rejects.toMatchObject({
      code: tampered.code,
      exitCode: 3,
      entry: 'manifest.json.sig',
      message: expect.stringContaining(`package ${file}:`),
    });
  });
});

describe('the signature entry', () => {
  const manifest = manifestFor(GOOD_FILES);
  const signature = (): Buffer => Buffer.from(signManifest(renderManifest(manifest), keys.trusted.key));
  const files = GOOD_FILES.map((file) => ({ path: file.path, content: file.content, mode: file.mode }));

  it('is accepted second, mode 0644', async () => {
    const file = await writeCrafted(
      join(dir, 'sig-second.tar.gz'),
      tarBytes([manifestEntry(manifest), { path: 'manifest.json.sig', content: signature() }, ...files]),
    );
    await expect(verifyPackage(file, { trust: trusted() })).resolves.toMatchObject({ signer: { isChecked: true } });
  });

  it('is refused anywhere else in the archive, so that it is always checked before the files stream', async () => {
    const file = await writeCrafted(
      join(dir, 'sig-last.tar.gz'),
      tarBytes([manifestEntry(manifest), ...files, { path: 'manifest.json.sig', content: signature() }]),
    );
    await expect(verifyPackage(file)).rejects.toMatchObject({
      code: 'E_PACKAGE_SIGNATURE',
      entry: 'manifest.json.sig',
    });
  });

  it('is refused with another mode, or larger than a signature can be', async () => {
    const modeFile = await writeCrafted(
      join(dir, 'sig-mode.tar.gz'),
      tarBytes([manifestEntry(manifest), { path: 'manifest.json.sig', content: signature(), mode: 0o755 }, ...files]),
    );
    await expect(verifyPackage(modeFile)).rejects.toMatchObject({ code: 'E_PACKAGE_MODE' });
    const bigFile = await writeCrafted(
      join(dir, 'sig-big.tar.gz'),
      tarBytes([
        manifestEntry(manifest),
        { path: 'manifest.json.sig', content: Buffer.alloc(100_000, 0x41) },
        ...files,
      ]),
    );
    await expect(verifyPackage(bigFile)).rejects.toMatchObject({ code: 'E_PACKAGE_SIGNATURE' });
  });

  it('cannot be listed in the manifest it signs', async () => {
    const listed = manifestFor([...GOOD_FILES, { path: 'manifest.json.sig', content: Buffer.from('x') }]);
    const file = await writeCrafted(join(dir, 'sig-listed.tar.gz'), tarBytes([manifestEntry(listed), ...files]));
    await expect(verifyPackage(file)).rejects.toMatchObject({ code: 'E_PACKAGE_MANIFEST' });
  });
});

describe('the host-side tree check of a signed package', () => {
  it('expects manifest.json.sig with its SHA-256, and refuses it changed or absent', async () => {
    const built = await buildSignedPackage(dir, { name: 'tree', key: keys.trusted.key });
    const verified = await verifyPackage(built.file);
    const sigSha = createHash('sha256').update(verified.signatureBytes!).digest('hex');
    const listing = (sigHash: string | undefined): string => {
      const entries = [
        ...new Set(
          verified.manifest.files.flatMap((file) =>
            file.path
              .split('/')
              .slice(0, -1)
              .map((_, i, parts) => `d 755 ${parts.slice(0, i + 1).join('/')}`),
          ),
        ),
        'f 644 manifest.json',
        ...(sigHash === undefined ? [] : ['f 644 manifest.json.sig']),
        ...verified.manifest.files.map((file) => `f ${file.mode.slice(1)} ${file.path}`),
      ];
      const hashes = [
        `${verified.manifestSha256}  ./manifest.json`,
        ...(sigHash === undefined ? [] : [`${sigHash}  ./manifest.json.sig`]),
        ...verified.manifest.files.map((file) => `${file.sha256}  ./${file.path}`),
      ];
      return `${entries.join('\0')}\0\0${hashes.join('\n')}\n`;
    };
    const check = (text: string) =>
      compareUnpackedTree(text, verified.manifest, verified.manifestSha256, { signatureSha256: sigSha });
    expect(check(listing(sigSha))).toEqual([]);
    expect(check(listing('0'.repeat(64)))).toEqual([
      { path: 'manifest.json.sig', expected: `SHA-256 ${sigSha}`, found: `SHA-256 ${'0'.repeat(64)}` },
    ]);
    expect(check(listing(undefined))).toEqual([
      { path: 'manifest.json.sig', expected: 'a regular file', found: 'nothing' },
    ]);
  });
});
