/**
 * The SSH failures an operator must be able to tell apart, each with a
 * stable code, a message that names the host (and the bastion in between)
 * and hints that say what to do:
 *
 * - E_SSH_UNREACHABLE: nothing answered (refused, no route, timed out, no DNS);
 * - E_SSH_AUTH: the host answered and refused every credential offered;
 * - E_SSH_HOST_KEY_MISMATCH: the host's key differs from the one on record;
 * - E_SSH_HOST_KEY_UNKNOWN: first contact; the fingerprint and how to accept it;
 * - E_SSH_HOST_KEY_REVOKED: the key is marked @revoked;
 * - E_SSH_DISCONNECTED: an established connection dropped mid-way;
 * - E_SSH_CONNECT: any other failure to set up the session.
 */
import { EdgeadmError } from '../errors.js';

/** Socket error codes that mean "could not reach it". */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ECONNRESET',
  'EHOSTDOWN',
  'EADDRNOTAVAIL',
]);

/** Everything known about a failed connection attempt. */
export interface SshFailureContext {
  /** `user@host:port` of the host being connected. */
  target: string;
  /** `user@host:port` of the bastion the connection went through, if any. */
  via: string | undefined;
  /** Credentials offered, in order (descriptions, never secrets). */
  tried: string[];
  /** Whether the SSH handshake finished before the failure. */
  isHandshakeDone: boolean;
  connectTimeoutMs: number;
}

/** ssh2's error shape: `level` says which layer failed. */
export interface Ssh2Error extends Error {
  level?: string;
  code?: string;
  reason?: number | string;
}

function through(context: SshFailureContext): string {
  return context.via ? ` through ${context.via}` : '';
}

/** Maps an ssh2 connection error (no host key verdict involved) to a typed error. */
export function sshConnectFailure(error: Ssh2Error, context: SshFailureContext): EdgeadmError {
  const level = error.level ?? '';
  if (level === 'client-authentication') {
    return new EdgeadmError(
      `SSH authentication to ${context.target} failed${context.tried.length > 0 ? ` (tried ${context.tried.join(', ')})` : ': no credentials to offer'}`,
      {
        code: 'E_SSH_AUTH',
        cause: error,
        details: { target: context.target, tried: context.tried },
        hints: [
          'Check the user name in --host user@address.',
          'Name the key with --ssh-key FILE, or load it into ssh-agent (SSH_AUTH_SOCK).',
          "Check that the public key is in that user's ~/.ssh/authorized_keys on the host.",
          'For password login, pass --ssh-password-file FILE or set EDGEADM_SSH_PASSWORD.',
        ],
      },
    );
  }
  if (level === 'client-timeout' && context.isHandshakeDone) {
    return new EdgeadmError(`SSH session setup with ${context.target}${through(context)} timed out`, {
      code: 'E_SSH_TIMEOUT',
      cause: error,
      hints: ['Raise --ssh-timeout on slow links.'],
    });
  }
  if (!context.isHandshakeDone && /lost before handshake|closed during setup/i.test(error.message)) {
    // TCP connected, but nothing spoke SSH: a firewall, a proxy, or no sshd behind the port.
    return sshUnreachable(
      context,
      'the connection closed before an SSH server answered (no sshd there, or a firewall or proxy in between)',
      error,
    );
  }
  if (level === 'client-timeout' || level === 'client-dns' || UNREACHABLE_CODES.has(error.code ?? '')) {
    return sshUnreachable(
      context,
      level === 'client-timeout' ? `no SSH answer within ${context.connectTimeoutMs / 1000} s` : error.message,
      error,
    );
  }
  return new EdgeadmError(`SSH connection to ${context.target}${through(context)} failed: ${error.message}`, {
    code: 'E_SSH_CONNECT',
    cause: error,
    hints: ['Run with --verbose for details; check that the port is an SSH server.'],
  });
}

