/**
 * The SSH flags every host-facing command shares (`--host`, `--ssh-jump`,
 * `--ssh-key`, …), and their translation into the domain's
 * {@link HostConnectOptions}.
 *
 * Secrets come from files or environment variables, so they stay out of the
 * process list and shell history; `--ssh-password` exists for scripts that
 * have no other way, with a warning. Every secret read is registered with the
 * command's redactor before anything can log it.
 */
import { readFileSync } from 'node:fs';
import { Flags } from '@oclif/core';
import { ValidationError } from '../../errors.js';
import type { HostConnectOptions } from '../../hosts/connect.js';
import type { Redactor } from '../../log/redact.js';
import type { Logger } from '../../log/run-log.js';

/** Environment variables that carry SSH secrets. */
export const SSH_PASSWORD_ENV = 'EDGEADM_SSH_PASSWORD';
export const SUDO_PASSWORD_ENV = 'EDGEADM_SUDO_PASSWORD';
export const SSH_KEY_PASSPHRASE_ENV = 'EDGEADM_SSH_KEY_PASSPHRASE';

const helpGroup = 'SSH';

/** The flags; spread them into a command's `flags`. */
export const sshFlags = {
  host: Flags.string({
    summary: 'Act on this host over SSH: user@address[:port] or an ssh config alias. Without it, on this machine.',
    helpGroup,
  }),
  'ssh-jump': Flags.string({
    summary: 'Reach the host through this bastion, user@bastion[:port]. Repeat for a chain, outermost first.',
    multiple: true,
    helpGroup,
  }),
  'ssh-key': Flags.string({
    summary:
      'Private key file to log in with (repeatable). Default: ssh-agent, then ~/.ssh/id_ed25519, id_ecdsa, id_rsa.',
    multiple: true,
    helpGroup,
  }),
  'ssh-key-passphrase-file': Flags.string({
    summary: `File holding the passphrase of encrypted keys (or set ${SSH_KEY_PASSPHRASE_ENV}).`,
    helpGroup,
  }),
  'ssh-password-file': Flags.string({
    summary: `File holding the SSH login password (or set ${SSH_PASSWORD_ENV}). Only used when given.`,
    helpGroup,
  }),
  'ssh-password': Flags.string({
    summary: `SSH login password. Other local users can see it in the process list: prefer --ssh-password-file or ${SSH_PASSWORD_ENV}.`,
    helpGroup,
  }),
  'sudo-password-file': Flags.string({
    summary: `File holding the sudo password of a non-root login user (or set ${SUDO_PASSWORD_ENV}).`,
    helpGroup,
  }),
  'ssh-host-key-fingerprint': Flags.string({
    summary: 'Trust only this host key (SHA256:… as ssh-keygen -lf prints it), instead of known_hosts.',
    helpGroup,
  }),
  'ssh-accept-new': Flags.boolean({
    summary: 'Trust an unknown host key on first use and record it in known_hosts (a changed key is still refused).',
    helpGroup,
  }),
  'ssh-known-hosts': Flags.string({
    summary: 'known_hosts file to check host keys against. Default: ~/.ssh/known_hosts.',
    helpGroup,
  }),
  'ssh-config': Flags.string({
    summary:
      'ssh config file for Host entries (HostName, User, Port, IdentityFile, ProxyJump). Default: ~/.ssh/config.',
    helpGroup,
  }),
  'ssh-port': Flags.integer({
    summary: 'SSH port of the host, when --host does not name one. Default: 22.',
    min: 1,
    max: 65535,
    helpGroup,
  }),
  'ssh-timeout': Flags.integer({
    summary: 'Seconds to wait for each SSH connection to be set up. Default: 20.',
    min: 1,
    helpGroup,
  }),
};

