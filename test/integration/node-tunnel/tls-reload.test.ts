/**
 * The node tunnel server serves a renewed certificate without a restart
 * (kubeadm certs renew, kubeadm upgrade): a handshake after the reload
 * gets the new one.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { afterAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/log/run-log.js';
import { runNodeTunnelServer } from '../../../src/node-tunnel/server.js';
import type { TunnelListenerTls } from '../../../src/node-tunnel/tunnel-listener.js';
import { createCa, issueCertificate } from '../../../src/trust/pki.js';

function servedCommonName(port: number, caPem: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, ca: caPem, ALPNProtocols: ['edgeadm-tunnel/1'] });
    socket.once('secureConnect', () => {
      const cn = socket.getPeerCertificate().subject?.CN;
      socket.destroy();
      resolve(String(cn));
    });
    socket.once('error', reject);
  });
}

describe('the node tunnel server and a renewed certificate', () => {
  const dir = mkdtempSync(join(tmpdir(), 'edgeadm-node-tunnel-tls-'));
  const stop = new AbortController();
  afterAll(() => {
    stop.abort();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves the renewed certificate from the next handshake on', async () => {
    const ca = await createCa({ commonName: 'kubernetes' });
    const issue = async (cn: string): Promise<TunnelListenerTls> => {
      const cert = await issueCertificate({ ca, commonName: cn, ipAddresses: ['127.0.0.1'], usages: ['server'] });
      return { caPem: ca.certPem, certPem: cert.certPem, keyPem: cert.keyPem };
    };
    let current = await issue('before-renewal');
    const port = await new Promise<number>((resolve) => {
      void runNodeTunnelServer({
        socketPath: join(dir, 'egress.sock'),
        listen: { host: '127.0.0.1', port: 0 },
        tls: current,
        reloadTls: () => current,
        tlsReloadIntervalMs: 50,
        client: { list: () => Promise.resolve([]) },
        logger: silentLogger,
        signal: stop.signal,
        onListening: (ports) => resolve(ports.port),
      });
    });
    expect(await servedCommonName(port, ca.certPem)).toBe('before-renewal');
    current = await issue('after-renewal');
    let served = '';
    for (let attempt = 0; attempt < 100 && served !== 'after-renewal'; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      served = await servedCommonName(port, ca.certPem);
    }
    expect(served).toBe('after-renewal');
  });
});
