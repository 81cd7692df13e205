/**
 * The agent's way out through an HTTP proxy: `CONNECT host:port` (RFC 9110
 * §9.3.6) to an `http://[user:pass@]host:port` proxy, then TLS to the hub
 * inside that tunnel, so the hub's certificate is checked against the
 * pinned CA end to end and the proxy sees only ciphertext. Which proxy: the
 * agent's `--proxy` setting, else `HTTPS_PROXY` / `https_proxy` unless
 * `NO_PROXY` / `no_proxy` covers the hub (curl's rules: a `*`, exact host,
 * domain suffix, `host:port`, IP or CIDR).
 *
 * Proxy credentials are secrets: messages and logs name the proxy as
 * {@link proxyDisplay} (no user information), and the credentials travel
 * only in the `Proxy-Authorization` header of the CONNECT request.
 */
import type { Agent as HttpsAgent, RequestOptions } from 'node:https';
import { BlockList, connect as connectTcp, isIP, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { ConnectionOptions as TlsConnectionOptions } from 'node:tls';
import { EdgeadmError, ValidationError } from '../errors.js';
import { MAX_PROXY_RESPONSE_HEAD_BYTES, PROXY_CONNECT_TIMEOUT_MS } from './limits.js';

/** The port of an `http://` proxy URL without one. */
const DEFAULT_PROXY_PORT = 80;

/** A parsed proxy. `authorization` is a secret. */
export interface HttpProxy {
  host: string;
  port: number;
  /** `Basic …` for the Proxy-Authorization header, when the URL carried credentials. */
  authorization?: string;
}

/** Where the agent is going through the proxy. */
export interface ProxyTarget {
  host: string;
  port: number;
}

/** `http://host:port`: how a proxy is named in messages and logs (never with its credentials). */
export function proxyDisplay(proxy: HttpProxy): string {
  return `http://${isIP(proxy.host) === 6 ? `[${proxy.host}]` : proxy.host}:${proxy.port}`;
}

/**
 * Parses `http://[user:pass@]host[:port]`.
 *
 * @throws {ValidationError} `E_PROXY_URL` (the message never repeats the credentials).
 */
export function parseProxyUrl(text: string, what = '--proxy'): HttpProxy {
  const invalid = (why: string): ValidationError =>
    new ValidationError(`${what} is not a usable proxy URL: ${why}`, {
      code: 'E_PROXY_URL',
      hints: [
        'Give the proxy as http://[user:password@]host:port (a CONNECT proxy; https:// proxies are not supported).',
      ],
    });
  let url: URL;
  try {
    url = new URL(text.includes('://') ? text : `http://${text}`);
  } catch {
    throw invalid('it does not parse as a URL');
  }
  if (url.protocol !== 'http:') throw invalid(`the scheme ${url.protocol.replace(/:$/, '')} is not http`);
  if (url.hostname === '') throw invalid('it has no host');
  if ((url.pathname !== '/' && url.pathname !== '') || url.search !== '' || url.hash !== '') {
    throw invalid('a proxy URL has no path, query or fragment');
  }
  const proxy: HttpProxy = {
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port === '' ? DEFAULT_PROXY_PORT : Number(url.port),
  };
  if (url.username !== '' || url.password !== '') {
    const credentials = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
    proxy.authorization = `Basic ${Buffer.from(credentials).toString('base64')}`;
  }
  return proxy;
}

/** Whether a `NO_PROXY` list covers `target` (curl's rules). Pure. */
export function isNoProxy(target: ProxyTarget, noProxy: string): boolean {
  const host = target.host.toLowerCase().replace(/^\[|\]$/g, '');
  for (const raw of noProxy.split(/[\s,]+/)) {
    let entry = raw.trim().toLowerCase();
    if (entry === '') continue;
    if (entry === '*') return true;
    const portMatch = /^(.*):(\d+)$/.exec(entry);
    if (portMatch && !entry.includes('::') && !entry.startsWith('[')) {
      if (Number(portMatch[2]) !== target.port) continue;
      entry = portMatch[1] ?? '';
    }
    entry = entry.replace(/^\[|\]$/g, '');
    if (entry.includes('/') && isIP(host) !== 0) {
      const [network = '', bits = ''] = entry.split('/');
      const family = isIP(network);
      if (family === 0 || family !== isIP(host)) continue;
      const list = new BlockList();
      list.addSubnet(network, Number(bits), family === 6 ? 'ipv6' : 'ipv4');
      if (list.check(host, family === 6 ? 'ipv6' : 'ipv4')) return true;
      continue;
    }
    const domain = entry.replace(/^\*?\./, '');
    if (host === domain || host.endsWith(`.${domain}`)) return true;
  }
  return false;
}

/**
 * The proxy to use for `target`: `explicit` (the agent's `--proxy`) when
 * given, else `HTTPS_PROXY`/`https_proxy` from `env` unless `NO_PROXY`/
 * `no_proxy` covers the target; undefined means a direct connection.
 */
export function proxyFor(
  target: ProxyTarget,
  options: { explicit?: string; env?: NodeJS.ProcessEnv } = {},
): HttpProxy | undefined {
  if (options.explicit !== undefined && options.explicit !== '') return parseProxyUrl(options.explicit);
  const env = options.env ?? process.env;
  const fromEnv = env['HTTPS_PROXY'] ?? env['https_proxy'];
  if (fromEnv === undefined || fromEnv === '') return undefined;
  if (isNoProxy(target, env['NO_PROXY'] ?? env['no_proxy'] ?? '')) return undefined;
  return parseProxyUrl(fromEnv, 'HTTPS_PROXY');
}

function proxyError(proxy: HttpProxy, target: ProxyTarget, why: string, hints: string[] = []): EdgeadmError {
  return new EdgeadmError(
    `the HTTP proxy ${proxyDisplay(proxy)} did not open a tunnel to ${target.host}:${target.port}: ${why}`,
    {
      code: 'E_TUNNEL_PROXY',
      hints,
    },
  );
}

/** The request head of `CONNECT target`. Pure. */
export function renderConnectRequest(proxy: HttpProxy, target: ProxyTarget): string {
  const authority = `${isIP(target.host) === 6 ? `[${target.host}]` : target.host}:${target.port}`;
  return (
    `CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n` +
    (proxy.authorization === undefined ? '' : `Proxy-Authorization: ${proxy.authorization}\r\n`) +
    '\r\n'
  );
}

/** Status code and reason of a CONNECT answer's head (`HTTP/1.1 200 Connection established`). Pure. */
export function parseConnectResponseHead(head: string): { status: number; reason: string } | undefined {
  const match = /^HTTP\/1\.[01] (\d{3})(?: ([^\r\n]*))?\r\n/.exec(head);
  return match ? { status: Number(match[1]), reason: match[2] ?? '' } : undefined;
}

/**
 * Opens a TCP connection to `proxy` and asks it to `CONNECT` to `target`.
 * Resolves with the socket, now a byte pipe to the target, once the proxy
 * answers 2xx.
 *
 * @throws {EdgeadmError} `E_TUNNEL_PROXY`: the proxy is unreachable,
 * refuses (the status is in the message; 407 hints at credentials), or
 * answers something that is not HTTP.
 */
export function connectThroughProxy(
  proxy: HttpProxy,
  target: ProxyTarget,
  timeoutMs: number = PROXY_CONNECT_TIMEOUT_MS,
): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connectTcp({ host: proxy.host, port: proxy.port });
    let received = Buffer.alloc(0);
    const fail = (error: EdgeadmError): void => {
      clearTimeout(timer);
      socket.destroy();
      reject(error);
    };
    const timer = setTimeout(() => fail(proxyError(proxy, target, `no answer within ${timeoutMs} ms`)), timeoutMs);
    socket.once('connect', () => socket.write(renderConnectRequest(proxy, target)));
    const onError = (error: Error): void => fail(proxyError(proxy, target, error.message));
    const onClose = (): void => fail(proxyError(proxy, target, 'the proxy closed the connection'));
    socket.on('error', onError);
    socket.once('close', onClose);
    const onData = (chunk: Buffer): void => {
      received = Buffer.concat([received, chunk]);
      const end = received.indexOf('\r\n\r\n');
      if (end === -1) {
        if (received.length > MAX_PROXY_RESPONSE_HEAD_BYTES) {
          fail(proxyError(proxy, target, `its answer head is larger than ${MAX_PROXY_RESPONSE_HEAD_BYTES} bytes`));
        }
        return;
      }
      socket.off('data', onData);
      const answer = parseConnectResponseHead(received.subarray(0, end + 4).toString('latin1'));
      if (answer === undefined) {
        fail(proxyError(proxy, target, 'its answer is not HTTP'));
        return;
      }
      if (answer.status < 200 || answer.status > 299) {
        fail(
          proxyError(
            proxy,
            target,
            `HTTP ${answer.status} ${answer.reason}`.trim(),
            answer.status === 407
              ? ['The proxy wants credentials: give them as http://user:password@host:port (--proxy or HTTPS_PROXY).']
              : ['Check that the proxy allows CONNECT to the hub address and port.'],
          ),
        );
        return;
      }
      clearTimeout(timer);
      socket.off('close', onClose);
      socket.off('error', onError);
      socket.pause();
      // Bytes after the head already belong to the tunnel.
      const rest = received.subarray(end + 4);
      if (rest.length > 0) socket.unshift(rest);
      resolve(socket);
    };
    socket.on('data', onData);
  });
}

