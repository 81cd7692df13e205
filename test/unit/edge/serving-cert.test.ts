import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ensureServingCertificate } from '../../../src/edge/serving-cert.js';

let dir: string;
beforeEach(() => {
  dir = join(mkdtempSync(join(tmpdir(), 'edgeadm-serving-cert-')), 'pki');
});
afterEach(() => rmSync(join(dir, '..'), { recursive: true, force: true }));

const HOST = '127.0.0.1';

function isIssuedBy(certPem: string, caPem: string): boolean {
  return new X509Certificate(certPem).verify(new X509Certificate(caPem).publicKey);
}

describe('ensureServingCertificate', () => {
  it('makes a CA and a serving certificate once, and keeps both across starts', async () => {
    const first = await ensureServingCertificate({ dir, host: HOST });
    expect(isIssuedBy(first.certPem, first.caPem)).toBe(true);
    expect(new X509Certificate(first.certPem).checkIP(HOST)).toBe(HOST);
    const second = await ensureServingCertificate({ dir, host: HOST });
    expect(second.certPem).toBe(first.certPem);
    expect(second.caPem).toBe(first.caPem);
  });

  it.each(['tls.crt', 'tls.key'])(
    'issues the serving certificate again when a power loss left %s empty, instead of refusing to start',
    async (name) => {
      const first = await ensureServingCertificate({ dir, host: HOST });
      truncateSync(join(dir, name), 0);
      const after = await ensureServingCertificate({ dir, host: HOST });
      expect(after.caPem).toBe(first.caPem);
      expect(after.certPem).not.toBe(first.certPem);
      expect(isIssuedBy(after.certPem, after.caPem)).toBe(true);
      expect(readFileSync(join(dir, 'tls.crt'), 'utf8')).toBe(after.certPem);
    },
  );

  it.each(['ca.crt', 'ca.key'])(
    'makes a new CA, and a serving certificate it issued, when a power loss tore %s',
    async (name) => {
      const first = await ensureServingCertificate({ dir, host: HOST });
      const text = readFileSync(join(dir, name), 'utf8');
      writeFileSync(join(dir, name), text.slice(0, text.length / 2));
      const after = await ensureServingCertificate({ dir, host: HOST });
      expect(after.caPem).not.toBe(first.caPem);
      // What clients trust is the CA that issued what is served.
      expect(readFileSync(after.caFile, 'utf8')).toBe(after.caPem);
      expect(isIssuedBy(after.certPem, after.caPem)).toBe(true);
    },
  );

  it('issues the serving certificate again when it was not issued by the CA clients trust', async () => {
    const first = await ensureServingCertificate({ dir, host: HOST });
    const otherDir = join(dir, '..', 'other');
    const other = await ensureServingCertificate({ dir: otherDir, host: HOST });
    writeFileSync(join(dir, 'tls.crt'), other.certPem);
    writeFileSync(join(dir, 'tls.key'), other.keyPem);
    const after = await ensureServingCertificate({ dir, host: HOST });
    expect(after.caPem).toBe(first.caPem);
    expect(isIssuedBy(after.certPem, first.caPem)).toBe(true);
  });
});
