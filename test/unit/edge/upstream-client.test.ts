/**
 * The readiness probe tells a server whose certificate no longer verifies
 * (its CA changed, the old one still in upstream.kubeconfig) from one that
 * does not answer, against a real HTTPS server on loopback; the state
 * machine holds it as its own state, logs it once as an error with what to
 * do, and the metrics show it (issue #40).
 */
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { registerProxyGauges } from '../../../src/edge/metrics.js';
import { MetricsRegistry } from '../../../src/metrics/metrics-registry.js';
import { createUpstreamClient } from '../../../src/edge/upstream-client.js';
import { CERTIFICATE_REJECTED_HINT, UpstreamStateMachine } from '../../../src/edge/upstream-state.js';
import { silentLogger, type Logger } from '../../../src/log/run-log.js';
import { createCa, issueCertificate } from '../../../src/trust/pki.js';

const servers: Server[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

/** An API server on loopback whose serving certificate `ca` signed; `/readyz` answers 200. */
async function apiServer(ca: Awaited<ReturnType<typeof createCa>>): Promise<URL> {
  const serving = await issueCertificate({
    ca,
    commonName: 'kube-apiserver',
    ipAddresses: ['127.0.0.1'],
    usages: ['server'],
  });
  const server = createServer({ cert: serving.certPem, key: serving.keyPem }, (_req, res) => res.end('ok'));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return new URL(`https://127.0.0.1:${(server.address() as AddressInfo).port}`);
}

function recordingLogger(): Logger & { errors: string[] } {
  const errors: string[] = [];
  return {
    ...silentLogger,
    error: (message: string) => {
      errors.push(message);
    },
    errors,
  };
}

describe('the upstream probe after the server CA changed', () => {
  it('is certificate-rejected, not unreachable; online with the CA that signs; unreachable with nobody listening', async () => {
    const oldCa = await createCa({ commonName: 'old cluster CA' });
    const newCa = await createCa({ commonName: 'new cluster CA' });
    const server = await apiServer(newCa);
    const withOldCa = await createUpstreamClient({
      upstream: { server, caPem: oldCa.certPem, credentials: {} },
      clientCerts: new Map(),
    });
    const withNewCa = await createUpstreamClient({
      upstream: { server, caPem: newCa.certPem, credentials: {} },
      clientCerts: new Map(),
    });
    const nobody = await createUpstreamClient({
      upstream: { server: new URL('https://127.0.0.1:1'), caPem: newCa.certPem, credentials: {} },
      clientCerts: new Map(),
    });
    try {
      const rejected = await withOldCa.probe();
      expect(rejected.outcome).toBe('certificate-rejected');
      expect((await withNewCa.probe()).outcome).toBe('online');
      expect((await nobody.probe()).outcome).toBe('unreachable');

      const logger = recordingLogger();
      const state = new UpstreamStateMachine(withOldCa, 60_000, logger);
      state.stop();
      expect(await state.checkNow()).toBe(false);
      expect(state.isOnline).toBe(false);
      expect(state.isCertificateRejected).toBe(true);
      await state.checkNow();
      // Logged once, as an error that says what to do.
      expect(logger.errors).toHaveLength(1);
      expect(logger.errors[0]).toContain('not an outage');
      expect(logger.errors[0]).toContain(CERTIFICATE_REJECTED_HINT);
      const registry = new MetricsRegistry();
      registerProxyGauges(registry, () => ({
        isOnline: state.isOnline,
        isCertificateRejected: state.isCertificateRejected,
        cacheEntries: 0,
        cacheBytes: 0,
        heldWatches: 0,
        openWatches: 0,
        bufferedCacheBytes: 0,
      }));
      const metrics = await registry.render();
      expect(metrics).toContain('edgeadm_edge_proxy_upstream_certificate_rejected 1');
      expect(metrics).toContain('edgeadm_edge_proxy_online 0');

      // An outage is not a changed CA.
      const outage = new UpstreamStateMachine(nobody, 60_000, recordingLogger());
      outage.stop();
      await outage.checkNow();
      expect(outage.isOnline).toBe(false);
      expect(outage.isCertificateRejected).toBe(false);
    } finally {
      withOldCa.close();
      withNewCa.close();
      nobody.close();
    }
  });
});