/**
 * An `https.Agent` whose every connection goes through `proxy` by CONNECT,
 * with TLS inside the tunnel (the request's own CA, pin and certificate
 * options apply as they would directly). No keep-alive: each request gets
 * a fresh tunnel, as the callers' direct requests get a fresh connection.
 * node:https and node:tls are loaded on use (the binary's start-up snapshot
 * cannot hold node:http's parser).
 */
export async function proxyHttpsAgent(proxy: HttpProxy): Promise<HttpsAgent> {
  const { Agent } = await import('node:https');
  const { connect: connectTls } = await import('node:tls');
  class ProxyAgent extends Agent {
    override createConnection(
      options: RequestOptions,
      callback?: (error: Error | null, socket: Duplex) => void,
    ): Duplex | undefined {
      const target = {
        host: String(options.host ?? 'localhost').replace(/^\[|\]$/g, ''),
        port: Number(options.port ?? 443),
      };
      connectThroughProxy(proxy, target, options.timeout || PROXY_CONNECT_TIMEOUT_MS).then(
        (socket) => callback?.(null, connectTls({ ...(options as TlsConnectionOptions), socket })),
        (error: Error) => callback?.(error, undefined as unknown as Duplex),
      );
      return undefined;
    }
  }
  return new ProxyAgent({ keepAlive: false });
}

/** The HTTP proxy to the hub, if any, and an https agent through it for the hub's API (renewal). */
export async function hubRoute(
  hubServer: string,
  options: { explicit?: string | undefined; env?: NodeJS.ProcessEnv | undefined } = {},
): Promise<{ proxy?: HttpProxy; agent?: HttpsAgent }> {
  const hub = new URL(hubServer);
  const proxy = proxyFor(
    { host: hub.hostname.replace(/^\[|\]$/g, ''), port: Number(hub.port || 443) },
    {
      ...(options.explicit === undefined ? {} : { explicit: options.explicit }),
      ...(options.env ? { env: options.env } : {}),
    },
  );
  return proxy === undefined ? {} : { proxy, agent: await proxyHttpsAgent(proxy) };
}
