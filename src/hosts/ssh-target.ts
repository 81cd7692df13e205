/**
 * SSH targets as operators write them: `user@host[:port]`, `host`,
 * `user@[2001:db8::1]:2222`. Parsing is pure and strict, so that a typo fails
 * before any connection is tried.
 */
import { ValidationError } from '../errors.js';

/** The SSH port when none is given. */
export const DEFAULT_SSH_PORT = 22;

/** A parsed target; fields absent from the text are undefined, for ssh config and defaults to fill. */
export interface SshTarget {
  user: string | undefined;
  /** Host name, address or ssh config alias (IPv6 without brackets). */
  host: string;
  port: number | undefined;
}

/** A fully resolved SSH endpoint. */
export interface SshEndpoint {
  user: string;
  host: string;
  port: number;
}

const USER = /^[A-Za-z0-9._][A-Za-z0-9._-]*\$?$/;
const HOST_NAME = /^[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?$/;
const IPV6 = /^[0-9A-Fa-f:.]+(?:%[A-Za-z0-9_.-]+)?$/;

/** Parses `user@host[:port]`; throws a ValidationError naming the problem. */
export function parseSshTarget(text: string, what = 'SSH target'): SshTarget {
  const input = text.trim();
  const fail = (why: string): never => {
    throw new ValidationError(`invalid ${what} ${JSON.stringify(text)}: ${why}`, {
      code: 'E_SSH_TARGET',
      hints: ['Write it as user@host, user@host:port or user@[ipv6]:port.'],
    });
  };
  if (input === '') fail('it is empty');
  const at = input.lastIndexOf('@');
  const user = at === -1 ? undefined : input.slice(0, at);
  const rest = at === -1 ? input : input.slice(at + 1);
  if (user !== undefined && !USER.test(user)) fail(`"${user}" is not a valid user name`);

  let host: string;
  let portText: string | undefined;
  if (rest.startsWith('[')) {
    const close = rest.indexOf(']');
    if (close === -1) fail('missing "]" after the IPv6 address');
    host = rest.slice(1, close);
    const after = rest.slice(close + 1);
    if (after !== '' && !after.startsWith(':')) fail(`unexpected "${after}" after the address`);
    portText = after === '' ? undefined : after.slice(1);
    if (!IPV6.test(host) || !host.includes(':')) fail(`"${host}" is not an IPv6 address`);
  } else {
    const colons = rest.split(':').length - 1;
    if (colons > 1) fail('an IPv6 address must be written in brackets: user@[2001:db8::1]:22');
    [host = '', portText] = rest.split(':') as [string, string | undefined];
    if (!HOST_NAME.test(host)) fail(`"${host}" is not a valid host name or address`);
  }
  let port: number | undefined;
  if (portText !== undefined) port = parsePort(portText, fail);
  return { user, host, port };
}

/** Parses a TCP port number (1-65535). */
export function parsePort(text: string, fail: (why: string) => never): number {
  if (!/^\d{1,5}$/.test(text)) fail(`"${text}" is not a port number`);
  const port = Number(text);
  if (port < 1 || port > 65535) fail(`port ${port} is out of range (1-65535)`);
  return port;
}

/** `user@host:port`, with brackets around IPv6 addresses. */
export function formatEndpoint(endpoint: SshEndpoint): string {
  const host = endpoint.host.includes(':') ? `[${endpoint.host}]` : endpoint.host;
  return `${endpoint.user}@${host}:${endpoint.port}`;
}
