/**
 * Signing keys (src/packages/signing-keys.ts): the pair keygen writes (modes,
 * formats, no overwrite), and the keys refused with a message that names the
 * file and never its content.
 */
import { generateKeyPairSync } from 'node:crypto';
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
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

  it('refuses to replace an existing key without isOverwriteAllowed, leaving it as it was', async () => {
    const files = { privateKeyFile: join(dir, 'b.key'), publicKeyFile: join(dir, 'b.pub'), isOverwriteAllowed: false };
    await writeKeyPair(generateSigningKeyPair(), files);
    const before = await readFile(files.privateKeyFile);
    await expect(writeKeyPair(generateSigningKeyPair(), files)).rejects.toMatchObject({ code: 'E_PACKAGE_KEY_EXISTS' });
    expect((await readFile(files.privateKeyFile)).equals(before)).toBe(true);
    await writeKeyPair(generateSigningKeyPair(), { ...files, isOverwriteAllowed: true });
    expect((await readFile(files.privateKeyFile)).equals(before)).toBe(false);
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

  it('refuses a private key given as a trusted key, and a missing file, naming the file', async () => {
    const pair = generateSigningKeyPair();
    await writeFile(join(dir, 'private-as-public.pem'), pair.privateKeyPem, { mode: 0o600 });
    expect(() => readPublicSigningKey(join(dir, 'private-as-public.pem'))).toThrow(/holds a private key/);
    expect(() => readPublicSigningKey(join(dir, 'nope.pub'))).toThrow(/nope\.pub does not exist/);
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
