/**
 * Signing keys (src/packages/signing-keys.ts): the pair keygen writes (modes,
 * formats, no overwrite), and the keys refused with a message that names the
 * file and never its content.
 */
import { generateKeyPairSync } from 'node:crypto';
import { chmod, lstat, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isMainThread } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  generateSigningKeyPair,
  parsePrivateSigningKey,
  parsePublicSigningKey,
  readPrivateSigningKey,
  readPublicSigningKey,
  writeKeyPair,
} from '../../../src/packages/signing-keys.js';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edgeadm-keys-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('writeKeyPair', () => {
  it('writes a PKCS#8 private key with mode 0600 and a PKIX public key with mode 0644, even under a permissive umask', async () => {
    // Worker threads (the mutation runner's pool) cannot set the umask; the modes are checked there all the same.
    const previous = isMainThread ? process.umask(0o000) : undefined;
    try {
      const pair = generateSigningKeyPair();
      const written = await writeKeyPair(pair, {
        privateKeyFile: join(dir, 'a.key'),
        publicKeyFile: join(dir, 'a.pub'),
        isOverwriteAllowed: false,
      });
      expect((await stat(written.privateKeyFile)).mode & 0o777).toBe(0o600);
      expect((await stat(written.publicKeyFile)).mode & 0o777).toBe(0o644);
      expect(await readFile(written.privateKeyFile, 'utf8')).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
      expect(await readFile(written.publicKeyFile, 'utf8')).toMatch(/^-----BEGIN PUBLIC KEY-----\n/);
      expect(readPrivateSigningKey(written.privateKeyFile).fingerprint).toBe(pair.fingerprint);
      expect(readPublicSigningKey(written.publicKeyFile).fingerprint).toBe(pair.fingerprint);
      expect(pair.fingerprint).toMatch(/^sha256:[0-9a-f]{64}$/);
    } finally {
      if (previous !== undefined) process.umask(previous);
    }
  });

  it('with isOverwriteAllowed, replaces a link in place of the key by a new file, never writing through it', async () => {
    const target = join(dir, 'elsewhere.txt');
    await writeFile(target, 'not a key\n');
    await symlink(target, join(dir, 'linked.key'));
    await writeKeyPair(generateSigningKeyPair(), {
      privateKeyFile: join(dir, 'linked.key'),
      publicKeyFile: join(dir, 'linked.pub'),
      isOverwriteAllowed: true,
    });
    expect(await readFile(target, 'utf8')).toBe('not a key\n');
    expect((await lstat(join(dir, 'linked.key'))).isFile()).toBe(true);
    expect((await stat(join(dir, 'linked.key'))).mode & 0o777).toBe(0o600);
  });

  it('refuses one path for both keys, and says it cannot write into a missing directory', async () => {
    const same = join(dir, 'same.pem');
    await expect(
      writeKeyPair(generateSigningKeyPair(), { privateKeyFile: same, publicKeyFile: same, isOverwriteAllowed: false }),
    ).rejects.toMatchObject({ code: 'E_FLAG_INVALID' });
    await expect(
      writeKeyPair(generateSigningKeyPair(), {
        privateKeyFile: join(dir, 'no', 'such', 'dir.key'),
        publicKeyFile: join(dir, 'no', 'such', 'dir.pub'),
        isOverwriteAllowed: false,
      }),
    ).rejects.toMatchObject({ code: 'E_PACKAGE_KEY_WRITE' });
  });

  it('removes the new private key when the public key cannot be written (no half pair)', async () => {
    await writeFile(join(dir, 'half.pub'), 'taken\n');
    await expect(
      writeKeyPair(generateSigningKeyPair(), {
        privateKeyFile: join(dir, 'half.key'),
        publicKeyFile: join(dir, 'half.pub'),
        isOverwriteAllowed: false,
      }),
    ).rejects.toMatchObject({
      code: 'E_PACKAGE_KEY_EXISTS',
      message: `${join(dir, 'half.pub')} already exists; keygen does not overwrite keys`,
    });
    await expect(stat(join(dir, 'half.key'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('refuses to replace an existing key without isOverwriteAllowed, leaving it as it was', async () => {
    const files = { privateKeyFile: join(dir, 'b.key'), publicKeyFile: join(dir, 'b.pub'), isOverwriteAllowed: false };
    await writeKeyPair(generateSigningKeyPair(), files);
    const before = await readFile(files.privateKeyFile);
    await expect(writeKeyPair(generateSigningKeyPair(), files)).rejects.toMatchObject({ code: 'E_PACKAGE_KEY_EXISTS' });
    expect((await readFile(files.privateKeyFile)).equals(before)).toBe(true);
    await writeKeyPair(generateSigningKeyPair(), { ...files, isOverwriteAllowed: true });
    expect((await readFile(files.privateKeyFile)).equals(before)).toBe(false);
    // --force where there is nothing to replace is no mistake.
    await expect(
      writeKeyPair(generateSigningKeyPair(), {
        privateKeyFile: join(dir, 'fresh.key'),
        publicKeyFile: join(dir, 'fresh.pub'),
        isOverwriteAllowed: true,
      }),
    ).resolves.toMatchObject({ privateKeyFile: join(dir, 'fresh.key') });
  });
});

describe('reading keys', () => {
  it('refuses a private key that group or others can read, saying how to fix it', async () => {
    await writeKeyPair(generateSigningKeyPair(), {
      privateKeyFile: join(dir, 'c.key'),
      publicKeyFile: join(dir, 'c.pub'),
      isOverwriteAllowed: false,
    });
    await chmod(join(dir, 'c.key'), 0o640);
    expect(() => readPrivateSigningKey(join(dir, 'c.key'))).toThrow(
      expect.objectContaining({ code: 'E_PACKAGE_KEY', hints: [`chmod 600 ${join(dir, 'c.key')}`] }),
    );
  });

  it('refuses a private key given as a trusted key (PKCS#8 or SEC1), and a missing file, naming the file', async () => {
    const pair = generateSigningKeyPair();
    await writeFile(join(dir, 'private-as-public.pem'), pair.privateKeyPem, { mode: 0o600 });
    expect(() => readPublicSigningKey(join(dir, 'private-as-public.pem'))).toThrow(
      /private-as-public\.pem holds a private key/,
    );
    const sec1 = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({
      type: 'sec1',
      format: 'pem',
    });
    expect(() => parsePublicSigningKey(sec1.toString(), 'ec.pem')).toThrow(
      'ec.pem holds a private key; a trusted key is the public half',
    );
    expect(() => readPublicSigningKey(join(dir, 'nope.pub'))).toThrow(
      `trusted key ${join(dir, 'nope.pub')} does not exist`,
    );
  });

  it('refuses what is not a key file: a directory, a huge file, text that is not PEM, a damaged PEM', async () => {
    expect(() => readPublicSigningKey(dir)).toThrow(`trusted key ${dir} is not a regular file`);
    await writeFile(join(dir, 'huge.pub'), Buffer.alloc(20_000, 0x41));
    expect(() => readPublicSigningKey(join(dir, 'huge.pub'))).toThrow(
      /is 20000 bytes; an ECDSA P-256 key in PEM is well under/,
    );
    expect(() => parsePublicSigningKey('ssh-ed25519 AAAA me@host', 'id.pub')).toThrow(
      'id.pub is not a PEM public key (no "-----BEGIN PUBLIC KEY-----" line)',
    );
    expect(() =>
      parsePublicSigningKey('-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n', 'bad.pub'),
    ).toThrow(/bad\.pub is not a readable PEM public key/);
    expect(() => parsePrivateSigningKey('hello', 'x.key')).toThrow('x.key is not a PEM private key');
    expect(() =>
      parsePrivateSigningKey('-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n', 'bad.key'),
    ).toThrow(/bad\.key is not a readable PEM private key/);
    const encrypted = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({
      type: 'pkcs8',
      format: 'pem',
      cipher: 'aes-256-cbc',
      passphrase: 'pw',
    });
    expect(() => parsePrivateSigningKey(encrypted.toString(), 'enc.key')).toThrow(
      'enc.key is an encrypted PKCS#8 key, which edgeadm does not read',
    );
  });

  it('refuses a private key that is not P-256, as it refuses such a public key', () => {
    const p384 = generateKeyPairSync('ec', { namedCurve: 'secp384r1' }).privateKey.export({
      type: 'pkcs8',
      format: 'pem',
    });
    expect(() => parsePrivateSigningKey(p384.toString(), 'p384.key')).toThrow(
      'p384.key is an EC key on secp384r1; package signatures use ECDSA P-256 keys only',
    );
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' });
    expect(() => parsePrivateSigningKey(rsa.toString(), 'rsa.key')).toThrow(
      'rsa.key is a rsa key; package signatures use ECDSA P-256 keys only',
    );
  });

  it('refuses keys that are not ECDSA P-256 (P-384, RSA, Ed25519)', () => {
    const others = [
      generateKeyPairSync('ec', { namedCurve: 'secp384r1' }),
      generateKeyPairSync('rsa', { modulusLength: 2048 }),
      generateKeyPairSync('ed25519'),
    ];
    for (const pair of others) {
      const pem = pair.publicKey.export({ type: 'spki', format: 'pem' }).toString();
      expect(() => parsePublicSigningKey(pem, 'other.pub')).toThrow(/ECDSA P-256 keys only/);
    }
  });

  it("says what to do with cosign's own encrypted key, without quoting it", () => {
    const pem =
      '-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\nc2VjcmV0\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n';
    let error: unknown;
    try {
      parsePrivateSigningKey(pem, 'cosign.key');
    } catch (caught) {
      error = caught;
    }
    expect(error).toMatchObject({ code: 'E_PACKAGE_KEY' });
    expect(JSON.stringify(error)).not.toContain('c2VjcmV0');
    expect((error as { hints: string[] }).hints.join(' ')).toContain('package sign PKG --signature');
  });

  it('reads an SEC1 "EC PRIVATE KEY" (what openssl ecparam -genkey writes)', () => {
    const pair = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const sec1 = pair.privateKey.export({ type: 'sec1', format: 'pem' }).toString();
    expect(sec1).toMatch(/^-----BEGIN EC PRIVATE KEY-----/);
    expect(parsePrivateSigningKey(sec1, 'ec.key').fingerprint).toMatch(/^sha256:/);
  });
});
