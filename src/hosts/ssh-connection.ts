/**
 * One SSH connection (ssh2), kept open and reused for every command to its
 * host, reopened on the next use after it drops.
 *
 * - Host keys are always verified: against a pinned SHA-256 fingerprint when
 *   one is given, else against known_hosts. An unknown key is refused (with
 *   its fingerprint) unless trust on first use was asked for, in which case
 *   it is recorded once the session is authenticated, with a loud warning.
 * - Bastions: a connection can run over a `direct-tcpip` channel of another
 *   connection (`via`), so chains of any length are links of connections.
 * - Keepalives detect a dead link; session channels are bounded by a
 *   semaphore below sshd's MaxSessions (10 by default).
 */
import type { Client, ClientChannel, ConnectConfig, ServerHostKeyAlgorithm } from 'ssh2';
import type { Duplex } from 'node:stream';
import { silentLogger, type Logger } from '../log/run-log.js';
import {
  appendKnownHostsLine,
  checkKnownHost,
  fingerprintSha256,
  formatKnownHostsLine,
  keyTypeOfBlob,
  knownHostsName,
  knownKeyTypes,
  readKnownHostsFile,
} from './known-hosts.js';
import { CoalescingSocket } from './coalescing-socket.js';
import { Semaphore } from './semaphore.js';
import { makeAuthHandler, type SshCredential } from './ssh-auth.js';
import {
  hostKeyFailure,
  sshConnectFailure,
  sshDisconnected,
  sshUnreachable,
  type HostKeyVerdict,
  type Ssh2Error,
  type SshFailureContext,
} from './ssh-errors.js';
import { loadSsh2 } from './ssh2-loader.js';
import { formatEndpoint, type SshEndpoint } from './ssh-target.js';

/** How often an idle connection is probed. */
export const SSH_KEEPALIVE_INTERVAL_MS = 15_000;
/** Unanswered probes before the connection is declared dead (one minute). */
export const SSH_KEEPALIVE_COUNT_MAX = 4;
/** How long to wait for a connection (TCP, handshake, authentication), unless told otherwise. */
export const DEFAULT_SSH_CONNECT_TIMEOUT_MS = 20_000;
/** Session channels open at once on one connection: below OpenSSH's MaxSessions default of 10. */
export const MAX_CONCURRENT_CHANNELS = 8;

/** Host key algorithms ssh2 supports, in its order of preference (DSA left out). */
const HOST_KEY_ALGORITHMS: readonly ServerHostKeyAlgorithm[] = [
  'ssh-ed25519',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'rsa-sha2-512',
  'rsa-sha2-256',
  'ssh-rsa',
];

/** How host keys are checked. */
export interface HostKeyPolicy {
  /** The known_hosts file checked, and written with `acceptNew`. */
  knownHostsFile: string;
  /** `SHA256:…`: trust exactly this key, and nothing from known_hosts. */
  pinnedFingerprint?: string;
  /** Trust an unknown host on first use and record its key. Never overrides a mismatch. */
  acceptNew?: boolean;
}

/** Everything one connection needs. */
export interface SshConnectionOptions {
  endpoint: SshEndpoint;
  /** The bastion connection to tunnel through. */
  via?: SshConnection;
  credentials: SshCredential[];
  hostKeys: HostKeyPolicy;
  connectTimeoutMs?: number;
  maxChannels?: number;
  logger?: Logger;
}

/** A reusable, self-healing SSH connection. */
export class SshConnection {
  readonly endpoint: SshEndpoint;
  /** `user@host:port`. */
  readonly label: string;
  readonly #options: SshConnectionOptions;
  readonly #logger: Logger;
  readonly #channels: Semaphore;
  readonly #timeoutMs: number;
  #client: Client | undefined;
  #connecting: Promise<Client> | undefined;
  #connectCount = 0;
  #hostKeyFingerprint: string | undefined;

