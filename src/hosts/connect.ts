/**
 * From "what the operator typed" to a {@link Host}: no `--host` means this
 * machine; otherwise the target and its bastions are resolved through the ssh
 * config (HostName, User, Port, IdentityFile, ProxyJump), credentials are
 * loaded, and a chain of SSH connections is built, each host key checked.
 *
 * Precedence, most specific first: `user@host:port` as typed, then the
 * `--ssh-*` flags, then the ssh config, then defaults (the local user name,
 * port 22, ~/.ssh/id_* keys).
 */
import { homedir, userInfo } from 'node:os';
import { join } from 'node:path';
import { ValidationError } from '../errors.js';
import { silentLogger, type Logger } from '../log/run-log.js';
import type { Host } from './host.js';
import { normalizeFingerprint } from './known-hosts.js';
import { LocalHost } from './local-host.js';
import { loadSshCredentials } from './ssh-auth.js';
import { parseJumpHop, resolveSshConfig, type ResolvedSshConfig, type SshConfigEnvironment } from './ssh-config.js';
import { sshConfigEnvironment } from './ssh-config-files.js';
import { SshConnection } from './ssh-connection.js';
import { SshHost, type UploadWorkerOptions } from './ssh-host.js';
import { formatEndpoint, parseSshTarget, type SshEndpoint, type SshTarget } from './ssh-target.js';

/** Most bastions in one chain (also stops ProxyJump loops in an ssh config). */
export const MAX_JUMP_HOPS = 8;

/** Everything that decides how a host is reached. */
export interface HostConnectOptions {
  /** `user@host[:port]` or an ssh config alias; undefined for this machine. */
  host?: string;
  /** Bastions in order, `user@host[:port]` each; replaces the config's ProxyJump. */
  jumps?: string[] | undefined;
  /** Private key files to offer (replace IdentityFile and the defaults). */
  keyFiles?: string[] | undefined;
  keyPassphrase?: string;
  /** Password for the target (never offered to bastions). */
  password?: string;
  sudoPassword?: string;
  /** `SHA256:…` the target's host key must have. */
  hostKeyFingerprint?: string;
  /** Trust unknown host keys on first use and record them. */
  acceptNewHostKeys?: boolean;
  /** Default ~/.ssh/known_hosts. */
  knownHostsFile?: string;
  /** Default ~/.ssh/config (a missing file is fine). */
  sshConfigFile?: string | undefined;
  /** Port for the target when `host` has none. */
  port?: number | undefined;
  connectTimeoutMs?: number;
  /** ssh-agent socket; default $SSH_AUTH_SOCK. */
  agentSocket?: string;
  homeDir?: string;
  localUser?: string;
  logger?: Logger;
  /**
   * Bastion connections shared by every host connected with the same map,
   * keyed by their chain (`user@bastion:22`): a fleet behind one bastion
   * then uses one connection to it. Hosts do not close shared bastions;
   * whoever owns the map does, with {@link closeSharedJumps}.
   */
  sharedJumps?: Map<string, SshConnection>;
  /** When uploads go through worker processes (by default: large files to hosts reached directly). */
  uploadWorkers?: UploadWorkerOptions;
}

/** Closes the bastion connections collected in a `sharedJumps` map, innermost first. */
export async function closeSharedJumps(sharedJumps: Map<string, SshConnection>): Promise<void> {
  const connections = [...sharedJumps.values()].sort((a, b) => b.path.length - a.path.length);
  sharedJumps.clear();
  for (const connection of connections) await connection.close();
}

/** A resolved endpoint and the key files it uses. */
export interface ResolvedHop {
  /** The host as written (`--host`, `--ssh-jump` or a ProxyJump entry). */
  name: string;
  endpoint: SshEndpoint;
  /** From --ssh-key or IdentityFile, in order. */
  keyFiles: string[];
  /** No key file is named: the default ones (~/.ssh/id_ed25519, …) are tried. */
  usesDefaultKeys: boolean;
}

/** The target and the bastions before it, resolved. */
export interface ResolvedChain {
  target: ResolvedHop;
  /** In the order they are connected: the first one is reached directly. */
  jumps: ResolvedHop[];
}

/**
 * Resolves the target and its jump chain through the ssh config as ssh
 * does. For `ProxyJump a,b,c` ssh runs `ssh -J a,b c`, which runs
 * `ssh -J a b`, which runs `ssh a`: only the first hop's own ProxyJump is
 * followed, and each later hop's is replaced by the hops before it. Pure:
 * the configuration is read through `env`.
 */
export function resolveSshChain(
  options: Pick<HostConnectOptions, 'host' | 'jumps' | 'keyFiles' | 'port'> & { host: string },
  configFile: string | undefined,
  env: SshConfigEnvironment,
): ResolvedChain {
  const isKeyFlag = options.keyFiles !== undefined && options.keyFiles.length > 0;
  const hopOf = (name: string, config: ResolvedSshConfig): ResolvedHop => ({
    name,
    endpoint: { user: config.user, host: config.hostName, port: config.port },
    keyFiles: isKeyFlag ? options.keyFiles! : config.identityFiles,
    usesDefaultKeys: !isKeyFlag && config.usesDefaultKeys,
  });
  const typed = parseSshTarget(options.host, 'SSH target (--host)');
  const flagJumps = options.jumps && options.jumps.length > 0 ? options.jumps : undefined;
  const port = typed.port ?? options.port;
  const target = resolveSshConfig(configFile, { host: typed.host, user: typed.user, port, jumps: flagJumps }, env);
  let hops = 0;
  const chainThrough = (list: string[]): ResolvedHop[] => {
    if (list.length === 0) return [];
    if (++hops > MAX_JUMP_HOPS) {
      throw new ValidationError(
        `more than ${MAX_JUMP_HOPS} SSH jump hosts (is there a ProxyJump loop in the ssh config?)`,
        { code: 'E_SSH_CONFIG' },
      );
    }
    const spec = list.at(-1)!;
    const before = list.slice(0, -1);
    const hop = jumpTarget(spec);
    const config = resolveSshConfig(configFile, { host: hop.host, user: hop.user, port: hop.port, jumps: before }, env);
    return [...chainThrough(before.length === 0 ? config.proxyJump : before), hopOf(spec, config)];
  };
  return { target: hopOf(options.host, target), jumps: chainThrough(target.proxyJump) };
}

