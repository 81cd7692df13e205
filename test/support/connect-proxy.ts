/**
 * A small HTTP CONNECT proxy for tests (RFC 9110 §9.3.6): it reads the
 * request head, checks `Proxy-Authorization: Basic` when credentials are
 * set, answers `200 Connection established` and then copies bytes both
 * ways to the target. Test controls: refuse with a status, require
 * credentials, or send every tunnel to another address than asked (a
 * proxy that tries to put itself, or an impostor, between agent and hub).
 */
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/** Largest request head the proxy reads. */
const MAX_HEAD_BYTES = 16 * 1024;

/** What a test can set and read. */
export interface ConnectProxy {
  port: number;
  /** `http://127.0.0.1:PORT`, or with `user:pass@` when credentials are set. */
  url(withCredentials?: boolean): string;
  /** Every CONNECT target asked for (`host:port`), accepted or not. */
  readonly requests: { target: string; authorization: string | undefined; status: number }[];
  /** Answer every CONNECT with this status (e.g. 403); undefined to accept. */
  refuseWith: number | undefined;
  /** Send accepted tunnels here instead of the asked target. */
  redirectTo: { host: string; port: number } | undefined;
  stop(): Promise<void>;
}

/** Starts the proxy on loopback. */
export async function startConnectProxy(
  options: { credentials?: { user: string; password: string } } = {},
): Promise<ConnectProxy> {
  const sockets = new Set<Socket>();
  const expected =
    options.credentials === undefined
      ? undefined
      : `Basic ${Buffer.from(`${options.credentials.user}:${options.credentials.password}`).toString('base64')}`;
  const server: Server = createServer((client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end === -1) {
        if (head.length > MAX_HEAD_BYTES) client.destroy();
        return;
      }
      client.off('data', onData);
      const lines = head.subarray(0, end).toString('latin1').split('\r\n');
      const [method, target = ''] = (lines[0] ?? '').split(' ');
      const authorization = lines
        .find((line) => /^proxy-authorization:/i.test(line))
        ?.replace(/^[^:]*:\s*/, '')
        .trim();
      const answer = (status: number, reason: string): void => {
        proxy.requests.push({ target, authorization, status });
        client.end(`HTTP/1.1 ${status} ${reason}\r\nContent-Length: 0\r\n\r\n`);
      };
      if (method !== 'CONNECT') return answer(405, 'Method Not Allowed');
      if (expected !== undefined && authorization !== expected) return answer(407, 'Proxy Authentication Required');
      if (proxy.refuseWith !== undefined) return answer(proxy.refuseWith, 'Refused By Test Proxy');
      const match = /^\[?([^\]]+?)\]?:(\d+)$/.exec(target);
      if (!match) return answer(400, 'Bad Request');
      const destination = proxy.redirectTo ?? { host: match[1] ?? '', port: Number(match[2]) };
      const upstream = connect(destination.port, destination.host);
      sockets.add(upstream);
      upstream.on('close', () => sockets.delete(upstream));
      upstream.once('connect', () => {
        proxy.requests.push({ target, authorization, status: 200 });
        client.write('HTTP/1.1 200 Connection established\r\n\r\n');
        const rest = head.subarray(end + 4);
        if (rest.length > 0) upstream.write(rest);
        client.pipe(upstream);
        upstream.pipe(client);
      });
      upstream.on('error', () => {
        if (!client.destroyed && upstream.connecting) answer(502, 'Bad Gateway');
        client.destroy();
      });
      client.on('close', () => upstream.destroy());
    };
    client.on('data', onData);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const proxy: ConnectProxy = {
    port,
    url: (withCredentials = true) =>
      withCredentials && options.credentials
        ? `http://${encodeURIComponent(options.credentials.user)}:${encodeURIComponent(options.credentials.password)}@127.0.0.1:${port}`
        : `http://127.0.0.1:${port}`,
    requests: [],
    refuseWith: undefined,
    redirectTo: undefined,
    stop: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return proxy;
}
