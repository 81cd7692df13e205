/**
 * The agent's control streams: a hub that gives up on the hello (its hello
 * timeout) while the agent still asks its API server must not end the
 * agent. The hub side here is a bare TLS + HTTP/2 stand-in on loopback;
 * the agent is edgeadm's real `connectTunnel`.
 */
import { once } from 'node:events';
import { connect as http2Connect } from 'node:http2';
import { createServer, type TLSSocket } from 'node:tls';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/log/run-log.js';
import { createCa, issueCertificate } from '../../../src/trust/pki.js';
import { connectTunnel } from '../../../src/tunnel/agent.js';
import { TUNNEL_ALPN_PROTOCOL } from '../../../src/tunnel/limits.js';
import { HELLO_PATH } from '../../../src/tunnel/protocol.js';
import type { Upstream } from '../../../src/tunnel/upstream.js';

/** How long the stand-in API server takes to answer the agent's hello questions. */
const SLOW_UPSTREAM_MS = 300;

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

describe('tunnel agent control streams', () => {
  it('survives a hub that resets the hello stream before the agent answers', async () => {
    const ca = await createCa({ commonName: 'test hub CA' });
    const serving = await issueCertificate({ ca, commonName: 'hub', ipAddresses: ['127.0.0.1'], usages: ['server'] });
    const client = await issueCertificate({ ca, commonName: 'c1', usages: ['client'] });
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    cleanups.push(() => process.off('unhandledRejection', onUnhandled));

    let helloReset = false;
    const server = createServer({
      cert: serving.certPem,
      key: serving.keyPem,
      ca: ca.certPem,
      requestCert: true,
      ALPNProtocols: [TUNNEL_ALPN_PROTOCOL],
    });
    server.on('secureConnection', (socket: TLSSocket) => {
      const session = http2Connect('http://agent.invalid', { createConnection: () => socket });
      session.on('error', () => {});
      const hello = session.request({ ':method': 'GET', ':path': HELLO_PATH }, { endStream: true });
      hello.on('error', () => {});
      // The hub's hello timeout, made short: give up while the agent is still asking upstream.
      setTimeout(() => {
        hello.close();
        helloReset = true;
      }, SLOW_UPSTREAM_MS / 3);
      cleanups.push(() => session.destroy());
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    cleanups.push(() => server.close());

    const upstream = {
      getJson: async () => {
        await sleep(SLOW_UPSTREAM_MS);
        return {};
      },
      close: () => {},
    } as unknown as Upstream;
    const port = (server.address() as { port: number }).port;
    const attempt = connectTunnel({
      hubServer: `https://127.0.0.1:${port}`,
      hubCaPem: ca.certPem,
      identity: () => ({ cluster: 'c1', certPem: client.certPem, keyPem: client.keyPem }),
      upstream,
      logger: silentLogger,
    });
    attempt.catch(() => {});
    await sleep(SLOW_UPSTREAM_MS * 3);
    expect(helloReset).toBe(true);
    expect(unhandled).toEqual([]);
  });
});
