import { execFileSync, spawnSync } from 'node:child_process';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCa } from '../../../src/trust/pki.js';
import { CA_VALIDITY_DAYS, NOT_BEFORE_BACKDATE_MS } from '../../../src/trust/limits.js';
import { createSmallCa, issueSmallServingCertificate, type IssuedPair } from '../../../src/trust/small-issuer.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'edgeadm-small-issuer-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let fileCount = 0;
function file(text: string): string {
  const path = join(dir, `f${fileCount++}.pem`);
  writeFileSync(path, text);
  return path;
}

/** OpenSSL's reading of a certificate, as text. */
function opensslText(certPem: string): string {
  return execFileSync('openssl', ['x509', '-noout', '-text', '-in', file(certPem)], { encoding: 'utf8' });
}

/** OpenSSL's verdict on `certPem` as a TLS server certificate issued by `caPem`. */
function opensslVerify(certPem: string, caPem: string): { ok: boolean; output: string } {
  const result = spawnSync(
    'openssl',
    ['verify', '-x509_strict', '-purpose', 'sslserver', '-CAfile', file(caPem), file(certPem)],
    {
      encoding: 'utf8',
    },
  );
  return { ok: result.status === 0, output: result.stdout + result.stderr };
}

function serving(ca: IssuedPair, names: { dnsNames?: string[]; ipAddresses?: string[] } = {}): IssuedPair {
  return issueSmallServingCertificate({
    ca,
    commonName: 'edgeadm-edge-proxy',
    dnsNames: names.dnsNames ?? ['localhost'],
    ipAddresses: names.ipAddresses ?? ['127.0.0.1'],
  });
}

describe('createSmallCa', () => {
  it('makes a self-signed CA that OpenSSL reads as a CA with its key usages and key identifier', () => {
    const ca = createSmallCa({ commonName: 'edgeadm-edge-proxy-ca' });
    const certificate = new X509Certificate(ca.certPem);
    expect(certificate.ca).toBe(true);
    expect(certificate.subject).toBe('CN=edgeadm-edge-proxy-ca');
    expect(certificate.checkIssued(certificate)).toBe(true);
    expect(certificate.verify(certificate.publicKey)).toBe(true);
    expect(certificate.checkPrivateKey(createPrivateKey(ca.keyPem))).toBe(true);
    expect(ca.keyPem).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    const text = opensslText(ca.certPem);
    expect(text).toMatch(/X509v3 Basic Constraints: critical\s+CA:TRUE/);
    expect(text).toMatch(/X509v3 Key Usage: critical\s+Digital Signature, Certificate Sign, CRL Sign/);
    expect(text).toMatch(/X509v3 Subject Key Identifier:/);
    expect(text).toMatch(/ecdsa-with-SHA256/);
    expect(opensslVerify(ca.certPem, ca.certPem).ok).toBe(true);
  });

  it('starts the validity a little in the past and ends it after the CA lifetime, in either ASN.1 time form', () => {
    for (const now of [new Date('2026-11-24T20:36:53Z'), new Date('2049-12-31T23:00:00Z')]) {
      const certificate = new X509Certificate(createSmallCa({ commonName: 'ca', now }).certPem);
      expect(Date.parse(certificate.validFrom)).toBe(now.getTime() - NOT_BEFORE_BACKDATE_MS);
      expect(Date.parse(certificate.validTo)).toBe(now.getTime() + CA_VALIDITY_DAYS * 24 * 3600 * 1000);
    }
  });

  it('refuses an empty common name', () => {
    expect(() => createSmallCa({ commonName: ' ' })).toThrow(/common name/);
  });
});

