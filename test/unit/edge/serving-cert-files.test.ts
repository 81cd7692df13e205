import { mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ServingCertFiles } from '../../../src/edge/serving-cert-files.js';
import { SimCertificateAuthority } from '../../support/sim-apiserver/pki.js';

let dir: string;
let files: { certFile: string; keyFile: string };
let stampSeconds = 1_000_000;

/** Writes a pair (or half of one) with a file time of its own, so no check depends on the clock's grain. */
async function write(pair: { certPem?: string; keyPem?: string }): Promise<void> {
  stampSeconds += 10;
  if (pair.certPem !== undefined) {
    await writeFile(files.certFile, pair.certPem);
    await utimes(files.certFile, stampSeconds, stampSeconds);
  }
  if (pair.keyPem !== undefined) {
    await writeFile(files.keyFile, pair.keyPem);
    await utimes(files.keyFile, stampSeconds, stampSeconds);
  }
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edgeadm-serving-files-'));
  files = { certFile: join(dir, 'serving-kubelet.crt'), keyFile: join(dir, 'serving-kubelet.key') };
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('a serving certificate given as files (the k3s kubelet serving certificate, rewritten at every agent start)', () => {
  it('is taken up again when the agent writes a new pair, and only then', async () => {
    const ca = await SimCertificateAuthority.generate();
    const first = await ca.issueServing(['127.0.0.1', 'localhost']);
    const second = await ca.issueServing(['127.0.0.1', 'localhost']);
    await write(first);
    const watched = new ServingCertFiles(files);
    expect(watched.changed()).toBeUndefined();
    await write(second);
    expect(watched.changed()).toEqual({ certPem: second.certPem, keyPem: second.keyPem });
    expect(watched.changed()).toBeUndefined();
  });

  it('keeps the pair in use while the files hold a certificate and a key that do not belong together', async () => {
    const ca = await SimCertificateAuthority.generate();
    const first = await ca.issueServing(['127.0.0.1']);
    const next = await ca.issueServing(['127.0.0.1']);
    await write(first);
    const watched = new ServingCertFiles(files);
    // The agent has written the new certificate, not yet its key.
    await write({ certPem: next.certPem });
    expect(() => watched.changed()).toThrow(/do not belong together/);
    await write({ keyPem: next.keyPem });
    expect(watched.changed()).toEqual({ certPem: next.certPem, keyPem: next.keyPem });
  });
});
