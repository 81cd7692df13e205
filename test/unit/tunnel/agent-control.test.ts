/**
 * The agent's control streams: a hub that gives up on the hello (its hello
 * timeout) while the agent still asks its API server must not end the
 * agent; and a user's request to a control path is an ordinary request,
 * never a control message. The hub side here is a bare TLS + HTTP/2
 * stand-in on loopback; the agent is edgeadm's real `connectTunnel`.
 */
import { once } from 'node:events';
import { connect as http2Connect, type ClientHttp2Session, type ServerHttp2Stream } from 'node:http2';
import { createServer, type TLSSocket } from 'node:tls';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/log/run-log.js';
import { createCa, issueCertificate } from '../../../src/trust/pki.js';
import { connectTunnel } from '../../../src/tunnel/agent.js';
import { TUNNEL_ALPN_PROTOCOL } from '../../../src/tunnel/limits.js';
import { HELLO_PATH, identityHeaders, REFUSE_PATH, WELCOME_PATH } from '../../../src/tunnel/protocol.js';
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