  constructor(options: SshConnectionOptions) {
    this.endpoint = options.endpoint;
    this.label = formatEndpoint(options.endpoint);
    this.#options = options;
    this.#logger = options.logger ?? silentLogger;
    this.#channels = new Semaphore(options.maxChannels ?? MAX_CONCURRENT_CHANNELS);
    this.#timeoutMs = options.connectTimeoutMs ?? DEFAULT_SSH_CONNECT_TIMEOUT_MS;
  }

  /** How many times this connection has been established (reconnects included). */
  get connectCount(): number {
    return this.#connectCount;
  }

  /** The bastion connection this one runs through, if any. */
  get via(): SshConnection | undefined {
    return this.#options.via;
  }

  /**
   * The SHA-256 fingerprint of the host key this connection verified (set
   * once connected): a second connection to the same host (an upload's
   * worker thread) pins exactly this key.
   */
  get hostKeyFingerprint(): string | undefined {
    return this.#hostKeyFingerprint;
  }

  /** The credentials this connection offers, in order. */
  get credentials(): readonly SshCredential[] {
    return this.#options.credentials;
  }

  /** How long a connection attempt may take. */
  get connectTimeoutMs(): number {
    return this.#timeoutMs;
  }

  /** The chain to this host, for messages: `ops@bastion:22 -> root@10.0.0.5:22`. */
  get path(): string {
    return this.#options.via ? `${this.#options.via.path} -> ${this.label}` : this.label;
  }

