/**
 * The headers edge-proxy forwards each way: hop-by-hop headers and its own
 * are dropped, the client's `Authorization` is dropped when the request goes
 * upstream with a mapped client certificate instead, and an upgrade keeps
 * its `Connection: Upgrade`. Pure.
 */
import type { IncomingHttpHeaders } from 'node:http';

/** Request headers never forwarded (hop-by-hop, or the proxy's own). */
const REQUEST_HOP_BY_HOP = [
  'host',
  'connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
];

/** Response headers never passed back to the client. */
export const RESPONSE_HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'proxy-connection',
  'trailer',
  'upgrade',
]);

/** The request headers sent upstream for a client's request. */
export function forwardHeaders(
  clientHeaders: IncomingHttpHeaders,
  clientCertCn: string | undefined,
  isUpgrade: boolean,
): IncomingHttpHeaders {
  const headers: IncomingHttpHeaders = { ...clientHeaders };
  for (const name of REQUEST_HOP_BY_HOP) delete headers[name];
  if (clientCertCn !== undefined) delete headers.authorization;
  if (isUpgrade) {
    headers.connection = 'Upgrade';
    if (clientHeaders.upgrade) headers.upgrade = clientHeaders.upgrade;
  }
  return headers;
}

/** The upstream answer's headers passed to the client. */
export function responseHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !RESPONSE_HOP_BY_HOP.has(name)));
}

/**
 * The raw status line and headers of an upstream answer to an upgrade, as
 * written to the client's socket. A switch (101) passes every header; a
 * refusal drops the hop-by-hop ones and asks to close.
 */
export function upgradeResponseHead(
  statusCode: number | undefined,
  statusMessage: string | undefined,
  rawHeaders: readonly string[],
  isSwitch: boolean,
): string {
  const lines = [`HTTP/1.1 ${statusCode} ${statusMessage ?? ''}`];
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (!isSwitch && RESPONSE_HOP_BY_HOP.has(name.toLowerCase())) continue;
    lines.push(`${name}: ${rawHeaders[i + 1]}`);
  }
  if (!isSwitch) lines.push('Connection: close');
  return `${lines.join('\r\n')}\r\n\r\n`;
}
