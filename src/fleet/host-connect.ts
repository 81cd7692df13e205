/**
 * From an inventory host to the connection options of `connectHost`: the
 * inventory's SSH settings win over the command's `--ssh-*` flags, and every
 * host of a run shares one connection per bastion.
 */
import type { HostConnectOptions } from '../hosts/connect.js';
import type { SshConnection } from '../hosts/ssh-connection.js';
import type { FleetHost } from './inventory/types.js';

/** Connection options for `host`: inventory settings over `base` (the flags). */
export function fleetHostConnectOptions(
  host: FleetHost,
  base: Omit<HostConnectOptions, 'host'>,
  sharedJumps: Map<string, SshConnection>,
): HostConnectOptions & { host: string } {
  const { ssh } = host;
  // A bare IPv6 address needs brackets before a user@ prefix can be parsed back.
  const address = host.address.includes(':') && !host.address.startsWith('[') ? `[${host.address}]` : host.address;
  const options: HostConnectOptions & { host: string } = {
    ...base,
    host: ssh.user === undefined ? address : `${ssh.user}@${address}`,
    sharedJumps,
  };
  if (ssh.port !== undefined) options.port = ssh.port;
  if (ssh.keyFile !== undefined) options.keyFiles = [ssh.keyFile];
  if (ssh.jumps !== undefined) options.jumps = ssh.jumps;
  return options;
}
