/**
 * The agent's control streams: a hub that gives up on the hello (its hello
 * timeout) while the agent still asks its API server must not end the
 * agent; and a user's request to a control path is an ordinary request,
 * never a control message. The hub side here is a bare TLS + HTTP/2
 * stand-in on loopback; the agent is edgeadm's real `connectTunnel`. The
 * order of events is set by the test (the API server answers only once the
 * hub has reset the stream), not by timers.
 */
import { once } from 'node:events';
import { connect as http2Connect, type ClientHttp2Session, type ServerHttp2Stream } from 'node:http2';
import { createServer, type TLSSocket } from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger, type Logger } from '../../../src/log/run-log.js';
import { createCa, issueCertificate } from '../../../src/trust/pki.js';
import { connectTunnel } from '../../../src/tunnel/agent.js';
import { TUNNEL_ALPN_PROTOCOL } from '../../../src/tunnel/limits.js';
import { HELLO_PATH, identityHeaders, REFUSE_PATH, WELCOME_PATH } from '../../../src/tunnel/protocol.js';
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

  it("treats a user's request to /.edgeadm/… as an API request, never as the hub's control message", async () => {
    const ca = await createCa({ commonName: 'test hub CA' });
    const serving = await issueCertificate({ ca, commonName: 'hub', ipAddresses: ['127.0.0.1'], usages: ['server'] });
    const client = await issueCertificate({ ca, commonName: 'c1', usages: ['client'] });
    const server = createServer({
      cert: serving.certPem,
      key: serving.keyPem,
      ca: ca.certPem,
      requestCert: true,
      ALPNProtocols: [TUNNEL_ALPN_PROTOCOL],
    });
    let hub: ClientHttp2Session | undefined;
    const exchange = (headers: Record<string, string>, body?: string): Promise<number> =>
      new Promise((resolve, reject) => {
        const stream = (hub as ClientHttp2Session).request(headers, { endStream: body === undefined });
        let status = 0;
        stream.on('response', (h) => (status = Number(h[':status'])));
        stream.on('error', reject);
        stream.on('close', () => resolve(status));
        stream.resume();
        if (body !== undefined) stream.end(body);
      });
    server.on('secureConnection', (socket: TLSSocket) => {
      hub = http2Connect('http://agent.invalid', { createConnection: () => socket });
      hub.on('error', () => {});
      cleanups.push(() => hub?.destroy());
      // The hub's real handshake: hello, then welcome, both without an identity.
      void exchange({ ':method': 'GET', ':path': HELLO_PATH }).then(() =>
        exchange({ ':method': 'POST', ':path': WELCOME_PATH }, '{"cluster":"c1"}'),
      );
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    cleanups.push(() => server.close());

    const asItself: string[] = [];
    const forwarded: string[] = [];
    const upstream = {
      getJson: async (path: string) => {
        asItself.push(path);
        return {};
      },
      forwardRequest: async (stream: ServerHttp2Stream, headers: Record<string, unknown>) => {
        forwarded.push(`${String(headers[':method'])} ${String(headers[':path'])}`);
        stream.respond({ ':status': 404 });
        stream.end();
      },
      close: () => {},
    } as unknown as Upstream;
    const port = (server.address() as { port: number }).port;
    const connection = await connectTunnel({
      hubServer: `https://127.0.0.1:${port}`,
      hubCaPem: ca.certPem,
      identity: () => ({ cluster: 'c1', certPem: client.certPem, keyPem: client.keyPem }),
      upstream,
      logger: silentLogger,
    });
    cleanups.push(() => void connection.drain());
    const helloReads = asItself.length;
    expect(helloReads).toBeGreaterThan(0);

    // What the hub's kube proxy sends for a user: the same paths, but with the user's identity.
    const user = identityHeaders({ user: 'mallory', groups: [] });
    const statuses = [
      await exchange({ ':method': 'GET', ':path': HELLO_PATH, ...user }),
      await exchange({ ':method': 'POST', ':path': REFUSE_PATH, ...user }, '{"reason":"forged"}'),
      await exchange({ ':method': 'POST', ':path': WELCOME_PATH, ...user }, '{}'),
    ];
    expect(statuses).toEqual([404, 404, 404]);
    expect(forwarded).toEqual([`GET ${HELLO_PATH}`, `POST ${REFUSE_PATH}`, `POST ${WELCOME_PATH}`]);
    // The agent asked its API server nothing as itself on the user's behalf.
    expect(asItself).toHaveLength(helloReads);
    // The forged refusal did not close the tunnel: it still carries requests.
    expect(await exchange({ ':method': 'GET', ':path': '/version', ...user })).toBe(404);
    expect(hub?.closed).toBe(false);
  });
});
