/**
 * Acceptance: `edgeadm certs ca-hash --cert X` prints exactly what
 * `openssl x509 -pubkey -noout -in X | openssl pkey -pubin -outform der | sha256sum`
 * computes, for CAs that the real openssl makes. Runs the built CLI.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_CA_PATHS } from '../../../src/trust/local-ca.js';
import { runCli as edgeadm } from '../../support/cli.js';

let dir: string;

/** The openssl pipeline from the acceptance criteria, run by a real shell. */
async function opensslPin(certFile: string): Promise<string> {
  const { stdout } = await execa('sh', [
    '-c',
    'openssl x509 -pubkey -noout -in "$1" | openssl pkey -pubin -outform der | sha256sum',
    'sh',
    certFile,
  ]);
  const hex = String(stdout).split(/\s+/)[0] as string;
  expect(hex).toMatch(/^[0-9a-f]{64}$/);
  return `sha256:${hex}`;
}

/** A self-signed CA made by openssl itself. */
async function opensslCa(name: string, newkey: string[]): Promise<string> {
  const cert = join(dir, `${name}.crt`);
  await execa('openssl', [
    'req',
    '-x509',
    ...newkey,
    '-nodes',
    '-keyout',
    join(dir, `${name}.key`),
    '-out',
    cert,
    '-days',
    '30',
    '-subj',
    `/CN=${name}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
  ]);
  return cert;
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'edgeadm-ca-hash-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('edgeadm certs ca-hash --cert', () => {
  it.each([
    ['rsa-ca', ['-newkey', 'rsa:2048']],
    ['ecdsa-p256-ca', ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1']],
    ['ecdsa-p384-ca', ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:secp384r1']],
    ['ed25519-ca', ['-newkey', 'ed25519']],
  ])('prints exactly the openssl pin of an %s', async (name, newkey) => {
    const cert = await opensslCa(name, newkey);
    const expected = await opensslPin(cert);
    const result = await edgeadm(['certs', 'ca-hash', '--cert', cert]);
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe(`${expected}\n`);
  });

  it('prints one pin per certificate of a bundle, in order; --json lists them with subjects', async () => {
    const rsa = await opensslCa('bundle-rsa', ['-newkey', 'rsa:2048']);
    const ed = await opensslCa('bundle-ed', ['-newkey', 'ed25519']);
    const bundle = join(dir, 'bundle.crt');
    writeFileSync(bundle, readFileSync(rsa, 'utf8') + readFileSync(ed, 'utf8'));
    const pins = [await opensslPin(rsa), await opensslPin(ed)];

    const text = await edgeadm(['certs', 'ca-hash', '--cert', bundle]);
    expect(text.exitCode).toBe(0);
    expect(text.stdout).toBe(`${pins.join('\n')}\n`);

    const json = await edgeadm(['certs', 'ca-hash', '--cert', bundle, '--json']);
    expect(json.exitCode).toBe(0);
    const document = JSON.parse(json.stdout) as { file: string; certificates: Array<{ pin: string; subject: string }> };
    expect(document.file).toBe(bundle);
    expect(document.certificates.map((c) => [c.subject, c.pin])).toEqual([
      ['CN=bundle-rsa', pins[0]],
      ['CN=bundle-ed', pins[1]],
    ]);
  });

  it('fails with exit 3 and says why for a file that is missing or holds no certificate', async () => {
    const missing = await edgeadm(['certs', 'ca-hash', '--cert', join(dir, 'missing.crt')]);
    expect(missing.exitCode).toBe(3);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toContain(`error: cannot read the CA certificate ${join(dir, 'missing.crt')}`);
    expect(missing.stderr).toContain('code: E_CERT_READ');

    const junk = join(dir, 'junk.crt');
    writeFileSync(junk, 'not a certificate\n');
    const parsed = await edgeadm(['certs', 'ca-hash', '--cert', junk]);
    expect(parsed.exitCode).toBe(3);
    expect(parsed.stderr).toContain(`error: ${junk} does not contain any PEM certificate`);
  });
});

describe('edgeadm certs ca-hash without --cert', () => {
  const hasLocalCa = LOCAL_CA_PATHS.some((path) => existsSync(path));

  it.skipIf(hasLocalCa)('names both CA locations when neither exists', async () => {
    const result = await edgeadm(['certs', 'ca-hash']);
    expect(result.exitCode).toBe(3);
    expect(result.stderr).toContain(
      'error: no cluster CA certificate found: neither /var/lib/rancher/k3s/server/tls/server-ca.crt nor /etc/kubernetes/pki/ca.crt exists',
    );
    expect(result.stderr).toContain('--cert FILE');
  });
});