/** The parsed values of {@link sshFlags}. */
export interface SshFlagValues {
  host?: string | undefined;
  'ssh-jump'?: string[] | undefined;
  'ssh-key'?: string[] | undefined;
  'ssh-key-passphrase-file'?: string | undefined;
  'ssh-password-file'?: string | undefined;
  'ssh-password'?: string | undefined;
  'sudo-password-file'?: string | undefined;
  'ssh-host-key-fingerprint'?: string | undefined;
  'ssh-accept-new'?: boolean | undefined;
  'ssh-known-hosts'?: string | undefined;
  'ssh-config'?: string | undefined;
  'ssh-port'?: number | undefined;
  'ssh-timeout'?: number | undefined;
}

/** What the translation needs besides the flags. */
export interface SshFlagContext {
  env: NodeJS.ProcessEnv;
  redactor: Redactor;
  logger: Logger;
}

/** Turns the flags into connection options, reading secret files and variables. */
export function hostConnectOptionsFromFlags(flags: SshFlagValues, context: SshFlagContext): HostConnectOptions {
  const { env, redactor, logger } = context;
  const secret = (file: string | undefined, flagName: string, variable: string): string | undefined => {
    const value = file !== undefined ? readSecretFile(file, flagName) : nonEmpty(env[variable]);
    redactor.addSecret(value);
    return value;
  };
  const sudoPassword = secret(flags['sudo-password-file'], '--sudo-password-file', SUDO_PASSWORD_ENV);
  if (flags.host === undefined) {
    const sshOnly = Object.entries(flags).filter(
      ([name, value]) => name.startsWith('ssh-') && value !== undefined && value !== false,
    );
    if (sshOnly.length > 0) {
      throw new ValidationError(`--${sshOnly[0]![0]} needs --host: without it, edgeadm acts on this machine`, {
        code: 'E_USAGE',
        hints: ['Add --host user@address.'],
      });
    }
    return { logger, ...(sudoPassword === undefined ? {} : { sudoPassword }) };
  }

  // A file beats the flag, which beats the environment.
  const passwordFile = flags['ssh-password-file'];
  if (flags['ssh-password'] !== undefined) {
    logger.warn(
      `a password on the command line (--ssh-password) is visible in the process list; prefer --ssh-password-file or ${SSH_PASSWORD_ENV}`,
    );
  }
  const password =
    passwordFile !== undefined || flags['ssh-password'] === undefined
      ? secret(passwordFile, '--ssh-password-file', SSH_PASSWORD_ENV)
      : flags['ssh-password'];
  redactor.addSecret(flags['ssh-password']);
  const keyPassphrase = secret(flags['ssh-key-passphrase-file'], '--ssh-key-passphrase-file', SSH_KEY_PASSPHRASE_ENV);

  const options: HostConnectOptions = { host: flags.host, logger };
  if (flags['ssh-jump'] && flags['ssh-jump'].length > 0) options.jumps = flags['ssh-jump'];
  if (flags['ssh-key'] && flags['ssh-key'].length > 0) options.keyFiles = flags['ssh-key'];
  if (keyPassphrase !== undefined) options.keyPassphrase = keyPassphrase;
  if (password !== undefined) options.password = password;
  if (sudoPassword !== undefined) options.sudoPassword = sudoPassword;
  if (flags['ssh-host-key-fingerprint'] !== undefined) options.hostKeyFingerprint = flags['ssh-host-key-fingerprint'];
  if (flags['ssh-accept-new']) options.acceptNewHostKeys = true;
  if (flags['ssh-known-hosts'] !== undefined) options.knownHostsFile = flags['ssh-known-hosts'];
  if (flags['ssh-config'] !== undefined) options.sshConfigFile = flags['ssh-config'];
  if (flags['ssh-port'] !== undefined) options.port = flags['ssh-port'];
  if (flags['ssh-timeout'] !== undefined) options.connectTimeoutMs = flags['ssh-timeout'] * 1000;
  return options;
}

/** Reads a secret from a file, without its trailing newline. */
function readSecretFile(file: string, flagName: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ValidationError(`cannot read ${flagName} ${file}: ${(error as Error).message}`, {
      code: 'E_SECRET_FILE',
      cause: error,
    });
  }
  const value = text.replace(/\r?\n$/, '');
  if (value === '') throw new ValidationError(`${flagName} ${file} is empty`, { code: 'E_SECRET_FILE' });
  return value;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}