  /** The connected client, connecting (or reconnecting) first if needed. */
  async client(): Promise<Client> {
    if (this.#client) return this.#client;
    this.#connecting ??= this.#connect().finally(() => {
      this.#connecting = undefined;
    });
    return this.#connecting;
  }

  /** Whether `client` is still this connection's live client. */
  isCurrent(client: Client): boolean {
    return this.#client === client;
  }

  /** Runs `task` with a session channel permit held, so at most `maxChannels` run at once. */
  async withChannel<T>(task: (client: Client) => Promise<T>): Promise<T> {
    return this.#channels.run(async () => task(await this.client()));
  }

  /** Opens a TCP tunnel from this host to `host:port` (for a connection through this bastion). */
  async forwardOut(host: string, port: number, context: SshFailureContext): Promise<ClientChannel> {
    const client = await this.client();
    return new Promise<ClientChannel>((resolve, reject) => {
      let isSettled = false;
      const timer = setTimeout(() => {
        isSettled = true;
        reject(sshUnreachable(context, `${this.label} got no TCP connection within ${this.#timeoutMs / 1000} s`));
      }, this.#timeoutMs);
      const done = (error: Error | undefined, channel?: ClientChannel): void => {
        if (isSettled) {
          channel?.close();
          return;
        }
        isSettled = true;
        clearTimeout(timer);
        if (error) reject(sshUnreachable(context, error.message.replace(/^\(SSH\) /, ''), error));
        else resolve(channel!);
      };
      try {
        client.forwardOut('127.0.0.1', 0, host, port, (error, channel) => done(error, channel));
      } catch (error) {
        done(error as Error);
      }
    });
  }

  /** Closes the connection; the next use reconnects. */
  async close(): Promise<void> {
    const client = this.#client ?? (await this.#connecting?.catch(() => undefined));
    this.#client = undefined;
    if (!client) return;
    await new Promise<void>((resolve) => {
      client.once('close', () => resolve());
      client.end();
      // A dead socket may never report close; do not hang on it.
      setTimeout(resolve, 1000).unref();
    });
  }

  async #connect(): Promise<Client> {
    const { endpoint, via, hostKeys } = this.#options;
    const context: SshFailureContext = {
      target: this.label,
      via: via?.path,
      tried: [],
      isHandshakeDone: false,
      connectTimeoutMs: this.#timeoutMs,
    };
    const entries = hostKeys.pinnedFingerprint ? [] : await readKnownHostsFile(hostKeys.knownHostsFile);
    // Direct connections get a socket that coalesces ssh2's many small
    // writes (see CoalescingSocket); ssh2 connects it and keeps its timeouts.
    const sock: Duplex = via ? await via.forwardOut(endpoint.host, endpoint.port, context) : new CoalescingSocket();
    const lookupName = knownHostsName(endpoint.host, endpoint.port);
    let verdict: HostKeyVerdict | undefined;
    let presented: { keyType: string; fingerprint: string } | undefined;

    const verify = (keyBlob: Buffer): boolean => {
      presented = { keyType: keyTypeOfBlob(keyBlob), fingerprint: fingerprintSha256(keyBlob) };
      verdict = decideHostKey({ keyBlob, endpoint, entries, policy: hostKeys, fingerprint: presented.fingerprint });
      return verdict.status === 'trusted' || verdict.status === 'accept-new';
    };

    const client = new (await loadSsh2()).Client();
    let isGone = false;
    const config: ConnectConfig = {
      host: endpoint.host,
      port: endpoint.port,
      username: endpoint.user,
      readyTimeout: this.#timeoutMs,
      keepaliveInterval: SSH_KEEPALIVE_INTERVAL_MS,
      keepaliveCountMax: SSH_KEEPALIVE_COUNT_MAX,
      hostVerifier: verify,
      authHandler: makeAuthHandler(endpoint.user, this.#options.credentials, context.tried),
      algorithms: { serverHostKey: preferKnownTypes(knownKeyTypes(entries, endpoint.host, endpoint.port)) },
      sock,
    };

    await new Promise<void>((resolve, reject) => {
      let isSettled = false;
      const fail = (error: Error): void => {
        if (isSettled) return;
        isSettled = true;
        client.end();
        reject(error);
      };
      client.once('handshake', (negotiated: { cs?: { cipher?: string; mac?: string } }) => {
        context.isHandshakeDone = true;
        const { cipher, mac } = negotiated.cs ?? {};
        this.#logger.debug(`[${this.label}] ssh: cipher ${cipher ?? '?'}${mac ? `, MAC ${mac}` : ''}`);
      });
      client.once('ready', () => {
        isSettled = true;
        resolve();
      });
      client.on('error', (error: Ssh2Error) => {
        if (isSettled || isRecoverableAuthError(error)) {
          this.#logger.debug(`[${this.label}] ssh: ${error.message}`);
          return;
        }
        if (verdict && presented && verdict.status !== 'trusted' && verdict.status !== 'accept-new') {
          fail(
            hostKeyFailure(verdict, {
              target: this.label,
              lookupName,
              keyType: presented.keyType,
              fingerprint: presented.fingerprint,
              knownHostsFile: hostKeys.knownHostsFile,
            }),
          );
          return;
        }
        fail(sshConnectFailure(error, context));
      });
      const onGone = (): void => {
        isGone = true;
        if (this.#client === client) this.#client = undefined;
        fail(
          sshConnectFailure(
            Object.assign(new Error('the connection closed during setup'), { level: 'client-socket' }),
            context,
          ),
        );
      };
      client.once('end', onGone);
      client.once('close', onGone);
      try {
        // Connecting before ssh2 sees the socket: ssh2 takes a socket that
        // is not `connecting` as connected already.
        if (sock instanceof CoalescingSocket) sock.connect({ host: endpoint.host, port: endpoint.port });
        client.connect(config);
      } catch (error) {
        fail(sshConnectFailure(error as Ssh2Error, context));
      }
    });

    if (verdict?.status === 'accept-new' && presented) {
      await appendKnownHostsLine(hostKeys.knownHostsFile, verdict.line);
      this.#logger.warn(
        `TRUSTED ON FIRST USE (--ssh-accept-new): ${this.label} presented ${presented.keyType} key ${presented.fingerprint}, ` +
          `now recorded in ${hostKeys.knownHostsFile}. Nothing proved that this is the right host; compare the fingerprint with the host's own.`,
      );
    }
    if (isGone) throw sshDisconnected(this.label, 'it was being set up');
    // Commands are short request/response exchanges: without this, Nagle's
    // algorithm and delayed ACKs add tens of milliseconds to every one.
    client.setNoDelay(true);
    client.once('end', () => destroySocket(client));
    this.#connectCount++;
    this.#hostKeyFingerprint = presented?.fingerprint;
    this.#client = client;
    this.#logger.debug(`[${this.label}] connected${via ? ` through ${via.path}` : ''}`);
    return client;
  }
}

