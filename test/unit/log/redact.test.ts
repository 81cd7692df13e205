import { describe, expect, it } from 'vitest';
import { REDACTED, Redactor } from '../../../src/log/redact.js';

const redact = (text: string): string => new Redactor().redact(text);

describe('Redactor', () => {
  it('keeps a bootstrap token id and hides its secret', () => {
    expect(redact('kubeadm join 10.0.0.1:6443 --token abcdef.0123456789abcdef')).toBe(
      `kubeadm join 10.0.0.1:6443 --token ${REDACTED}`,
    );
    expect(redact('token abcdef.0123456789abcdef expires')).toBe(`token abcdef.${REDACTED} expires`);
  });

  it('hides k3s tokens whole', () => {
    const k3s = `K10${'a'.repeat(64)}::abcdef.0123456789abcdef`;
    expect(redact(`K3S_TOKEN is ${k3s} now`)).toBe(`K3S_TOKEN is K10${REDACTED} now`);
  });

  it('hides PEM private keys of every kind, keeping the header', () => {
    for (const kind of ['', 'RSA ', 'EC ', 'OPENSSH ', 'ENCRYPTED ']) {
      const pem = `-----BEGIN ${kind}PRIVATE KEY-----\nMIIEvQIBADANBgkq\nhkiG9w0BAQEFAASC\n-----END ${kind}PRIVATE KEY-----`;
      const out = redact(`key:\n${pem}\ntrailer`);
      expect(out).not.toContain('MIIEvQIBADANBgkq');
      expect(out).toContain(`-----BEGIN ${kind}PRIVATE KEY----- ${REDACTED}`);
      expect(out).toContain('trailer');
    }
  });

  it('hides a PEM private key cut off before its END line', () => {
    expect(redact('-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq')).not.toContain('MIIEvQ');
  });

  it('hides bearer and basic credentials', () => {
    expect(redact('Authorization: Bearer eyJhbGciOi.abc.def')).toBe(`Authorization: Bearer ${REDACTED}`);
    expect(redact('authorization: basic dXNlcjpwYXNz')).toBe(`authorization: basic ${REDACTED}`);
  });

  it('hides the user information of URLs (proxy credentials), and keeps the rest', () => {
    expect(redact('--proxy http://site:pr0xy-pw@proxy.local:3128 --foreground')).toBe(
      `--proxy http://${REDACTED}@proxy.local:3128 --foreground`,
    );
    expect(redact('see https://example.com/a@b')).toBe('see https://example.com/a@b');
  });

  it('hides secret-named flags in both forms, and leaves others alone', () => {
    expect(redact('--ssh-password hunter2 --node-name edge-1')).toBe(`--ssh-password ${REDACTED} --node-name edge-1`);
    expect(redact('--sudo-password=hunter2')).toBe(`--sudo-password=${REDACTED}`);
    expect(redact('--token-ttl 2h')).toBe('--token-ttl 2h');
    // kubeadm's certificate key decrypts the uploaded CA keys.
    expect(redact(`join --control-plane --certificate-key ${'ab'.repeat(32)}`)).toBe(
      `join --control-plane --certificate-key ${REDACTED}`,
    );
  });

  it('hides secret-named assignments in YAML, JSON and env style, keeping quotes', () => {
    expect(redact('token: s3cr3tvalue')).toBe(`token: ${REDACTED}`);
    expect(redact('{"password": "p4ss", "user": "root"}')).toBe(`{"password": "${REDACTED}", "user": "root"}`);
    expect(redact('K3S_TOKEN=xyz123 other=1')).toBe(`K3S_TOKEN=${REDACTED} other=1`);
    expect(redact('client-key-data: LS0tLS1CRUdJTg==')).toBe(`client-key-data: ${REDACTED}`);
    expect(redact(`  certificateKey: ${'ab'.repeat(32)}`)).toBe(`  certificateKey: ${REDACTED}`);
  });

  it('hides registered literal secrets anywhere, longest first', () => {
    const r = new Redactor();
    r.addSecret('correct horse');
    r.addSecret('correct horse battery staple');
    expect(r.redact('pw=correct horse battery staple!')).toBe(`pw=${REDACTED}!`);
    expect(r.redact('say correct horse')).toBe(`say ${REDACTED}`);
  });

  it('ignores literal secrets too short to be safe to replace', () => {
    const r = new Redactor();
    r.addSecret('ab');
    expect(r.redact('a b ab abc')).toBe('a b ab abc');
  });

  it('redacts values under secret-named keys and strings inside structures', () => {
    const r = new Redactor();
    expect(
      r.redactValue({ user: 'root', password: 'x', nested: [{ note: 'token abcdef.0123456789abcdef' }], count: 2 }),
    ).toEqual({ user: 'root', password: REDACTED, nested: [{ note: `token abcdef.${REDACTED}` }], count: 2 });
  });
});

describe('Redactor on text that holds no secret', () => {
  it('leaves a file path ending in a secret-like name alone', () => {
    const message = 'error: package /etc/passwd: the file is not gzip-compressed';
    expect(redact(message)).toBe(message);
    expect(redact('cannot read ./keys/token: no such file')).toBe('cannot read ./keys/token: no such file');
  });

  it('keeps command ids whose words are secret-like names (newcomer point 20)', () => {
    expect(redact('edgeadm 0.1.0 token:create --verbose')).toBe('edgeadm 0.1.0 token:create --verbose');
    expect(redact('edgeadm 0.1.0 hub:token:create --ttl 2h')).toBe('edgeadm 0.1.0 hub:token:create --ttl 2h');
    expect(redact('{"token":"s3cr3tvalue"}')).toBe(`{"token":"${REDACTED}"}`);
  });

  it('still hides a secret-named assignment', () => {
    expect(redact('passwd: hunter22')).toBe(`passwd: ${REDACTED}`);
    expect(redact('db_password=hunter22 user=x')).toBe(`db_password=${REDACTED} user=x`);
  });
});
