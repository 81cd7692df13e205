/**
 * What the agent reads of its cluster for the health report: nodes counted
 * over pages, the CA's and the API server's certificates read from real TLS
 * (a node:tls server with a certificate from edgeadm's own PKI), the
 * installed-package record, each with its refusals.
 */
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  caExpiries,
  countNodes,
  MAX_NODE_PAGES,
  readCertificates,
  readInstalledPackage,
  readNodes,
  readServingCertificate,
  type HealthSource,
} from '../../../src/health/cluster-reading.js';
import { installedPackageObject, INSTALLED_PACKAGE_PATH } from '../../../src/health/installed-package.js';
import { MAX_NOT_READY_NAMES } from '../../../src/health/wire.js';
import { createCa, issueCertificate, type CertificateAuthority } from '../../../src/trust/pki.js';

function node(name: string, ready: 'True' | 'False' | 'Unknown' | undefined): Record<string, unknown> {
  return {
    metadata: { name },
    status: { conditions: ready === undefined ? [] : [{ type: 'Ready', status: ready }] },
  };
}

function listing(pages: Record<string, unknown>[][]): (path: string) => Promise<unknown> {
  return async (path) => {
    const query = new URLSearchParams(path.split('?')[1]);
    const index = Number(query.get('continue') ?? '0');
    const items = pages[index] ?? [];
    return { items, metadata: index + 1 < pages.length ? { continue: String(index + 1) } : {} };
  };
}

function sourceOf(getJson: (path: string) => Promise<unknown>, server = 'https://127.0.0.1:1'): HealthSource {
  return { getJson, credentials: { server, isInsecureSkipTlsVerify: false } };
}

describe('the nodes', () => {
  it('counts every page, and only a True Ready condition as Ready', async () => {
    const nodes = await readNodes(
      sourceOf(
        listing([
          [node('a', 'True'), node('b', 'False')],
          [node('c', 'Unknown'), node('d', undefined), node('e', 'True')],
        ]),
      ),
    );
    expect(nodes).toEqual({ total: 5, ready: 2, notReady: ['b', 'c', 'd'] });
  });

  it(`names at most ${MAX_NOT_READY_NAMES} nodes not Ready, and still counts them all`, () => {
    const into = { total: 0, ready: 0, notReady: [] as string[] };
    countNodes(into, { items: Array.from({ length: 30 }, (_, i) => node(`n${i}`, 'False')) });
    expect(into.total).toBe(30);
    expect(into.notReady).toHaveLength(MAX_NOT_READY_NAMES);
  });

  it('refuses a list with no items, and a cluster with more pages than it reads', async () => {
    expect(() => countNodes({ total: 0, ready: 0, notReady: [] }, { kind: 'Status' })).toThrow(/no items/);
    const endless = async (): Promise<unknown> => ({ items: [node('x', 'True')], metadata: { continue: 'more' } });
    await expect(readNodes(sourceOf(endless))).rejects.toThrow(`more than ${MAX_NODE_PAGES * 500} nodes`);
  });
});

describe('the certificates', () => {
  let ca: CertificateAuthority;
  let otherCa: CertificateAuthority;
  let tls: TlsServer;
  let silent: TcpServer;
  let serving: X509Certificate;
  let tlsPort = 0;
  let silentPort = 0;

  beforeAll(async () => {
    ca = await createCa({ commonName: 'cluster-ca' });
    otherCa = await createCa({ commonName: 'someone-else' });
    const leaf = await issueCertificate({
      ca,
      commonName: 'kube-apiserver',
      ipAddresses: ['127.0.0.1'],
      usages: ['server'],
      validityDays: 90,
    });
    serving = new X509Certificate(leaf.certPem);
    tls = createTlsServer({ cert: leaf.certPem, key: leaf.keyPem }, (socket) => socket.end());
    silent = createTcpServer(() => undefined);
    await Promise.all([
      new Promise<void>((resolve) => tls.listen(0, '127.0.0.1', resolve)),
      new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve)),
    ]);
    tlsPort = (tls.address() as { port: number }).port;
    silentPort = (silent.address() as { port: number }).port;
  });
  afterAll(() => {
    tls.close();
    silent.close();
  });

  const at = (port: number, caPem: string | undefined): HealthSource => ({
    getJson: async () => ({}),
    credentials: { server: `https://127.0.0.1:${port}`, caPem, isInsecureSkipTlsVerify: false },
  });

  it("reads the CA's expiry from the agent's trust, and the serving certificate from a verified handshake", async () => {
    expect(caExpiries(ca.certPem)).toEqual([
      { kind: 'cluster-ca', subject: 'CN=cluster-ca', notAfter: new Date(ca.certificate.notAfter).toISOString() },
    ]);
    const read = await readServingCertificate(at(tlsPort, ca.certPem));
    expect(read.fingerprint256).toBe(serving.fingerprint256);
    const errors: string[] = [];
    const expiries = await readCertificates(at(tlsPort, ca.certPem), (what) => errors.push(what));
    expect(expiries.map((e) => [e.kind, e.notAfter])).toEqual([
      ['cluster-ca', new Date(ca.certificate.notAfter).toISOString()],
      ['apiserver-serving', new Date(serving.validTo).toISOString()],
    ]);
    expect(errors).toEqual([]);
  });

  it('does not read a serving certificate that its CA did not sign, and still reports the CA', async () => {
    await expect(readServingCertificate(at(tlsPort, otherCa.certPem))).rejects.toThrow();
    const errors: string[] = [];
    const expiries = await readCertificates(at(tlsPort, otherCa.certPem), (what) => errors.push(what));
    expect(expiries.map((e) => e.kind)).toEqual(['cluster-ca']);
    expect(errors).toEqual(["the API server's serving certificate"]);
  });

  it('gives up on a server that accepts and never answers the handshake', async () => {
    await expect(readServingCertificate(at(silentPort, ca.certPem), 300)).rejects.toThrow(/timed out/);
  });
});

describe('the installed-package record', () => {
  const installed = {
    name: 'edge-kubeadm-v1.34.4-amd64',
    version: 'v1.34.4',
    distribution: 'kubeadm',
    manifestSha256: 'c'.repeat(64),
    action: 'upgrade' as const,
    at: '2026-11-29T04:00:00.000Z',
  };

  it('reads back what init and upgrade write', async () => {
    const paths: string[] = [];
    const record = await readInstalledPackage(
      sourceOf(async (path) => {
        paths.push(path);
        return installedPackageObject(installed);
      }),
    );
    expect(record).toEqual(installed);
    expect(paths).toEqual([INSTALLED_PACKAGE_PATH]);
  });

  it('is absent when the cluster has none, and an error when it is not readable or not a record', async () => {
    const answering = (error: string) =>
      sourceOf(async () => {
        throw new Error(error);
      });
    await expect(readInstalledPackage(answering(`GET ${INSTALLED_PACKAGE_PATH} answered HTTP 404`))).resolves.toBe(
      undefined,
    );
    await expect(readInstalledPackage(answering('answered HTTP 403'))).rejects.toThrow(/403/);
    const spoiled = installedPackageObject(installed) as { data: Record<string, string> };
    spoiled.data.manifestSha256 = 'not-a-digest';
    await expect(readInstalledPackage(sourceOf(async () => spoiled))).rejects.toThrow(/manifestSha256/);
  });
});
