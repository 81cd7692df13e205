/**
 * The file side of ssh config resolution: reading the configuration and its
 * Include files, expanding Include globs, and /etc/services for `Port ssh`.
 * The resolver itself (ssh-config.ts) is pure and gets these as functions.
 */
import { globSync, readFileSync } from 'node:fs';
import type { SshConfigEnvironment } from './ssh-config.js';

/** Where ssh looks up TCP service names. */
const SERVICES_FILE = '/etc/services';

/** The environment of the local user, reading real files. */
export function sshConfigEnvironment(local: {
  homeDir: string;
  localUser: string;
  localUid?: number;
  localHostName?: string;
}): SshConfigEnvironment {
  let services: Map<string, number> | undefined;
  return {
    ...local,
    readFile: (path) => {
      try {
        return readFileSync(path, 'utf8');
      } catch {
        return undefined;
      }
    },
    glob: (pattern) => (/[*?[]/.test(pattern) ? globSync(pattern).sort() : [pattern]),
    servicePort: (name) => {
      services ??= readServices();
      return services.get(name);
    },
  };
}

/** TCP service names and aliases to ports, from /etc/services (empty when it is missing). */
function readServices(): Map<string, number> {
  const services = new Map<string, number>();
  let text: string;
  try {
    text = readFileSync(SERVICES_FILE, 'utf8');
  } catch {
    return services;
  }
  for (const line of text.split('\n')) {
    const [name, portProtocol, ...aliases] = line.replace(/#.*/, '').trim().split(/\s+/);
    const match = /^(\d+)\/tcp$/.exec(portProtocol ?? '');
    if (name === undefined || match === null) continue;
    for (const entry of [name, ...aliases]) if (!services.has(entry)) services.set(entry, Number(match[1]));
  }
  return services;
}
