import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caPinOf } from '../../../src/trust/ca-pin.js';
import {
  K3S_SERVER_CA_PATH,
  KUBEADM_CA_PATH,
  LOCAL_CA_PATHS,
  findLocalCaCertificate,
  readCaFilePins,
} from '../../../src/trust/local-ca.js';
import { createCa } from '../../../src/trust/pki.js';
import { X509Certificate } from 'node:crypto';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'edgeadm-local-ca-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('findLocalCaCertificate', () => {
  it('looks at k3s first, then kubeadm', () => {
    expect(LOCAL_CA_PATHS).toEqual([K3S_SERVER_CA_PATH, KUBEADM_CA_PATH]);
    expect(K3S_SERVER_CA_PATH).toBe('/var/lib/rancher/k3s/server/tls/server-ca.crt');
    expect(KUBEADM_CA_PATH).toBe('/etc/kubernetes/pki/ca.crt');
  });

  it('returns the first candidate that exists', () => {
    const k3s = join(dir, 'server-ca.crt');
    const kubeadm = join(dir, 'ca.crt');
    writeFileSync(kubeadm, 'x');
    expect(findLocalCaCertificate([k3s, kubeadm])).toBe(kubeadm);
    writeFileSync(k3s, 'x');
    expect(findLocalCaCertificate([k3s, kubeadm])).toBe(k3s);
  });

  it('names every path it tried when none exists', () => {
    const a = join(dir, 'missing-a.crt');
    const b = join(dir, 'missing-b.crt');
    expect(() => findLocalCaCertificate([a, b])).toThrow(
      expect.objectContaining({
        code: 'E_CA_NOT_FOUND',
        exitCode: 3,
        message: `no cluster CA certificate found: neither ${a} nor ${b} exists (is this a control-plane node?)`,
        hints: ['Run this on a control-plane node, or pass the CA certificate with --cert FILE.'],
      }),
    );
  });
});

describe('readCaFilePins', () => {
  it('pins every certificate of the file, in order', async () => {
    const [a, b] = await Promise.all([createCa({ commonName: 'old-ca' }), createCa({ commonName: 'new-ca' })]);
    const file = join(dir, 'bundle.crt');
    writeFileSync(file, a!.certPem + b!.certPem);
    const result = readCaFilePins({ certFile: file });
    expect(result.file).toBe(file);
    expect(result.certificates.map((c) => [c.subject, c.pin])).toEqual([
      ['CN=old-ca', caPinOf(new X509Certificate(a!.certPem))],
      ['CN=new-ca', caPinOf(new X509Certificate(b!.certPem))],
    ]);
  });

  it('says which file it cannot read or parse', () => {
    const missing = join(dir, 'nope.crt');
    expect(() => readCaFilePins({ certFile: missing })).toThrow(
      expect.objectContaining({
        code: 'E_CERT_READ',
        message: expect.stringContaining(`cannot read the CA certificate ${missing}`),
      }),
    );
    const junk = join(dir, 'junk.crt');
    writeFileSync(junk, 'hello');
    expect(() => readCaFilePins({ certFile: junk })).toThrow(
      expect.objectContaining({ code: 'E_CERT_PARSE', message: `${junk} does not contain any PEM certificate` }),
    );
  });
});
