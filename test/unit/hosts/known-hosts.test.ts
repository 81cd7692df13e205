import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  appendKnownHostsLine,
  checkKnownHost,
  entryMatchesName,
  fingerprintSha256,
  formatKnownHostsLine,
  hashKnownHostsName,
  keyTypeOfBlob,
  knownHostsName,
  knownKeyTypes,
  normalizeFingerprint,
  parseKnownHosts,
} from '../../../src/hosts/known-hosts.js';

/** Every directory this file makes lives here, and goes when the file is done. */
const scratch = mkdtempSync(join(tmpdir(), 'eadm-kh-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** An SSH public key blob: string type, then key bytes (the shape is all that matters here). */
function blob(type: string, seed: string): Buffer {
  const typeBytes = Buffer.from(type);
  const key = createHash('sha256').update(seed).digest();
  const out = Buffer.alloc(4 + typeBytes.length + 4 + key.length);
  out.writeUInt32BE(typeBytes.length, 0);
  typeBytes.copy(out, 4);
  out.writeUInt32BE(key.length, 4 + typeBytes.length);
  key.copy(out, 8 + typeBytes.length);
  return out;
}

const KEY_A = blob('ssh-ed25519', 'a');
const KEY_B = blob('ssh-ed25519', 'b');
const RSA_A = blob('ssh-rsa', 'rsa-a');
const line = (hosts: string, key: Buffer, marker = ''): string =>
  `${marker ? `${marker} ` : ''}${hosts} ${keyTypeOfBlob(key)} ${key.toString('base64')}`;

describe('fingerprints', () => {
  it("are OpenSSH's SHA256:base64 without padding", () => {
    const expected = createHash('sha256').update(KEY_A).digest('base64').replace(/=+$/, '');
    expect(fingerprintSha256(KEY_A)).toBe(`SHA256:${expected}`);
    expect(fingerprintSha256(KEY_A)).not.toContain('=');
  });

  it('normalizes what users paste, and rejects what is not a SHA-256 fingerprint', () => {
    const fingerprint = fingerprintSha256(KEY_A);
    const body = fingerprint.slice('SHA256:'.length);
    expect(normalizeFingerprint(body)).toBe(fingerprint);
    expect(normalizeFingerprint(`${fingerprint}=`)).toBe(fingerprint);
    expect(normalizeFingerprint(`sha256:${body}`)).toBe(fingerprint);
    expect(normalizeFingerprint('MD5:12:34')).toBeUndefined();
    expect(normalizeFingerprint('SHA256:short')).toBeUndefined();
  });

  it('reads the key type from the blob', () => {
    expect(keyTypeOfBlob(KEY_A)).toBe('ssh-ed25519');
    expect(keyTypeOfBlob(RSA_A)).toBe('ssh-rsa');
    expect(keyTypeOfBlob(Buffer.alloc(2))).toBe('unknown');
  });
});

describe('host names and patterns', () => {
  it('uses [host]:port for ports other than 22', () => {
    expect(knownHostsName('Store-1.example.com', 22)).toBe('store-1.example.com');
    expect(knownHostsName('10.0.0.5', 2222)).toBe('[10.0.0.5]:2222');
  });

  it('matches comma lists, wildcards and negations', () => {
    expect(entryMatchesName('a.example.com,10.0.0.5', '10.0.0.5')).toBe(true);
    expect(entryMatchesName('*.example.com', 'a.example.com')).toBe(true);
    expect(entryMatchesName('10.0.0.?', '10.0.0.7')).toBe(true);
    expect(entryMatchesName('10.0.0.?', '10.0.0.17')).toBe(false);
    expect(entryMatchesName('*.example.com,!bad.example.com', 'bad.example.com')).toBe(false);
    expect(entryMatchesName('[10.0.0.5]:2222', '[10.0.0.5]:2222')).toBe(true);
    expect(entryMatchesName('10.0.0.5', '[10.0.0.5]:2222')).toBe(false);
  });

  it('matches hashed entries (HMAC-SHA1 with the stored salt), for the exact name only', () => {
    const hashed = hashKnownHostsName('10.0.0.5');
    expect(hashed).toMatch(/^\|1\|[A-Za-z0-9+/=]+\|[A-Za-z0-9+/=]+$/);
    expect(entryMatchesName(hashed, '10.0.0.5')).toBe(true);
    expect(entryMatchesName(hashed, '10.0.0.50')).toBe(false);
    const withPort = hashKnownHostsName('[10.0.0.5]:2222');
    expect(entryMatchesName(withPort, '[10.0.0.5]:2222')).toBe(true);
    expect(entryMatchesName(withPort, '10.0.0.5')).toBe(false);
  });

  it('reads entries hashed by ssh-keygen -H, and fingerprints as ssh-keygen -l does', () => {
    // Made with: ssh-keygen -t ed25519; ssh-keygen -H on "10.213.0.2 …" and "[10.213.0.2]:2222 …"; ssh-keygen -lf.
    const key = 'AAAAC3NzaC1lZDI1NTE5AAAAILmHU8VI2ggD9TFhJ/yWdFDel345wgr1Iub9PChtFPdG';
    const entries = parseKnownHosts(
      [
        `|1|PTbVSJwghKXUGqXlmFId4uShz1w=|qZMoGbq9pSqFXZjXWQeiS+LOmzk= ssh-ed25519 ${key}`,
        `|1|vNj6uZOD3C8GV3L6kPSdzs/D4uw=|l8BGwCnXgvJeCaGUS0pxT/Y2exQ= ssh-ed25519 ${key}`,
      ].join('\n'),
    );
    const keyBlob = Buffer.from(key, 'base64');
    expect(fingerprintSha256(keyBlob)).toBe('SHA256:/YJjWi+SEII2lAgNtDerJJpvp95W3LdOEnkRP1VZ1V8');
    expect(checkKnownHost(entries, { host: '10.213.0.2', port: 22, keyBlob })).toMatchObject({
      status: 'known',
      entry: { lineNumber: 1 },
    });
    expect(checkKnownHost(entries, { host: '10.213.0.2', port: 2222, keyBlob })).toMatchObject({
      status: 'known',
      entry: { lineNumber: 2 },
    });
    expect(checkKnownHost(entries, { host: '10.213.0.3', port: 22, keyBlob }).status).toBe('unknown');
  });
});

describe('checkKnownHost', () => {
  const target = { host: '10.0.0.5', port: 22 };

  it('knows a host whose key is on record, plain or hashed', () => {
    for (const hosts of ['10.0.0.5', hashKnownHostsName('10.0.0.5'), 'store,10.0.0.*']) {
      const entries = parseKnownHosts(`# comment\n\n${line(hosts, KEY_A)}\n`);
      expect(checkKnownHost(entries, { ...target, keyBlob: KEY_A }).status).toBe('known');
    }
  });

  it('reports a mismatch when the host is on record with other keys', () => {
    const entries = parseKnownHosts(`${line('10.0.0.5', KEY_B)}\n${line('10.0.0.5', RSA_A)}\n`);
    const verdict = checkKnownHost(entries, { ...target, keyBlob: KEY_A });
    expect(verdict.status).toBe('mismatch');
    expect(verdict.status === 'mismatch' && verdict.entries.map((e) => e.lineNumber)).toEqual([1, 2]);
  });

  it('reports unknown when nothing matches the host (other hosts and ports do not count)', () => {
    const entries = parseKnownHosts(`${line('10.0.0.6', KEY_A)}\n${line('[10.0.0.5]:2222', KEY_B)}\n`);
    expect(checkKnownHost(entries, { ...target, keyBlob: KEY_A }).status).toBe('unknown');
    expect(checkKnownHost(entries, { host: '10.0.0.5', port: 2222, keyBlob: KEY_B }).status).toBe('known');
  });

  it('refuses revoked keys even where another line would trust them', () => {
    const entries = parseKnownHosts(`${line('10.0.0.5', KEY_A)}\n${line('*', KEY_A, '@revoked')}\n`);
    expect(checkKnownHost(entries, { ...target, keyBlob: KEY_A }).status).toBe('revoked');
  });

  it('never trusts through @cert-authority lines, and skips malformed ones', () => {
    const entries = parseKnownHosts(`${line('*', KEY_A, '@cert-authority')}\n10.0.0.5 ssh-ed25519\n@bogus x y z\n`);
    expect(entries).toHaveLength(1);
    expect(checkKnownHost(entries, { ...target, keyBlob: KEY_A }).status).toBe('unknown');
  });

  it('lists the key types on record for a host, for algorithm negotiation', () => {
    const entries = parseKnownHosts(`${line('10.0.0.5', RSA_A)}\n${line('10.0.0.6', KEY_A)}\n`);
    expect(knownKeyTypes(entries, '10.0.0.5', 22)).toEqual(['ssh-rsa']);
  });
});

describe('recording keys', () => {
  it('formats plain and hashed lines that check as known', () => {
    const plain = formatKnownHostsLine({ host: '10.0.0.5', port: 2222, keyBlob: KEY_A });
    expect(plain).toBe(`[10.0.0.5]:2222 ssh-ed25519 ${KEY_A.toString('base64')}`);
    const hashed = formatKnownHostsLine({ host: '10.0.0.5', port: 22, keyBlob: KEY_A }, { isHashed: true });
    expect(hashed.startsWith('|1|')).toBe(true);
    expect(checkKnownHost(parseKnownHosts(hashed), { host: '10.0.0.5', port: 22, keyBlob: KEY_A }).status).toBe(
      'known',
    );
  });

  it('appends to the file, creating it 0600 and adding a missing final newline', async () => {
    const dir = mkdtempSync(join(scratch, 'case-'));
    const fresh = join(dir, 'ssh', 'known_hosts');
    await appendKnownHostsLine(fresh, 'first ssh-ed25519 AAAA');
    expect(readFileSync(fresh, 'utf8')).toBe('first ssh-ed25519 AAAA\n');
    expect(statSync(fresh).mode & 0o777).toBe(0o600);
    const old = join(dir, 'old');
    writeFileSync(old, 'existing ssh-ed25519 BBBB');
    await appendKnownHostsLine(old, 'new ssh-ed25519 CCCC');
    expect(readFileSync(old, 'utf8')).toBe('existing ssh-ed25519 BBBB\nnew ssh-ed25519 CCCC\n');
  });
});