/** The host could not be reached at all. */
export function sshUnreachable(context: SshFailureContext, reason: string, cause?: unknown): EdgeadmError {
  return new EdgeadmError(`cannot reach ${context.target}${through(context)}: ${reason}`, {
    code: 'E_SSH_UNREACHABLE',
    cause,
    details: { target: context.target, via: context.via },
    hints: [
      'Check the address and port, and that sshd runs on the host.',
      context.via
        ? `Check that ${context.via} can reach the host (its firewall, routes, and AllowTcpForwarding).`
        : 'If the host is only reachable through a bastion, pass --ssh-jump user@bastion.',
      'Raise --ssh-timeout on slow links.',
    ],
  });
}

/** An established connection went away while a command or transfer was running. */
export function sshDisconnected(target: string, what: string): EdgeadmError {
  return new EdgeadmError(`the SSH connection to ${target} dropped while ${what}`, {
    code: 'E_SSH_DISCONNECTED',
    hints: ['Run the command again: edgeadm reconnects, and an interrupted upload resumes where it stopped.'],
  });
}

/** What a host key check concluded for one connection. */
export type HostKeyVerdict =
  | { status: 'trusted'; how: 'known_hosts' | 'pinned' }
  | { status: 'accept-new'; line: string }
  | { status: 'mismatch'; how: 'known_hosts' | 'pinned'; expected: string[]; where: string[] }
  | { status: 'unknown' }
  | { status: 'revoked'; where: string };

/** The host key error for a rejected verdict. */
export function hostKeyFailure(
  verdict: Exclude<HostKeyVerdict, { status: 'trusted' } | { status: 'accept-new' }>,
  presented: { target: string; lookupName: string; keyType: string; fingerprint: string; knownHostsFile: string },
): EdgeadmError {
  const details = {
    target: presented.target,
    keyType: presented.keyType,
    fingerprint: presented.fingerprint,
    knownHostsFile: presented.knownHostsFile,
  };
  switch (verdict.status) {
    case 'unknown':
      return new EdgeadmError(
        `the host key of ${presented.target} is not known. It presented a ${presented.keyType} key with fingerprint ${presented.fingerprint}`,
        {
          code: 'E_SSH_HOST_KEY_UNKNOWN',
          details,
          hints: [
            `Compare the fingerprint with the host's own (on its console: ssh-keygen -lf /etc/ssh/ssh_host_${hostKeyFileKind(presented.keyType)}_key.pub).`,
            `If it matches, pin it with --ssh-host-key-fingerprint ${presented.fingerprint}`,
            `or trust it on first use with --ssh-accept-new, which records it in ${presented.knownHostsFile}.`,
          ],
        },
      );
    case 'mismatch':
      return new EdgeadmError(
        `HOST KEY MISMATCH for ${presented.target}: it presented ${presented.keyType} ${presented.fingerprint}, but ${verdict.how === 'pinned' ? 'the pinned fingerprint is' : `${verdict.where.join(', ')} holds`} ${verdict.expected.join(', ')}. Someone may be intercepting the connection, or the host was reinstalled. Nothing was sent to it.`,
        {
          code: 'E_SSH_HOST_KEY_MISMATCH',
          details: { ...details, expected: verdict.expected },
          hints: [
            "Find out why the key changed before doing anything else (ask the host's owner).",
            verdict.how === 'pinned'
              ? 'If the new key is legitimate, pin the new fingerprint with --ssh-host-key-fingerprint.'
              : `If the new key is legitimate, remove the old entry with: ssh-keygen -R '${presented.lookupName}' -f ${presented.knownHostsFile}`,
          ],
        },
      );
    case 'revoked':
      return new EdgeadmError(
        `the host key of ${presented.target} (${presented.fingerprint}) is marked @revoked in ${verdict.where}; refusing to connect`,
        { code: 'E_SSH_HOST_KEY_REVOKED', details, hints: ["Ask the host's owner for its new key."] },
      );
  }
}

/** The part of sshd's host key file name for a key type (`ssh_host_<kind>_key`). */
function hostKeyFileKind(keyType: string): string {
  if (keyType.startsWith('ecdsa-')) return 'ecdsa';
  return keyType.replace(/^ssh-/, '');
}