/** The part of ssh2's client that ending a connection for good needs. */
interface ClientInternals {
  _sock?: { destroy(): void };
}

/**
 * Ends a connection whose server has closed its side. When the server's
 * stream ends (the sshd process was killed, say), ssh2 reports 'end' and
 * stops its keepalives, but fails the open channels only on the socket's
 * 'close'; with writes still queued (an upload waiting for channel window),
 * that close may never come, and the upload would wait forever. An SSH
 * connection has no half-closed state (RFC 4253 ends it with a
 * disconnect message or the transport), so the end of the server's stream
 * ends the connection: destroying the socket makes ssh2 close every
 * channel, and the commands on them fail as disconnected. ssh2's own
 * `destroy()` does nothing once the socket is no longer writable, which is
 * the case here, hence the socket itself.
 */
function destroySocket(client: Client): void {
  (client as unknown as ClientInternals)._sock?.destroy();
}

/**
 * Errors ssh2 reports and then moves on to the next credential: the agent
 * cannot be reached (a stale SSH_AUTH_SOCK) or one key cannot sign. Only
 * "all methods failed" ends authentication.
 */
function isRecoverableAuthError(error: Ssh2Error): boolean {
  if (error.level === 'agent') return true;
  return (
    error.level === 'client-authentication' && !/all configured authentication methods failed/i.test(error.message)
  );
}

/** Puts the host key algorithms of known key types first, so the host offers the key on record. */
function preferKnownTypes(knownTypes: string[]): ServerHostKeyAlgorithm[] {
  const isKnown = (algorithm: string): boolean =>
    knownTypes.includes(algorithm) || (algorithm.startsWith('rsa-sha2-') && knownTypes.includes('ssh-rsa'));
  return [...HOST_KEY_ALGORITHMS.filter(isKnown), ...HOST_KEY_ALGORITHMS.filter((a) => !isKnown(a))];
}

/** The host key decision for one presented key: pure, given the parsed known_hosts. */
export function decideHostKey(input: {
  keyBlob: Buffer;
  fingerprint: string;
  endpoint: SshEndpoint;
  entries: Awaited<ReturnType<typeof readKnownHostsFile>>;
  policy: HostKeyPolicy;
}): HostKeyVerdict {
  const { keyBlob, fingerprint, endpoint, entries, policy } = input;
  if (policy.pinnedFingerprint) {
    return fingerprint === policy.pinnedFingerprint
      ? { status: 'trusted', how: 'pinned' }
      : {
          status: 'mismatch',
          how: 'pinned',
          expected: [policy.pinnedFingerprint],
          where: ['--ssh-host-key-fingerprint'],
        };
  }
  const found = checkKnownHost(entries, { host: endpoint.host, port: endpoint.port, keyBlob });
  switch (found.status) {
    case 'known':
      return { status: 'trusted', how: 'known_hosts' };
    case 'revoked':
      return { status: 'revoked', where: `${policy.knownHostsFile}:${found.entry.lineNumber}` };
    case 'mismatch':
      return {
        status: 'mismatch',
        how: 'known_hosts',
        expected: found.entries.map((entry) => `${entry.keyType} ${fingerprintSha256(entry.keyBlob)}`),
        where: found.entries.map((entry) => `${policy.knownHostsFile}:${entry.lineNumber}`),
      };
    case 'unknown':
      return policy.acceptNew
        ? { status: 'accept-new', line: formatKnownHostsLine({ host: endpoint.host, port: endpoint.port, keyBlob }) }
        : { status: 'unknown' };
  }
}
