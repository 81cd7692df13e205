/**
 * SSH client authentication: which credentials edgeadm offers, in which
 * order, and how it reports what it tried.
 *
 * The order is ssh-agent (SSH_AUTH_SOCK), then key files (those given, or
 * ~/.ssh/id_ed25519, id_ecdsa and id_rsa when present), then a password, and
 * the password only when one was given. An encrypted key takes the
 * passphrase given; a default key that cannot be opened is skipped with a
 * note in the log, a key the user named is an error.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AnyAuthMethod, AuthenticationType, BaseAgent, NextAuthHandler, ParsedKey } from 'ssh2';
import { EdgeadmError } from '../errors.js';
import type { Logger } from '../log/run-log.js';
import { loadSsh2, type Ssh2 } from './ssh2-loader.js';

/** Key files tried, in order, when none is given (as OpenSSH's default IdentityFile list, minus DSA). */
export const DEFAULT_KEY_FILES = ['.ssh/id_ed25519', '.ssh/id_ecdsa', '.ssh/id_rsa'] as const;

/** One way of proving who we are. */
export type SshCredential =
  | { kind: 'agent'; socket: string }
  | { kind: 'key'; file: string; key: ParsedKey }
  /** A key file whose key is held elsewhere (by the thread that loaded it), which signs through `agent`. */
  | { kind: 'signer'; file: string; agent: BaseAgent }
  | { kind: 'password'; password: string };

/** Where credentials come from. */
export interface SshCredentialSources {
  /** ssh-agent socket; normally $SSH_AUTH_SOCK. */
  agentSocket?: string;
  /** Key files the user named (--ssh-key, IdentityFile): each must load. */
  keyFiles?: string[];
  /** Used when no key file is named: the defaults under this home directory, each only if present. */
  homeDir?: string;
  /** Passphrase for encrypted key files. */
  keyPassphrase?: string;
  /** Password, offered last. */
  password?: string;
}

/** Loads the credentials to offer, in order. Throws when a named key cannot be used. */
export async function loadSshCredentials(sources: SshCredentialSources, logger: Logger): Promise<SshCredential[]> {
  const ssh2 = await loadSsh2();
  const credentials: SshCredential[] = [];
  if (sources.agentSocket) credentials.push({ kind: 'agent', socket: sources.agentSocket });
  const named = sources.keyFiles ?? [];
  const files =
    named.length > 0 ? named : sources.homeDir ? DEFAULT_KEY_FILES.map((f) => join(sources.homeDir!, f)) : [];
  for (const file of files) {
    const isNamed = named.length > 0;
    let data: Buffer;
    try {
      data = readFileSync(file);
    } catch (error) {
      if (!isNamed && (error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw new EdgeadmError(`cannot read SSH key ${file}: ${(error as Error).message}`, {
        code: 'E_SSH_KEY',
        hints: ['Check the path given with --ssh-key (or IdentityFile in the ssh config).'],
        cause: error,
      });
    }
    const key = parseKeyFile(ssh2, data, file, sources.keyPassphrase);
    if (key instanceof EdgeadmError) {
      if (isNamed) throw key;
      logger.debug(`skipping SSH key ${file}: ${key.message}`);
      continue;
    }
    credentials.push({ kind: 'key', file, key });
  }
  if (sources.password !== undefined) credentials.push({ kind: 'password', password: sources.password });
  return credentials;
}

function parseKeyFile(
  ssh2: Ssh2,
  data: Buffer,
  file: string,
  passphrase: string | undefined,
): ParsedKey | EdgeadmError {
  const parsed = ssh2.utils.parseKey(data, passphrase) as ParsedKey | ParsedKey[] | Error;
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (key instanceof Error || key === undefined) {
    const reason = key?.message ?? 'no key found';
    const isEncrypted = /encrypt|passphrase|decrypt|bad decrypt/i.test(reason);
    return new EdgeadmError(
      isEncrypted
        ? passphrase === undefined
          ? `SSH key ${file} is encrypted and no passphrase was given`
          : `the passphrase does not open SSH key ${file}`
        : `cannot use SSH key ${file}: ${reason}`,
      {
        code: isEncrypted ? 'E_SSH_KEY_PASSPHRASE' : 'E_SSH_KEY',
        hints: isEncrypted
          ? [
              'Give the passphrase with --ssh-key-passphrase-file FILE or EDGEADM_SSH_KEY_PASSPHRASE, or load the key into ssh-agent.',
            ]
          : ['edgeadm reads OpenSSH and PEM private keys (ed25519, ecdsa, rsa).'],
      },
    );
  }
  if (!key.isPrivateKey()) {
    return new EdgeadmError(`${file} holds a public key, not a private key`, {
      code: 'E_SSH_KEY',
      hints: ['Pass the private key file (without .pub).'],
    });
  }
  return key;
}

/** How a credential reads in messages: never the secret itself. */
export function describeCredential(credential: SshCredential): string {
  switch (credential.kind) {
    case 'agent':
      return 'ssh-agent';
    case 'key':
    case 'signer':
      return `key ${credential.file}`;
    case 'password':
      return 'password';
  }
}

/**
 * An ssh2 auth handler that offers `credentials` in order, skipping methods
 * the server does not accept, and records what it offered in `tried`.
 */
export function makeAuthHandler(
  username: string,
  credentials: SshCredential[],
  tried: string[],
): (methodsLeft: AuthenticationType[] | null, partialSuccess: boolean | null, next: NextAuthHandler) => void {
  let index = 0;
  return (methodsLeft, _partialSuccess, next) => {
    while (index < credentials.length) {
      const credential = credentials[index++]!;
      const method = credential.kind === 'password' ? 'password' : 'publickey';
      if (methodsLeft && !methodsLeft.includes(method)) continue;
      tried.push(describeCredential(credential));
      let auth: AnyAuthMethod;
      switch (credential.kind) {
        case 'agent':
          auth = { type: 'agent', username, agent: credential.socket };
          break;
        case 'key':
          auth = { type: 'publickey', username, key: credential.key };
          break;
        case 'signer':
          auth = { type: 'agent', username, agent: credential.agent };
          break;
        case 'password':
          auth = { type: 'password', username, password: credential.password };
          break;
      }
      return next(auth);
    }
    return next(false as unknown as AnyAuthMethod);
  };
}