describe('issueSmallServingCertificate', () => {
  it('issues a server certificate that OpenSSL verifies against the CA, for the names asked', () => {
    const ca = createSmallCa({ commonName: 'edgeadm-edge-proxy-ca' });
    const pair = serving(ca, { dnsNames: ['localhost', 'node-1.example'], ipAddresses: ['127.0.0.1', '10.0.0.7'] });
    const certificate = new X509Certificate(pair.certPem);
    expect(certificate.ca).toBe(false);
    expect(certificate.checkIssued(new X509Certificate(ca.certPem))).toBe(true);
    expect(certificate.checkPrivateKey(createPrivateKey(pair.keyPem))).toBe(true);
    expect(certificate.checkIP('10.0.0.7')).toBe('10.0.0.7');
    expect(certificate.checkIP('10.0.0.8')).toBeUndefined();
    expect(certificate.checkHost('node-1.example')).toBe('node-1.example');
    expect(certificate.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    const verdict = opensslVerify(pair.certPem, ca.certPem);
    expect(verdict.output).toContain(': OK');
    expect(verdict.ok).toBe(true);
    const text = opensslText(pair.certPem);
    expect(text).toMatch(/X509v3 Basic Constraints: critical\s+CA:FALSE/);
    expect(text).toMatch(/X509v3 Key Usage: critical\s+Digital Signature\n/);
    const caKeyId = /Subject Key Identifier:\s+([0-9A-F:]+)/.exec(opensslText(ca.certPem))![1];
    expect(text).toMatch(new RegExp(`Authority Key Identifier:\\s+(keyid:)?${caKeyId}`));
  });

  it('is refused by OpenSSL when checked against another CA', () => {
    const ca = createSmallCa({ commonName: 'edgeadm-edge-proxy-ca' });
    const other = createSmallCa({ commonName: 'edgeadm-edge-proxy-ca' });
    expect(opensslVerify(serving(ca).certPem, other.certPem).ok).toBe(false);
  });

  it.each(['ecdsa-p256', 'rsa-2048'] as const)(
    'issues from a CA the PKI library made (%s, as on nodes installed before), pointing to its key identifier',
    async (keyAlgorithm) => {
      const ca = await createCa({ commonName: 'edgeadm-edge-proxy-ca', keyAlgorithm });
      const pair = serving(ca);
      expect(opensslVerify(pair.certPem, ca.certPem).ok).toBe(true);
      const caKeyId = /Subject Key Identifier:\s+([0-9A-F:]+)/.exec(opensslText(ca.certPem))![1];
      expect(opensslText(pair.certPem)).toMatch(new RegExp(`Authority Key Identifier:\\s+(keyid:)?${caKeyId}`));
    },
  );

  it('serves TLS that a client trusting only the CA accepts, by IP and by name', async () => {
    const ca = createSmallCa({ commonName: 'edgeadm-edge-proxy-ca' });
    const pair = serving(ca);
    const server: Server = createServer({ cert: pair.certPem, key: pair.keyPem }, (_req, res) => res.end('ok'));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    const get = (servername: string | undefined, trust: string): Promise<string> =>
      new Promise((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, servername, ca: trust, path: '/' }, (res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => (body += chunk.toString()));
          res.on('end', () => resolve(body));
        });
        req.on('error', reject);
        req.end();
      });
    try {
      await expect(get(undefined, ca.certPem)).resolves.toBe('ok');
      await expect(get('localhost', ca.certPem)).resolves.toBe('ok');
      await expect(get(undefined, createSmallCa({ commonName: 'other' }).certPem)).rejects.toThrow();
    } finally {
      server.close();
    }
  });

  it('writes any IPv6 address so that the certificate matches exactly that address', () => {
    const ca = createSmallCa({ commonName: 'ca' });
    fc.assert(
      fc.property(
        fc.ipV6().filter((ip) => !ip.includes('.')),
        (ip) => {
          const certificate = new X509Certificate(serving(ca, { dnsNames: [], ipAddresses: [ip] }).certPem);
          return certificate.checkIP(ip) !== undefined && certificate.checkIP('::2:0:0:1') === undefined;
        },
      ),
      { numRuns: 40 },
    );
  });

  it('refuses names that are not IP addresses or host names', () => {
    const ca = createSmallCa({ commonName: 'ca' });
    expect(() => serving(ca, { ipAddresses: ['10.0.0'] })).toThrow(/invalid IP address/);
    expect(() => serving(ca, { ipAddresses: ['::ffff:1.2.3.4'] })).toThrow(/invalid IP address/);
    expect(() => serving(ca, { dnsNames: ['bad name'] })).toThrow(/invalid DNS name/);
  });
});
