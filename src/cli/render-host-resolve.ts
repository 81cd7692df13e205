/**
 * The human rendering of `host resolve`: the target, then each bastion in
 * the order it is connected, one block each.
 */
import type { ChalkInstance } from 'chalk';
import { formatEndpoint } from '../hosts/ssh-target.js';
import type { HostResolution, HostResolutionHop } from '../hosts/host-resolve.js';

/** The resolution as lines of text, coloured by `style`. */
export function renderHostResolve(resolution: HostResolution, style: ChalkInstance): string[] {
  const hop = (title: string, entry: HostResolutionHop): string[] => [
    style.bold(`${title} ${entry.name}`),
    `  user:      ${entry.user}`,
    `  address:   ${entry.address}`,
    `  port:      ${entry.port}`,
    `  key files: ${entry.keyFiles.length === 0 ? 'none (ssh-agent and password only)' : entry.keyFiles.join(', ')}${entry.isDefaultKeys ? style.dim(' (defaults, each if present)') : ''}`,
  ];
  const endpoint = (entry: HostResolutionHop): string =>
    formatEndpoint({ user: entry.user, host: entry.address, port: entry.port });
  const route = [...resolution.jumps, resolution.target].map(endpoint).join(' -> ');
  return [
    ...hop('host', resolution.target),
    `  via:       ${resolution.jumps.length === 0 ? 'direct' : route}`,
    ...resolution.jumps.flatMap((entry, index) => ['', ...hop(`jump ${index + 1}`, entry)]),
    '',
    style.dim(`from ${resolution.sshConfig}; nothing was connected`),
  ];
}
