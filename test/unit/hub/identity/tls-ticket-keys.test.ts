import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TLS_TICKET_KEY_ROTATE_MS } from '../../../../src/hub/limits.js';
import { ensureTlsTicketKey, TLS_TICKET_KEY_FILE } from '../../../../src/hub/identity/tls-ticket-keys.js';

const PIN = 'sha256:aa';

describe('ensureTlsTicketKey', () => {
  it('makes a 48-byte key in a file only its owner can read, and keeps it across restarts', () => {
    const pkiDir = mkdtempSync(join(tmpdir(), 'ticket-keys-'));
    const first = ensureTlsTicketKey({ pkiDir, caPin: PIN });
    expect(first.isNew).toBe(true);
    expect(first.key).toHaveLength(48);
    expect(statSync(join(pkiDir, TLS_TICKET_KEY_FILE)).mode & 0o777).toBe(0o600);
    const again = ensureTlsTicketKey({ pkiDir, caPin: PIN });
    expect(again.isNew).toBe(false);
    expect(again.key.equals(first.key)).toBe(true);
  });

  it('rotates the key once it is due, not before', () => {
    const pkiDir = mkdtempSync(join(tmpdir(), 'ticket-keys-'));
    const now = new Date('2026-01-01T00:00:00Z');
    const first = ensureTlsTicketKey({ pkiDir, caPin: PIN, now });
    const early = ensureTlsTicketKey({
      pkiDir,
      caPin: PIN,
      now: new Date(now.getTime() + TLS_TICKET_KEY_ROTATE_MS - 1),
    });
    expect(early.key.equals(first.key)).toBe(true);
    const due = ensureTlsTicketKey({ pkiDir, caPin: PIN, now: new Date(now.getTime() + TLS_TICKET_KEY_ROTATE_MS) });
    expect(due.isNew).toBe(true);
    expect(due.key.equals(first.key)).toBe(false);
    const later = new Date(now.getTime() + TLS_TICKET_KEY_ROTATE_MS + 1000);
    expect(ensureTlsTicketKey({ pkiDir, caPin: PIN, now: later }).key.equals(due.key)).toBe(true);
    // A key dated in the future (a clock set back since) has an unknown age: it is replaced.
    expect(ensureTlsTicketKey({ pkiDir, caPin: PIN, now }).isNew).toBe(true);
  });

  it('never uses a key that others could read, that was made under another CA, or that is malformed', () => {
    const pkiDir = mkdtempSync(join(tmpdir(), 'ticket-keys-'));
    const path = join(pkiDir, TLS_TICKET_KEY_FILE);
    const first = ensureTlsTicketKey({ pkiDir, caPin: PIN });
    chmodSync(path, 0o644);
    const exposed = ensureTlsTicketKey({ pkiDir, caPin: PIN });
    expect(exposed.key.equals(first.key)).toBe(false);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const otherCa = ensureTlsTicketKey({ pkiDir, caPin: 'sha256:bb' });
    expect(otherCa.key.equals(exposed.key)).toBe(false);
    writeFileSync(path, '{"key":"short"', { mode: 0o600 });
    const repaired = ensureTlsTicketKey({ pkiDir, caPin: 'sha256:bb' });
    expect(repaired.isNew).toBe(true);
    expect(JSON.parse(readFileSync(path, 'utf8'))).toMatchObject({ caPin: 'sha256:bb' });
  });
});
