/**
 * Encryption at rest of the hub's secrets in etcd: AES-256-GCM envelopes
 * that name their key, bound to the etcd key they are stored under.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  encryptionKeysFrom,
  ENVELOPE_PREFIX,
  loadEncryptionKeyFile,
  newEncryptionKeyFileText,
  parseEncryptionKeyFile,
} from '../../../../../src/hub/store/etcd/encryption.js';

describe('hub encryption keys', () => {
  it('opens what it sealed, for any text, and the envelope shows neither the text nor the key', () => {
    const key = randomBytes(32);
    const keys = encryptionKeysFrom([key]);
    fc.assert(
      fc.property(fc.string({ minLength: 8 }), (secret) => {
        const sealed = keys.seal(secret, '/edgeadm/hub/tokens/a');
        expect(sealed.startsWith(`${ENVELOPE_PREFIX}${keys.ids[0]}:`)).toBe(true);
        expect(sealed).not.toContain(secret);
        expect(sealed).not.toContain(key.toString('base64'));
        expect(keys.open(sealed, '/edgeadm/hub/tokens/a')).toBe(secret);
      }),
    );
  });

  it('refuses a value moved under another key, a tampered value, and a value of another key file', () => {
    const keys = encryptionKeysFrom([randomBytes(32)]);
    const sealed = keys.seal('secret', '/edgeadm/hub/tokens/a');
    expect(() => keys.open(sealed, '/edgeadm/hub/tokens/b')).toThrow(
      expect.objectContaining({ code: 'E_HUB_ENCRYPTION_KEY_WRONG' }),
    );
    const body = Buffer.from(sealed.slice(sealed.lastIndexOf(':') + 1), 'base64');
    body[body.length - 1]! ^= 1;
    const tampered = `${sealed.slice(0, sealed.lastIndexOf(':') + 1)}${body.toString('base64')}`;
    expect(() => keys.open(tampered, '/edgeadm/hub/tokens/a')).toThrow(
      expect.objectContaining({ code: 'E_HUB_ENCRYPTION_KEY_WRONG' }),
    );
    const other = encryptionKeysFrom([randomBytes(32)]);
    expect(() => other.open(sealed, '/edgeadm/hub/tokens/a')).toThrow(
      expect.objectContaining({ code: 'E_HUB_ENCRYPTION_KEY_WRONG' }),
    );
  });

  it('rotates: a file with a new key first still opens values of the old key, and seals with the new one', () => {
    const oldKey = randomBytes(32);
    const newKey = randomBytes(32);
    const sealedOld = encryptionKeysFrom([oldKey]).seal('secret', 'k');
    const rotated = encryptionKeysFrom([newKey, oldKey]);
    expect(rotated.open(sealedOld, 'k')).toBe('secret');
    expect(rotated.seal('x', 'k')).toContain(`:${rotated.ids[0]}:`);
    expect(rotated.ids[0]).not.toBe(rotated.ids[1]);
  });

  it('reads the key file it makes, and refuses a missing, exposed or malformed one with a hint', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hub-enc-'));
    const path = join(dir, 'key');
    writeFileSync(path, newEncryptionKeyFileText(), { mode: 0o600 });
    expect(loadEncryptionKeyFile(path).ids).toHaveLength(1);
    expect(() => loadEncryptionKeyFile(undefined)).toThrow(
      expect.objectContaining({
        code: 'E_HUB_ENCRYPTION_KEY_MISSING',
        hints: [expect.stringContaining('openssl rand')],
      }),
    );
    expect(() => loadEncryptionKeyFile(join(dir, 'nope'))).toThrow(
      expect.objectContaining({ code: 'E_HUB_ENCRYPTION_KEY_MISSING' }),
    );
    chmodSync(path, 0o644);
    expect(() => loadEncryptionKeyFile(path)).toThrow(
      expect.objectContaining({ code: 'E_HUB_ENCRYPTION_KEY_INVALID' }),
    );
    expect(() => parseEncryptionKeyFile('# nothing\n', 'f')).toThrow(
      expect.objectContaining({ code: 'E_HUB_ENCRYPTION_KEY_INVALID' }),
    );
    expect(() => parseEncryptionKeyFile(randomBytes(16).toString('base64'), 'f')).toThrow(/16 bytes/);
  });
});
