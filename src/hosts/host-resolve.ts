/**
 * What `host resolve` reports: how edgeadm would reach a host through the
 * ssh config (user, address, port, key files in order, and every bastion of
 * the jump chain resolved the same way), without connecting.
 */
import { homedir, hostname, userInfo } from 'node:os';
import { join } from 'node:path';
import { resolveSshChain, type HostConnectOptions, type ResolvedHop } from './connect.js';
import { sshConfigEnvironment } from './ssh-config-files.js';
import { DEFAULT_KEY_FILES } from './ssh-auth.js';

/** One hop as reported. */
export interface HostResolutionHop {
  /** As written: the typed host, a --ssh-jump or a ProxyJump entry. */
  name: string;
  user: string;
  address: string;
  port: number;
  /** The key files offered, in order (after ssh-agent's keys). */
  keyFiles: string[];
  /** True when no key file is named and these are the defaults, tried only if present. */
  isDefaultKeys: boolean;
}

/** The whole resolution. */
export interface HostResolution {
  /** The ssh config read (which may not exist: then nothing came from it). */
  sshConfig: string;
  target: HostResolutionHop;
  /** Bastions in the order they are connected. */
  jumps: HostResolutionHop[];
}

/** What decides the resolution: the target and the flags that change it. */
export type HostResolveRequest = Pick<HostConnectOptions, 'jumps' | 'keyFiles' | 'port' | 'sshConfigFile'> & {
  host: string;
};

/** Resolves `request` through the ssh config, reading files but connecting nowhere. */
export function resolveHost(request: HostResolveRequest): HostResolution {
  const info = userInfo();
  const homeDir = homedir();
  const sshConfig = request.sshConfigFile ?? join(homeDir, '.ssh', 'config');
  const env = sshConfigEnvironment({
    homeDir,
    localUser: info.username,
    localUid: info.uid,
    localHostName: hostname(),
  });
  const chain = resolveSshChain(request, sshConfig, env);
  const hopOf = (hop: ResolvedHop): HostResolutionHop => ({
    name: hop.name,
    user: hop.endpoint.user,
    address: hop.endpoint.host,
    port: hop.endpoint.port,
    keyFiles: hop.usesDefaultKeys ? DEFAULT_KEY_FILES.map((file) => join(homeDir, file)) : hop.keyFiles,
    isDefaultKeys: hop.usesDefaultKeys,
  });
  return { sshConfig, target: hopOf(chain.target), jumps: chain.jumps.map(hopOf) };
}
