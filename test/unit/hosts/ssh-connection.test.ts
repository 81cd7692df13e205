import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { fingerprintSha256, parseKnownHosts } from '../../../src/hosts/known-hosts.js';
import { decideHostKey } from '../../../src/hosts/ssh-connection.js';

function blob(seed: string): Buffer {
  const type = Buffer.from('ssh-ed25519');
  const key = createHash('sha256').update(seed).digest();
  const out = Buffer.alloc(8 + type.length + key.length);
  out.writeUInt32BE(type.length, 0);
  type.copy(out, 4);
  out.writeUInt32BE(key.length, 4 + type.length);
  key.copy(out, 8 + type.length);
  return out;
}

const KEY = blob('host');
const OTHER = blob('other');
const endpoint = { user: 'root', host: '10.0.0.5', port: 22 };
const decide = (keyBlob: Buffer, known: string, policy: Record<string, unknown> = {}) =>
  decideHostKey({
    keyBlob,
    fingerprint: fingerprintSha256(keyBlob),
    endpoint,
    entries: parseKnownHosts(known),
    policy: { knownHostsFile: '/home/ops/.ssh/known_hosts', ...policy },
  });

describe('host key decisions', () => {
  const onRecord = `10.0.0.5 ssh-ed25519 ${KEY.toString('base64')}\n`;

  it('trusts the key on record and refuses a different one, accept-new or not', () => {
    expect(decide(KEY, onRecord)).toEqual({ status: 'trusted', how: 'known_hosts' });
    for (const acceptNew of [false, true]) {
      expect(decide(OTHER, onRecord, { acceptNew })).toEqual({
        status: 'mismatch',
        how: 'known_hosts',
        expected: [`ssh-ed25519 ${fingerprintSha256(KEY)}`],
        where: ['/home/ops/.ssh/known_hosts:1'],
      });
    }
  });

  it('refuses an unknown host unless trust on first use was asked for, then records it', () => {
    expect(decide(KEY, '')).toEqual({ status: 'unknown' });
    expect(decide(KEY, '', { acceptNew: true })).toEqual({
      status: 'accept-new',
      line: `10.0.0.5 ssh-ed25519 ${KEY.toString('base64')}`,
    });
  });

  it('with a pinned fingerprint, trusts exactly that key and ignores known_hosts', () => {
    expect(decide(KEY, '', { pinnedFingerprint: fingerprintSha256(KEY) })).toEqual({
      status: 'trusted',
      how: 'pinned',
    });
    expect(
      decide(OTHER, onRecord.replace(KEY.toString('base64'), OTHER.toString('base64')), {
        pinnedFingerprint: fingerprintSha256(KEY),
      }),
    ).toMatchObject({ status: 'mismatch', how: 'pinned' });
  });

  it('refuses revoked keys', () => {
    expect(decide(KEY, `@revoked * ssh-ed25519 ${KEY.toString('base64')}\n${onRecord}`)).toEqual({
      status: 'revoked',
      where: '/home/ops/.ssh/known_hosts:1',
    });
  });
});