/** A jump host as written: `[user@]host[:port]` (strictly, as --host) or an `ssh://` URI. */
function jumpTarget(spec: string): SshTarget {
  if (/^ssh:\/\//i.test(spec)) {
    const hop = parseJumpHop(spec);
    if (hop !== undefined) return parseSshTarget(formatJump(hop), 'jump host (--ssh-jump)');
  }
  return parseSshTarget(spec, 'jump host (--ssh-jump)');
}

function formatJump(hop: { user?: string; host: string; port?: number }): string {
  const host = hop.host.includes(':') ? `[${hop.host}]` : hop.host;
  return `${hop.user === undefined ? '' : `${hop.user}@`}${host}${hop.port === undefined ? '' : `:${hop.port}`}`;
}

/**
 * The host to act on: LocalHost without `host`, else an SshHost that is
 * already connected (so auth and host key problems surface here).
 */
export async function connectHost(options: HostConnectOptions): Promise<Host> {
  const logger = options.logger ?? silentLogger;
  if (options.host === undefined) {
    return new LocalHost({
      logger,
      ...(options.sudoPassword === undefined ? {} : { sudoPassword: options.sudoPassword }),
    });
  }
  const host = await openSshHost({ ...options, host: options.host });
  try {
    await host.connect();
  } catch (error) {
    await host.close();
    throw error;
  }
  return host;
}

/** Builds the SshHost and its connection chain without connecting yet. */
export async function openSshHost(options: HostConnectOptions & { host: string }): Promise<SshHost> {
  const logger = options.logger ?? silentLogger;
  const homeDir = options.homeDir ?? homedir();
  const env = sshConfigEnvironment({ homeDir, localUser: options.localUser ?? userInfo().username });
  const chain = resolveSshChain(options, options.sshConfigFile ?? join(homeDir, '.ssh', 'config'), env);

  let pinnedFingerprint: string | undefined;
  if (options.hostKeyFingerprint !== undefined) {
    pinnedFingerprint = normalizeFingerprint(options.hostKeyFingerprint);
    if (pinnedFingerprint === undefined) {
      throw new ValidationError(`invalid host key fingerprint ${JSON.stringify(options.hostKeyFingerprint)}`, {
        code: 'E_SSH_FINGERPRINT',
        hints: ['Use the SHA256 form that ssh-keygen -lf prints: SHA256: and 43 base64 characters.'],
      });
    }
  }
  const knownHostsFile = options.knownHostsFile ?? join(homeDir, '.ssh', 'known_hosts');
  const agentSocket = options.agentSocket ?? process.env.SSH_AUTH_SOCK;
  const credentialsFor = (hop: ResolvedHop, password: string | undefined) =>
    loadSshCredentials(
      {
        ...(agentSocket ? { agentSocket } : {}),
        keyFiles: hop.keyFiles,
        // Without a home, loadSshCredentials tries no default key (IdentityFile none).
        ...(hop.usesDefaultKeys ? { homeDir } : {}),
        ...(options.keyPassphrase === undefined ? {} : { keyPassphrase: options.keyPassphrase }),
        ...(password === undefined ? {} : { password }),
      },
      logger,
    );
  const common = {
    logger,
    ...(options.connectTimeoutMs === undefined ? {} : { connectTimeoutMs: options.connectTimeoutMs }),
  };

  // Credentials first: from here on nothing awaits, so concurrent callers
  // sharing `sharedJumps` see each other's bastion connections.
  const jumpCredentials = await Promise.all(chain.jumps.map((hop) => credentialsFor(hop, undefined)));
  const targetCredentials = await credentialsFor(chain.target, options.password);

  let via: SshConnection | undefined;
  const ownedJumps: SshConnection[] = [];
  for (const [index, hop] of chain.jumps.entries()) {
    const key = `${via ? `${via.path} -> ` : ''}${formatEndpoint(hop.endpoint)}`;
    const shared = options.sharedJumps?.get(key);
    if (shared) {
      via = shared;
      continue;
    }
    via = new SshConnection({
      ...common,
      endpoint: hop.endpoint,
      ...(via ? { via } : {}),
      credentials: jumpCredentials[index]!,
      hostKeys: { knownHostsFile, acceptNew: options.acceptNewHostKeys === true },
    });
    if (options.sharedJumps) options.sharedJumps.set(key, via);
    else ownedJumps.push(via);
  }
  const connection = new SshConnection({
    ...common,
    endpoint: chain.target.endpoint,
    ...(via ? { via } : {}),
    credentials: targetCredentials,
    hostKeys: {
      knownHostsFile,
      acceptNew: options.acceptNewHostKeys === true,
      ...(pinnedFingerprint ? { pinnedFingerprint } : {}),
    },
  });
  return new SshHost({
    connection,
    ownedJumps: ownedJumps.reverse(),
    logger,
    ...(options.uploadWorkers === undefined ? {} : { uploadWorkers: options.uploadWorkers }),
    ...(options.sudoPassword === undefined ? {} : { sudoPassword: options.sudoPassword }),
  });
}
