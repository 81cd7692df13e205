/**
 * The agent's control streams: a hub that gives up on the hello (its hello
 * timeout) while the agent still asks its API server must not end the
 * agent. The hub side here is a bare TLS + HTTP/2 stand-in on loopback;
 * the agent is edgeadm's real `connectTunnel`. The order of events is set by
 * the test (the API server answers only once the hub has reset the stream),
 * not by timers.
 */
import { once } from 'node:events';
import { connect as http2Connect } from 'node:http2';
import { createServer, type TLSSocket } from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import type { Logger } from '../../../src/log/run-log.js';
import { createCa, issueCertificate } from '../../../src/trust/pki.js';
import { connectTunnel } from '../../../src/tunnel/agent.js';
import { TUNNEL_ALPN_PROTOCOL } from '../../../src/tunnel/limits.js';
import { HELLO_PATH } from '../../../src/tunnel/protocol.js';
import type { Upstream } from '../../../src/tunnel/upstream.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

describe('tunnel agent control streams', () => {
  it('survives a hub that resets the hello stream before the agent answers', async () => {
    const ca = await createCa({ commonName: 'test hub CA' });
    const serving = await issueCertificate({ ca, commonName: 'hub', ipAddresses: ['127.0.0.1'], usages: ['server'] });
    const client = await issueCertificate({ ca, commonName: 'c1', usages: ['client'] });

    // Whichever comes first ends the wait: the agent logging the failed answer, or an unhandled rejection.
    let settle!: () => void;
    const settled = new Promise<void>((resolve) => (settle = resolve));
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => {
      unhandled.push(reason);
      settle();
    };
    process.on('unhandledRejection', onUnhandled);
    cleanups.push(() => process.off('unhandledRejection', onUnhandled));
    const debugLines: string[] = [];
    const logger: Logger = {
      debug: (message) => {
        debugLines.push(message);
        // The agent has seen the hub's reset: only now does its API server answer.
        if (message.startsWith('tunnel stream error')) {
          isHelloReset = true;
          answerUpstream();
        }
        if (message.startsWith(`control stream ${HELLO_PATH} failed`)) settle();
      },
      info: () => {},
      warn: () => {},
      error: () => {},
    };

    let askUpstream!: () => void;
    const isAsked = new Promise<void>((resolve) => (askUpstream = resolve));
    let answerUpstream!: () => void;
    const isAnswered = new Promise<void>((resolve) => (answerUpstream = resolve));
    let isHelloReset = false;
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
      // The hub's hello timeout, as the hub gives up (hub-tunnel.ts): while the agent still asks its API server.
      void isAsked.then(() => hello.destroy(new Error('no hello in time')));
      cleanups.push(() => session.destroy());
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    cleanups.push(() => server.close());

    const upstream = {
      getJson: async () => {
        askUpstream();
        await isAnswered;
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
      logger,
    });
    attempt.catch(() => {});
    await settled;
    expect(isHelloReset).toBe(true);
    expect(unhandled).toEqual([]);
    expect(debugLines.some((line) => line.startsWith(`control stream ${HELLO_PATH} failed`))).toBe(true);
  });
});
