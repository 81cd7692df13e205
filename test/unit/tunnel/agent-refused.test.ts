/**
 * An agent the hub refuses for good stops: the hub side is edgeadm's real
 * `acceptTunnel` on loopback with a policy that refuses (as the hub does for
 * a deleted cluster or a revoked certificate); the agent is the real
 * `runTunnelAgent`, which must end with exit 4 after a bounded number of
 * refusals instead of redialling forever.
 */
import { once } from 'node:events';
import { createServer, type TLSSocket } from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../../../src/errors.js';
import { silentLogger } from '../../../src/log/run-log.js';
import { createCa, issueCertificate } from '../../../src/trust/pki.js';
import { runTunnelAgent } from '../../../src/tunnel/agent-loop.js';
import { acceptTunnel } from '../../../src/tunnel/hub-tunnel.js';
import { TUNNEL_ALPN_PROTOCOL, TUNNEL_REFUSALS_BEFORE_STOP } from '../../../src/tunnel/limits.js';
import type { Upstream } from '../../../src/tunnel/upstream.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

describe('tunnel agent refused by the hub', () => {
  it(`stops with E_TUNNEL_REFUSED and exit ${ExitCode.Refused} after ${TUNNEL_REFUSALS_BEFORE_STOP} refusals in a row`, async () => {
    const ca = await createCa({ commonName: 'test hub CA' });
    const serving = await issueCertificate({ ca, commonName: 'hub', ipAddresses: ['127.0.0.1'], usages: ['server'] });
    const client = await issueCertificate({ ca, commonName: 'gone-1', usages: ['client'] });
    let connections = 0;
    const server = createServer({
      cert: serving.certPem,
      key: serving.keyPem,
      ca: ca.certPem,
      requestCert: true,
      ALPNProtocols: [TUNNEL_ALPN_PROTOCOL],
    });
    server.on('secureConnection', (socket: TLSSocket) => {
      connections += 1;
      acceptTunnel({
        socket,
        authorize: async () => ({ refusal: 'no cluster named "gone-1" is registered' }),
        logger: silentLogger,
      }).catch(() => {});
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    cleanups.push(() => server.close());
    let isUpstreamClosed = false;
    const upstream = { close: () => (isUpstreamClosed = true) } as unknown as Upstream;
    const stop = new AbortController();
    cleanups.push(() => stop.abort());

    const run = runTunnelAgent({
      hubServer: `https://127.0.0.1:${(server.address() as { port: number }).port}`,
      hubCaPem: ca.certPem,
      identity: () => ({ cluster: 'gone-1', certPem: client.certPem, keyPem: client.keyPem }),
      upstream,
      logger: silentLogger,
      signal: stop.signal,
    });

    await expect(run).rejects.toMatchObject({
      code: 'E_TUNNEL_REFUSED',
      exitCode: ExitCode.Refused,
      message: expect.stringContaining('no cluster named "gone-1"'),
    });
    expect(connections).toBe(TUNNEL_REFUSALS_BEFORE_STOP);
    expect(isUpstreamClosed).toBe(true);
  });
});
